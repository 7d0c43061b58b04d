"""Warp-collective instructions, from the PTX ISA (sections 9.7.8 shfl,
9.7.13 vote/redux/activemask/elect, 9.7.14 ldmatrix, stmatrix, mma,
9.7.19 setmaxnreg).

Each works on whole warps: lane arrays are viewed as (warps, 32). The
lanes a collective names (its membermask, or the whole warp for
``.aligned`` ones) must be executing it together; a lane that diverged or
exited is an error, never a silently wrong value. The fragment layouts of
``mma`` and ``ldmatrix`` are the ISA's tables ("Matrix fragments for
mma.m16n8k16", ...), kept here as (row, column) per lane and element.
"""

from __future__ import annotations

import numpy as np

from .decode import Decoder, Mods, opcode
from .machine import WARP, Op, Wave
from .memory import Fault
from .numerics import bits_to_float, half, pack, round_bits, tf32_truncate

__all__ = ["by_warp", "check_members", "fragment_layout", "gather_fragments", "write_warps"]
from .ptx import Immediate, Instruction, PredicatePair, Vector

_LANE = np.arange(WARP)
_GROUP, _IN_GROUP = _LANE >> 2, _LANE % 4  # the ISA's groupID and threadID_in_group


def by_warp(values, w: Wave) -> np.ndarray:
    """Per-lane ``values`` (or a scalar) as (warps, 32)."""
    return np.broadcast_to(np.asarray(values), (w.n,)).reshape(-1, WARP)


def _active(w: Wave, m) -> np.ndarray:
    return (w.alive if m is None else m).reshape(-1, WARP)


def check_members(w: Wave, m, read_mask, what: str) -> np.ndarray:
    """The (warps, 32) membership of each lane in its warp's membermask,
    after checking that the executing lanes of a warp agree on the mask,
    are in it, and that every live lane it names is executing with them."""
    active = _active(w, m)
    members = by_warp(read_mask(w), w)
    if m is None and w.alive.all() and (members == np.uint32(0xFFFFFFFF)).all():
        return np.ones_like(active)
    rows = np.arange(active.shape[0])
    reference = members[rows, np.argmax(active, axis=1)]
    named = ((reference[:, None] >> _LANE.astype(np.uint32)) & np.uint32(1)).astype(bool)
    touched = active.any(axis=1)[:, None]
    for problem, message in (
            (active & (members != reference[:, None]), "lanes of one warp execute it with different membermasks"),
            (active & ~named, "the executing lane is not in its own membermask"),
            (touched & named & w.alive.reshape(-1, WARP) & ~active,
             "lane {lane} of the membermask is not executing it with the others (divergent, waiting or exited)")):
        if problem.any():
            warp, lane = np.argwhere(problem)[0]
            first = int(np.argmax(active[warp]))
            raise Fault(f"{what}: {message.format(lane=lane)}", np.array([warp * WARP + first]))
    return named


@opcode("shfl")
def _shfl(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if not mods.take("sync"):
        raise mods.error("only shfl.sync is supported (shfl without .sync is not valid on sm_70 and newer)")
    mode = mods.take("up", "down", "bfly", "idx")
    if mode is None:
        raise mods.error("needs a mode")
    mods.type({"b32"})
    dst, a, b, c, member = d.operands(ins, 5)
    first, second = (dst.first, dst.second) if isinstance(dst, PredicatePair) else (dst, None)
    wd, wp = d.writer(ins, first, "b32"), d.writer(ins, second, "pred")
    ra, rb, rc, rm = (d.reader(ins, x, "b32") for x in (a, b, c, member))

    def run(w, m):
        members = check_members(w, m, rm, ins.opcode)
        active = _active(w, m)
        lane = _LANE[None, :]
        bval = by_warp(rb(w), w) & np.uint32(0x1F)
        cval = by_warp(rc(w), w)
        segmask = (cval >> np.uint32(8)) & np.uint32(0x1F)
        clamp = cval & np.uint32(0x1F)
        max_lane = (lane & segmask) | (clamp & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j = lane.astype(np.int64) - bval
            valid = j >= max_lane
        elif mode == "down":
            j = lane + bval.astype(np.int64)
            valid = j <= max_lane
        elif mode == "bfly":
            j = (lane ^ bval).astype(np.int64)
            valid = j <= max_lane
        else:
            j = (min_lane | (bval & ~segmask)).astype(np.int64)
            valid = j <= max_lane
        j = np.where(valid, j, lane)
        rows = np.arange(active.shape[0])[:, None]
        source_ok = active[rows, j] & members[rows, j] | ~valid
        if (active & ~source_ok).any():
            warp, lane_ = np.argwhere(active & ~source_ok)[0]
            raise Fault(f"{ins.opcode} reads lane {int(j[warp, lane_])}, which is not executing it (exited, "
                        "divergent or outside the membermask): its value is undefined",
                        np.array([warp * WARP + lane_]))
        values = by_warp(ra(w), w)[rows, j].reshape(-1)
        wd(w, values, m)
        wp(w, valid.reshape(-1), m)
    return Decoder.normal(ins, run)


@opcode("elect")
def _elect(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """elect.sync d|p, membermask: the lowest lane of the mask executing it is
    the leader; every lane gets its laneid in d, p is true in it alone."""
    if not mods.take("sync"):
        raise mods.error("needs .sync")
    d.needs(ins, 90)
    dst, member = d.operands(ins, 2)
    if not isinstance(dst, PredicatePair):
        raise d.error(ins, "expects d|p, membermask (either destination may be _)")
    wd, wp, rm = d.writer(ins, dst.first, "b32"), d.writer(ins, dst.second, "pred"), d.reader(ins, member, "b32")

    def run(w, m):
        members = check_members(w, m, rm, ins.opcode)
        leader = np.argmax(members & _active(w, m), axis=1)
        wd(w, np.repeat(leader, WARP).astype(np.uint32), m)
        wp(w, (_LANE[None, :] == leader[:, None]).reshape(-1), m)
    return Decoder.normal(ins, run)


@opcode("setmaxnreg")
def _setmaxnreg(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """setmaxnreg.{inc,dec}.sync.aligned.u32 N: a warpgroup's register budget;
    checked, with no effect on an emulator without a register file."""
    if not mods.take("inc", "dec") or not mods.take("sync") or not mods.take("aligned"):
        raise mods.error("expects setmaxnreg.inc.sync.aligned.u32 or setmaxnreg.dec.sync.aligned.u32")
    mods.type({"u32"})
    d.needs(ins, 90, arch_specific=True)
    (count,) = d.operands(ins, 1)
    if not isinstance(count, Immediate) or count.is_float or not 24 <= count.value <= 256 \
            or count.value % 8:
        raise d.error(ins, "the register count must be an immediate multiple of 8 in 24..256")
    return Decoder.normal(ins, lambda w, m: w.warp_check(m, ins.opcode))


@opcode("vote")
def _vote(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if not mods.take("sync"):
        raise mods.error("only vote.sync is supported")
    mode = mods.take("all", "any", "uni", "ballot")
    t = mods.type({"pred", "b32"})
    if (mode == "ballot") != (t == "b32"):
        raise mods.error("ballot gives .b32, all/any/uni give .pred")
    dst, a, member = d.operands(ins, 3)
    ra, rm = d.reader(ins, a, "pred"), d.reader(ins, member, "b32")
    write = d.writer(ins, dst, t)

    def run(w, m):
        members = check_members(w, m, rm, ins.opcode)
        taking = members & _active(w, m)
        value = by_warp(ra(w), w) & taking
        if mode == "ballot":
            ballot = (value.astype(np.uint64) << _LANE.astype(np.uint64)).sum(axis=1).astype(np.uint32)
            result = np.repeat(ballot, WARP)
        else:
            count = value.sum(axis=1)
            total = taking.sum(axis=1)
            result = np.repeat({"all": count == total, "any": count > 0,
                                "uni": (count == 0) | (count == total)}[mode], WARP)
        write(w, result, m)
    return Decoder.normal(ins, run)


@opcode("redux")
def _redux(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if not mods.take("sync"):
        raise mods.error("needs .sync")
    op = mods.take("add", "min", "max", "and", "or", "xor")
    t = mods.type({"u32", "s32", "b32"})
    if (op in ("and", "or", "xor")) != (t == "b32"):
        raise mods.error(f".{op} takes {'.b32' if op in ('and', 'or', 'xor') else '.u32 or .s32'}")
    dst, a, member = d.operands(ins, 3)
    ra, rm, write = d.reader(ins, a, t), d.reader(ins, member, "b32"), d.writer(ins, dst, t)
    reduce_ = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
               "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    big = np.iinfo(np.int64)
    fill = {"add": 0, "min": big.max, "max": big.min, "and": -1, "or": 0, "xor": 0}[op]

    def run(w, m):
        members = check_members(w, m, rm, ins.opcode)
        taking = members & _active(w, m)
        values = by_warp(ra(w), w).astype(np.int64)
        result = reduce_.reduce(np.where(taking, values, fill), axis=1)
        write(w, np.repeat(result, WARP).astype(np.uint32 if t != "s32" else np.int32), m)
    return Decoder.normal(ins, run)


@opcode("activemask")
def _activemask(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mods.type({"b32"})
    (dst,) = d.operands(ins, 1)
    write = d.writer(ins, dst, "b32")

    def run(w, m):
        mask = (_active(w, m).astype(np.uint64) << _LANE.astype(np.uint64)).sum(axis=1).astype(np.uint32)
        write(w, np.repeat(mask, WARP), m)
    return Decoder.normal(ins, run)


# ---------------------------------------------------------------- matrix fragments

def _matrix_mods(mods: Mods) -> tuple[int, bool, str]:
    if not (mods.take("sync") and mods.take("aligned")):
        raise mods.error("needs .sync.aligned")
    if not mods.take("m8n8"):
        raise mods.error("only the .m8n8 shape is supported by the emulator")
    num = mods.take("x1", "x2", "x4")
    if num is None:
        raise mods.error("needs .x1, .x2 or .x4")
    trans = bool(mods.take("trans"))
    space = "shared" if mods.take("shared", "shared::cta") else "generic"
    mods.type({"b16"})
    return int(num[1:]), trans, space


def _fragment_positions(trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """For each lane and half (low, high) of its register: (row, column) in the stored 8x8 matrix."""
    col = 2 * _IN_GROUP[:, None] + np.arange(2)[None, :]
    row = np.broadcast_to(_GROUP[:, None], (WARP, 2))
    return (col, row) if trans else (row, col)


def _matrix_operands(d: Decoder, ins: Instruction, mods: Mods, registers: int):
    """ldmatrix/stmatrix: (matrices, their registers, the row address function, its state space,
    the fragment positions); ``registers`` is the index of the register vector operand."""
    count, trans, space = _matrix_mods(mods)
    operands = d.operands(ins, 2)
    vector = operands[registers]
    if not isinstance(vector, Vector) or len(vector.elements) != count:
        raise d.error(ins, f"expects {count} registers")
    address, implied = d.address(ins, operands[1 - registers])
    space = implied or space
    d.shared_access("shared" if space == "generic" else space, 16)
    return count, vector.elements, address, space, _fragment_positions(trans)


def write_warps(w: Wave, write, warps: np.ndarray, value: np.ndarray, m) -> None:
    """Writes (len(warps), 32) u32 ``value`` to the lanes of ``warps`` (the others keep theirs: ``m``)."""
    full = np.zeros((w.n // WARP, WARP), np.uint32)
    full[warps] = value
    write(w, full.reshape(-1), m)


def _row_lanes_of(warps: np.ndarray, count: int) -> np.ndarray:
    """The lanes giving row addresses: 0-7 for matrix 0, 8-15 for matrix 1, ..."""
    return (warps[:, None] * WARP + np.arange(8 * count)[None, :]).reshape(-1)


@opcode("ldmatrix")
def _ldmatrix(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    count, registers, address, space, (rows, cols) = _matrix_operands(d, ins, mods, 0)
    writers = [d.writer(ins, e, "b32") for e in registers]

    def run(w, m):
        w.warp_check(m, ins.opcode, full=True)
        warps = np.flatnonzero(_active(w, m).any(axis=1))
        lanes = _row_lanes_of(warps, count)
        data = w.load(space, address(w, lanes), 16, lanes).view(np.uint16).reshape(len(warps), count, 8, 8)
        for i, write in enumerate(writers):
            halves = data[:, i][:, rows, cols]  # (warps, lanes, 2)
            write_warps(w, write, warps, pack(halves[..., 0], halves[..., 1]), m)
    return Decoder.normal(ins, run)


@opcode("stmatrix")
def _stmatrix(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    count, registers, address, space, (rows, cols) = _matrix_operands(d, ins, mods, 1)
    readers = [d.reader(ins, e, "b32") for e in registers]

    def run(w, m):
        w.warp_check(m, ins.opcode, full=True)
        warps = np.flatnonzero(_active(w, m).any(axis=1))
        matrix = np.zeros((len(warps), count, 8, 8), np.uint16)
        for i, read in enumerate(readers):
            value = by_warp(read(w), w)[warps]
            matrix[:, i][:, rows[:, 0], cols[:, 0]] = half(value, False)
            matrix[:, i][:, rows[:, 1], cols[:, 1]] = half(value, True)
        lanes = _row_lanes_of(warps, count)
        w.store(space, address(w, lanes), matrix.reshape(-1, 16 // 2).view(np.uint8).reshape(-1, 16), lanes)
    return Decoder.normal(ins, run)


def fragment_layout(kind: str, shape: str, element: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(rows, cols) of shape (32, elements) for operand ``kind`` (a, b, c) and elements per register."""
    g, t = _GROUP[:, None], _IN_GROUP[:, None]
    if kind == "c":
        i = np.arange(4)[None, :]
        return g + 8 * (i >= 2), 2 * t + (i & 1), 1
    if element in ("f16", "bf16"):
        if shape == "m16n8k16":
            if kind == "a":
                i = np.arange(8)[None, :]
                return g + 8 * ((i // 2) % 2), 2 * t + (i & 1) + 8 * (i >= 4), 2
            i = np.arange(4)[None, :]
            return 2 * t + (i & 1) + 8 * (i >= 2), np.broadcast_to(g, (WARP, 4)), 2
        if kind == "a":  # m16n8k8
            i = np.arange(4)[None, :]
            return g + 8 * (i >= 2), 2 * t + (i & 1), 2
        i = np.arange(2)[None, :]
        return 2 * t + (i & 1), np.broadcast_to(g, (WARP, 2)), 2
    # tf32
    if shape == "m16n8k8":
        if kind == "a":
            i = np.arange(4)[None, :]
            return g + 8 * (i % 2), t + 4 * (i >= 2), 1
        i = np.arange(2)[None, :]
        return t + 4 * i, np.broadcast_to(g, (WARP, 2)), 1
    if kind == "a":  # m16n8k4
        i = np.arange(2)[None, :]
        return g + 8 * i, np.broadcast_to(t, (WARP, 2)), 1
    return np.broadcast_to(t, (WARP, 1)), np.broadcast_to(g, (WARP, 1)), 1


_MMA_SHAPES = {("m16n8k16", "f16"), ("m16n8k16", "bf16"), ("m16n8k8", "f16"), ("m16n8k8", "bf16"),
               ("m16n8k8", "tf32"), ("m16n8k4", "tf32")}


def gather_fragments(regs: list, rows, cols, per_reg: int, element: str, shape: tuple[int, int],
                     warps: int) -> np.ndarray:
    """The (warps, R, C) f64 matrix whose fragments the registers hold:
    ``regs`` (warps, 32) u32 each, element e of a lane at (``rows``,
    ``cols``)[lane, e], ``per_reg`` elements a register."""
    out = np.zeros((warps,) + shape)
    for e in range(rows.shape[1]):
        bits = regs[e // per_reg]
        if per_reg == 2:
            values = bits_to_float(half(bits, e % 2 == 1), element)
        elif element == "tf32":
            values = tf32_truncate(bits)
        else:
            values = bits.view(np.float32)
        out[:, rows[:, e], cols[:, e]] = values
    return out


@opcode("mma")
def _mma(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if not (mods.take("sync") and mods.take("aligned")):
        raise mods.error("needs .sync.aligned")
    shape = mods.take("m16n8k16", "m16n8k8", "m16n8k4")
    if shape is None or not (mods.take("row") and mods.take("col")):
        raise mods.error("only the .m16n8k16/.m16n8k8/.m16n8k4 .row.col shapes are supported by the emulator")
    types = mods.types()
    if len(types) != 4 or types[1] != types[2]:
        raise mods.error("expects .dtype.atype.btype.ctype with equal A and B types")
    dtype, element, _, ctype = types
    if (shape, element) not in _MMA_SHAPES or dtype not in ("f32", "f16") or ctype not in ("f32", "f16") or \
            element == "tf32" and (dtype, ctype) != ("f32", "f32"):
        raise mods.error(f"mma {shape} .{dtype}.{element}.{element}.{ctype} is not supported by the emulator")
    k = int(shape.split("k")[1])
    a_rows, a_cols, a_per = fragment_layout("a", shape, element)
    b_rows, b_cols, b_per = fragment_layout("b", shape, element)
    c_rows, c_cols, _ = fragment_layout("c", shape, element)
    dst, a, b, c = d.operands(ins, 4)
    counts = {"a": a_rows.shape[1] // a_per, "b": b_rows.shape[1] // b_per}
    for name, operand, count in (("A", a, counts["a"]), ("B", b, counts["b"]),
                                 ("C", c, 4 if ctype == "f32" else 2), ("D", dst, 4 if dtype == "f32" else 2)):
        if not isinstance(operand, Vector) or len(operand.elements) != count:
            raise d.error(ins, f"{name} takes {count} registers")
    ra = [d.reader(ins, e, "b32") for e in a.elements]
    rb = [d.reader(ins, e, "b32") for e in b.elements]
    rc = [d.reader(ins, e, "b32") for e in c.elements]
    writers = [d.writer(ins, e, "b32") for e in dst.elements]

    def run(w, m):
        w.warp_check(m, ins.opcode, full=True)
        warps = np.flatnonzero(_active(w, m).any(axis=1))
        nw = len(warps)
        A = gather_fragments([by_warp(r(w), w)[warps] for r in ra], a_rows, a_cols, a_per, element, (16, k), nw)
        B = gather_fragments([by_warp(r(w), w)[warps] for r in rb], b_rows, b_cols, b_per, element, (k, 8), nw)
        C = gather_fragments([by_warp(r(w), w)[warps] for r in rc], c_rows, c_cols, 2 if ctype == "f16" else 1,
                    "f16" if ctype == "f16" else "f32", (16, 8), nw)
        D = np.matmul(A, B) + C
        values = D[:, c_rows, c_cols]  # (warps, 32, 4)
        if dtype == "f32":
            out = [round_bits(values[..., e], "f32") for e in range(4)]
        else:
            halves = [round_bits(values[..., e], "f16") for e in range(4)]
            out = [pack(halves[0], halves[1]), pack(halves[2], halves[3])]
        for write, value in zip(writers, out):
            write_warps(w, write, warps, value, m)
    return Decoder.normal(ins, run)

