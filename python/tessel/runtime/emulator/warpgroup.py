"""Warpgroup-level matrix multiply-accumulate, from the PTX ISA (section
9.7.15, sm_90a): ``wgmma.fence``, ``wgmma.commit_group``,
``wgmma.wait_group`` and ``wgmma.mma_async`` of shape .m64nNk16 with .f16
or .bf16 inputs and .m64nNk8 with .tf32 (N a multiple of 8 up to 256),
.f32 accumulators (or .f16 ones for .f16 inputs); A in shared memory
through a matrix descriptor or in registers, B through a descriptor.

A warpgroup is four consecutive warps of a block (threads 128i..128i+127),
and its wgmma instructions are .sync.aligned: all 128 threads execute them
together, or it is an error (``Wave.warpgroups``). Warp w of the warpgroup
holds rows 16w..16w+15 of the 64-row accumulator, and of A when A is in
registers, as the ISA's tables give them: a thread's accumulator element
i lies in row groupID + 8 * (i / 2 % 2), column 8 * (i / 4) +
2 * threadID_in_group + i % 2 (.f32: one a register, .f16: two, low
first); A's are those of mma.m16n8k16 (.f16, .bf16) and mma.m16n8k8
(.tf32) of :mod:`.warp`.

Matrices in shared memory are described by a 64-bit matrix descriptor
(:func:`decode_descriptor`): a start address, a leading- and a
stride-dimension byte offset, a base offset and a swizzle mode. One
instruction reads 32 bytes of K of each operand, in 16-byte chunks laid
out in one of CUTLASS's canonical layouts, K-major (imm-trans 0) or
M/N-major (imm-trans 1) (:func:`chunk_addresses`), and the swizzle XORs
the chunk index with the 128-byte row index as TMA's does
(:func:`~.tensormap.swizzled`), so a tile that TMA wrote with a swizzle is
read back through a descriptor of the same one.

Asynchrony: the product is computed when the instruction is issued (its
shared-memory reads checked then, as loads by the first thread of each
warp that uses them: A's rows by their warp, B by all four) and its
accumulators written then; nothing can tell that apart from the hardware,
because until the ``wgmma.wait_group`` that retires it nothing may observe
them: another instruction's access to its accumulator or A registers is an
error, and so is a write to the shared memory it reads (memory.py holds
those bytes). A ``wgmma.mma_async`` whose registers other instructions may
have accessed since the warpgroup's last ``wgmma.fence`` (every register
before the first) is an error, as the ISA requires that fence, except for
the accumulators of the wgmma of the same shape before it, which the ISA
orders. The shared memory a wgmma reads is read through the async proxy:
what threads wrote there through the generic proxy (st.shared, stmatrix,
cp.async) needs a ``fence.proxy.async`` between the write and the wgmma,
by the writer before the barrier that orders it or by the reader after
(memory.py checks it), while what TMA landed there needs none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .decode import Decoder, Mods, opcode
from .machine import WARP, Op, Wave
from .memory import Fault
from .numerics import bits_to_float, pack, round_bits, tf32_truncate
from .ptx import TYPES, Immediate, Instruction, Register, Vector
from .tensormap import swizzled
from .warp import by_warp, fragment_layout, gather_fragments, write_warps

__all__ = ["MatrixDescriptor", "chunk_addresses", "decode_descriptor"]

_GROUP, _IN_GROUP = np.arange(WARP) >> 2, np.arange(WARP) % 4  # the ISA's groupID and threadID_in_group
_SPANS = (0, 128, 64, 32)  # swizzle mode (bits 62-63) -> span in bytes
# Bits 14-15, 30-31, 46-48 and 52-61 of a descriptor hold nothing.
_RESERVED = (3 << 14) | (3 << 30) | (7 << 46) | (((1 << 10) - 1) << 52)
# Input type -> (K of the shape, bytes an element, accumulator types).
_INPUTS = {"f16": (16, 2, ("f32", "f16")), "bf16": (16, 2, ("f32",)), "tf32": (8, 4, ("f32",))}
_K_BYTES = 32  # of each operand, for every shape


@dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma matrix descriptor's fields, in bytes."""

    start: int  # shared address of the matrix
    leading: int  # leading-dimension byte offset
    stride: int  # stride-dimension byte offset
    base: int  # base offset: where the swizzle pattern starts, in 128-byte rows past its repeat
    swizzle: int  # span: 0 (none), 32, 64 or 128


def decode_descriptor(bits: int) -> MatrixDescriptor:
    """The fields of a 64-bit descriptor (PTX ISA "Matrix Descriptor
    Format"): start address >> 4 in bits 0-13, leading-dimension byte offset
    >> 4 in 16-29, stride-dimension byte offset >> 4 in 32-45, base offset in
    49-51, swizzle mode in 62-63 (0 none, 1 128B, 2 64B, 3 32B); ValueError
    if a bit outside them is set."""
    if bits & _RESERVED:
        raise ValueError(f"the matrix descriptor {bits:#018x} sets bits outside its fields (bits 14-15, 30-31, "
                         "46-48 and 52-61 are zero)")
    return MatrixDescriptor((bits & 0x3FFF) << 4, (bits >> 16 & 0x3FFF) << 4, (bits >> 32 & 0x3FFF) << 4,
                            bits >> 49 & 7, _SPANS[bits >> 62 & 3])


def chunk_addresses(desc: MatrixDescriptor, rows: int, mn_major: bool, element: int) -> tuple[np.ndarray, np.ndarray]:
    """The shared addresses of the 16-byte chunks of an operand of ``rows``
    rows of M (or N) by 32 bytes of K, elements of ``element`` bytes, in the
    canonical layout of CUTLASS's ``make_gmma_desc`` that ``desc`` describes
    (a core matrix is 8 rows of 16 bytes; S is the swizzle span):

    * K-major, (rows, 2): row r's K bytes 0-15 and 16-31. Unswizzled, row r
      % 8 of a core matrix at 16 bytes, the core matrices of rows at the
      stride-dimension offset and the second of K at the leading-dimension
      offset; swizzled, row r % 8 at S bytes (its K chunks adjacent), groups
      of 8 rows at the stride-dimension offset.
    * M/N-major, (32 / element, rows * element / 16): K row k's chunks of
      rows. Unswizzled, a core matrix is 8 K rows of 16 bytes, the next
      chunk of rows at the stride-dimension offset, the next 8 K rows at the
      leading-dimension offset; swizzled, S / 16 chunks in a row of S bytes,
      K row k % 8 at S bytes, the next S / 16 chunks at the leading-dimension
      offset and the next 8 K rows at the stride-dimension offset.

    Also the first row (of M or N) of each chunk."""
    span, leading, stride = desc.swizzle, desc.leading, desc.stride
    if not mn_major:
        r, c = np.arange(rows, dtype=np.int64)[:, None], np.arange(2, dtype=np.int64)[None, :]
        offset = r % 8 * span + r // 8 * stride + c * 16 if span else r % 8 * 16 + r // 8 * stride + c * leading
        first = np.broadcast_to(r, offset.shape)
    else:
        k = np.arange(_K_BYTES // element, dtype=np.int64)[:, None]
        c = np.arange(rows * element // 16, dtype=np.int64)[None, :]
        if span:
            runs = span // 16
            offset = c % runs * 16 + c // runs * leading + k % 8 * span + k // 8 * stride
        else:
            offset = c * stride + k % 8 * 16 + k // 8 * leading
        first = np.broadcast_to(c * 16 // element, offset.shape)
    return swizzled(desc.start + offset, span, desc.base), first


def _uniform(values, groups: np.ndarray, what: str, ins: Instruction) -> np.ndarray:
    """Each warpgroup's value of a per-thread operand (or of a constant), which its threads must agree on."""
    values = np.asarray(values)
    if values.ndim == 0:
        return np.full(len(groups), values)
    of_groups = values[groups]
    differ = (of_groups != of_groups[:, :1]).any(axis=1)
    if differ.any():
        raise Fault(f"{ins.opcode}: the threads of a warpgroup give different {what}", groups[differ][0][:1])
    return of_groups[:, 0]


def _shared_operand(w: Wave, bits: int, rows: int, mn_major: bool, input_type: str, readers: np.ndarray,
                    by_row: bool, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An operand in shared memory as a (rows, K) f32 matrix, and the
    granules read; ``readers`` are the first lanes of the warpgroup's warps,
    which read the rows they hold (``by_row``, A) or all of them (B)."""
    try:
        desc = decode_descriptor(bits)
    except ValueError as error:
        raise Fault(f"{what}: {error}", readers[:1]) from None
    element = _INPUTS[input_type][1]
    addresses, first = chunk_addresses(desc, rows, mn_major, element)
    flat = addresses.reshape(-1)
    if by_row:
        data, cells = w.read_shared(flat, 16, readers[first.reshape(-1) // 16], what, async_proxy=True)
    else:
        data, cells = w.read_shared(np.tile(flat, len(readers)), 16, np.repeat(readers, len(flat)), what,
                                    async_proxy=True)
        data = data[:len(flat)]
    if input_type == "tf32":
        values = tf32_truncate(np.ascontiguousarray(data).view(np.uint32))
    else:
        values = bits_to_float(np.ascontiguousarray(data).view(np.uint16), input_type)
    # A chunk holds consecutive K (K-major) or consecutive rows (M/N-major).
    matrix = values.reshape(addresses.shape[0], -1)
    return (matrix.T if mn_major else matrix), cells


@opcode("wgmma")
def _wgmma(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    action = mods.take("fence", "commit_group", "wait_group", "mma_async")
    if action is None:
        raise mods.error("expects wgmma.fence, wgmma.commit_group, wgmma.wait_group or wgmma.mma_async")
    if mods.take("sp"):
        raise mods.error("sparse wgmma.mma_async.sp is not supported by the emulator")
    if not (mods.take("sync") and mods.take("aligned")):
        raise mods.error("needs .sync.aligned")
    d.needs(ins, 90, arch_specific=True)
    if action == "mma_async":
        return _mma_async(d, ins, mods)
    if action == "wait_group":
        (count,) = d.operands(ins, 1)
        if not isinstance(count, Immediate) or count.is_float or count.value < 0:
            raise d.error(ins, "the group count must be a non-negative integer immediate")
        keep = int(count.value)
        return Decoder.normal(ins, lambda w, m: w.wgmma_wait(w.warpgroups(m, ins.opcode).reshape(-1), keep))
    d.operands(ins, 0)
    if action == "fence":
        return Decoder.normal(ins, lambda w, m: w.wgmma_fence(w.warpgroups(m, ins.opcode).reshape(-1)))
    return Decoder.normal(ins, lambda w, m: w.wgmma_commit(w.warpgroups(m, ins.opcode).reshape(-1)))


def _registers(d: Decoder, ins: Instruction, operand, count: int, what: str) -> list[Register]:
    if not isinstance(operand, Vector) or len(operand.elements) != count or \
            not all(isinstance(e, Register) and TYPES[e.type][0] == 32 for e in operand.elements):
        raise d.error(ins, f"{what} takes {count} 32-bit registers")
    return list(operand.elements)


def _immediate(d: Decoder, ins: Instruction, operand, allowed: tuple[int, ...], what: str) -> int:
    if not isinstance(operand, Immediate) or operand.is_float or operand.value not in allowed:
        raise d.error(ins, f"{what} must be an immediate {' or '.join(map(str, allowed))}")
    return int(operand.value)


def _mma_async(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b-desc,
    scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}{, imm-trans-b}: D =
    (scale-d ? D : 0) + (imm-scale-a A) (imm-scale-b B), A from a
    descriptor or 4 registers; the transposes are .f16/.bf16's (none with A
    in registers: A is then M-by-K as its fragments say)."""
    shape = next((p for p in mods.parts if re.fullmatch(r"m64n\d+k\d+", p)), None)
    types = mods.types()
    if shape is None or len(types) != 3 or types[1] != types[2]:
        raise mods.error("expects .m64nNkK.dtype.atype.btype with equal A and B types")
    mods.take(shape)
    dtype, input_type, _ = types
    n, k = (int(v) for v in re.fullmatch(r"m64n(\d+)k(\d+)", shape).groups())
    if input_type not in _INPUTS or dtype not in _INPUTS[input_type][2] or k != _INPUTS[input_type][0]:
        raise mods.error(f"wgmma.mma_async .{shape}.{dtype}.{input_type}.{input_type} is not supported by the "
                         "emulator (it runs .m64nNk16 .f32/.f16 x .f16, .f32 x .bf16 and .m64nNk8 .f32 x .tf32)")
    if n % 8 or not 8 <= n <= 256:
        raise mods.error(f"N of .{shape} must be a multiple of 8 from 8 to 256")
    operands = ins.operands
    a_in_registers = len(operands) > 1 and isinstance(operands[1], Vector)
    # .f16/.bf16 transpose what is in shared memory; .tf32 operands are K-major.
    transposes = [] if input_type == "tf32" else ["imm-trans-b"] if a_in_registers else ["imm-trans-a", "imm-trans-b"]
    expected = ["d", "{a}" if a_in_registers else "a-desc", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b",
                *transposes]
    if len(operands) != len(expected):
        raise d.error(ins, f"expects {', '.join(expected)}")
    per_register = 2 if dtype == "f16" else 1
    accumulators = _registers(d, ins, operands[0], n // 2 // per_register, f"a .{shape}.{dtype} accumulator D")
    scale_a, scale_b, *trans = (_immediate(d, ins, x, (1, -1) if name.startswith("imm-scale") else (0, 1), name)
                                for x, name in zip(operands[4:], expected[4:]))
    trans_a, trans_b = (bool(dict(zip(transposes, trans)).get(name, 0)) for name in ("imm-trans-a", "imm-trans-b"))
    descriptors = {}
    for operand, name in ((operands[1], "a-desc"), (operands[2], "b-desc")):
        if name == "a-desc" and a_in_registers:
            continue
        if not isinstance(operand, Register) or TYPES[operand.type][0] != 64:
            raise d.error(ins, f"{name} must be a 64-bit register")
        descriptors[name] = d.reader(ins, operand, "b64")
    a_registers = _registers(d, ins, operands[1], 4, "A in registers") if a_in_registers else []
    scale_d = operands[3]
    if isinstance(scale_d, Register) and scale_d.type == "pred":
        read_scale_d = d.reader(ins, scale_d, "pred")
    elif isinstance(scale_d, Immediate) and not scale_d.is_float and scale_d.value in (0, 1):
        read_scale_d = lambda w, enabled=bool(scale_d.value): enabled  # noqa: E731
    else:
        raise d.error(ins, "scale-d must be a predicate or an immediate 0 or 1")

    acc_slots = frozenset(r.slot for r in accumulators)
    a_slots = frozenset(r.slot for r in a_registers)
    if len(acc_slots) != len(accumulators) or acc_slots & a_slots:
        raise d.error(ins, "the accumulator and A registers must all be different registers")
    d.wgmma_registers |= acc_slots | a_slots
    d.shared_access("shared", 16)
    read_acc = [d.reader(ins, r, "b32") for r in accumulators]
    write_acc = [d.writer(ins, r, "b32") for r in accumulators]
    read_a = [d.reader(ins, r, "b32") for r in a_registers]
    g, t, i = _GROUP[:, None], _IN_GROUP[:, None], np.arange(n // 2)[None, :]
    c_rows, c_cols = g + 8 * (i // 2 % 2), 8 * (i // 4) + 2 * t + i % 2
    a_rows, a_cols, a_per = fragment_layout("a", "m16n8k8" if input_type == "tf32" else "m16n8k16", input_type)
    accumulator_type = "f16" if dtype == "f16" else "f32"
    kind = (shape, dtype)

    def run(w: Wave, m) -> None:
        groups = w.warpgroups(m, ins.opcode)
        w.wgmma_operands_ready(groups, acc_slots, a_slots, kind, ins.opcode)
        warps = groups[:, ::WARP].reshape(-1) // WARP
        count = len(groups)
        accumulate = _uniform(read_scale_d(w), groups, "scale-d", ins)
        bits = {name: _uniform(read(w), groups, name, ins) for name, read in descriptors.items()}
        A, B, cells = np.empty((count, 64, k)), np.empty((count, n, k)), []
        for h in range(count):
            readers = groups[h, ::WARP]
            B[h], held = _shared_operand(w, int(bits["b-desc"][h]), n, trans_b, input_type, readers, False,
                                         "wgmma.mma_async's B")
            if not a_in_registers:
                A[h], held_a = _shared_operand(w, int(bits["a-desc"][h]), 64, trans_a, input_type, readers, True,
                                               "wgmma.mma_async's A")
                held = np.concatenate([held, held_a])
            cells.append(held)
        if a_in_registers:
            A = gather_fragments([by_warp(r(w), w)[warps] for r in read_a], a_rows, a_cols, a_per, input_type,
                                 (16, k), len(warps)).reshape(count, 64, k)
        C = gather_fragments([by_warp(r(w), w)[warps] for r in read_acc], c_rows, c_cols, per_register,
                             accumulator_type, (16, n), len(warps)).reshape(count, 64, n)
        D = scale_a * scale_b * np.matmul(A, B.transpose(0, 2, 1)) + np.where(accumulate[:, None, None], C, 0.0)
        values = D.reshape(len(warps), 16, n)[:, c_rows, c_cols]  # (warps, 32, N / 2)
        rounded = [round_bits(values[..., e], accumulator_type) for e in range(n // 2)]
        words = rounded if per_register == 1 else [pack(rounded[2 * j], rounded[2 * j + 1]) for j in range(n // 4)]
        for write, value in zip(write_acc, words):
            write_warps(w, write, warps, value, m)
        w.wgmma_issue(groups, cells, acc_slots, a_slots, kind, ins)
    return Decoder.normal(ins, run)
