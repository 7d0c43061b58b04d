"""The pass pipelines of every target, stage by stage.

The stages are pass pipelines registered in C++ (``passes/Pipelines.cpp``)
with typed options; this module only names them and their options. A stage
is ``(name, pipeline)``; backends time each stage, and ``tessel-opt
--tessel-cuda-pipeline='chip=sm_90' model.mlir`` (or
``--tessel-cpu-pipeline``) replays a whole compile up to PTX (LLVM IR).
Targets share the graph, linalg, schedule and bufferization stages: every
target's kernels are tiled by ``loop.schedule`` ops, and the CPU can also
run a GPU target's schedules (:func:`cpu_stages` with a GPU target) to
check their semantics. Target facts (PTX features, the host's cores and
vector width) come from the C++ target table (the one :mod:`tessel.targets`
reads) when a pipeline is built.
"""

from __future__ import annotations

import sys
import time

from mlir import ir

from .. import _tessel
from .. import ir as tir
from ..dialects import loop
from ..errors import UnsupportedError

__all__ = ["cpu_stages", "cuda_stages", "default_schedule_stage", "run_stages", "scheduled_for"]

Stages = tuple[tuple[str, str], ...]


def _stage(name: str, pipeline: str, **options: str | bool) -> tuple[str, str]:
    """Stage ``name``: registered ``pipeline`` with ``options`` on the module."""
    text = " ".join(f"{k.replace('_', '-')}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in options.items())
    return name, f"builtin.module({pipeline}{{{text}}})" if text else f"builtin.module({pipeline})"


GRAPH = _stage("graph", "tessel-graph-pipeline")
BUFFERIZE = _stage("bufferize", "tessel-bufferize-pipeline")
CPU_LOWER = _stage("lower-to-llvm", "tessel-cpu-lower-pipeline")
# Schedules checked against the target's limits, nothing changed.
VALIDATE = _stage("validate", "loop-validate")


def linalg_stage(target: str) -> tuple[str, str]:
    """Kernels in linalg for ``target`` (``"cpu"`` or a GPU chip)."""
    return _stage("graph-to-linalg", "tessel-linalg-pipeline", target=target)


def default_schedule_stage(target: str, *, allow_tf32: bool = False) -> tuple[str, str]:
    """Kernels without a schedule get ``target``'s default one;
    ``allow_tf32`` puts f32 matmuls on tensor cores as tf32. CPU schedules
    are for this machine's vector registers (its target description)."""
    return _stage("default-schedule", "loop-default-schedule", target=target, allow_tf32=allow_tf32)


def cpu_stages(schedules: str = "cpu", *, scheduled: bool = False) -> Stages:
    """The CPU pipeline (``tessel-cpu-pipeline``) by stage. Kernels are
    tiled by their ``loop.schedule`` ops: the CPU's own
    (``schedules="cpu"``), or a GPU target's, whose semantics this checks on
    the CPU. A ``scheduled`` module skips the stages that made its
    schedules."""
    front = () if scheduled else (GRAPH, linalg_stage(schedules))
    return front + (_stage("schedule", "tessel-schedule-pipeline", target=schedules), BUFFERIZE, CPU_LOWER)


def cuda_stages(target: str, *, scheduled: bool = False, allow_tf32: bool = False) -> Stages:
    """The pipeline of GPU target ``target`` (``tessel-cuda-pipeline``) by
    stage; a ``scheduled`` module skips the stages that made its schedules."""
    front = () if scheduled else (GRAPH, linalg_stage(target))
    return front + (_stage("schedule", "tessel-schedule-pipeline", target=target, allow_tf32=allow_tf32),
                    BUFFERIZE, _stage("gpu", "tessel-gpu-lower-pipeline", target=target))


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


def run_stages(module: ir.Module, stages: Stages, *, print_ir_after_all: bool = False,
               timing: bool = False) -> dict[str, float]:
    """Runs ``stages`` on ``module`` in place; the seconds each took. With
    ``print_ir_after_all``, each stage's IR dumps follow a line naming it
    and its pipeline."""
    seconds: dict[str, float] = {}
    for stage, pipeline in stages:
        if print_ir_after_all:
            print(f"// ===== tessel stage '{stage}': {pipeline} =====", file=sys.stderr, flush=True)
        start = time.perf_counter()
        tir.run_passes(module, pipeline, print_ir_after_all=print_ir_after_all, timing=timing)
        seconds[stage] = time.perf_counter() - start
    return seconds
