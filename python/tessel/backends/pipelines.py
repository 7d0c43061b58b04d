"""The pass pipelines of every target, stage by stage.

A stage is ``(name, pipeline)``; backends time each stage and any stage can
be replayed with ``tessel-opt --pass-pipeline='<pipeline>'``. Targets share
the graph, linalg, schedule and bufferization stages: every target's kernels
are tiled by ``loop.schedule`` ops, and the CPU can also run a GPU target's
schedules (:func:`cpu_stages` with a GPU target) to check their semantics.
"""

from __future__ import annotations

import time

from mlir import ir

from .. import _tessel
from .. import ir as tir
from .. import targets
from ..dialects import loop
from ..errors import UnsupportedError

__all__ = ["cpu_stages", "cuda_stages", "default_schedule_pass", "run_stages", "scheduled_for"]

Stages = tuple[tuple[str, str], ...]

GRAPH = (
    "graph",
    "builtin.module(graph-decompose,canonicalize,cse,"
    "func.func(graph-form-fusion-groups),graph-outline-kernels)",
)


def linalg_stage(target: str) -> tuple[str, str]:
    """Kernels in linalg for ``target`` (``"cpu"`` or a GPU chip). On GPUs
    convolutions read their padding through bounds tests: a padded copy of
    the input would run in one thread. The CPU copies, which is faster than
    testing each element of the patches."""
    fold = "" if target == "cpu" else "{fold-padding}"
    # CPU reductions over several axes as one loop, for loop.split_reduction.
    collapse = "cpu-collapse-reductions," if target == "cpu" else ""
    return (
        "graph-to-linalg",
        "builtin.module(graph-to-linalg,canonicalize,cse,"
        f"func.func(cpu-fuse-elementwise,{collapse}linalg-im2col{fold},linalg-sink-reshapes),canonicalize,"
        "host-dedupe-kernel-results)",
    )


BUFFERIZE = (
    "bufferize",
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
    "func.func(buffer-hoisting,buffer-loop-hoisting),buffer-deallocation-pipeline,"
    "func.func(optimize-allocation-liveness,host-reuse-buffers))",
)

def cpu_lower() -> tuple[str, str]:
    """Buffers to LLVM for this machine: its cores, vector registers and
    (x86) non-temporal stores, from the ``cpu`` target description."""
    cpu = targets.get("cpu")
    # Non-temporal stores skip the write-allocate read (0: none).
    streaming = cpu.vector_bits if cpu.has("non_temporal_stores") else 0
    return (
        "lower-to-llvm",
        "builtin.module(func.func(loop-vector-access),cpu-serialize-inner-foralls,func.func(scf-forall-to-parallel),"
        "cpu-expand-strided-copies,func.func(cpu-interchange-reductions,loop-unroll),"
        # Large results written past the caches (x86: movntps).
        f"func.func(cpu-streaming-stores{{vector-bits={streaming}}}),convert-linalg-to-loops,"
        "convert-vector-to-scf{full-unroll},"
        # Tiles of a kernel's scf.forall become tasks of MLIR's async runtime.
        f"async-parallel-for{{num-workers={cpu.cores} min-task-size=1}},"
        "async-to-async-runtime,async-runtime-ref-counting,async-runtime-ref-counting-opt,"
        "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},arith-expand{include-bf16},"
        "expand-strided-metadata,lower-affine,cpu-approximate-math,"
        "convert-math-to-llvm,convert-math-to-libm,convert-async-to-llvm,convert-scf-to-cf,"
        "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
        "convert-to-llvm,reconcile-unrealized-casts,"
        # Loops left to LLVM's vectorizer at the width the schedules use.
        f"cpu-prefer-vector-width{{bits={cpu.vector_bits}}})",
    )


def default_schedule_pass(target: str, *, allow_tf32: bool = False) -> str:
    """The pass giving kernels without a schedule ``target``'s default one;
    ``allow_tf32`` puts f32 matmuls on tensor cores as tf32. CPU schedules
    are for this machine's vector registers (its target description)."""
    return f"loop-default-schedule{{target={target} allow-tf32={str(allow_tf32).lower()}}}"


def schedule(target: str, *, allow_tf32: bool = False) -> tuple[str, str]:
    """Default schedules for kernels that have none, validated, then applied;
    on the CPU, gathers then read their index once per row."""
    rows = "func.func(cpu-gather-rows),canonicalize," if target == "cpu" else ""
    return (
        "schedule",
        f"builtin.module({default_schedule_pass(target, allow_tf32=allow_tf32)},loop-validate,"
        f"loop-apply-schedule,canonicalize,{rows}cse)",
    )


def gpu_lower(target: str) -> tuple[str, str]:
    """Mapped loops to launches, outlined kernels, NVVM, PTX."""
    chip = targets.get(target)
    return (
        "gpu",
        "builtin.module(func.func(gpu-lower-mma,gpu-distribute-rows,loop-vector-access,loop-unroll),gpu-map-kernels,canonicalize,"
        "gpu-launch-sink-index-computations,"
        "gpu-kernel-outlining,canonicalize,"
        f"nvvm-attach-target{{chip={chip.chip} features={chip.ptx_features} O=3}},"
        # Only kernels are lowered: views between launches stay views for
        # the host program. One pointer per (static) memref argument.
        "gpu.module(convert-linalg-to-loops,gpu-lower-bf16-mma-sync,convert-nvgpu-to-nvvm,expand-strided-metadata,lower-affine,"
        "convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv},gpu-extern-dynamic-shared,canonicalize,cse),"
        "reconcile-unrealized-casts,gpu-module-to-binary{format=isa})",
    )


def scheduled_for(module: ir.Module, target: str) -> bool:
    """Whether ``module`` is already scheduled: kernels in linalg with
    ``loop.schedule`` ops (as :func:`tessel.schedules.default_schedules`
    gives them), so that compiling starts at the schedule stage. Its
    schedules must name ``target``."""
    named = {_tessel.target_name(op.target) for op in module.body.operations if isinstance(op, loop.ScheduleOp)}
    if named - {target}:
        raise UnsupportedError(f"the module's schedules are for {', '.join(sorted(named))}, "
                               f"not {target}")
    return bool(named)


def cpu_stages(schedules: str = "cpu", *, scheduled: bool = False) -> Stages:
    """The CPU pipeline. Kernels are tiled by their ``loop.schedule`` ops:
    the CPU's own (``schedules="cpu"``), or a GPU target's, whose semantics
    this checks on the CPU. A ``scheduled`` module skips the stages that
    made its schedules."""
    front = () if scheduled else (GRAPH, linalg_stage(schedules))
    return front + (schedule(schedules), BUFFERIZE, cpu_lower())


def cuda_stages(target: str, *, scheduled: bool = False, allow_tf32: bool = False) -> Stages:
    """The pipeline of GPU target ``target`` (see :mod:`tessel.targets`); a ``scheduled``
    module skips the stages that made its schedules."""
    front = () if scheduled else (GRAPH, linalg_stage(target))
    return front + (schedule(target, allow_tf32=allow_tf32), BUFFERIZE, gpu_lower(target))


def run_stages(module: ir.Module, stages: Stages, *, print_ir_after_all: bool = False,
               timing: bool = False) -> dict[str, float]:
    """Runs ``stages`` on ``module`` in place; the seconds each took."""
    seconds: dict[str, float] = {}
    for stage, pipeline in stages:
        start = time.perf_counter()
        tir.run_passes(module, pipeline, print_ir_after_all=print_ir_after_all, timing=timing)
        seconds[stage] = time.perf_counter() - start
    return seconds
