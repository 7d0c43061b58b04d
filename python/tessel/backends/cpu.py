"""CPU backend: graph -> kernels of linalg -> tiled, vectorized, bufferized code -> LLVM JIT.

``STAGES`` (from :mod:`.pipelines`) is the whole pipeline: graph passes and kernel outlining; lowering
to linalg; each kernel's ``loop.schedule`` (the CPU's default unless given)
tiles it (scf.forall), fuses it and vectorizes its matmul; bufferization with a generated host program that reuses
buffers; then the tiles become async-runtime tasks and everything lowers to
LLVM, whose machine code is made in parallel parts (``python/capi/HostCode.cpp``)
and linked into the process. The persistent compile cache (:mod:`tessel.cache`)
keeps that code: a compile it has seen skips every stage. docs/architecture.md
lists the passes.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import json
import math
import sys
import threading
import time
from typing import Any, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from .. import _tessel, cache as caching, dlpack, shapes
from .. import ir as tir
from ..dtypes import described, host_array
from ..tools import mlir_runtime_library
from ..errors import CompileError, UnsupportedError
from .. import targets
from .pipelines import cpu_stages, run_stages, scheduled_for
from .signature import TensorSpec, entry_function, signature, size_ranges

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


def _library_symbols(names: Sequence[str]) -> dict[str, int]:
    """The address of each of ``names`` that a runtime library defines and
    neither the async runtime (which ``_link`` binds whole) nor the process
    (libc, libm) does. The runtime libraries are loaded only for a name the
    process lacks (loading them took 40 ms, half a cached compile)."""
    symbols = {}
    process = ctypes.CDLL(None)
    for name in names:
        if name in _async_runtime_symbols() or hasattr(process, name):
            continue
        for lib in _runtime_libraries():
            try:
                symbols[name] = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
            except AttributeError:
                continue
            break
    return symbols


def _link(objects: Sequence[bytes], declared: Sequence[str], entry: str) -> tuple[Any, int]:
    """``objects`` linked into the process, and the address of ``entry``'s C
    interface; RuntimeError with why when they cannot be."""
    # All of the runtime's, declared or not: LLVM turns a malloc whose block
    # is then zeroed into a calloc that no module declares, and every block
    # the code frees must come from the runtime's heap.
    symbols = {**_async_runtime_symbols(), **_library_symbols(declared)}
    jit = _tessel.ObjectJIT(list(objects), symbols)
    return jit, jit.lookup("_mlir_ciface_" + entry)


def _partitions() -> int:
    """Parts the machine code is made in: two per core, since the parts are
    uneven (the part holding the weights, or the largest kernel, takes
    longest) and smaller modules also optimise faster (the example block on
    two cores: 1.4 s whole, 0.9 s in 2 parts, 0.7 s in 4). The cores are the
    CPU target's, as the async runtime's workers are."""
    return 2 * targets.get("cpu").cores


# Seconds a dropped executable's machine code is kept. The async runtime wakes
# the caller of a parallel loop before its worker threads have returned from
# the JIT-compiled task function, so freeing the code right after a call can
# pull it from under a worker (seen as segfaults after dropping an
# executable). Workers leave that code within microseconds.
_RETIRE_AFTER = 1.0
_retired: collections.deque[tuple[float, Any]] = collections.deque()


def _retire(jit: Any) -> None:
    """Frees code dropped more than ``_RETIRE_AFTER`` s ago and keeps ``jit``'s."""
    now = time.monotonic()
    while _retired and now - _retired[0][0] > _RETIRE_AFTER:
        _retired.popleft()
    _retired.append((now, jit))


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
    """One thread's arguments to an entry function's C interface: a memref
    descriptor per argument, with the signature's shape and strides, whose
    data pointers each call sets; ``pointers`` are their addresses, the
    arguments of the call. Built once: building descriptors on every call
    cost more than a small kernel's run. Over size symbols, the
    descriptors' shapes are set when a call's argument shapes differ from
    the last call's (``arguments``), and ``results`` are the results' shapes
    then: a call at the sizes of the one before binds no symbols.

    ``pools`` holds the thread's result buffers, per result [buffer, its
    aligned address, the array last returned in it, that array's _Lease]:
    per thread, so that no lock is taken. ``fast`` is the C++ path of the
    common call (``_tessel.CpuCall``), where the executable's types allow it."""

    __slots__ = ("descriptors", "pointers", "arguments", "results", "pools", "fast")

    def __init__(self, specs: Sequence[TensorSpec], outputs: int, entry: int, alignment: int) -> None:
        self.arguments: tuple[tuple[int, ...], ...] = ()
        self.results: list[tuple[int, ...]] = []
        self.descriptors = [_descriptor_type(len(spec.shape))() for spec in specs]
        for spec, descriptor in zip(specs, self.descriptors):
            if spec.is_static:
                self.shape(descriptor, spec.shape)
        self.pointers = tuple(map(ctypes.addressof, self.descriptors))
        self.pools: tuple[list[list[Any]], ...] = tuple([] for _ in range(outputs))
        self.fast = None
        formats = [_buffer_format(spec.dtype) for spec in specs]
        # Bool arguments are converted (any nonzero byte made 1) by the Python path.
        if None not in formats and len(specs) <= _tessel.CPU_CALL_MAX_ARGUMENTS and not any(
                spec.dtype == np.bool_ for spec in specs[:len(specs) - outputs]):
            self.fast = _tessel.CpuCall(entry, list(self.pointers), np.ndarray, formats,
                                        [spec.dtype.itemsize for spec in specs], len(specs) - outputs,
                                        alignment, list(self.pools))
            if all(spec.is_static for spec in specs):
                self.fast.set_shapes([list(spec.shape) for spec in specs])

    @staticmethod
    def shape(descriptor: ctypes.Structure, shape: Sequence[int]) -> None:
        """Sets a descriptor's shape and its row-major strides, in elements."""
        descriptor.shape[:] = shape
        stride = 1
        for d in range(len(shape) - 1, -1, -1):
            descriptor.strides[d] = stride
            stride *= shape[d]


@functools.cache
def _buffer_format(dtype: np.dtype) -> str | None:
    """The buffer protocol's format of ``dtype``'s arrays, None where numpy
    exports none (ml_dtypes' bfloat16)."""
    try:
        return memoryview(np.empty(1, dtype)).format
    except (TypeError, ValueError):
        return None


# Result buffers start at a cache line, so that kernels store whole lines.
RESULT_ALIGNMENT = 64
# Buffers kept per result for reuse: two serve ``y = exe(x)`` in a loop,
# where the previous result is still referenced during the call.
POOLED_RESULTS = 2


class _Lease:
    """The base of a result array in a pooled buffer. numpy makes it the base
    of every view of the array too (it skips arrays that do not own their
    memory), so the array and its lease referenced by the pool alone mean
    that nothing returned from the buffer is alive."""

    __slots__ = ("__array_interface__", "buffer")

    def __init__(self, buffer: np.ndarray, address: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.buffer = buffer
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "data": (address, False), "version": 3}


class CPUExecutable:
    """A compiled entry function; call it with arrays, get numpy arrays back.

    Each result's memory comes from a small pool that the executable keeps
    (``POOLED_RESULTS`` buffers per result and calling thread) and reuses once nothing
    references it any more: no array returned earlier, nor any view of one
    or object exported from one (DLPack, buffer protocol). A result above
    32 MiB would otherwise be a fresh mmap on every call, whose pages the
    kernel zeroes on first touch (4096x4096 softmax on the 2-core VM: 26 ms
    with a fresh result per call, 16-20 ms with pooled ones).

    A function with size symbols (``inputs``' and ``outputs``' shapes name
    them, ``ranges`` bounds them) takes any sizes in their ranges: each call
    reads the symbols' values from the arguments' dims, checks them
    (ValueError naming the argument, the dim, the value and the range) and
    sizes the results with them.

    ``stage_seconds`` is the time of each compile stage; ``cache`` says
    whether the machine code came from the compile cache (``"hit"``: then
    the one stage is ``"cache"``), was made and stored there (``"miss"``),
    or the cache was not used (``"off"``); ``cache_key`` is its key.
    """

    def __init__(self, jit: Any, address: int, name: str,
                 inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 stage_seconds: dict[str, float], alignment: int,
                 ranges: dict[str, shapes.DimRange] | None = None) -> None:
        self._jit = jit
        # What each input's address must be a multiple of.
        self._alignment = alignment
        # The C interface takes a pointer to a memref descriptor per argument.
        self._entry = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (len(inputs) + len(outputs)))(address)
        self.name = name
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.stage_seconds = dict(stage_seconds)
        self.cache = "off"
        self.cache_key: str | None = None
        # Where each schedule came from when compiled with a tuning database.
        self.tuning: dict[str, str] = {}
        self.ranges = dict(ranges or {})
        # Per argument and result, its dims as ints and size trees: None
        # when all are static.
        self._sizes = None
        if not all(spec.is_static for spec in self.inputs + self.outputs):
            self._sizes = [spec.sizes() for spec in self.inputs + self.outputs]
        self._address = address
        self._frames = threading.local()

    def __del__(self) -> None:
        jit = getattr(self, "_jit", None)
        if jit is not None:
            _retire(jit)

    def _fits(self, spec: TensorSpec, shape: tuple[int, ...]) -> bool:
        """Whether an argument of ``shape`` fits ``spec``: its shape, or, over
        size symbols, its rank and static dims (bind checks the symbols)."""
        if self._sizes is None:
            return shape == spec.shape
        return len(shape) == len(spec.shape) and all(
            type(d) is not int or d == n for d, n in zip(spec.shape, shape))

    def _check(self, index: int, value: Any) -> tuple[np.ndarray, int]:
        """Argument ``index`` as a C-contiguous array, and its address. A contiguous numpy
        array or CPU ``__dlpack__`` object (a torch tensor) is used in place;
        a strided one is copied, as is one at an address that is not a
        multiple of the kernels' alignment or of its itemsize, one of the
        other byte order (converted, as numpy would) and a bool one (any
        nonzero byte made 1: kernels do not read numpy's bool as numpy does)."""
        spec = self.inputs[index]
        if type(value) is np.ndarray and value.dtype == spec.dtype and spec.dtype != np.bool_:
            flags = value.flags
            if flags.c_contiguous and flags.aligned and self._fits(spec, value.shape):
                # The common case, used in place: what follows checks and converts the others.
                address = _tessel.buffer_address(value)
                if not address % self._alignment:
                    return value, address
        array = value
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            try:
                array = dlpack.read(value).numpy()
            except Exception as e:  # noqa: BLE001 - producers raise BufferError, RuntimeError, ...
                device = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else "unknown"
                raise ValueError(f"{self.name}: argument {index} (DLPack device {device}) cannot be read as CPU "
                                 f"memory: {e}") from None
        array = np.asarray(array)
        if array.dtype.newbyteorder("=") != spec.dtype or not self._fits(spec, array.shape):
            raise ValueError(f"{self.name}: argument {index} must be {spec}, "
                             f"got {described(array.dtype)}{list(array.shape)}")
        array = host_array(array, spec.dtype)
        address = array.ctypes.data
        if address % self._alignment or not array.flags.aligned:
            array = array.copy()
            address = array.ctypes.data
        return array, address

    def _result(self, frame: _Frame, index: int, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """An array of ``shape`` for result ``index`` and its address, in a
        buffer of the thread's pool (large enough, whose last array nothing
        references) when there is one: that array itself when it has the shape."""
        dtype = self.outputs[index].dtype
        size = math.prod(shape) * dtype.itemsize
        pool = frame.pools[index]
        entry = free = None
        for k, e in enumerate(pool):
            # The array referenced by the pool alone, its lease by the pool
            # and the array (each also by getrefcount's argument): no array
            # returned earlier, nor a view of one or an object exported
            # from either (DLPack, buffer protocol), is left.
            if e[2] is None or sys.getrefcount(e[2]) <= 2 and sys.getrefcount(e[3]) <= 3:
                if len(e[0]) >= size + RESULT_ALIGNMENT:
                    entry = e
                    break
                free = k if free is None else free
        if entry is None:
            buffer = np.empty(size + RESULT_ALIGNMENT, np.uint8)
            entry = [buffer, buffer.ctypes.data + -buffer.ctypes.data % RESULT_ALIGNMENT, None, None]
            if len(pool) < POOLED_RESULTS:
                pool.append(entry)
            elif free is not None:  # a free buffer too small for this size: the new one replaces it
                pool[free] = entry
        array = entry[2]
        # Made again where a caller changed it in place before dropping it.
        if array is None or array.shape != shape or array.dtype != dtype or not array.flags.writeable:
            entry[3] = _Lease(entry[0], entry[1], shape, dtype)
            array = np.asarray(entry[3])
            # A dtype numpy does not name in a typestr (ml_dtypes' bfloat16 is '<V2') is viewed as itself.
            entry[2] = array = array if array.dtype == dtype else array.view(dtype)
        return array, entry[1]

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        frame = getattr(self._frames, "frame", None)
        if frame is not None and frame.fast is not None:
            results = frame.fast(*args)
            if results is not None:
                return results
        if len(args) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arguments, got {len(args)}")
        # Arrays and addresses; the arrays stay referenced until the call returns.
        arguments = [self._check(i, a) for i, a in enumerate(args)]
        if frame is None:
            frame = self._frames.frame = _Frame(self.inputs + self.outputs, len(self.outputs), self._address,
                                                self._alignment)
        if self._sizes is None:
            results = [self._result(frame, i, spec.shape) for i, spec in enumerate(self.outputs)]
        else:
            argument_shapes = tuple(array.shape for array, _ in arguments)
            if argument_shapes != frame.arguments:  # new sizes: bind them, set the descriptors' shapes and strides
                values = shapes.bind(self.name, self._sizes[:len(self.inputs)], argument_shapes, self.ranges)
                frame.results = [tuple(shapes.evaluate(d, values) for d in sizes)
                                 for sizes in self._sizes[len(self.inputs):]]
                for descriptor, shape in zip(frame.descriptors, argument_shapes + tuple(frame.results)):
                    frame.shape(descriptor, shape)
                frame.arguments = argument_shapes
                if frame.fast is not None:
                    frame.fast.set_shapes([list(s) for s in argument_shapes + tuple(frame.results)])
            results = [self._result(frame, i, shape) for i, shape in enumerate(frame.results)]
        for descriptor, (_, address) in zip(frame.descriptors, arguments + results):
            descriptor.allocated = descriptor.aligned = address
        self._entry(*frame.pointers)
        return results[0][0] if len(results) == 1 else tuple(r for r, _ in results)


def _cache_key(module: ir.Module, name: str, opt_level: int, schedules: str) -> str:
    """The compile cache's key of compiling ``module``'s ``name``: the module
    as given (kernels, schedules and knob values, weights), the targets the
    code is for (the schedules' and this CPU's description), the options and
    pipelines, and the compiler's build."""
    return caching.key(
        "cpu", caching.build_identity(), name, str(opt_level), schedules,
        json.dumps(targets.get(schedules).to_json(), sort_keys=True),
        json.dumps(targets.get("cpu").to_json(), sort_keys=True),
        repr(cpu_stages(schedules)), repr(cpu_stages(schedules, scheduled=True)),
        caching.module_bytes(module))


def _linked_payload(payload: bytes, name: str) -> tuple[Any, int]:
    """The code of a cache payload linked: ValueError if it is not one for
    ``name``, RuntimeError if it does not link."""
    metadata, objects = caching.unpack(payload)
    if metadata.get("entry") != name or not isinstance(metadata.get("symbols"), list):
        raise ValueError("the entry is for another function")
    return _link(objects, [str(s) for s in metadata["symbols"]], name)


def compile_cpu(module: ir.Module, *, entry: str | None = None, opt_level: int = 2,
                schedules: str = "cpu", cache: caching.CompileCache | None = None,
                print_ir_after_all: bool = False, timing: bool = False) -> CPUExecutable:
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
    With a ``cache``, machine code it holds for the same compile is linked
    instead of made, and code made is stored there; ``print_ir_after_all``
    and ``timing``, which are about the passes, compile without it.
    ``module`` is not modified.
    ``stage_seconds`` on the result records the time of each stage plus the
    machine code's (``"jit"``: made and linked) and the cache's.
    """
    if schedules not in targets.names():
        raise UnsupportedError(
            f"unknown target {schedules!r} for schedules; available: {', '.join(targets.names())}")
    work = tir.clone(module)
    func = entry_function(work, entry)
    name, inputs, outputs = signature(func, "the CPU backend", symbolic=True)
    ranges = size_ranges(func)
    # GPU schedules' kernels move vectors of their target's vector_bytes
    # (loop.vector_access); the CPU's own assume only aligned elements.
    target = targets.get(schedules)
    alignment = target.vector_bytes if target.kind == "cuda" else 1
    if print_ir_after_all or timing:
        cache = None
    seconds: dict[str, float] = {}
    if cache is not None:
        start = time.perf_counter()
        key = _cache_key(work, name, opt_level, schedules)
        linked = cache.load("cpu", key, functools.partial(_linked_payload, name=name))
        seconds["cache"] = time.perf_counter() - start
        if linked is not None:
            compiled = CPUExecutable(*linked, name, inputs, outputs, seconds, alignment, ranges)
            compiled.cache, compiled.cache_key = "hit", key
            return compiled
    with work.context:
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()

    scheduled = scheduled_for(work, schedules)
    seconds.update(run_stages(work, cpu_stages(schedules, scheduled=scheduled),
                              print_ir_after_all=print_ir_after_all, timing=timing))
    start = time.perf_counter()
    declared = _declared_functions(work)
    # Translation reports what it cannot translate as diagnostics; linking
    # fails on a symbol nothing defines.
    with tir.collecting_diagnostics(work.context) as diagnostics:
        try:
            objects = _tessel.emit_host_objects(work, opt_level, _partitions())
            # Linked now, so that its errors surface here, not at the first call.
            jit, address = _link(objects, declared, name)
        except RuntimeError as e:
            raise CompileError(f"cannot make machine code for @{name}: {e}", diagnostics) from None
    seconds["jit"] = time.perf_counter() - start
    compiled = CPUExecutable(jit, address, name, inputs, outputs, seconds, alignment, ranges)
    if cache is not None:
        start = time.perf_counter()
        cache.put("cpu", key, caching.pack({"entry": name, "symbols": declared}, objects))
        seconds["cache"] += time.perf_counter() - start
        compiled.stage_seconds = seconds
        compiled.cache, compiled.cache_key = "miss", key
    return compiled
