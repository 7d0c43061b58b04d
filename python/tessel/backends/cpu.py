"""CPU backend: graph -> kernels of linalg -> tiled, vectorized, bufferized code -> LLVM JIT.

``STAGES`` (from :mod:`.pipelines`) is the whole pipeline: graph passes and kernel outlining; lowering
to linalg; each kernel's ``loop.schedule`` (the CPU's default unless given)
tiles it (scf.forall), fuses it and vectorizes its matmul; bufferization with a generated host program that reuses
buffers; then the tiles become async-runtime tasks and everything lowers to
LLVM for the ExecutionEngine. docs/architecture.md lists the passes.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import threading
import time
import weakref
from typing import Any, Sequence

import numpy as np
from mlir import execution_engine, ir
from mlir.dialects import llvm

from .. import _tessel, dlpack
from .. import ir as tir
from ..dtypes import described, host_array
from ..tools import mlir_runtime_library
from ..errors import CompileError, UnsupportedError
from .. import targets
from .pipelines import cpu_stages, run_stages, scheduled_for
from .signature import TensorSpec, entry_function, signature

__all__ = ["CPUExecutable", "STAGES", "compile_cpu"]

# (name, pass pipeline) in order: the default CPU pipeline.
STAGES = cpu_stages()

# memrefCopy (copies between strided views). The async runtime that runs
# tiles as tasks is tessel's own (python/runtime/AsyncRuntime.cpp).
RUNTIME_LIBRARIES = ("mlir_c_runner_utils",)


@functools.cache
def _runtime_libraries() -> tuple[ctypes.CDLL, ...]:
    """The runtime libraries, loaded once per process.

    Loaded locally (RTLD_LOCAL): global loading would put their libLLVM.so
    in the global scope, where it takes over the LLVM symbols of any library
    loaded later that bundles its own LLVM (importing triton, as
    torch.export does, then crashed).
    """
    return tuple(ctypes.CDLL(str(mlir_runtime_library(lib)), mode=ctypes.RTLD_LOCAL)
                 for lib in RUNTIME_LIBRARIES)


@functools.cache
def _async_runtime_symbols() -> dict[str, int]:
    """Addresses of the async runtime's functions, by symbol name."""
    return _tessel.async_runtime_symbols()


def _declared_functions(module: ir.Module) -> list[str]:
    """The functions an LLVM-dialect module declares without defining."""
    return [ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
            if isinstance(op, llvm.LLVMFuncOp) and not op.regions[0].blocks]


def _register_runtime_symbols(engine: execution_engine.ExecutionEngine, names: Sequence[str]) -> None:
    """Binds each of ``names`` that the async runtime or a runtime library defines."""
    for name in names:
        if name in _async_runtime_symbols():
            engine.raw_register_runtime(name, ctypes.c_void_p(_async_runtime_symbols()[name]))
            continue
        for lib in _runtime_libraries():
            try:
                address = ctypes.cast(getattr(lib, name), ctypes.c_void_p)
            except AttributeError:
                continue
            engine.raw_register_runtime(name, address)
            break


# Seconds a dropped executable's JIT code is kept. The async runtime wakes
# the caller of a parallel loop before its worker threads have returned from
# the JIT-compiled task function, so freeing the code right after a call can
# pull it from under a worker (seen as segfaults after dropping an
# executable). Workers leave that code within microseconds.
_RETIRE_AFTER = 1.0
_retired: collections.deque[tuple[float, execution_engine.ExecutionEngine]] = collections.deque()


def _retire(engine: execution_engine.ExecutionEngine) -> None:
    """Frees engines dropped more than ``_RETIRE_AFTER`` s ago and keeps ``engine``."""
    now = time.monotonic()
    while _retired and now - _retired[0][0] > _RETIRE_AFTER:
        _retired.popleft()
    _retired.append((now, engine))


@functools.cache
def _descriptor_type(rank: int) -> type[ctypes.Structure]:
    """The C layout of a rank-``rank`` memref descriptor (its element type
    does not change the layout). Built once per rank: upstream's
    ``get_ranked_memref_descriptor`` builds a new ctypes class per call,
    which cost ~0.1 ms per argument, more than a small kernel's run."""
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": [
        ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
        ("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]})


class _Frame:
    """One thread's arguments to an entry function's packed C interface: a
    memref descriptor per argument, with the signature's shape and strides,
    whose data pointers each call sets; ``packed`` points to pointers to
    them. Built once: building descriptors on every call cost more than a
    small kernel's run."""

    __slots__ = ("descriptors", "addresses", "packed")

    def __init__(self, specs: Sequence[TensorSpec]) -> None:
        self.descriptors = []
        for spec in specs:
            descriptor = _descriptor_type(len(spec.shape))()
            descriptor.shape[:] = spec.shape
            # Row-major strides, in elements.
            descriptor.strides[:] = [int(np.prod(spec.shape[i + 1:], dtype=np.int64))
                                     for i in range(len(spec.shape))]
            self.descriptors.append(descriptor)
        count = len(specs)
        self.addresses = (ctypes.c_void_p * count)(*map(ctypes.addressof, self.descriptors))
        word = ctypes.sizeof(ctypes.c_void_p)
        self.packed = (ctypes.c_void_p * count)(*(ctypes.addressof(self.addresses) + i * word
                                                  for i in range(count)))


# Result buffers start at a cache line, so that kernels store whole lines.
RESULT_ALIGNMENT = 64
# Buffers kept per result for reuse: two serve ``y = exe(x)`` in a loop,
# where the previous result is still referenced during the call.
POOLED_RESULTS = 2


class _Lease:
    """The base of the arrays returned in a pooled buffer: numpy views of
    them, and objects exported from them (DLPack, buffer protocol), keep it
    alive, so the buffer is free for reuse once it is gone."""

    __slots__ = ("__array_interface__", "buffer", "__weakref__")

    def __init__(self, buffer: np.ndarray, address: int, size: int) -> None:
        self.buffer = buffer
        self.__array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (address, False), "version": 3}


class CPUExecutable:
    """A compiled entry function; call it with arrays, get numpy arrays back.

    Each result's memory comes from a small pool that the executable keeps
    (``POOLED_RESULTS`` buffers per result) and reuses once nothing
    references it any more: no array returned earlier, nor any view of one
    or object exported from one (DLPack, buffer protocol). A result above
    32 MiB would otherwise be a fresh mmap on every call, whose pages the
    kernel zeroes on first touch (4096x4096 softmax on the 2-core VM: 26 ms
    with a fresh result per call, 16-20 ms with pooled ones).
    """

    def __init__(self, engine: execution_engine.ExecutionEngine, name: str,
                 inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 stage_seconds: dict[str, float], alignment: int) -> None:
        self._engine = engine
        # What each input's address must be a multiple of.
        self._alignment = alignment
        # The packed C interface takes an array of pointers to the
        # arguments, each a pointer to a memref descriptor.
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("_mlir_ciface_" + name))
        self.name = name
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.stage_seconds = dict(stage_seconds)
        # Where each schedule came from when compiled with a tuning database.
        self.tuning: dict[str, str] = {}
        self._result_bytes = [int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
                              for spec in self.outputs]
        # Per result: [buffer, its aligned address, weak reference to its
        # current _Lease].
        self._pools: tuple[list[list[Any]], ...] = tuple([] for _ in self.outputs)
        self._pool_lock = threading.Lock()
        self._frames = threading.local()

    def __del__(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is not None:
            _retire(engine)

    def _check(self, index: int, value: Any) -> tuple[np.ndarray, int]:
        """Argument ``index`` as a C-contiguous array, and its address. A contiguous numpy
        array or CPU ``__dlpack__`` object (a torch tensor) is used in place;
        a strided one is copied, as is one at an address that is not a
        multiple of the kernels' alignment or of its itemsize, one of the
        other byte order (converted, as numpy would) and a bool one (any
        nonzero byte made 1: kernels do not read numpy's bool as numpy does)."""
        spec = self.inputs[index]
        array = value
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            try:
                array = dlpack.read(value).numpy()
            except Exception as e:  # noqa: BLE001 - producers raise BufferError, RuntimeError, ...
                device = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else "unknown"
                raise ValueError(f"{self.name}: argument {index} (DLPack device {device}) cannot be read as CPU "
                                 f"memory: {e}") from None
        array = np.asarray(array)
        if array.shape != spec.shape or array.dtype.newbyteorder("=") != spec.dtype:
            raise ValueError(f"{self.name}: argument {index} must be {spec}, "
                             f"got {described(array.dtype)}{list(array.shape)}")
        array = host_array(array, spec.dtype)
        address = array.ctypes.data
        if address % self._alignment or not array.flags.aligned:
            array = array.copy()
            address = array.ctypes.data
        return array, address

    def _result(self, index: int) -> tuple[np.ndarray, int]:
        """A new array for result ``index`` and its address, in a pooled
        buffer whose previous arrays are all gone when there is one."""
        spec, size = self.outputs[index], self._result_bytes[index]
        pool = self._pools[index]
        with self._pool_lock:
            entry = next((e for e in pool if e[2]() is None), None)
            if entry is None:
                buffer = np.empty(size + RESULT_ALIGNMENT, np.uint8)
                entry = [buffer, buffer.ctypes.data + -buffer.ctypes.data % RESULT_ALIGNMENT, None]
                if len(pool) < POOLED_RESULTS:
                    pool.append(entry)
            lease = _Lease(entry[0], entry[1], size)
            entry[2] = weakref.ref(lease)
        return np.asarray(lease).view(spec.dtype).reshape(spec.shape), entry[1]

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        if len(args) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arguments, got {len(args)}")
        # Arrays and addresses; the arrays stay referenced until the call returns.
        arguments = [self._check(i, a) for i, a in enumerate(args)]
        results = [self._result(i) for i in range(len(self.outputs))]
        frame = getattr(self._frames, "frame", None)
        if frame is None:
            frame = self._frames.frame = _Frame(self.inputs + self.outputs)
        for descriptor, (_, address) in zip(frame.descriptors, arguments + results):
            descriptor.allocated = descriptor.aligned = address
        self._entry(frame.packed)
        return results[0][0] if len(results) == 1 else tuple(r for r, _ in results)


def compile_cpu(module: ir.Module, *, entry: str | None = None, opt_level: int = 2,
                schedules: str = "cpu", print_ir_after_all: bool = False,
                timing: bool = False) -> CPUExecutable:
    """Compiles the entry function of a graph module for this CPU.

    ``opt_level`` is LLVM's; 2 rather than 3 because O3's unrolling of the
    vectorized matmul loops made the JIT ~7x slower and the kernels slower
    too (256x256x1024: 0.5 s and 4.6 ms at O2, 3.3 s and 7.5 ms at O3).
    Kernels are tiled by their ``loop.schedule`` ops, the default schedules
    of target ``schedules`` where they have none: the CPU's own (``"cpu"``),
    or a GPU target's (``"sm_90"``), so that a GPU schedule's semantics can
    be checked against numpy on this machine. A module that is already
    scheduled (:func:`tessel.schedules.default_schedules`, maybe with other
    knob values) runs its own schedules, which must be for ``schedules``.
    ``module`` is not modified.
    ``stage_seconds`` on the result records the time of each stage plus the
    JIT.
    """
    if schedules not in targets.names():
        raise UnsupportedError(
            f"unknown target {schedules!r} for schedules; available: {', '.join(targets.names())}")
    work = tir.clone(module)
    func = entry_function(work, entry)
    name, inputs, outputs = signature(func, "the CPU backend")
    with work.context:
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()

    scheduled = scheduled_for(work, schedules)
    seconds = run_stages(work, cpu_stages(schedules, scheduled=scheduled),
                         print_ir_after_all=print_ir_after_all, timing=timing)
    start = time.perf_counter()
    declared = _declared_functions(work)
    # The ExecutionEngine fails with builtins' RuntimeError (a global it
    # cannot emit, a symbol no library defines); the diagnostics say which.
    with tir.collecting_diagnostics(work.context) as diagnostics:
        try:
            engine = execution_engine.ExecutionEngine(work, opt_level=opt_level)
            _register_runtime_symbols(engine, declared)
            engine.initialize()
            # Code generation is lazy: look the entry up now so that it is part of
            # the compile (and its errors surface here), not of the first call.
            engine.lookup(name)
        except RuntimeError as e:
            raise CompileError(f"the JIT cannot compile @{name}: {e}", diagnostics) from None
    seconds["jit"] = time.perf_counter() - start
    # GPU schedules' kernels move vectors of their target's vector_bytes
    # (loop.vector_access); the CPU's own assume only aligned elements.
    target = targets.get(schedules)
    alignment = target.vector_bytes if target.kind == "cuda" else 1
    return CPUExecutable(engine, name, inputs, outputs, seconds, alignment)
