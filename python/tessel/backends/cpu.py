"""CPU backend: graph -> kernels of linalg -> tiled, vectorized, bufferized code -> LLVM JIT.

``STAGES`` is the whole pipeline: graph passes and kernel outlining; lowering
to linalg with each kernel tiled (scf.forall), fused and its matmuls
vectorized; bufferization with a generated host program that reuses
buffers; then the tiles become async-runtime tasks and everything lowers to
LLVM for the ExecutionEngine. docs/architecture.md lists the passes.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from mlir import execution_engine, ir
from mlir import runtime as mlir_runtime

from .. import ir as tir
from ..tools import mlir_runtime_library
from ..errors import UnsupportedError

__all__ = ["TensorSpec", "CPUExecutable", "STAGES", "compile_cpu"]

# (name, pass pipeline) in order; each is timed and can be replayed with
# tessel-opt --pass-pipeline.
STAGES: tuple[tuple[str, str], ...] = (
    (
        "graph",
        "builtin.module(graph-decompose,canonicalize,cse,"
        "func.func(graph-form-fusion-groups),graph-outline-kernels)",
    ),
    (
        "graph-to-linalg",
        "builtin.module(graph-to-linalg,canonicalize,cse,"
        "func.func(cpu-fuse-elementwise),canonicalize,"
        # 8x16 accumulators are 16 AVX2 registers; the fastest of the
        # register blocks tried on 1024^3 (4x16, 8x8, 2x32, 4x32, 8x32, 16x16).
        "func.func(cpu-tile-and-fuse,cpu-vectorize-matmul{register-tile=8,16,8}),canonicalize,cse,"
        "host-dedupe-kernel-results)",
    ),
    (
        "bufferize",
        "builtin.module(one-shot-bufferize{bufferize-function-boundaries "
        "function-boundary-type-conversion=identity-layout-map},"
        "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
        "func.func(buffer-hoisting),buffer-deallocation-pipeline,"
        "func.func(optimize-allocation-liveness,host-reuse-buffers))",
    ),
    (
        "lower-to-llvm",
        "builtin.module(func.func(scf-forall-to-parallel),convert-linalg-to-loops,"
        "convert-vector-to-scf{full-unroll},"
        # Tiles of a kernel's scf.forall become tasks of MLIR's async runtime.
        f"async-parallel-for{{num-workers={os.cpu_count() or 1} min-task-size=1}},"
        "async-to-async-runtime,async-runtime-ref-counting,async-runtime-ref-counting-opt,"
        "expand-strided-metadata,lower-affine,cpu-approximate-math,"
        "convert-math-to-llvm,convert-math-to-libm,convert-async-to-llvm,convert-scf-to-cf,"
        "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
        "convert-to-llvm,reconcile-unrealized-casts)",
    ),
)

# memrefCopy (copies between strided views) and the async task runtime.
RUNTIME_LIBRARIES = ("mlir_c_runner_utils", "mlir_async_runtime")


@functools.cache
def _load_runtime_libraries() -> None:
    """Makes the runtime libraries' symbols visible to every JIT in the process.

    They are loaded once, globally, rather than passed to each
    ExecutionEngine: an engine tears down the async runtime it was given when
    it is destroyed, which would break every other live executable.
    """
    for lib in RUNTIME_LIBRARIES:
        ctypes.CDLL(str(mlir_runtime_library(lib)), mode=ctypes.RTLD_GLOBAL)

_DTYPES = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}


@dataclass(frozen=True)
class TensorSpec:
    """Shape and numpy dtype of one argument or result."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"


def _spec(t: ir.Type, what: str) -> TensorSpec:
    if not isinstance(t, ir.RankedTensorType):
        raise UnsupportedError(f"{what} has type {t}; the CPU backend takes ranked tensors only")
    tensor = t
    if not tensor.has_static_shape:
        raise UnsupportedError(f"{what} has dynamic shape {t}; the CPU backend needs static shapes")
    element = str(tensor.element_type)
    if element not in _DTYPES:
        raise UnsupportedError(
            f"{what} has element type {element}; the CPU backend runs {', '.join(_DTYPES)}"
        )
    return TensorSpec(tuple(tensor.shape), _DTYPES[element])


def _entry_function(module: ir.Module, entry: str | None) -> Any:
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    public = [f for f in funcs if "sym_visibility" not in f.attributes]
    if entry is not None:
        match = [f for f in funcs if ir.StringAttr(f.attributes["sym_name"]).value == entry]
        if not match:
            raise UnsupportedError(f"no function named {entry!r} in the module")
        return match[0]
    if len(public) != 1:
        names = [ir.StringAttr(f.attributes["sym_name"]).value for f in public]
        raise UnsupportedError(f"the module has public functions {names}; pass entry= to choose one")
    return public[0]


# Seconds a dropped executable's JIT code is kept. MLIR's async runtime wakes
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


class CPUExecutable:
    """A compiled entry function; call it with arrays, get numpy arrays back."""

    def __init__(self, engine: execution_engine.ExecutionEngine, name: str,
                 inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 stage_seconds: dict[str, float]) -> None:
        self._engine = engine
        self.name = name
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.stage_seconds = dict(stage_seconds)

    def __del__(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is not None:
            _retire(engine)

    def _check(self, index: int, value: Any) -> np.ndarray:
        spec = self.inputs[index]
        array = np.from_dlpack(value) if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray) else value
        array = np.asarray(array)
        got = TensorSpec(array.shape, array.dtype)
        if got != spec:
            raise ValueError(f"{self.name}: argument {index} must be {spec}, got {got}")
        return np.ascontiguousarray(array)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        if len(args) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arguments, got {len(args)}")
        arrays = [self._check(i, a) for i, a in enumerate(args)]
        results = [np.empty(s.shape, s.dtype) for s in self.outputs]
        pointers = [
            ctypes.pointer(ctypes.pointer(mlir_runtime.get_ranked_memref_descriptor(a)))
            for a in arrays + results
        ]
        self._engine.invoke(self.name, *pointers)
        return results[0] if len(results) == 1 else tuple(results)


def compile_cpu(module: ir.Module, *, entry: str | None = None, opt_level: int = 2,
                print_ir_after_all: bool = False, timing: bool = False) -> CPUExecutable:
    """Compiles the entry function of a graph module for this CPU.

    ``opt_level`` is LLVM's; 2 rather than 3 because O3's unrolling of the
    vectorized matmul loops made the JIT ~7x slower and the kernels slower
    too (256x256x1024: 0.5 s and 4.6 ms at O2, 3.3 s and 7.5 ms at O3).
    ``module`` is not modified. ``stage_seconds`` on the result records the
    time of each stage in ``STAGES`` plus the JIT.
    """
    text = module.operation.get_asm(enable_debug_info=True)
    work = tir.parse(text, ctx=module.context, source_name="<compile>")
    func = _entry_function(work, entry)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [_spec(t, f"argument {i} of @{name}") for i, t in enumerate(ftype.inputs)]
    outputs = [_spec(t, f"result {i} of @{name}") for i, t in enumerate(ftype.results)]
    with work.context:
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()

    seconds: dict[str, float] = {}
    for stage, pipeline in STAGES:
        start = time.perf_counter()
        tir.run_passes(work, pipeline, print_ir_after_all=print_ir_after_all, timing=timing)
        seconds[stage] = time.perf_counter() - start
    start = time.perf_counter()
    _load_runtime_libraries()
    engine = execution_engine.ExecutionEngine(work, opt_level=opt_level)
    engine.initialize()
    # Code generation is lazy: look the entry up now so that it is part of
    # the compile (and its errors surface here), not of the first call.
    engine.lookup(name)
    seconds["jit"] = time.perf_counter() - start
    return CPUExecutable(engine, name, inputs, outputs, seconds)
