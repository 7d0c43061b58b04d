"""Semantics of PTX's per-thread instructions, from the PTX ISA (section 9.7):
integer and bit arithmetic, floating point, comparison and selection,
conversion and movement, memory (ld/st/atom, cp.async, cp.async.bulk,
tensor maps), control flow, barriers and mbarriers. Each decoder checks
the modifiers it is given and builds a function of (wave, mask) that
computes on every lane at once.
"""

from __future__ import annotations

import numpy as np

from .decode import Decoder, Mods, opcode
from .machine import BARRIER, BRANCH, EXIT, WAIT, WARP, Op, Wave
from .memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_BYTES, Fault
from .numerics import DTYPES, bits_to_float, flush_f32, fma_f64, half, pack, round_bits, two_sum
from .ptx import TYPES, Immediate, Instruction, PredicatePair, Register, Symbol, TensorAddress, Vector
from .tensormap import FIELDS, replace_field

FLOATS = {"f16", "bf16", "f32", "f64", "f16x2", "bf16x2"}
_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_ROUNDINGS = ("rn", "rz", "rm", "rp")


def _bits(t: str) -> int:
    return TYPES[t][0]


def _is_signed(t: str) -> bool:
    return TYPES[t][1] == "s"


def _element(t: str) -> str:
    return t[:-2] if t.endswith("x2") else t


# ---------------------------------------------------------------- floating point

def _float_op(d: Decoder, ins: Instruction, mods: Mods, t: str, arity: int, compute,
                           roundings: tuple[str, ...], default: str | None = "rn", ftz: bool = True,
                           sat: bool = True, relu: bool = False):
    """The op for a floating-point instruction of ``arity`` sources:
    ``compute(values, mode)`` gets f32 (f64 for .f64) arrays and returns
    (value, exact error or None), which is rounded to the element type in
    ``mode``; .ftz flushes f32 inputs and results, .sat clamps to [0, 1],
    .relu clamps below at 0, .f16x2/.bf16x2 work on both halves."""
    mode = mods.take(*roundings) if roundings else None
    if mode is None:
        mode = default
        if mode is None:
            raise mods.error(f"needs a rounding modifier ({', '.join('.' + r for r in roundings)})")
    flush = bool(mods.take("ftz")) if ftz else False
    clamp = bool(mods.take("sat")) if sat else False
    rectify = bool(mods.take("relu")) if relu else False
    element = _element(t)
    target_mode = mode if mode in _ROUNDINGS else "rn"
    d.operands(ins, arity + 1)
    storage = DTYPES["f64" if element == "f64" else "f32"]

    def evaluate(values):
        if flush and element == "f32":
            values = [flush_f32(v) for v in values]
        result, error = compute(values, mode)
        out = np.asarray(round_bits(np.asarray(result, storage) if error is None else result, element,
                                    target_mode, error))
        if flush and element == "f32":
            out = flush_f32(out.view(np.float32)).view(np.uint32)
        if clamp or rectify:
            value = bits_to_float(out, element).astype(np.float64)
            value = np.where(np.isnan(value), 0.0, value) if clamp else value
            value = np.clip(value, 0.0, 1.0) if clamp else np.where(value < 0, 0.0, value)
            out = np.asarray(round_bits(value, element, "rn"))
        return out

    if t.endswith("x2"):
        sources = [d.reader(ins, op, "b32") for op in ins.operands[1:]]
        dst = d.writer(ins, ins.operands[0], "b32")

        def run(w, m):
            raw = [s(w) for s in sources]
            halves = [evaluate([bits_to_float(half(r, high), element) for r in raw]) for high in (False, True)]
            dst(w, pack(*halves), m)
        return Decoder.normal(ins, run)
    bits_type = {16: "b16", 32: "b32", 64: "b64"}[_bits(element)]
    sources = [d.reader(ins, op, bits_type) for op in ins.operands[1:]]
    dst = d.writer(ins, ins.operands[0], bits_type)

    def run(w, m):
        dst(w, evaluate([bits_to_float(s(w), element) for s in sources]), m)
    return Decoder.normal(ins, run)


def _add(values, mode):
    a, b = values
    if mode == "rn" or a.dtype == np.float64:
        return a + b, None
    return two_sum(a, b)


def _sub(values, mode):
    return _add([values[0], -values[1]], mode)


def _mul(values, mode):
    a, b = values
    if mode == "rn" or a.dtype == np.float64:
        return a * b, None
    return a.astype(np.float64) * b.astype(np.float64), None  # exact in f64


def _fma(values, mode):
    a, b, c = values
    if a.dtype == np.float64:  # rounded once (long double's 64 bits would round the product first)
        return fma_f64(a, b, c), None
    p = a.astype(np.float64) * b.astype(np.float64)
    return two_sum(p, c)


def _div(values, mode):
    a, b = values
    return a.astype(np.float64) / b.astype(np.float64), None


@opcode("add", "sub", "mul")
def _add_sub_mul(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    if mods.take("wide", "lo", "hi") is not None:
        if base != "mul":
            raise mods.error("only mul has .wide/.lo/.hi")
        mods.parts.insert(0, ins.opcode.split(".")[1])
        return _integer_mul(d, ins, mods)
    packed = mods.take("s16x2", "u16x2") if base != "mul" else None
    if packed:
        return _packed_halves(d, ins, packed, np.add if base == "add" else np.subtract)
    t = mods.type()
    if t in FLOATS:
        compute = {"add": _add, "sub": _sub, "mul": _mul}[base]
        return _float_op(d, ins, mods, t, 2, compute, _ROUNDINGS, relu=False)
    if mods.take("cc"):
        return _carried(d, ins, mods, t, base, carry_in=False, carry_out=True)
    saturate = mods.take("sat")
    if base == "mul":
        raise mods.error("integer mul needs .lo, .hi or .wide")
    dst, a, b = d.operands(ins, 3)
    ra, rb = d.reader(ins, a, t), d.reader(ins, b, t)
    write = d.writer(ins, dst, t)
    if saturate:
        if t != "s32":
            raise mods.error(".sat is only for .s32")
        lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        sign = 1 if base == "add" else -1

        def run(w, m):
            write(w, np.clip(ra(w).astype(np.int64) + sign * rb(w).astype(np.int64), lo, hi).astype(np.int32), m)
    elif base == "add":
        def run(w, m):
            write(w, ra(w) + rb(w), m)
    else:
        def run(w, m):
            write(w, ra(w) - rb(w), m)
    return Decoder.normal(ins, run)


_CARRY_TYPES = {"u32", "s32", "u64", "s64"}


def _with_carry(a: np.ndarray, b: np.ndarray, carry: np.ndarray, subtract: bool,
                bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``a + b + carry`` (or ``a - (b + carry)``) on ``bits``-bit unsigned
    patterns, and its carry out (for a subtraction, the borrow), as CC.CF
    holds it."""
    if bits == 32:
        wide = a.astype(np.int64) & 0xFFFFFFFF, b.astype(np.int64) & 0xFFFFFFFF
        total = wide[0] - wide[1] - carry if subtract else wide[0] + wide[1] + carry
        return (total & 0xFFFFFFFF).astype(np.uint32), ((total < 0) if subtract else (total >> 32) > 0).astype(np.uint8)
    ua, ub, c = a.view(np.uint64), b.view(np.uint64), carry.astype(np.uint64)
    if subtract:
        first = ua - ub
        return first - c, ((ua < ub) | (first < c)).astype(np.uint8)
    first = ua + ub
    total = first + c
    return total, ((first < ua) | (total < first)).astype(np.uint8)


def _carried(d: Decoder, ins: Instruction, mods: Mods, t: str, base: str, *, carry_in: bool, carry_out: bool,
             product: str | None = None) -> Op:
    """add.cc, addc, sub.cc, subc, and mad.cc/madc (``product`` "lo" or
    "hi": ``a * b``'s half plus ``c``): extended-precision arithmetic through
    the per-thread carry flag CC.CF, written only by the active lanes."""
    if t not in _CARRY_TYPES:
        raise mods.error(f"carry arithmetic takes {', '.join(sorted(_CARRY_TYPES))}")
    bits = _bits(t)
    operands = d.operands(ins, 4 if product else 3)
    ra, rb = d.reader(ins, operands[1], t), d.reader(ins, operands[2], t)
    rc = d.reader(ins, operands[3], t) if product else None
    write = d.writer(ins, operands[0], t)
    unsigned = np.uint32 if bits == 32 else np.uint64
    subtract = base.startswith("sub")

    def run(w, m):
        a, b = np.asarray(ra(w)), np.asarray(rb(w))
        if product:
            a = a * b if product == "lo" else _mul_hi(a, b, t)
            b = np.asarray(rc(w))
        a = np.broadcast_to(a, (w.n,)).astype(DTYPES[t])
        b = np.broadcast_to(b, (w.n,)).astype(DTYPES[t])
        value, carry = _with_carry(a.view(unsigned), b.view(unsigned), w.carry if carry_in else np.zeros(w.n, np.uint8),
                                   subtract, bits)
        write(w, value.view(DTYPES[t]), m)
        if carry_out:
            w.carry = carry if m is None else np.where(m, carry, w.carry)
    return Decoder.normal(ins, run)


@opcode("addc", "subc")
def _add_sub_with_carry(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    carry_out = mods.take("cc") is not None
    return _carried(d, ins, mods, mods.type(), ins.opcode.split(".")[0], carry_in=True, carry_out=carry_out)


@opcode("madc")
def _mad_with_carry(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    part = mods.take("lo", "hi")
    if part is None:
        raise mods.error("madc needs .lo or .hi")
    carry_out = mods.take("cc") is not None
    return _carried(d, ins, mods, mods.type(), "add", carry_in=True, carry_out=carry_out, product=part)


def _mul_hi(a: np.ndarray, b: np.ndarray, t: str) -> np.ndarray:
    bits = _bits(t)
    if bits < 64:
        wide = np.int64 if _is_signed(t) else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> bits).astype(DTYPES[t])
    # 64 x 64 -> high 64 bits, from 32-bit halves.
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    a0, a1, b0, b1 = ua & mask, ua >> np.uint64(32), ub & mask, ub >> np.uint64(32)
    mid1, mid2 = a1 * b0, a0 * b1
    low = a0 * b0
    carry = ((low >> np.uint64(32)) + (mid1 & mask) + (mid2 & mask)) >> np.uint64(32)
    high = a1 * b1 + (mid1 >> np.uint64(32)) + (mid2 >> np.uint64(32)) + carry
    if _is_signed(t):
        high = high - np.where(a.view(np.int64) < 0, ub, np.uint64(0)) - np.where(b.view(np.int64) < 0, ua,
                                                                                    np.uint64(0))
    return high.view(DTYPES[t])


def _integer_mul(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    part = mods.take("wide", "lo", "hi")
    saturate = mods.take("sat")
    t = mods.type()
    if t in FLOATS or _bits(t) not in (16, 32, 64):
        raise mods.error(f".{part} needs a 16-, 32- or 64-bit integer type")
    mad = base == "mad"
    if mad and part in ("lo", "hi") and mods.take("cc"):
        return _carried(d, ins, mods, t, "add", carry_in=False, carry_out=True, product=part)
    operands = d.operands(ins, 4 if mad else 3)
    ra, rb = d.reader(ins, operands[1], t), d.reader(ins, operands[2], t)
    if part == "wide":
        if _bits(t) == 64:
            raise mods.error(".wide takes 16- or 32-bit inputs")
        wide = ("s" if _is_signed(t) else "u") + str(2 * _bits(t))
        write = d.writer(ins, operands[0], wide)
        rc = d.reader(ins, operands[3], wide) if mad else None
        dtype = DTYPES[wide]

        def run(w, m):
            value = ra(w).astype(dtype) * rb(w).astype(dtype)
            write(w, value + rc(w) if mad else value, m)
        return Decoder.normal(ins, run)
    write = d.writer(ins, operands[0], t)
    rc = d.reader(ins, operands[3], t) if mad else None
    if saturate and not (mad and part == "hi" and t == "s32"):
        raise mods.error(".sat is only for mad.hi.sat.s32")

    def run(w, m):
        a, b = ra(w), rb(w)
        value = a * b if part == "lo" else _mul_hi(np.asarray(a), np.asarray(b), t)
        if mad:
            value = np.clip(value.astype(np.int64) + rc(w), -2**31, 2**31 - 1).astype(np.int32) if saturate \
                else value + rc(w)
        write(w, value, m)
    return Decoder.normal(ins, run)


@opcode("mad", "fma")
def _mad_fma(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if mods.take("lo", "hi", "wide") is not None:
        mods.parts.insert(0, ins.opcode.split(".")[1])
        return _integer_mul(d, ins, mods)
    t = mods.type(FLOATS)
    return _float_op(d, ins, mods, t, 3, _fma, _ROUNDINGS,
                                  default="rn" if t not in ("f32", "f64") or ins.opcode.startswith("mad") else None,
                                  relu=True)


@opcode("div")
def _div_op(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type()
    if t in FLOATS:
        # .approx and .full are within 2 ulp of the quotient; it is computed exactly.
        approx = mods.take("approx", "full")
        return _float_op(d, ins, mods, t, 2, _div, _ROUNDINGS, default="rn" if approx else None, sat=False)
    return _int_binary(d, ins, mods, t, "div")


@opcode("rem")
def _rem(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    return _int_binary(d, ins, mods, mods.type(), "rem")


def _int_binary(d: Decoder, ins: Instruction, mods: Mods, t: str, kind: str) -> Op:
    if t in FLOATS or t == "pred":
        raise mods.error(f"{kind} needs an integer type")
    dst, a, b = d.operands(ins, 3)
    ra, rb = d.reader(ins, a, t), d.reader(ins, b, t)
    write = d.writer(ins, dst, t)
    signed = _is_signed(t)

    def run(w, m):
        x, y = np.asarray(ra(w)), np.asarray(rb(w))
        zero = y == 0
        y = np.where(zero, 1, y).astype(y.dtype)
        if signed:  # C semantics: the quotient truncates toward zero
            q = (np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))) * np.sign(x.astype(np.int64)) \
                * np.sign(y.astype(np.int64)) if x.dtype.itemsize < 8 else np.fix(x / y).astype(np.int64)
            q = q.astype(x.dtype)
        else:
            q = x // y
        value = q if kind == "div" else (x - q * y).astype(x.dtype)
        # Division by zero gives all ones (as the hardware) for the quotient, the dividend for the remainder.
        write(w, np.where(zero, np.array(-1).astype(x.dtype) if kind == "div" else x, value), m)
    return Decoder.normal(ins, run)


def _unary_float(fn):
    return lambda values, mode: (fn(values[0].astype(np.float64)), None)


_UNARY = {
    "rcp": lambda x: 1.0 / x,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "ex2": np.exp2,
    "lg2": np.log2,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
}


@opcode(*_UNARY)
def _transcendental(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    t = mods.type(FLOATS)
    approx = mods.take("approx")
    if approx is None and base not in ("rcp", "sqrt"):
        raise mods.error("needs .approx")
    if approx is None:
        return _float_op(d, ins, mods, t, 1, _unary_float(_UNARY[base]), _ROUNDINGS, default=None,
                                      sat=False)
    # Approximations are computed exactly: within every error bound the ISA gives.
    return _float_op(d, ins, mods, t, 1, _unary_float(_UNARY[base]), (), default="rn", sat=False)


@opcode("abs", "neg")
def _abs_neg(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    t = mods.type()
    dst, a = d.operands(ins, 2)
    if t in FLOATS:
        flush = mods.take("ftz")
        bits = _bits(t)
        bits_type = {16: "b16", 32: "b32", 64: "b64"}[bits]
        ra, write = d.reader(ins, a, bits_type), d.writer(ins, dst, bits_type)
        unsigned = _UNSIGNED[bits]
        sign = unsigned(0x8000_8000 if t.endswith("x2") else 1 << (_bits(_element(t)) - 1))
        if flush and t != "f32":
            raise mods.error(".ftz is only for .f32")

        def run(w, m):
            x = np.asarray(ra(w))
            if flush:
                x = flush_f32(x.view(np.float32)).view(np.uint32)
            write(w, x & ~sign if base == "abs" else x ^ sign, m)
        return Decoder.normal(ins, run)
    ra, write = d.reader(ins, a, t), d.writer(ins, dst, t)
    if base == "abs":
        return Decoder.normal(ins, lambda w, m: write(w, np.abs(ra(w)), m))
    return Decoder.normal(ins, lambda w, m: write(w, -np.asarray(ra(w)), m))


def _packed_halves(d: Decoder, ins: Instruction, packed: str, fn) -> Op:
    """An .s16x2/.u16x2 instruction (sm_90): ``fn`` on the two 16-bit
    integers in each 32-bit register, wrapping to 16 bits."""
    dst, a, b = d.operands(ins, 3)
    ra, rb, write = d.reader(ins, a, "b32"), d.reader(ins, b, "b32"), d.writer(ins, dst, "b32")
    lanes = np.int16 if packed == "s16x2" else np.uint16

    def run(w, m):
        x, y = (np.ascontiguousarray(r(w), np.uint32).view(np.uint16).view(lanes) for r in (ra, rb))
        write(w, np.asarray(fn(x, y)).astype(lanes).view(np.uint16).view(np.uint32), m)
    return Decoder.normal(ins, run)


@opcode("min", "max")
def _min_max(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    pick = np.minimum if base == "min" else np.maximum
    packed = mods.take("s16x2", "u16x2")
    if packed:
        relu = mods.take("relu")
        return _packed_halves(d, ins, packed, lambda x, y: np.maximum(pick(x, y), 0) if relu else pick(x, y))
    t = mods.type()
    if t in FLOATS:
        nan = mods.take("NaN")
        if mods.take("xorsign"):
            raise mods.error(".xorsign.abs is not supported by the emulator")
        pick = (np.minimum if nan else np.fmin) if base == "min" else (np.maximum if nan else np.fmax)

        def compute(values, mode):
            return pick(values[0], values[1]), None
        return _float_op(d, ins, mods, t, 2, compute, (), sat=False)
    relu = mods.take("relu")
    dst, a, b = d.operands(ins, 3)
    ra, rb, write = d.reader(ins, a, t), d.reader(ins, b, t), d.writer(ins, dst, t)
    if relu:
        return Decoder.normal(ins, lambda w, m: write(w, np.maximum(pick(ra(w), rb(w)), 0).astype(DTYPES[t]), m))
    return Decoder.normal(ins, lambda w, m: write(w, pick(ra(w), rb(w)), m))


@opcode("copysign")
def _copysign(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type({"f32", "f64"})
    dst, a, b = d.operands(ins, 3)
    ra, rb, write = d.reader(ins, a, t), d.reader(ins, b, t), d.writer(ins, dst, t)
    # The sign of a, the magnitude of b.
    return Decoder.normal(ins, lambda w, m: write(w, np.copysign(rb(w), ra(w)), m))


@opcode("testp")
def _testp(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    test = mods.take("finite", "infinite", "number", "notanumber", "normal", "subnormal")
    t = mods.type({"f32", "f64"})
    dst, a = d.operands(ins, 2)
    ra, write = d.reader(ins, a, t), d.writer(ins, dst, "pred")
    tiny = np.finfo(DTYPES[t]).tiny
    tests = {
        "finite": np.isfinite, "infinite": np.isinf, "number": lambda x: ~np.isnan(x), "notanumber": np.isnan,
        "normal": lambda x: np.isfinite(x) & (np.abs(x) >= tiny),
        "subnormal": lambda x: (np.abs(x) < tiny) & (x != 0),
    }
    fn = tests[test]
    return Decoder.normal(ins, lambda w, m: write(w, fn(ra(w)), m))


# ---------------------------------------------------------------- integer and bits

@opcode("and", "or", "xor")
def _logic(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    t = mods.type({"pred", "b16", "b32", "b64"})
    dst, a, b = d.operands(ins, 3)
    ra, rb, write = d.reader(ins, a, t), d.reader(ins, b, t), d.writer(ins, dst, t)
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[base]
    return Decoder.normal(ins, lambda w, m: write(w, fn(ra(w), rb(w)), m))


@opcode("not", "cnot")
def _not(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    t = mods.type({"pred", "b16", "b32", "b64"})
    dst, a = d.operands(ins, 2)
    ra, write = d.reader(ins, a, t), d.writer(ins, dst, t)
    if base == "not":
        return Decoder.normal(ins, lambda w, m: write(w, ~np.asarray(ra(w)), m))
    return Decoder.normal(ins, lambda w, m: write(w, (np.asarray(ra(w)) == 0).astype(DTYPES[t]), m))


@opcode("shl", "shr")
def _shift(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    t = mods.type()
    dst, a, b = d.operands(ins, 3)
    ra, rb, write = d.reader(ins, a, t), d.reader(ins, b, "u32"), d.writer(ins, dst, t)
    bits = _bits(t)
    dtype = DTYPES[t]
    arithmetic = base == "shr" and _is_signed(t)

    def run(w, m):
        x, s = np.asarray(ra(w)), np.asarray(rb(w))
        # Shifts of the width or more clamp: zeros, or the sign for arithmetic right shifts.
        clamped = np.minimum(s, bits - 1).astype(dtype)
        if base == "shl":
            value = np.where(s >= bits, dtype.type(0), x << clamped)
        elif arithmetic:
            value = x >> clamped
        else:
            value = np.where(s >= bits, dtype.type(0), x >> clamped)
        write(w, value.astype(dtype), m)
    return Decoder.normal(ins, run)


@opcode("shf")
def _funnel(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    direction = mods.take("l", "r")
    mode = mods.take("wrap", "clamp")
    mods.type({"b32"})
    dst, a, b, c = d.operands(ins, 4)
    ra, rb, rc, write = d.reader(ins, a, "b32"), d.reader(ins, b, "b32"), d.reader(ins, c, "u32"), \
        d.writer(ins, dst, "b32")

    def run(w, m):
        joined = (np.asarray(rb(w)).astype(np.uint64) << np.uint64(32)) | np.asarray(ra(w)).astype(np.uint64)
        n = np.asarray(rc(w)).astype(np.uint64)
        n = n & np.uint64(31) if mode == "wrap" else np.minimum(n, np.uint64(32))
        if direction == "l":
            value = ((joined << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
        else:
            value = (joined >> n) & np.uint64(0xFFFFFFFF)
        write(w, value.astype(np.uint32), m)
    return Decoder.normal(ins, run)


@opcode("lop3")
def _lop3(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mods.type({"b32"})
    dst, a, b, c, lut = d.operands(ins, 5)
    if not isinstance(lut, Immediate):
        raise mods.error("the lookup table must be an immediate")
    ra, rb, rc = (d.reader(ins, x, "b32") for x in (a, b, c))
    write = d.writer(ins, dst, "b32")
    table = lut.value & 0xFF

    def run(w, m):
        x, y, z = np.asarray(ra(w)), np.asarray(rb(w)), np.asarray(rc(w))
        value = np.zeros(np.broadcast(x, y, z).shape, np.uint32)
        # Bit i of the table is the result for (a, b, c) = bits (2, 1, 0) of i.
        for i in range(8):
            if table >> i & 1:
                value |= (x if i & 4 else ~x) & (y if i & 2 else ~y) & (z if i & 1 else ~z)
        write(w, value, m)
    return Decoder.normal(ins, run)


@opcode("popc", "clz", "brev", "bfind")
def _bit_count(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    shift_amount = mods.take("shiftamt") if base == "bfind" else None
    t = mods.type()
    bits = _bits(t)
    dst, a = d.operands(ins, 2)
    ra = d.reader(ins, a, t)
    write = d.writer(ins, dst, t if base == "brev" else "u32")

    def run(w, m):
        b = _bit_matrix(ra(w), bits)
        if base == "popc":
            value = b.sum(axis=-1).astype(np.uint32)
        elif base == "clz":
            value = np.where(b.any(axis=-1), np.argmax(b[..., ::-1], axis=-1), bits).astype(np.uint32)
        elif base == "brev":
            value = _from_bits(b[..., ::-1], bits).view(DTYPES[t])
        else:
            if _is_signed(t):  # the most significant bit that differs from the sign
                sign = b[..., -1:]
                b = b != sign
            found = b.any(axis=-1)
            position = bits - 1 - np.argmax(b[..., ::-1], axis=-1)
            if shift_amount:
                position = bits - 1 - position
            value = np.where(found, position, 0xFFFFFFFF).astype(np.uint32)
        write(w, value, m)
    return Decoder.normal(ins, run)


def _bit_matrix(x: np.ndarray, bits: int) -> np.ndarray:
    """(..., bits) booleans: bit j of each value."""
    return ((np.asarray(x).view(_UNSIGNED[bits]).astype(np.uint64)[..., None] >> np.arange(bits, dtype=np.uint64))
            & np.uint64(1)).astype(bool)


def _from_bits(matrix: np.ndarray, bits: int) -> np.ndarray:
    return (matrix.astype(np.uint64) << np.arange(bits, dtype=np.uint64)).sum(axis=-1, dtype=np.uint64) \
        .astype(_UNSIGNED[bits])


@opcode("bfe")
def _bfe(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type({"u32", "s32", "u64", "s64"})
    dst, a, b, c = d.operands(ins, 4)
    ra, rb, rc, write = d.reader(ins, a, t), d.reader(ins, b, "u32"), d.reader(ins, c, "u32"), d.writer(ins, dst, t)
    bits = _bits(t)
    index = np.arange(bits)

    def run(w, m):
        x, pos, length = np.broadcast_arrays(np.asarray(ra(w)), np.asarray(rb(w)), np.asarray(rc(w)))
        a_bits = _bit_matrix(x, bits)
        pos, length = (pos & 0xFF).astype(np.int64)[..., None], (length & 0xFF).astype(np.int64)[..., None]
        # Bit i is a[pos + i] while i < len and pos + i is in range, else the sign bit
        # a[min(pos + len - 1, msb)] (signed) or 0.
        src = pos + index
        inside = (index < length) & (src <= bits - 1)
        picked = np.take_along_axis(a_bits, np.clip(src, 0, bits - 1), axis=-1)
        if _is_signed(t):
            sign_at = np.clip(pos + length - 1, 0, bits - 1)
            sign = np.take_along_axis(a_bits, sign_at, axis=-1) & (length > 0)
        else:
            sign = np.zeros_like(inside)
        write(w, _from_bits(np.where(inside, picked, sign), bits).view(DTYPES[t]), m)
    return Decoder.normal(ins, run)


@opcode("bfi")
def _bfi(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type({"b32", "b64"})
    dst, a, b, c, e = d.operands(ins, 5)
    ra, rb, rc, re_, write = d.reader(ins, a, t), d.reader(ins, b, t), d.reader(ins, c, "u32"), \
        d.reader(ins, e, "u32"), d.writer(ins, dst, t)
    bits = _bits(t)
    index = np.arange(bits)

    def run(w, m):
        f, base, pos, length = np.broadcast_arrays(np.asarray(ra(w)), np.asarray(rb(w)), np.asarray(rc(w)),
                                                   np.asarray(re_(w)))
        pos, length = (pos & 0xFF).astype(np.int64)[..., None], (length & 0xFF).astype(np.int64)[..., None]
        # Bits pos .. pos+len-1 of b (those in range) become bits 0 .. len-1 of a.
        offset = index - pos
        inside = (offset >= 0) & (offset < length)
        picked = np.take_along_axis(_bit_matrix(f, bits), np.clip(offset, 0, bits - 1), axis=-1)
        write(w, _from_bits(np.where(inside, picked, _bit_matrix(base, bits)), bits), m)
    return Decoder.normal(ins, run)


_PRMT_MODES = {  # byte i of the result, for selector k (c[1:0])
    "f4e": lambda k, i: k + i,
    "b4e": lambda k, i: (k - i) % 8,
    "rc8": lambda k, i: k,
    "ecl": lambda k, i: max(i, k),
    "ecr": lambda k, i: min(i, k),
    "rc16": lambda k, i: 2 * (k & 1) + (i & 1),
}


@opcode("prmt")
def _prmt(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mode = mods.take(*_PRMT_MODES)
    mods.type({"b32"})
    dst, a, b, c = d.operands(ins, 4)
    ra, rb, rc, write = d.reader(ins, a, "b32"), d.reader(ins, b, "b32"), d.reader(ins, c, "b32"), \
        d.writer(ins, dst, "b32")
    shifts = np.arange(8, dtype=np.uint64) * np.uint64(8)
    if mode is not None:
        table = np.array([[_PRMT_MODES[mode](k, i) for i in range(4)] for k in range(4)], np.int64)

    def run(w, m):
        x, y, sel = np.broadcast_arrays(np.asarray(ra(w)), np.asarray(rb(w)), np.asarray(rc(w)))
        # The eight bytes {b, a}: a is bytes 0-3, b bytes 4-7.
        source = (y.astype(np.uint64) << np.uint64(32)) | x.astype(np.uint64)
        stack = ((source[..., None] >> shifts) & np.uint64(0xFF)).astype(np.uint32)
        if mode is None:
            # Each selector nibble picks a byte; its high bit replicates that byte's sign instead.
            nibbles = (sel[..., None] >> (np.arange(4, dtype=np.uint32) * np.uint32(4))) & np.uint32(0xF)
            chosen = np.take_along_axis(stack, (nibbles & np.uint32(7)).astype(np.int64), axis=-1)
            chosen = np.where(nibbles & np.uint32(8), np.where(chosen & np.uint32(0x80), np.uint32(0xFF),
                                                               np.uint32(0)), chosen)
        else:
            chosen = np.take_along_axis(stack, table[(sel & np.uint32(3)).astype(np.int64)], axis=-1)
        out = (chosen.astype(np.uint32) << (np.arange(4, dtype=np.uint32) * np.uint32(8))).sum(axis=-1)
        write(w, out.astype(np.uint32), m)
    return Decoder.normal(ins, run)


# ---------------------------------------------------------------- comparison and selection

_COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}
_UNORDERED = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}


def _comparison(mods: Mods, t: str):
    op = mods.take(*_COMPARE, *_UNORDERED, "num", "nan")
    if op is None:
        raise mods.error("needs a comparison")
    if t in FLOATS:
        if op in ("lo", "ls", "hi", "hs"):
            raise mods.error(f".{op} is for unsigned integers")
        if op == "num":
            return lambda a, b: ~(np.isnan(a) | np.isnan(b))
        if op == "nan":
            return lambda a, b: np.isnan(a) | np.isnan(b)
        if op in _UNORDERED:
            fn = _COMPARE[_UNORDERED[op]]
            return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)
        fn = _COMPARE[op]
        if op == "ne":  # ordered: false when either is NaN
            return lambda a, b: (a != b) & ~(np.isnan(a) | np.isnan(b))
        return fn
    if op in _UNORDERED or op in ("num", "nan"):
        raise mods.error(f".{op} is for floating-point types")
    return _COMPARE[op]


def _half_floats(bits: np.ndarray, element: str, flush: bool) -> np.ndarray:
    """16-bit f16/bf16 bits as f32 values; ``flush``: subnormals as zeros of their sign (.ftz)."""
    bits = np.asarray(bits)
    if flush:
        exponent = np.uint16(0x7C00 if element == "f16" else 0x7F80)
        bits = np.where((bits & exponent) == 0, bits & np.uint16(0x8000), bits).astype(np.uint16)
    return bits_to_float(bits, element)


@opcode("setp")
def _setp(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    types = [p for p in mods.parts if p in TYPES]
    if len(types) != 1:
        raise mods.error("expects one type")
    t = types[0]
    mods.types()
    if t in ("b16", "b32", "b64"):
        t = "u" + t[1:]
    compare = _comparison(mods, t)
    combine = mods.take("and", "or", "xor")
    flush = bool(mods.take("ftz"))
    dst, *sources = d.operands(ins, 4 if combine else 3)
    if t in ("f16x2", "bf16x2"):
        # p is the lower halves' result, q the upper halves' (PTX ISA 9.7.7.2); no complement.
        element = t[:-2]
        ra, rb = d.reader(ins, sources[0], "b32"), d.reader(ins, sources[1], "b32")

        def results(a, b):
            return tuple(compare(_half_floats(half(a, high), element, flush),
                                 _half_floats(half(b, high), element, flush)) for high in (False, True))
    else:
        sixteen = t in ("f16", "bf16")
        ra, rb = (d.reader(ins, source, "b16" if sixteen else t) for source in sources[:2])
        convert = (lambda x: _half_floats(x, t, flush)) if sixteen else \
            flush_f32 if flush and t == "f32" else (lambda x: x)

        def results(a, b):
            value = np.asarray(compare(convert(a), convert(b)))
            return value, ~value
    rc = d.reader(ins, sources[2], "pred") if combine else None
    first, second = (dst.first, dst.second) if isinstance(dst, PredicatePair) else (dst, None)
    wp, wq = d.writer(ins, first, "pred"), d.writer(ins, second, "pred")
    logic = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(combine)

    def run(w, m):
        p, q = results(np.asarray(ra(w)), np.asarray(rb(w)))
        if logic is not None:
            c = rc(w)
            p, q = logic(p, c), logic(q, c)
        wp(w, np.asarray(p), m)
        wq(w, np.asarray(q), m)
    return Decoder.normal(ins, run)


@opcode("selp")
def _selp(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type()
    dst, a, b, c = d.operands(ins, 4)
    ra, rb, rc, write = d.reader(ins, a, t), d.reader(ins, b, t), d.reader(ins, c, "pred"), d.writer(ins, dst, t)
    return Decoder.normal(ins, lambda w, m: write(w, np.where(rc(w), ra(w), rb(w)).astype(DTYPES[t]), m))


# ---------------------------------------------------------------- conversion and movement

@opcode("mov")
def _mov(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    t = mods.type()
    dst, src = d.operands(ins, 2)
    if isinstance(dst, Vector) or isinstance(src, Vector):
        return _pack_unpack(d, ins, t, dst, src)
    read, write = d.reader(ins, src, t), d.writer(ins, dst, t)
    return Decoder.normal(ins, lambda w, m: write(w, read(w), m))


def _pack_unpack(d: Decoder, ins: Instruction, t: str, dst, src) -> Op:
    """mov.b32/.b64/.b128 between a register and its parts ({lo, ..., hi})."""
    bits = _bits(t)
    if isinstance(dst, Vector) == isinstance(src, Vector):
        raise d.error(ins, "moves a vector to a vector")
    parts = (dst if isinstance(dst, Vector) else src).elements
    if bits not in (32, 64) or bits % len(parts):
        raise d.error(ins, f"cannot split .{t} into {len(parts)} parts")
    part_bits = bits // len(parts)
    part_type = f"b{part_bits}"
    whole_dtype = _UNSIGNED[bits]
    if isinstance(src, Vector):
        readers = [d.reader(ins, p, part_type) for p in parts]
        write = d.writer(ins, dst, t)

        def run(w, m):
            value = np.zeros((), whole_dtype)
            for i, r in enumerate(readers):
                value = value | (np.asarray(r(w)).astype(whole_dtype) << whole_dtype(part_bits * i))
            write(w, value, m)
        return Decoder.normal(ins, run)
    read = d.reader(ins, src, t)
    writers = [d.writer(ins, p, part_type) for p in parts]
    part_dtype = _UNSIGNED[part_bits]

    def run(w, m):
        value = np.asarray(read(w))
        for i, write in enumerate(writers):
            write(w, (value >> whole_dtype(part_bits * i)).astype(part_dtype), m)
    return Decoder.normal(ins, run)


def _float_to_int(values: np.ndarray, mode: str, t: str) -> np.ndarray:
    """Rounded to an integer of type ``t``, saturating; NaN gives 0."""
    rounded = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](values.astype(np.float64))
    rounded = np.nan_to_num(rounded, nan=0.0, posinf=np.inf, neginf=-np.inf)
    info = np.iinfo(DTYPES[t])
    if info.bits < 64:
        return np.clip(rounded, info.min, info.max).astype(DTYPES[t])
    top = 2.0 ** 63
    if info.min < 0:
        inside = np.where((rounded >= -top) & (rounded < top), rounded, 0).astype(np.int64)
        return np.where(rounded >= top, info.max, np.where(rounded < -top, info.min, inside)).astype(np.int64)
    low = np.where((rounded >= 0) & (rounded < top), rounded, 0).astype(np.uint64)
    high = (np.where((rounded >= top) & (rounded < 2 * top), rounded - top, 0)).astype(np.uint64) + np.uint64(2**63)
    return np.where(rounded >= 2 * top, np.uint64(info.max), np.where(rounded >= top, high,
                    np.where(rounded < 0, np.uint64(0), low)))


@opcode("cvt")
def _cvt(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    integer_rounding = mods.take("rni", "rzi", "rmi", "rpi")
    float_rounding = mods.take("rn", "rz", "rm", "rp", "rna")
    flush = mods.take("ftz")
    saturate = mods.take("sat")
    if mods.take("satfinite", "relu", "rs"):
        raise mods.error(".satfinite/.relu/.rs conversions are not supported by the emulator")
    types = mods.types()
    if len(types) != 2:
        raise mods.error("expects a destination and a source type")
    to, frm = types
    operands = d.operands(ins, 3 if to in ("f16x2", "bf16x2") else 2)
    dst_float, src_float = to in FLOATS or to == "tf32", frm in FLOATS
    if to in ("f16x2", "bf16x2"):
        if frm != "f32":
            raise mods.error("packs two .f32 values")
        ra, rb = d.reader(ins, operands[1], "f32"), d.reader(ins, operands[2], "f32")
        write = d.writer(ins, operands[0], "b32")
        element = to[:-2]
        mode = float_rounding or "rn"

        def run(w, m):
            # a goes to the upper half, b to the lower.
            write(w, pack(round_bits(np.asarray(rb(w)), element, mode), round_bits(np.asarray(ra(w)), element, mode)), m)
        return Decoder.normal(ins, run)
    if frm == "tf32":
        raise mods.error(".tf32 is not a conversion source")
    read_type = frm if frm not in ("f16", "bf16") else "b16"
    read = d.reader(ins, operands[1], read_type)
    write_type = to if to not in ("f16", "bf16", "tf32") else ("b16" if to != "tf32" else "b32")
    write = d.writer(ins, operands[0], write_type)

    def source(w):
        x = np.asarray(read(w))
        if src_float:
            x = bits_to_float(x, frm) if frm in ("f16", "bf16") else x
            if flush and frm == "f32":
                x = flush_f32(x)
        return x

    if dst_float:
        mode = float_rounding
        if src_float and integer_rounding:  # round to an integral value, same format
            if to != frm:
                raise mods.error("integer rounding of a float keeps its type")
            fn = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[integer_rounding]

            def run(w, m):
                x = fn(source(w))
                write(w, _float_result(x, to, "rn", saturate, flush), m)
            return Decoder.normal(ins, run)
        if src_float and (_bits(to) < _bits(frm) or to == "tf32") and mode is None:
            raise mods.error("a narrowing conversion needs a rounding modifier")
        if mode == "rna" and to != "tf32":
            raise mods.error(".rna is only for .tf32")
        if not src_float and _bits(frm) == 64 and to == "f32" and mode not in (None, "rn"):
            raise mods.error("directed rounding of a 64-bit integer to .f32 is not supported by the emulator")

        def run(w, m):
            x = source(w)
            if not src_float:
                if x.dtype.itemsize == 8 and to == "f32":
                    # int64 to f32 in one rounding (not through f64).
                    write(w, _float_result(x.astype(np.float32), to, "rn", saturate, flush), m)
                    return
                x = x.astype(np.float64)
            write(w, _float_result(x, to, mode or "rn", saturate, flush), m)
        return Decoder.normal(ins, run)
    if src_float:
        if integer_rounding is None:
            raise mods.error("a float-to-integer conversion needs .rni/.rzi/.rmi/.rpi")

        def run(w, m):
            write(w, _float_to_int(source(w), integer_rounding, to), m)
        return Decoder.normal(ins, run)
    # Integer to integer: extend or truncate, saturating with .sat.
    to_dtype = DTYPES[to]

    def run(w, m):
        x = np.asarray(read(w))
        if saturate:
            info = np.iinfo(to_dtype)
            wide = x.astype(np.int64) if x.dtype != np.uint64 else x
            value = np.clip(wide, info.min if x.dtype != np.uint64 else 0, info.max).astype(to_dtype)
        else:
            value = x.astype(to_dtype)
        write(w, value, m)
    return Decoder.normal(ins, run)


def _float_result(x: np.ndarray, to: str, mode: str, saturate, flush) -> np.ndarray:
    """Bits of ``x`` in format ``to`` (rounded in ``mode``), .sat clamped to [0, 1], .ftz flushed."""
    if saturate:
        x = np.clip(np.where(np.isnan(x), 0.0, x), 0.0, 1.0)
    bits = round_bits(np.asarray(x), to, mode)
    if flush and to == "f32":
        bits = flush_f32(bits.view(np.float32)).view(np.uint32)
    return bits


@opcode("cvta")
def _cvta(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    to_space = mods.take("to")
    # Blocks run in clusters of one here, and the .shared::cta window lies in the .shared::cluster one: a
    # CTA's own shared memory has the same address in both (PTX ISA, "Shared State Space").
    space = mods.take("global", "shared", "shared::cta", "shared::cluster", "local", "const", "param")
    t = mods.type({"u32", "u64"})
    if space is None:
        raise mods.error("needs a state space")
    space = space.split("::")[0]
    dst, src = d.operands(ins, 2)
    read, write = d.reader(ins, src, t), d.writer(ins, dst, t)
    base = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}.get(space, 0)
    dtype = DTYPES[t]
    offset = dtype.type(base & (2 ** _bits(t) - 1))
    if to_space:
        return Decoder.normal(ins, lambda w, m: write(w, np.asarray(read(w)) - offset, m))
    return Decoder.normal(ins, lambda w, m: write(w, np.asarray(read(w)) + offset, m))


@opcode("isspacep")
def _isspacep(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    space = mods.take("global", "shared", "shared::cta", "local", "const", "param")
    if space is None:
        raise mods.error("needs a state space")
    dst, a = d.operands(ins, 2)
    read, write = d.reader(ins, a, "u64"), d.writer(ins, dst, "pred")
    name = space.split("::")[0]

    def run(w, m):
        x = np.asarray(read(w))
        shared = (x >= SHARED_WINDOW) & (x < SHARED_WINDOW + WINDOW_BYTES)
        local = (x >= LOCAL_WINDOW) & (x < LOCAL_WINDOW + WINDOW_BYTES)
        param = (x >= PARAM_WINDOW) & (x < PARAM_WINDOW + WINDOW_BYTES)
        write(w, {"shared": shared, "local": local, "param": param}.get(name, ~(shared | local | param)), m)
    return Decoder.normal(ins, run)


# ---------------------------------------------------------------- memory

_LOAD_QUALIFIERS = ("weak", "volatile", "relaxed", "acquire", "release", "mmio", "cta", "cluster", "gpu", "sys",
                    "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc",
                    "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last",
                    "L1::no_allocate", "L2::evict_first", "L2::evict_last", "L2::evict_normal",
                    "L2::64B", "L2::128B", "L2::256B")
_SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "local": "local", "param": "param",
           "param::entry": "param", "param::func": "param", "const": "const"}


def _memory_operands(d: Decoder, ins: Instruction, mods: Mods, memory: int):
    """ld/st: (space, vector length, type, bytes per element, the address
    function, the register operand); ``memory`` is the address operand's index."""
    space, count, t, hint = _memory_mods(mods)
    operands = d.operands(ins, (3,) if hint else (2,))
    address, implied = d.address(ins, operands[memory])
    if space == "generic" and implied is not None:
        space = implied
    size = max(_bits(t) // 8, 1)
    if size > 8:
        raise mods.error(f".{t} accesses are not supported by the emulator")
    d.shared_access(space, size * count)
    return space, count, t, size, address, operands[1 - memory]


def _memory_mods(mods: Mods) -> tuple[str, int, str, bool]:
    """(space, vector length, type, has a cache-policy operand) of ld/st."""
    if mods.take("shared::cluster"):
        raise mods.error("distributed shared memory (.shared::cluster) is not supported by the emulator")
    space = mods.take(*_SPACES)
    while mods.take(*_LOAD_QUALIFIERS):
        pass
    hint = bool(mods.take("L2::cache_hint"))
    vector = mods.take("v2", "v4", "v8")
    t = mods.type()
    return (_SPACES[space] if space else "generic"), (int(vector[1:]) if vector else 1), t, hint


def _elements(d: Decoder, ins: Instruction, operand, count: int):
    if isinstance(operand, Vector):
        if len(operand.elements) != count:
            raise d.error(ins, f"expects a vector of {count}, got {len(operand.elements)}")
        return list(operand.elements)
    if count != 1:
        raise d.error(ins, f"expects a vector of {count}")
    return [operand]


@opcode("ld", "ldu")
def _ld(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    space, count, t, size, address, dst = _memory_operands(d, ins, mods, 1)
    element_type = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[size] if TYPES[t][1] in ("b", "f") else t
    writers = [d.writer(ins, e, element_type if TYPES[t][1] != "f" else t) for e in _elements(d, ins, dst, count)]
    unsigned = _UNSIGNED[size * 8]
    view_dtype = DTYPES[element_type if TYPES[t][1] != "f" else t]

    def run(w, m):
        lanes = w.lanes(m)
        if not len(lanes):
            return
        data = w.load(space, address(w, lanes), size * count, lanes).view(unsigned).view(view_dtype)
        for i, write in enumerate(writers):
            _scatter(w, write, data[:, i], lanes, m)
    return Decoder.normal(ins, run)


def _scatter(w: Wave, write, values: np.ndarray, lanes: np.ndarray, m) -> None:
    """Writes per-lane ``values`` of the lanes ``lanes`` (all lanes when ``m`` is None)."""
    if m is None:
        write(w, values, None)
        return
    full = np.zeros(w.n, values.dtype)
    full[lanes] = values
    write(w, full, m)


@opcode("st")
def _st(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    space, count, t, size, address, src = _memory_operands(d, ins, mods, 0)
    if space in ("param", "const"):
        raise mods.error(f"stores to .{space} are not supported by the emulator")
    element_type = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[size]
    readers = [d.reader(ins, e, element_type) if e is not None else None for e in _elements(d, ins, src, count)]
    if any(r is None for r in readers):
        raise d.error(ins, "a store of a sink (_)")
    unsigned = _UNSIGNED[size * 8]

    def run(w, m):
        lanes = w.lanes(m)
        if not len(lanes):
            return
        values = np.empty((len(lanes), count), unsigned)
        for i, r in enumerate(readers):
            v = np.asarray(r(w))
            values[:, i] = v[lanes] if v.shape == (w.n,) else v
        w.store(space, address(w, lanes), values.view(np.uint8).reshape(len(lanes), size * count), lanes)
    return Decoder.normal(ins, run)


@opcode("prefetch", "prefetchu")
def _prefetch(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    # A hint: nothing to check (a prefetch of any address is allowed).
    mods.take("global", "local", "L1", "L2", "tensormap", "L2::evict_last", "L2::evict_normal")
    mods.parts = [p for p in mods.parts if p in ("L1", "L2")]
    d.operands(ins, 1)
    return Decoder.normal(ins, lambda w, m: None)


_ATOMIC_OPS = ("and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max")


@opcode("atom", "red")
def _atom(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    base = ins.opcode.split(".")[0]
    while mods.take("relaxed", "acquire", "release", "acq_rel", "sem", "cta", "cluster", "gpu", "sys", "noftz"):
        pass
    space = mods.take("global", "shared", "shared::cta")
    if space is not None and space != "global":
        raise mods.error("shared-memory atomics are not supported by the emulator")
    op = mods.take(*_ATOMIC_OPS)
    if op is None:
        raise mods.error("needs an operation")
    hint = bool(mods.take("L2::cache_hint"))
    t = mods.type()
    if t.endswith("x2") or t in ("f16", "bf16"):
        raise mods.error(f".{t} atomics are not supported by the emulator")
    operands = list(ins.operands)
    if hint:
        operands = operands[:-1]
    if base == "atom":
        dst, operands = operands[0], operands[1:]
    else:
        dst = None
    need = 3 if op == "cas" else 2
    if len(operands) != need:
        raise d.error(ins, f"expects {need + (base == 'atom')} operands")
    address, _ = d.address(ins, operands[0])
    rb = d.reader(ins, operands[1], t)
    rc = d.reader(ins, operands[2], t) if op == "cas" else None
    write = d.writer(ins, dst, t) if dst is not None else None
    size = _bits(t) // 8
    dtype = DTYPES[t]
    combine = {
        "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor, "add": np.add,
        "min": np.minimum, "max": np.maximum, "exch": lambda old, b: b,
        "inc": lambda old, b: np.where(old >= b, dtype.type(0), old + dtype.type(1)),
        "dec": lambda old, b: np.where((old == 0) | (old > b), b, old - dtype.type(1)),
    }

    def run(w, m):
        lanes = w.lanes(m)
        if not len(lanes):
            return
        addresses = address(w, lanes)
        if (space or "global") == "global" and ((addresses >= SHARED_WINDOW) &
                                                (addresses < LOCAL_WINDOW + WINDOW_BYTES)).any():
            raise Fault("an atomic on a generic address outside global memory", lanes[:1])
        b = np.broadcast_to(np.asarray(rb(w)), (w.n,))[lanes]
        c = np.broadcast_to(np.asarray(rc(w)), (w.n,))[lanes] if rc is not None else None
        old = np.empty(len(lanes), dtype)
        # Lanes act one after another, in lane order: one of the orders a GPU may take.
        for buffer, offsets, pick in w.memory.views(addresses, size, lanes, f"{base}.{op}"):
            view = buffer.view(dtype)
            slots = offsets // size
            picked = np.flatnonzero(pick)
            if len(np.unique(slots)) == len(slots):
                before = view[slots].copy()
                if op == "cas":
                    after = np.where(before == b[picked], c[picked], before)  # [a] == b ? c : [a]
                else:
                    after = combine[op](before, b[picked]).astype(dtype)
                view[slots] = after
                old[picked] = before
            else:
                for k, slot in zip(picked, slots):
                    before = view[slot].copy()
                    after = (c[k] if before == b[k] else before) if op == "cas" else \
                        np.asarray(combine[op](before, b[k])).astype(dtype)
                    view[slot] = after
                    old[k] = before
        if write is not None:
            _scatter(w, write, old, lanes, m)
    return Decoder.normal(ins, run)


@opcode("cp")
def _cp_async(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if not mods.take("async"):
        raise mods.error("only cp.async is supported")
    if mods.take("bulk"):
        return _cp_async_bulk(d, ins, mods)
    if mods.take("commit_group"):
        d.operands(ins, 0)
        return Decoder.normal(ins, lambda w, m: w.async_commit(w.lanes(m)))
    if mods.take("wait_group"):
        (count,) = d.operands(ins, 1)
        if not isinstance(count, Immediate):
            raise d.error(ins, "the group count must be an immediate")
        keep = int(count.value)
        return Decoder.normal(ins, lambda w, m: w.async_wait(w.lanes(m), keep))
    if mods.take("wait_all"):
        d.operands(ins, 0)

        def wait_all(w, m):
            lanes = w.lanes(m)
            w.async_commit(lanes)
            w.async_wait(lanes, 0)
        return Decoder.normal(ins, wait_all)
    level = mods.take("ca", "cg")
    if level is None or not mods.take("shared", "shared::cta") or not mods.take("global"):
        raise mods.error("expects cp.async.ca/.cg.shared.global")
    mods.take("L2::64B", "L2::128B", "L2::256B")
    hint = bool(mods.take("L2::cache_hint"))
    operands = list(ins.operands[:-1] if hint else ins.operands)
    if len(operands) not in (3, 4):
        raise d.error(ins, "expects [dst], [src], cp-size{, src-size | ignore-src}")
    dst_address, _ = d.address(ins, operands[0])
    src_address, _ = d.address(ins, operands[1])
    if not isinstance(operands[2], Immediate) or operands[2].value not in (4, 8, 16):
        raise d.error(ins, "cp-size must be 4, 8 or 16")
    size = int(operands[2].value)
    if level == "cg" and size != 16:
        raise d.error(ins, "cp.async.cg copies 16 bytes")
    d.shared_access("shared", size)
    extra = operands[3] if len(operands) == 4 else None
    if isinstance(extra, Register) and extra.type == "pred":
        ignore = d.reader(ins, extra, "pred")
        src_size = lambda w, lanes: np.where(np.broadcast_to(ignore(w), (w.n,))[lanes], 0, size)  # noqa: E731
    elif extra is not None:
        read = d.reader(ins, extra, "u32")
        src_size = lambda w, lanes: np.broadcast_to(np.asarray(read(w)), (w.n,))[lanes].astype(np.int64)  # noqa: E731
    else:
        src_size = lambda w, lanes: np.full(len(lanes), size, np.int64)  # noqa: E731

    def run(w, m):
        lanes = w.lanes(m)
        if len(lanes):
            w.async_copy(dst_address(w, lanes), src_address(w, lanes), size, src_size(w, lanes), lanes)
    return Decoder.normal(ins, run)


def _cp_async_bulk(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """cp.async.bulk (PTX ISA 9.7.9.25): global -> shared completing on an
    mbarrier, shared -> global in bulk async-groups, their commit and wait."""
    d.needs(ins, 90)
    if mods.take("commit_group"):
        d.operands(ins, 0)
        return Decoder.normal(ins, lambda w, m: w.bulk_commit(w.lanes(m)))
    if mods.take("wait_group"):
        # .read waits for the source reads only; stores here are written when issued, so both are one.
        mods.take("read")
        (count,) = d.operands(ins, 1)
        if not isinstance(count, Immediate):
            raise d.error(ins, "the group count must be an immediate")
        keep = int(count.value)
        return Decoder.normal(ins, lambda w, m: w.bulk_wait(w.lanes(m), keep))
    hint = bool(mods.take("L2::cache_hint"))
    operands = list(ins.operands[:-1] if hint else ins.operands)
    tensor = bool(mods.take("tensor"))
    if mods.take("prefetch"):
        if tensor:
            return _tensor_prefetch(d, ins, mods, operands)
        if not mods.take("L2") or not mods.take("global") or len(operands) != 2:
            raise mods.error("expects cp.async.bulk.prefetch.L2.global [src], size")
        return Decoder.normal(ins, lambda w, m: None)  # a cache hint
    to_shared = _bulk_direction(mods, "cp.async.bulk.tensor.Nd" if tensor else "cp.async.bulk")
    if tensor:
        return _cp_async_bulk_tensor(d, ins, mods, operands, to_shared)
    if len(operands) != (4 if to_shared else 3):
        raise d.error(ins, "expects [dst], [src], size, [mbar]" if to_shared else "expects [dst], [src], size")
    dst, _ = d.address(ins, operands[0])
    src, _ = d.address(ins, operands[1])
    size = d.reader(ins, operands[2], "u32")
    d.shared_access("shared", 16)
    lanes_of = lambda w, lanes: np.broadcast_to(np.asarray(size(w)), (w.n,))[lanes].astype(np.int64)  # noqa: E731
    if len(operands) == 3:
        def store(w, m):
            lanes = w.lanes(m)
            if len(lanes):
                w.bulk_store(dst(w, lanes), src(w, lanes), lanes_of(w, lanes), lanes)
        return Decoder.normal(ins, store)
    bar, _ = d.address(ins, operands[3])
    d.shared_access("shared", 8)

    def load(w, m):
        lanes = w.lanes(m)
        if len(lanes):
            w.bulk_load(dst(w, lanes), src(w, lanes), lanes_of(w, lanes), bar(w, lanes), lanes)
    return Decoder.normal(ins, load)


def _bulk_direction(mods: Mods, name: str) -> bool:
    """The state spaces of a bulk copy and its completion: True for global -> shared."""
    spaces = [p for p in mods.parts if p in ("global", "shared::cta", "shared::cluster")]
    for space in spaces:
        mods.take(space)
    if spaces == ["global", "shared::cta"]:
        if not mods.take("bulk_group"):
            raise mods.error("a bulk store to global memory completes through .bulk_group")
        return False
    if spaces in (["shared::cluster", "global"], ["shared::cta", "global"]):
        if not mods.take("mbarrier::complete_tx::bytes"):
            raise mods.error("a bulk copy into shared memory completes through .mbarrier::complete_tx::bytes")
        if mods.take("multicast::cluster"):
            raise mods.error(".multicast::cluster is not supported by the emulator")
        return True
    raise mods.error(f"expects {name}.shared::cluster.global (or .shared::cta.global) or {name}.global.shared::cta")


def _tensor_operands(d: Decoder, ins: Instruction, mods: Mods, operand):
    """A tensor copy's dimension and ``[tensorMap, {coords}]`` operand: a
    function of (wave, lanes) giving the maps' state space and addresses
    and one of the signed 32-bit coordinates (lanes, rank), innermost first."""
    dim = mods.take("1d", "2d", "3d", "4d", "5d")
    if dim is None:
        raise mods.error("expects the tensor's dimension, .1d to .5d")
    rank = int(dim[0])
    # .tile is the default load mode; the im2col modes gather rows of a convolution's input.
    mods.take("tile")
    if mods.take("im2col", "im2col::w", "im2col::w::128", "tile::gather4", "tile::scatter4"):
        raise mods.error("only the .tile mode of cp.async.bulk.tensor is supported by the emulator")
    if not isinstance(operand, TensorAddress):
        raise d.error(ins, "expects the tensor operand [tensorMap, {coordinates}]")
    if len(operand.coords.elements) != rank:
        raise d.error(ins, f"a .{dim} copy takes {rank} coordinates, got {len(operand.coords.elements)}")
    address, implied = d.address(ins, operand.map)
    space = implied or "generic"
    if space not in ("generic", "param", "global", "const"):
        raise d.error(ins, f"the tensor map is in the .{space} state space; it must be a kernel parameter, .const "
                      "or .global")
    readers = []
    for element in operand.coords.elements:
        if not isinstance(element, (Register, Immediate)):
            raise d.error(ins, "the coordinates must be registers or immediates")
        readers.append(d.reader(ins, element, "s32"))

    def read(w, lanes):
        coords = np.stack([np.broadcast_to(np.asarray(r(w)), (w.n,))[lanes].astype(np.int64) for r in readers], 1)
        maps = w.tensor_maps(space, address(w, lanes), lanes)
        for k, tmap in enumerate(maps):
            if len(tmap.dims) != rank:
                raise Fault(f"{ins.opcode}: a .{dim} copy of a rank-{len(tmap.dims)} tensor map", lanes[k:k + 1])
        return maps, coords
    return read


def _cp_async_bulk_tensor(d: Decoder, ins: Instruction, mods: Mods, operands: list, to_shared: bool) -> Op:
    """cp.async.bulk.tensor (PTX ISA 9.7.9.27), tile mode: the box of a
    tensor map (see :mod:`.tensormap`) global -> shared completing on an
    mbarrier, shared -> global in bulk async-groups."""
    if len(operands) != (3 if to_shared else 2):
        raise d.error(ins, "expects [dstMem], [tensorMap, {coordinates}], [mbar]" if to_shared else
                      "expects [tensorMap, {coordinates}], [srcMem]")
    box = _tensor_operands(d, ins, mods, operands[1] if to_shared else operands[0])
    shared, _ = d.address(ins, operands[0] if to_shared else operands[1])
    d.shared_access("shared", 16)
    if not to_shared:
        def store(w, m):
            lanes = w.lanes(m)
            if len(lanes):
                w.tensor_store(*box(w, lanes), shared(w, lanes), lanes)
        return Decoder.normal(ins, store)
    bar, _ = d.address(ins, operands[2])
    d.shared_access("shared", 8)

    def load(w, m):
        lanes = w.lanes(m)
        if len(lanes):
            w.tensor_load(shared(w, lanes), *box(w, lanes), bar(w, lanes), lanes)
    return Decoder.normal(ins, load)


def _tensor_prefetch(d: Decoder, ins: Instruction, mods: Mods, operands: list) -> Op:
    """cp.async.bulk.prefetch.tensor.Nd.L2.global: a cache hint, its tensor map still read and checked."""
    if not mods.take("L2") or not mods.take("global") or len(operands) != 1:
        raise mods.error("expects cp.async.bulk.prefetch.tensor.Nd.L2.global [tensorMap, {coordinates}]")
    box = _tensor_operands(d, ins, mods, operands[0])

    def run(w, m):
        lanes = w.lanes(m)
        if len(lanes):
            box(w, lanes)
    return Decoder.normal(ins, run)


@opcode("tensormap")
def _tensormap(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """tensormap.replace.tile.field{.global, .shared::cta}.b1024.type [addr],
    {ord,} new_val (PTX ISA, sm_90a): one field of the tensor map at addr
    (the emulator's encoding, :mod:`.tensormap`), read, changed and written
    back by each executing thread in lane order; and tensormap.cp_fenceproxy."""
    d.needs(ins, 90, arch_specific=True)
    if mods.take("cp_fenceproxy"):
        return _tensormap_copy(d, ins, mods)
    if not mods.take("replace"):
        raise mods.error("expects tensormap.replace or tensormap.cp_fenceproxy")
    if not mods.take("tile"):
        raise mods.error("only the .tile mode of tensormap.replace is supported by the emulator")
    field = mods.take(*FIELDS)
    if field is None:
        raise mods.error(f"expects a field ({', '.join('.' + f for f in FIELDS)})")
    space = {"global": "global", "shared::cta": "shared", None: "generic"}[mods.take("global", "shared::cta")]
    if not mods.take("b1024"):
        raise mods.error("needs .b1024, the size of a tensor map")
    _, _, count, bits = FIELDS[field]
    t = mods.type({"b32", "b64"})
    if t != f"b{bits}":
        raise mods.error(f".{field} takes a .b{bits} value")
    operands = d.operands(ins, 3 if count > 1 else 2)
    address, implied = d.address(ins, operands[0])
    space = implied or space
    ord_ = 0
    if count > 1:
        if not isinstance(operands[1], Immediate) or operands[1].is_float:
            raise d.error(ins, "the dimension (ord) must be an integer immediate")
        ord_ = int(operands[1].value)
    value = d.reader(ins, operands[-1], t)
    d.shared_access(space, 128)

    def run(w, m):
        lanes = w.lanes(m)
        values = np.broadcast_to(np.asarray(value(w)), (w.n,))[lanes]
        for k in range(len(lanes)):  # each thread's read-modify-write in turn
            lane, at = lanes[k:k + 1], address(w, lanes[k:k + 1])
            raw = w.tensor_map_bytes(space, at, lane)[0].tobytes()
            try:
                raw = replace_field(raw, field, ord_, int(values[k]))
            except ValueError as error:
                raise Fault(f"{ins.opcode}: {error}", lane) from None
            w.store(space, at, np.frombuffer(raw, np.uint8)[None], lane, align=64)
    return Decoder.normal(ins, run)


def _tensormap_copy(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope.sync.aligned
    [dst], [src], 128: a warp copies a tensor map from shared to global
    memory (once: its threads give the same addresses), then a release
    fence of the tensormap proxy, which orders nothing more here: the
    emulator's tensor copies read the map from memory as it is."""
    if not (mods.take("global") and mods.take("shared::cta") and mods.take("tensormap::generic") and
            mods.take("release") and mods.take("cta", "cluster", "gpu", "sys")):
        raise mods.error("expects tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope")
    if not (mods.take("sync") and mods.take("aligned")):
        raise mods.error("needs .sync.aligned")
    dst, src, size = d.operands(ins, 3)
    if not isinstance(size, Immediate) or size.value != 128:
        raise d.error(ins, "the size must be 128, a tensor map's")
    dst_address, _ = d.address(ins, dst)
    src_address, _ = d.address(ins, src)
    d.shared_access("shared", 128)

    def run(w, m):
        w.warp_check(m, ins.opcode)
        lanes = w.lanes(m)
        if not len(lanes):
            return
        targets, sources = dst_address(w, lanes), src_address(w, lanes)
        first = np.flatnonzero(np.r_[True, lanes[1:] // WARP != lanes[:-1] // WARP])
        leader = np.repeat(first, np.diff(np.r_[first, len(lanes)]))
        differ = (targets != targets[leader]) | (sources != sources[leader])
        if differ.any():
            raise Fault(f"{ins.opcode}: the threads of a warp give different addresses", lanes[differ][:1])
        raw = w.tensor_map_bytes("shared", sources[first], lanes[first])
        w.store("global", targets[first], raw, lanes[first], align=64)
    return Decoder.normal(ins, run)


_MBARRIER_SEMANTICS = {"init": (), "inval": (), "arrive": ("release", "relaxed"), "arrive_drop": ("release", "relaxed"),
                       "expect_tx": ("relaxed",), "complete_tx": ("relaxed",), "test_wait": ("acquire", "relaxed"),
                       "try_wait": ("acquire", "relaxed")}


@opcode("mbarrier")
def _mbarrier(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    """mbarrier (PTX ISA 9.7.13.15) on an mbarrier object in shared memory:
    init, inval, arrive{.expect_tx}/arrive_drop, expect_tx, complete_tx and
    the test_wait/try_wait{.parity} tests, whose lanes wait while the phase
    is incomplete (see :mod:`.machine`)."""
    action = mods.take(*_MBARRIER_SEMANTICS)
    if action is None:
        raise mods.error("expects init, inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait or try_wait")
    arriving = action in ("arrive", "arrive_drop")
    expect = arriving and bool(mods.take("expect_tx"))
    no_complete = arriving and bool(mods.take("noComplete"))
    parity = action in ("test_wait", "try_wait") and bool(mods.take("parity"))
    sem = mods.take(*_MBARRIER_SEMANTICS[action]) if _MBARRIER_SEMANTICS[action] else None
    scope = mods.take("cta", "cluster") if sem else None
    space = mods.take("shared", "shared::cta", "shared::cluster")
    mods.type({"b64"})
    operands = list(ins.operands)
    # Counts without .noComplete, transactions, try_wait, semantics and cluster addresses are sm_90's.
    if action in ("expect_tx", "complete_tx", "try_wait") or expect or sem or scope or space == "shared::cluster" \
            or arriving and len(operands) == 3 and not no_complete:
        d.needs(ins, 90)
    if no_complete and (expect or len(operands) != 3):
        raise mods.error(".noComplete takes state, [addr], count")
    if space == "shared::cluster" and (not arriving or operands and operands[0] is not None):
        raise mods.error("on a .shared::cluster mbarrier a thread only arrives, with the sink _ as its state")
    d.shared_access("shared", 8)

    def address_of(operand):
        address, implied = d.address(ins, operand)
        if space is not None or implied == "shared":
            return address

        def generic(w, lanes):
            a = address(w, lanes)
            outside = (a < SHARED_WINDOW) | (a >= SHARED_WINDOW + WINDOW_BYTES)
            if outside.any():
                raise Fault(f"{ins.opcode} on a generic address outside shared memory", lanes[outside][:1])
            return a - np.uint64(SHARED_WINDOW)
        return generic

    def values(read, w, lanes):
        return np.broadcast_to(np.asarray(read(w)), (w.n,))[lanes]

    if action in ("init", "expect_tx", "complete_tx"):
        if len(operands) != 2:
            raise d.error(ins, "expects [addr], count")
        address, count = address_of(operands[0]), d.reader(ins, operands[1], "u32")

        def run(w, m):
            lanes = w.lanes(m)
            if not len(lanes):
                return
            n = values(count, w, lanes).astype(np.int64)
            if action == "init":
                w.mbarrier_init(address(w, lanes), n, lanes)
            else:
                w.mbarrier_tx(address(w, lanes), n if action == "expect_tx" else -n, lanes, ins.opcode)
        return Decoder.normal(ins, run)
    if action == "inval":
        if len(operands) != 1:
            raise d.error(ins, "expects [addr]")
        address = address_of(operands[0])

        def inval(w, m):
            lanes = w.lanes(m)
            if len(lanes):
                w.mbarrier_inval(address(w, lanes), lanes)
        return Decoder.normal(ins, inval)
    if arriving:
        if len(operands) not in (2, 3) or expect and len(operands) != 3:
            raise d.error(ins, "expects state, [addr], txCount" if expect else "expects state, [addr]{, count}")
        write = d.writer(ins, operands[0], "b64")
        address = address_of(operands[1])
        extra = d.reader(ins, operands[2], "u32") if len(operands) == 3 else None

        def arrive(w, m):
            lanes = w.lanes(m)
            if not len(lanes):
                return
            n = values(extra, w, lanes).astype(np.int64) if extra is not None else np.ones(len(lanes), np.int64)
            states = w.mbarrier_arrive(address(w, lanes), np.ones(len(lanes), np.int64) if expect else n,
                                       n if expect else None, lanes, ins.opcode, drop=action == "arrive_drop",
                                       complete=not no_complete, release=sem != "relaxed")
            _scatter(w, write, states, lanes, m)
        return Decoder.normal(ins, arrive)
    # test_wait / try_wait: waitComplete, [addr], state | phaseParity {, suspendTimeHint}
    if len(operands) not in ((3, 4) if action == "try_wait" else (3,)):
        raise d.error(ins, f"expects waitComplete, [addr], {'phaseParity' if parity else 'state'}"
                           f"{', suspendTimeHint' if action == 'try_wait' else ''}")
    if len(operands) == 4:
        d.reader(ins, operands[3], "u32")  # a time hint: the wait here lasts until the mbarrier changes
    write = d.writer(ins, operands[0], "pred")
    address = address_of(operands[1])
    token = d.reader(ins, operands[2], "u32" if parity else "b64")

    # A failed try_wait suspends its lanes (the ISA lets it) until the mbarrier changes; so does a
    # failed test_wait, which is only running it later, one of the orders a GPU may choose, unless
    # nothing else can run: then it returns false (w.impatient), as it never blocks.
    def wait(w, m):
        lanes = w.lanes(m)
        if not len(lanes):
            return lanes
        done = w.mbarrier_wait(address(w, lanes), values(token, w, lanes), parity, lanes, ins.opcode,
                               acquire=sem != "relaxed")
        _scatter(w, write, done, lanes, m)
        failed = lanes[~done]
        if action == "test_wait":
            failed = failed[~w.impatient[failed]]
            w.impatient[lanes] = False
        return failed
    return Op(WAIT, wait, ins)


@opcode("createpolicy")
def _createpolicy(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    # A cache policy is an opaque 64-bit value that loads only pass on.
    mods.parts = [p for p in mods.parts if p not in ("fractional", "range", "L2::evict_last", "L2::evict_normal",
                                                    "L2::evict_first", "L2::evict_unchanged", "b64")]
    write = d.writer(ins, ins.operands[0], "b64")
    return Decoder.normal(ins, lambda w, m: write(w, np.uint64(0), m))


@opcode("membar", "fence")
def _fence(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    # One thread at a time is sequentially consistent: fences order nothing more, but for
    # fence.proxy.async of shared memory, which makes the generic proxy's writes visible to the async
    # proxy's reads (bulk and tensor stores, wgmma operands: memory.py checks that one is ordered between
    # them). The async proxy's writes are ordered by their mbarrier and its reads by bulk wait_group
    # here; tensor copies read their tensor map from memory as it is, so the tensormap proxy's fences
    # have nothing to order (a missing one is not detected), nor has a .global proxy fence (the emulator
    # does not follow which proxy wrote global memory).
    if mods.take("proxy"):
        kind = mods.take("async", "alias", "tensormap::generic")
        if kind is None:
            raise mods.error("unknown proxy fence")
        operands = 0
        run = None
        if kind == "async":
            d.needs(ins, 90)
            if mods.take("shared::cta", "shared::cluster", "global") != "global":
                run = lambda w, m: w.proxy_fence(w.lanes(m))  # noqa: E731
        elif kind == "tensormap::generic":
            d.needs(ins, 90)
            if mods.take("release", "acquire") == "acquire":
                operands = 2  # [addr], size
            if not mods.take("cta", "cluster", "gpu", "sys"):
                raise mods.error("needs a scope")
        d.operands(ins, operands)
        return Decoder.normal(ins, run or (lambda w, m: None))
    if mods.take("mbarrier_init"):
        d.needs(ins, 90)
        if not mods.take("release") or not mods.take("cluster"):
            raise mods.error("expects fence.mbarrier_init.release.cluster")
    while mods.take("cta", "gl", "sys", "gpu", "cluster", "sc", "acq_rel", "release", "acquire"):
        pass
    d.operands(ins, 0)
    return Decoder.normal(ins, lambda w, m: None)


# ---------------------------------------------------------------- control flow

@opcode("bra")
def _bra(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mods.take("uni")
    (target,) = d.operands(ins, 1)
    if not isinstance(target, Symbol) or target.name not in d.function.labels:
        raise d.error(ins, f"branch to an unknown label {getattr(target, 'name', target)}")
    return Op(BRANCH, None, ins, d.function.labels[target.name])


@opcode("ret", "exit")
def _ret(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mods.take("uni")
    d.operands(ins, 0)
    return Op(EXIT, None, ins)


@opcode("trap", "brkpt")
def _trap(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    def run(w, m):
        lanes = w.lanes(m)
        if len(lanes):
            raise Fault(f"the kernel executed {ins.opcode} (an assertion failed or an error was detected)", lanes[:1])
    return Decoder.normal(ins, run)


@opcode("nanosleep", "pmevent", "griddepcontrol")
def _no_effect(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    # Timing and profiling hints: no effect on results.
    mods.take("u32", "mask", "launch_dependents", "wait")
    return Decoder.normal(ins, lambda w, m: None)


@opcode("bar", "barrier")
def _bar(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    if mods.take("warp"):
        return _warp_sync(d, ins, mods)
    mods.take("cta")
    kind = mods.take("sync", "arrive", "red")
    mods.take("aligned")
    if kind != "sync":
        raise mods.error(f"bar.{kind} is not supported by the emulator")
    operands = d.operands(ins, (0, 1, 2))
    if operands and not (isinstance(operands[0], Immediate) and operands[0].value == 0):
        raise d.error(ins, "named barriers other than 0 are not supported by the emulator")
    if len(operands) == 2:
        count = d.reader(ins, operands[1], "u32")

        def check(w, m):
            if np.any(np.asarray(count(w)) != w.threads):
                raise Fault("bar.sync with a thread count other than the block's is not supported by the "
                            "emulator", w.lanes(m)[:1])
        return Op(BARRIER, check, ins)
    return Op(BARRIER, None, ins)


def _warp_sync(d: Decoder, ins: Instruction, mods: Mods) -> Op:
    mods.take("sync")
    (member,) = d.operands(ins, 1)
    read = d.reader(ins, member, "b32")
    from .warp import check_members

    def run(w, m):
        members = check_members(w, m, read, ins.opcode)
        if w.shared is None:
            return
        # The warp barrier orders its threads' memory accesses (PTX ISA): for the race detector a
        # barrier among them.
        executing = members & (w.alive if m is None else m).reshape(-1, WARP)
        for warp in np.flatnonzero(executing.sum(axis=1) > 1):
            w.shared.join(warp * WARP + np.flatnonzero(executing[warp]))
    return Decoder.normal(ins, run)
