"""Schedules as data: every kernel's ``loop.schedule``, its knobs and their domains.

:func:`default_schedules` gives a module as a target (the CPU or a GPU)
schedules it: the kernels in linalg, each with a ``loop.schedule`` op (the
target's default).
Its knobs are points of a search space: :func:`knobs` lists them with their
legal domains, :func:`with_knobs` sets values, :func:`sample` draws a random
point that the schedule validator accepts. ``tessel.compile`` (and, for a
GPU target's schedules, ``compile_cpu(..., schedules=target)``) take such a
module and run its schedules as they are.
"""

from __future__ import annotations

import json
import numbers
import random
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from mlir import ir

from . import _tessel, targets
from . import ir as tir
from .dialects import loop
from .backends.pipelines import GRAPH, VALIDATE, default_schedule_stage, linalg_stage, run_stages
from .errors import CompileError, UnsupportedError

__all__ = ["Entry", "Knob", "Primitive", "Schedule", "ValueList", "default_schedules", "is_legal", "knob_table", "knobs",
           "sample", "with_knobs"]

# (kernel, result or None, knob name): a knob's address in a module.
KnobKey = tuple[str, Optional[int], str]


@dataclass(frozen=True)
class Knob:
    """One tunable value of one schedule."""

    kernel: str
    result: Optional[int]  # the root's result index; None for the kernel's first root
    name: str
    value: int
    domain: Union[tuple[int, ...], range]  # choices, or range(lower, upper + 1, step)

    @property
    def key(self) -> KnobKey:
        return (self.kernel, self.result, self.name)


@dataclass(frozen=True)
class Entry:
    """One value of a primitive's list: a constant or a knob's (``knob``
    names it), and the extent of the kernel loop it cuts (None when it cuts
    none, or the loop is dynamic)."""

    knob: Optional[str]
    value: int
    extent: Optional[int]


@dataclass(frozen=True)
class ValueList:
    """A primitive's list of tunable values; ``name`` as printed ("" for the
    leading unnamed list, e.g. ``loop.tile``'s sizes)."""

    name: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Primitive:
    """One primitive of a schedule, in the order written; ``parallel`` for
    a ``loop.tile`` whose tiles run in parallel (or are mapped)."""

    op: str
    parallel: bool
    lists: tuple[ValueList, ...]


@dataclass(frozen=True)
class Schedule:
    """One ``loop.schedule`` as the ops state it (passes/loop/KnobTable.h)."""

    kernel: str
    result: Optional[int]
    target: str
    knobs: tuple[Knob, ...]
    primitives: tuple[Primitive, ...]


def knob_table(module: ir.Module) -> list[Schedule]:
    """Every schedule of ``module`` with its knobs and primitives, read from
    the ops (their TunableOpInterface), not from printed IR."""
    table = []
    for s in json.loads(_tessel.knob_table(module)):
        found = tuple(Knob(s["kernel"], s["result"], k["name"], k["value"],
                           tuple(k["choices"]) if "choices" in k
                           else range(k["lower"], k["upper"] + 1, k["step"]))
                      for k in s["knobs"])
        primitives = tuple(Primitive(p["op"], p.get("parallel", False), tuple(
            ValueList(v["name"], tuple(Entry(e.get("knob"), e["value"], e["extent"]) for e in v["entries"]))
            for v in p["lists"])) for p in s["primitives"])
        table.append(Schedule(s["kernel"], s["result"], s["target"], found, primitives))
    return table


def default_schedules(module: ir.Module, target: str = "sm_90", *, allow_tf32: bool = False) -> ir.Module:
    """A copy of graph module ``module`` with its kernels in linalg and the
    default ``loop.schedule`` of ``target`` (``"cpu"`` or a chip in
    :func:`tessel.targets.names`) for each; ``allow_tf32`` as in :func:`tessel.compile`."""
    if target not in targets.names():
        raise UnsupportedError(f"unknown target {target!r}; available: {', '.join(targets.names())}")
    work = _copy(module)
    run_stages(work, (GRAPH, linalg_stage(target), default_schedule_stage(target, allow_tf32=allow_tf32)))
    return work


def knobs(module: ir.Module) -> list[Knob]:
    """Every knob of every schedule in ``module``, in order."""
    return [k for schedule in knob_table(module) for k in schedule.knobs]


def with_knobs(module: ir.Module, values: Mapping[KnobKey, int]) -> ir.Module:
    """A copy of ``module`` with the knobs at ``values`` (keyed by
    :attr:`Knob.key`) set; a value outside its domain is a CompileError
    from the knob's verifier, a key that names no knob an UnsupportedError."""
    for key, value in values.items():
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not -2**63 <= value < 2**63:
            raise ValueError(f"knob {key}: the value must be a 64-bit integer, not {value!r}")
    work = _copy(module)
    remaining = dict(values)
    with work.context:
        for schedule, kernel, result in _schedules(work):
            for op in schedule.regions[0].blocks[0].operations:
                if not isinstance(op, loop.KnobOp):
                    continue
                key = (kernel, result, op.name.value)
                if key in remaining:
                    op.attributes["value"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                remaining.pop(key))
    if remaining:
        raise UnsupportedError(f"no knob {sorted(remaining)[0]} in this module")
    tir.verify(work)  # the knobs' verifiers check the new values
    return work


def sample(module: ir.Module, rng: random.Random, *, tries: int = 64) -> ir.Module:
    """A copy of ``module`` whose knobs, schedule by schedule, are drawn
    uniformly from their domains until the validator accepts them (a
    schedule keeps its values after ``tries`` rejected draws)."""
    current = module
    by_schedule: dict[tuple[str, Optional[int]], list[Knob]] = {}
    for knob in knobs(module):
        by_schedule.setdefault((knob.kernel, knob.result), []).append(knob)
    for group in by_schedule.values():
        for _ in range(tries):
            candidate = with_knobs(current, {k.key: rng.choice(k.domain) for k in group})
            if is_legal(candidate):
                current = candidate
                break
    return current if current is not module else _copy(module)


def is_legal(module: ir.Module) -> bool:
    """Whether the schedule validator accepts ``module``'s schedules."""
    try:
        run_stages(_copy(module), (VALIDATE,))
    except CompileError:
        return False
    return True


def _schedules(module: ir.Module) -> Sequence[tuple[loop.ScheduleOp, str, Optional[int]]]:
    return [(op, op.kernel.value, op.result.value if op.result is not None else None)
            for op in module.body.operations if isinstance(op, loop.ScheduleOp)]


def _copy(module: ir.Module) -> ir.Module:
    return tir.clone(module)
