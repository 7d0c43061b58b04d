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
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from mlir import ir
from mlir.dialects import linalg

from ..dtypes import ELEMENT_DTYPES

if TYPE_CHECKING:
    from .search import Task

__all__ = ["CandidateFeatures", "Features", "KernelInfo", "kernel_info", "schedule_features"]

Features = dict[str, float]


@dataclass(frozen=True)
class KernelInfo:
    """What the features need of one task's kernel: its root's loop extents
    (0 where dynamic) and which of them reduce, the contraction's (M, N, K)
    (batch dims folded into M) if it has one, the root result's element
    bytes, and the kernel's linalg ops with the points each iterates."""

    loops: tuple[int, ...]
    reductions: tuple[bool, ...]
    contraction: Optional[tuple[int, int, int]]
    element_bytes: int
    op_points: tuple[int, ...]
    schedule: str  # the task's printed loop.schedule, with knob operands


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else -1.0


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _structured(op: ir.Operation) -> bool:
    """Whether ``op`` is a linalg op with loops (not linalg.yield or index)."""
    return op.name.startswith("linalg.") and linalg.get_indexing_maps(op) is not None


def _loops(op: ir.Operation) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """A linalg op's loop extents (0 where unknown) and which loops reduce
    (those its results' maps do not name)."""
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    extents = [0] * maps[0].n_dims
    for operand, amap in zip(op.operands, maps):
        shape = operand.type.shape if isinstance(operand.type, ir.ShapedType) else []
        for size, expr in zip(shape, amap.results):
            if isinstance(expr, ir.AffineDimExpr) and size >= 0:
                extents[expr.position] = size
    named = {e.position for m in maps[len(maps) - len(op.results):]
             for e in m.results if isinstance(e, ir.AffineDimExpr)}
    return tuple(extents), tuple(d not in named for d in range(len(extents)))


def kernel_info(task: Task) -> KernelInfo:
    """Reads ``task``'s kernel: its linalg ops, the root its schedule is for
    (the op computing result ``task.result``, or the last, through reshapes)
    and its contraction."""
    kernel = ir.SymbolTable(task.module.operation)[task.kernel]
    ret = list(kernel.regions[0].blocks[0].operations)[-1]
    value = ret.operands[len(ret.operands) - 1 if task.result is None else task.result]
    loops: tuple[tuple[int, ...], tuple[bool, ...]] = ((), ())  # of the root, if there is one
    while not isinstance(value.owner, ir.Block):  # an argument: no root
        owner = value.owner.operation
        if _structured(owner):
            loops = _loops(owner)
            break
        if len(owner.operands) == 0:
            break
        value = owner.operands[0]  # a reshape between the root and the result
    found: list[ir.Operation] = []
    kernel.operation.walk(lambda op: found.append(op) or ir.WalkResult.ADVANCE)
    structured = [(op, _loops(op)[0]) for op in found if _structured(op)]
    contraction = None
    for op, extents in structured:
        dims = linalg.infer_contraction_dimensions(op)
        if dims is not None and len(dims.k) > 0:
            contraction = tuple(math.prod(extents[d] for d in ds)
                                for ds in (list(dims.batch) + list(dims.m), dims.n, dims.k))
            break
    dtype = ELEMENT_DTYPES.get(str(value.type.element_type))
    return KernelInfo(*loops, contraction, dtype.itemsize if dtype is not None else 4,
                      tuple(math.prod(extents) for _, extents in structured), task.schedule_text(task.module))


# One primitive of a printed schedule: its name and its bracketed lists,
# the first unnamed ("loop.tile [a, b] parallel") or named ("depth [k]").
_PRIMITIVE = re.compile(r"^\s*loop\.(\w+)\s+(.*)$", re.M)
_LIST = re.compile(r"(?:(\w+)\s+)?\[([^\]]*)\]")


def _extent(primitive: str, group: Optional[str], position: int, info: KernelInfo) -> Optional[int]:
    """The extent of the loop that entry ``position`` of list ``group``
    (None: the unnamed one) of ``primitive`` cuts, if known."""
    mnk = info.contraction
    if primitive == "tile" and group is None:
        return info.loops[position] if position < len(info.loops) else None
    # Register blocks, row blocks and warp tiles cut a block tile, not the
    # loop: the knobs' products say how they fit. K blocks cut K.
    if primitive == "vectorize" and group == "depth" and mnk is not None:
        return mnk[2]
    if primitive == "split_k" and mnk is not None:
        return mnk[2]
    if primitive in ("split_reduction", "warp_reduce", "vector_access") and info.loops:
        return info.loops[-1]
    return None


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
    for primitive, rest in _PRIMITIVE.findall(info.schedule):
        for group, items in _LIST.findall(rest):
            group = group or None
            sizes = [s.strip() for s in items.split(",") if s.strip()]
            for position, size in enumerate(sizes):
                extent = _extent(primitive, group, position, info)
                name = size.lstrip("%")
                if not size.startswith("%") or name not in knob or not extent or knob[name] <= 0:
                    continue
                pieces = _ceil_div(extent, knob[name])
                f[f"{name}.pieces.log2"] = _log2(pieces)
                f[f"{name}.pad"] = pieces * knob[name] / extent - 1.0
            if primitive == "tile" and group is None and ("parallel" in rest or "mapping" in rest):
                _tiling(f, sizes, knob, info, workers)
    return f


def _tiling(f: Features, sizes: Sequence[str], knob: dict[str, int], info: KernelInfo,
            workers: Optional[int]) -> None:
    """Tasks, busy workers and points per tile of the parallel tiling."""
    tasks, points = 1, 1
    for size, extent in zip(sizes, info.loops):
        value = knob.get(size.lstrip("%"), 0) if size.startswith("%") else int(size)
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
