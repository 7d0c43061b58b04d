"""Features of a schedule candidate, from its knobs and its kernel's IR.

The cost model sees a candidate as named numbers, so that one model serves
every kernel of a tuning run (what it learns on one matmul carries over to
the next, as in Ansor): the kernel's loop extents (of its root and of its
contraction, read from the linalg ops' indexing maps and operand shapes),
each knob's value, products of pairs of knobs, and, where a knob cuts a
loop of known extent, how many pieces that makes and how much padding the
last one adds. The parallel tiling adds its number of tasks, the share of
workers they keep busy and the points of one tile. Sizes enter as log2
(tiles act multiplicatively).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from mlir import ir
from mlir.dialects import linalg

from .. import shapes
from ..backends.signature import symbolic_shape
from ..dtypes import ELEMENT_DTYPES
from ..schedules import Entry, Primitive, knob_table

if TYPE_CHECKING:
    from .search import Task

__all__ = ["CandidateFeatures", "Features", "KernelInfo", "kernel_info", "schedule_features"]

Features = dict[str, float]


@dataclass(frozen=True)
class KernelInfo:
    """What the features need of one task's kernel: its root's loop extents
    (over size symbols at the task's measured sizes; 0 where unknown) and
    which of them reduce, the contraction's (M, N, K) (batch dims folded
    into M) if it has one, the root result's element bytes, and the
    kernel's linalg ops with the points each iterates."""

    loops: tuple[int, ...]
    reductions: tuple[bool, ...]
    contraction: Optional[tuple[int, int, int]]
    element_bytes: int
    op_points: tuple[int, ...]
    primitives: tuple[Primitive, ...]  # of the task's schedule, from the knob table


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else -1.0


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _structured(op: ir.Operation) -> bool:
    """Whether ``op`` is a linalg op with loops (not linalg.yield or index)."""
    return op.name.startswith("linalg.") and linalg.get_indexing_maps(op) is not None


def _loops(op: ir.Operation, sizes: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """A linalg op's loop extents (0 where unknown; a dim over size symbols
    at ``sizes``, where the IR says how) and which loops reduce (those its
    results' maps do not name)."""
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    extents = [0] * maps[0].n_dims
    for operand, amap in zip(op.operands, maps):
        shape = operand.type.shape if isinstance(operand.type, ir.ShapedType) else []
        for d, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and not extents[expr.position]:
                size = shape[d] if shape[d] >= 0 else _size(operand, d, sizes) if sizes else -1
                extents[expr.position] = max(size, 0)
    named = {e.position for m in maps[len(maps) - len(op.results):]
             for e in m.results if isinstance(e, ir.AffineDimExpr)}
    return tuple(extents), tuple(d not in named for d in range(len(extents)))


def _size(value: ir.Value, dim: int, sizes: Mapping[str, int]) -> int:
    """Dim ``dim`` of tensor ``value`` at ``sizes``, followed to where a
    kernel over size symbols names it: an argument's ``graph.shape``, a
    ``tensor.empty`` sized by ``tensor.dim`` of one, the init of a
    destination-passing op's result; -1 where it leads elsewhere."""
    shape = value.type.shape
    if shape[dim] >= 0:
        return shape[dim]
    if isinstance(value.owner, ir.Block):
        function = value.owner.owner
        attrs = ir.ArrayAttr(function.attributes["arg_attrs"]) if "arg_attrs" in function.attributes else None
        arg = ir.DictAttr(attrs[value.arg_number]) if attrs is not None else None
        if arg is None or "graph.shape" not in arg:
            return -1
        entry = symbolic_shape(value.type, shape=arg["graph.shape"])[dim]
        return shapes.evaluate(shapes.parse_size(entry) if isinstance(entry, str) else entry, sizes)
    op = value.owner.operation
    if op.name == "tensor.empty":  # one size operand per dynamic dim, in order
        index = op.operands[sum(1 for s in shape[:dim] if s < 0)]
        if index.owner.operation.name == "tensor.dim":
            source, position = index.owner.operation.operands
            constant = position.owner.operation
            if constant.name == "arith.constant":
                return _size(source, ir.IntegerAttr(constant.attributes["value"]).value, sizes)
        return -1
    if _structured(op):  # result i is written into the i-th init
        inits = len(op.operands) - len(op.results)
        return _size(op.operands[inits + value.result_number], dim, sizes)
    if op.name in ("tensor.cast", "bufferization.materialize_in_destination"):
        return _size(op.operands[0], dim, sizes)
    return -1


def kernel_info(task: Task) -> KernelInfo:
    """Reads ``task``'s kernel: its linalg ops, the root its schedule is for
    (the op computing result ``task.result``, or the last, through reshapes)
    and its contraction."""
    sizes = task.sizes  # read from the kernel: once, not per op
    kernel = ir.SymbolTable(task.module.operation)[task.kernel]
    ret = list(kernel.regions[0].blocks[0].operations)[-1]
    value = ret.operands[len(ret.operands) - 1 if task.result is None else task.result]
    loops: tuple[tuple[int, ...], tuple[bool, ...]] = ((), ())  # of the root, if there is one
    while not isinstance(value.owner, ir.Block):  # an argument: no root
        owner = value.owner.operation
        if _structured(owner):
            loops = _loops(owner, sizes)
            break
        if len(owner.operands) == 0:
            break
        value = owner.operands[0]  # a reshape between the root and the result
    found: list[ir.Operation] = []
    kernel.operation.walk(lambda op: found.append(op) or ir.WalkResult.ADVANCE)
    structured = [(op, _loops(op, sizes)[0]) for op in found if _structured(op)]
    contraction = None
    for op, extents in structured:
        dims = linalg.infer_contraction_dimensions(op)
        if dims is not None and len(dims.k) > 0:
            contraction = tuple(math.prod(extents[d] for d in ds)
                                for ds in (list(dims.batch) + list(dims.m), dims.n, dims.k))
            break
    dtype = ELEMENT_DTYPES.get(str(value.type.element_type))
    return KernelInfo(*loops, contraction, dtype.itemsize if dtype is not None else 4,
                      tuple(math.prod(extents) for _, extents in structured), _primitives(task))


def _primitives(task: Task) -> tuple[Primitive, ...]:
    for schedule in knob_table(task.module):
        if (schedule.kernel, schedule.result) == (task.kernel, task.result):
            return schedule.primitives
    raise ValueError(f"no schedule of {task.name} in the task's module")


def schedule_features(info: KernelInfo, names: Sequence[str], values: Sequence[int],
                      workers: Optional[int] = None) -> Features:
    """The features of the candidate with knobs ``names`` at ``values``, for
    a kernel read by :func:`kernel_info`. ``workers`` (the cores of a CPU)
    adds the share of them that the parallel tiles keep busy."""
    knob = dict(zip(names, values))
    f: Features = {
        "kernel.points": _log2(math.prod(info.loops)) if info.loops else -1.0,
        "kernel.inner": _log2(info.loops[-1]) if info.loops else -1.0,
        "kernel.reduce": _log2(math.prod(e for e, r in zip(info.loops, info.reductions) if r)),
        "kernel.work": _log2(sum(info.op_points)),
        "kernel.ops": float(len(info.op_points)),
        "kernel.bytes": float(info.element_bytes),
    }
    if info.contraction is not None:
        for axis, extent in zip("mnk", info.contraction):
            f[f"kernel.{axis}"] = _log2(extent)
    for name, value in knob.items():
        f[name] = float(value)
        f[f"{name}.log2"] = _log2(value)
    # Products of pairs (tile areas), in the knobs' order.
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            f[f"{a}*{b}.log2"] = f[f"{a}.log2"] + f[f"{b}.log2"]
    # Where a knob cuts a loop of known extent (the ops say which, through
    # the knob table): the pieces it makes and the padding of the last.
    # A tiling's sizes are the root's loops in order, so a loop over size
    # symbols takes its extent at the measured sizes.
    for primitive in info.primitives:
        for values in primitive.lists:
            for position, entry in enumerate(values.entries):
                extent = entry.extent or (info.loops[position] if primitive.op == "loop.tile"
                                          and position < len(info.loops) else 0)
                if entry.knob not in knob or not extent or knob[entry.knob] <= 0:
                    continue
                pieces = _ceil_div(extent, knob[entry.knob])
                f[f"{entry.knob}.pieces.log2"] = _log2(pieces)
                f[f"{entry.knob}.pad"] = pieces * knob[entry.knob] / extent - 1.0
        if primitive.op == "loop.tile" and primitive.parallel:
            _tiling(f, primitive.lists[0].entries, knob, info, workers)
    return f


def _tiling(f: Features, sizes: Sequence[Entry], knob: dict[str, int], info: KernelInfo,
            workers: Optional[int]) -> None:
    """Tasks, busy workers and points per tile of the parallel tiling."""
    tasks, points = 1, 1
    for size, extent in zip(sizes, info.loops):
        value = knob.get(size.knob, 0) if size.knob is not None else size.value
        if extent <= 0:
            continue
        step = extent if value <= 0 else min(value, extent)  # 0: the loop is not tiled
        tasks *= _ceil_div(extent, step)
        points *= step
    f["tile.tasks.log2"] = _log2(tasks)
    f["tile.points.log2"] = _log2(points)
    if workers:
        f["tile.busy"] = tasks / (_ceil_div(tasks, workers) * workers)


class CandidateFeatures:
    """The features of one task's candidates, each point's computed once.
    ``workers`` as for :func:`schedule_features`."""

    def __init__(self, task: Task, workers: Optional[int] = None) -> None:
        self.task = task
        self.info = kernel_info(task)
        self.names = [k.name for k in task.knobs]
        self.workers = workers
        self._cache: dict[tuple[int, ...], Features] = {}

    def __call__(self, values: tuple[int, ...]) -> Features:
        if values not in self._cache:
            self._cache[values] = schedule_features(self.info, self.names, values, self.workers)
        return self._cache[values]

    def relative(self, seen: Mapping[tuple[int, ...], float]) -> list[tuple[Features, float]]:
        """The successes of ``seen`` (point -> seconds, inf for failures) as
        features and times relative to the default's; none while the
        default has no time."""
        default = seen.get(self.task.default, math.inf)
        if not math.isfinite(default):
            return []
        return [(self(v), s / default) for v, s in seen.items() if math.isfinite(s)]
