"""Bit-exact number formats and roundings of the PTX ISA (section 4.2, 9.7.9 cvt).

Registers hold raw bits; these helpers reinterpret them, round between
formats in every rounding mode PTX names (``rn``, ``rna``, ``rz``, ``rm``,
``rp``), flush subnormals (``.ftz``) and recover the exact error of an f64 sum (for a correctly
rounded f32 ``fma`` and directed roundings). numpy's float32 arithmetic is already IEEE round-to-nearest-even;
f16 and bf16 arithmetic is done in f32 or f64 and rounded once, which is
exact for +, -, *, / and sqrt (the wider format has more than twice the
precision plus two bits).
"""

from __future__ import annotations

import numpy as np

from ...dtypes import BFLOAT16

__all__ = ["DTYPES", "STORAGE", "bits_to_float", "flush_f32", "half", "pack", "round_bits", "tf32_truncate",
           "two_sum"]

# The numpy dtype that reads a register as each PTX scalar type.
DTYPES: dict[str, np.dtype] = {
    "pred": np.dtype(bool),
    "b8": np.dtype(np.uint8), "u8": np.dtype(np.uint8), "s8": np.dtype(np.int8),
    "b16": np.dtype(np.uint16), "u16": np.dtype(np.uint16), "s16": np.dtype(np.int16),
    "f16": np.dtype(np.float16), "bf16": np.dtype(BFLOAT16),
    "b32": np.dtype(np.uint32), "u32": np.dtype(np.uint32), "s32": np.dtype(np.int32),
    "f32": np.dtype(np.float32), "f16x2": np.dtype(np.uint32), "bf16x2": np.dtype(np.uint32),
    "tf32": np.dtype(np.uint32),
    "b64": np.dtype(np.uint64), "u64": np.dtype(np.uint64), "s64": np.dtype(np.int64),
    "f64": np.dtype(np.float64),
}

# The dtype that stores a register of each bit width.
STORAGE: dict[int, np.dtype] = {1: np.dtype(bool), 8: np.dtype(np.uint8), 16: np.dtype(np.uint16),
                                32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}

_UNSIGNED = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def half(bits: np.ndarray, high: bool) -> np.ndarray:
    """The upper or lower 16 bits of 32-bit words (the two elements of an f16x2 or a fragment register)."""
    return (np.asarray(bits) >> np.uint32(16)).astype(np.uint16) if high else np.asarray(bits).astype(np.uint16)


def pack(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """32-bit words of two 16-bit halves, ``low`` in bits 0-15."""
    return np.asarray(low).astype(np.uint32) | (np.asarray(high).astype(np.uint32) << np.uint32(16))


def bits_to_float(bits: np.ndarray, type_: str) -> np.ndarray:
    """The f16/bf16/f32/f64 values whose bits are ``bits``, widened to f32 (f64 for f64)."""
    if type_ == "f64":
        return bits.view(np.float64)
    if type_ == "f32":
        return bits.view(np.float32)
    return bits.view(DTYPES[type_]).astype(np.float32)


def flush_f32(values: np.ndarray) -> np.ndarray:
    """``.ftz``: f32 subnormals become zeros of the same sign."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    subnormal = (bits & np.uint32(0x7F800000)) == 0
    return np.where(subnormal, bits & np.uint32(0x80000000), bits).view(np.float32)


def _directed(x: np.ndarray, error: np.ndarray | None, dtype: np.dtype, mode: str) -> np.ndarray:
    """``x + error`` (``error`` tiny beside ``x``, or None for exact ``x``)
    rounded to ``dtype`` in ``mode``: round-to-nearest-even, or toward
    zero/-inf/+inf. numpy's cast rounds to nearest even; the other modes
    step to the neighbour where the cast went the wrong way."""
    r = x.astype(dtype)
    back = r.astype(np.float64)
    x64 = x.astype(np.float64)
    e = np.zeros_like(x64) if error is None else error
    if mode == "rn":
        if error is None:
            return r
        # A tie after the f64 sum that the exact sum does not sit on: step toward it.
        toward = np.where(back < x64, np.inf, -np.inf).astype(dtype)
        other = np.nextafter(r, toward)
        tie = ((back + other.astype(np.float64)) * 0.5 == x64) & (e != 0) & np.isfinite(back)
        wrong = tie & (np.sign(e) == np.sign(x64 - back))
        return np.where(wrong, other, r)
    if mode == "rz":
        fix = (np.abs(back) > np.abs(x64)) | ((back == x64) & (e != 0) & (np.sign(e) == -np.sign(x64)))
        target = np.zeros((), dtype)
    elif mode == "rm":
        fix = (back > x64) | ((back == x64) & (e < 0))
        target = np.array(-np.inf, dtype)
    elif mode == "rp":
        fix = (back < x64) | ((back == x64) & (e > 0))
        target = np.array(np.inf, dtype)
    else:
        raise ValueError(mode)
    return np.where(fix & ~np.isnan(x64), np.nextafter(r, target), r)


def round_bits(values: np.ndarray, target: str, mode: str = "rn", error: np.ndarray | None = None) -> np.ndarray:
    """``values`` (f32 or f64, plus an optional exact ``error``) rounded to
    ``target`` (f16, bf16, tf32, f32, f64) in ``mode``; returns the bits."""
    if target == "f64":
        return np.asarray(values, np.float64).view(np.uint64)
    if target in ("f32", "f16"):
        dtype = np.dtype(np.float32 if target == "f32" else np.float16)
        return _directed(np.asarray(values), error, dtype, mode).view(_UNSIGNED[dtype.itemsize * 8])
    # bf16 and tf32 keep the top 16 / 19 bits of an f32.
    bits = np.asarray(values).astype(np.float32).view(np.uint32)
    drop = 16 if target == "bf16" else 13
    half = np.uint32(1 << (drop - 1))
    low_mask = np.uint32((1 << drop) - 1)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)  # inf, nan: kept
    negative = (bits >> np.uint32(31)).astype(bool)
    inexact = (bits & low_mask) != 0
    if mode == "rn":
        rounded = bits + (half - np.uint32(1)) + ((bits >> np.uint32(drop)) & np.uint32(1))
    elif mode == "rna":
        rounded = bits + half
    elif mode == "rz":
        rounded = bits
    elif mode in ("rm", "rp"):
        up = inexact & (negative if mode == "rm" else ~negative)  # away from zero in magnitude
        rounded = bits + np.where(up, low_mask + np.uint32(1), np.uint32(0)).astype(np.uint32)
    else:
        raise ValueError(mode)
    out = np.where(special, bits | np.where((bits & low_mask) != 0, np.uint32(1 << drop), np.uint32(0)),
                   rounded) & ~low_mask
    return (out >> np.uint32(16)).astype(np.uint16) if target == "bf16" else out.astype(np.uint32)


def tf32_truncate(bits: np.ndarray) -> np.ndarray:
    """The f32 a tensor core reads from a .tf32 operand: the low 13 mantissa bits ignored."""
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a + b`` in f64 and the exact error of that sum (Knuth's TwoSum), so
    that a directed or once-rounded f32 result can be taken from the pair."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    s = a + b
    bp = s - b
    error = (a - bp) + (b - (s - bp))
    return s, np.where(np.isfinite(error), error, 0.0)


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` in f64 and its exact error (Dekker's product: Veltkamp's
    split of each factor into two 26-bit halves)."""
    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = x * 134217729.0  # 2^27 + 1
        high = t - (t - x)
        return high, x - high
    p = a * b
    (ah, al), (bh, bl) = split(a), split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to f64, as fma.rn.f64: the exact product
    and sum as unevaluated f64 pairs, their tail rounded to odd, then one
    rounding to nearest (Boldo and Melquiond, "Emulation of FMA and
    correctly rounded sums", IEEE TC 2008). Where a term is not finite, or
    so large or small that the splitting would overflow or lose bits, the
    plain f64 ``a * b + c`` (infinities and NaN come out as the GPU's)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        high, low = _two_prod(a, b)
        sum_high, sum_low = two_sum(c, low)
        top, rest = two_sum(high, sum_high)
        tail, error = two_sum(rest, sum_low)
        # Round the tail to odd: an inexact one takes the neighbour with an odd last bit.
        even = (tail.view(np.uint64) & np.uint64(1)) == 0
        toward = np.nextafter(tail, np.where(error > 0, np.inf, -np.inf))
        tail = np.where((error != 0) & even, toward, tail)
        exact = top + tail
        plain = a * b + c
        scale = np.maximum(np.abs(a), np.abs(b))
        safe = np.isfinite(exact) & np.isfinite(plain) & (scale < 2.0 ** 995) & \
            ((np.abs(high) > 2.0 ** -969) | (high == 0))
    return np.where(safe, exact, plain)
