"""A manifest's size symbols and size expressions, read as untrusted JSON.

A CUDA artifact of a program with dynamic shapes (docs/dynamic-shapes.md)
declares its symbols in the manifest's ``dims`` (``{"seq": {"min": 1,
"max": 2048, "multiple_of": 8}}``), and its buffer shapes, launch shapes,
size arguments and tensor-map dims are ints or size expressions over them:
the JSON trees of :mod:`tessel.shapes` (a symbol's name, or ``{op: [a,
b]}``). The runtime binds the symbols from the inputs' shapes at each call
and evaluates the trees with :func:`tessel.shapes.evaluate`, no ``eval`` and
no MLIR.

Here they are read and checked (:func:`read_dims`, :func:`read_size`: every
symbol declared, trees of bounded depth and size, divisors positive over the
declared ranges) and bounded: :func:`bounds` gives the least and the largest
value an expression can take over the ranges, by interval arithmetic (for
the monotone expressions a compiler writes, the values at every symbol's
minimum and maximum), which the reader checks buffer sizes and launch
limits against. Errors are :class:`~tessel.runtime.fields.FieldError`\\ s
naming the field, as the rest of the manifest's.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..shapes import DimRange, Size, size_text
from .fields import FieldError, field, integer, shown, typed

__all__ = ["MAX_SIZE_DEPTH", "MAX_SIZE_NODES", "MAX_SYMBOL_VALUE", "MAX_SYMBOLS", "OPERATIONS", "bounds", "corners",
           "highest", "is_static", "lowest", "read_dims", "read_size", "read_sizes", "sizes_text", "values_text"]

# The operations of a size tree, each {op: [a, b]}: tessel.shapes' affine ones, and min and max.
OPERATIONS = ("add", "sub", "mul", "floordiv", "ceildiv", "mod", "min", "max")
_DIVISIONS = ("floordiv", "ceildiv", "mod")
# A symbol is named as tessel.shapes' parser reads names (MLIR's symbol names).
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]{0,127}")
# Bounds far above any real program's, so that a corrupted manifest fails
# when read instead of costing time or memory: a compiler's trees are a few
# nodes (affine expressions simplified), its symbols a handful.
MAX_SYMBOLS = 64
MAX_SIZE_DEPTH = 32
MAX_SIZE_NODES = 256
MAX_SYMBOL_VALUE = 1 << 40  # a size: no buffer of the manifest may have more bytes (MAX_BUFFER_BYTES)
_MAX_LITERAL = (1 << 63) - 1  # an int of a tree: an int64, as MLIR's affine constants are


def lowest(limits: DimRange) -> int:
    """The least size ``limits`` admits (its min rounded up to a multiple)."""
    return -(-limits.min // limits.multiple_of) * limits.multiple_of


def highest(limits: DimRange) -> int:
    """The largest size ``limits`` admits (its max rounded down to a multiple)."""
    return limits.max // limits.multiple_of * limits.multiple_of


def read_dims(value: Any, where: str = "dims") -> dict[str, DimRange]:
    """The symbols of a manifest's ``dims`` (the field at ``where``): each
    ``{"min": int, "max": int, "multiple_of": int}`` with 0 <= min <= max <=
    2^40, multiple_of >= 1, and some multiple of it in [min, max]."""
    record = typed(value, dict, where, "an object")
    if len(record) > MAX_SYMBOLS:
        raise FieldError(f"{where} declares {len(record)} symbols, over the {MAX_SYMBOLS} a manifest may have")
    ranges = {}
    for name, limits in record.items():
        if not _SYMBOL.fullmatch(name):
            raise FieldError(f"{where} declares {shown(name)}, which is not a symbol's name (an identifier of at "
                             "most 128 characters)")
        at = f"{where}.{name}"
        low, high, step = (integer(field(limits, key, at), f"{at}.{key}", low, MAX_SYMBOL_VALUE)
                           for key, low in (("min", 0), ("max", 0), ("multiple_of", 1)))
        declared = DimRange(low, high, step)
        if low > high:
            raise FieldError(f"{at}.min is {low}, over its max {high}")
        if lowest(declared) > high:
            raise FieldError(f"{at} admits no size: no multiple of {step} lies in [{low}, {high}]")
        ranges[name] = declared
    return ranges


def read_size(value: Any, where: str, ranges: Mapping[str, DimRange]) -> Size:
    """The size expression of field ``where``: an int, the name of a symbol
    of ``ranges``, or ``{op: [a, b]}`` with op one of :data:`OPERATIONS`;
    at most :data:`MAX_SIZE_DEPTH` deep and :data:`MAX_SIZE_NODES` nodes,
    and the divisor of floordiv, ceildiv and mod at least 1 over the
    ranges. Returned as a new tree of plain ints, strings, dicts and lists."""
    nodes = 0

    def read(value: Any, where: str, depth: int) -> Size:
        nonlocal nodes
        nodes += 1
        if nodes > MAX_SIZE_NODES or depth > MAX_SIZE_DEPTH:
            raise FieldError(f"{where}: a size expression of more than {MAX_SIZE_NODES} nodes or "
                             f"{MAX_SIZE_DEPTH} levels")
        if isinstance(value, str):
            if value not in ranges:
                raise FieldError(f"{where} names {shown(value)}, which the manifest's dims do not declare")
            return value
        if isinstance(value, dict):
            (op, operands), = value.items() if len(value) == 1 else ((None, None),)
            if op not in OPERATIONS or not isinstance(operands, list) or len(operands) != 2:
                raise FieldError(f"{where} must be a size expression {{op: [a, b]}} with op one of "
                                 f"{', '.join(OPERATIONS)}, not {shown(value)}")
            a, b = (read(x, f"{where}.{op}[{i}]", depth + 1) for i, x in enumerate(operands))
            if op in _DIVISIONS and bounds(b, ranges)[0] < 1:
                low, high = bounds(b, ranges)
                raise FieldError(f"{where}.{op}[1] ({size_text(b)}) ranges over {low}..{high}: a divisor must be "
                                 "at least 1")
            return {op: [a, b]}
        if type(value) is int:
            return integer(value, where, -_MAX_LITERAL - 1, _MAX_LITERAL)
        raise FieldError(f"{where} must be an integer or a size expression (a symbol's name or {{op: [a, b]}}), "
                         f"not {shown(value)}")

    return read(value, where, 0)


def read_sizes(value: Any, where: str, ranges: Mapping[str, DimRange], *, length: int | None = None,
               max_length: int | None = None) -> tuple[Size, ...]:
    """``value``, the field at ``where``, a list of :func:`read_size`\\ s
    (``length`` of them, or at most ``max_length``)."""
    items = typed(value, list, where, "a list of sizes")
    if (length is not None and len(items) != length) or (max_length is not None and len(items) > max_length):
        raise FieldError(f"{where} must be {length if length is not None else f'at most {max_length}'} "
                         f"sizes, not {shown(value)}")
    return tuple(read_size(v, f"{where}[{i}]", ranges) for i, v in enumerate(items))


def is_static(sizes: tuple[Size, ...]) -> bool:
    """Whether every size of ``sizes`` is an int (names no symbol)."""
    return all(type(s) is int for s in sizes)


def bounds(size: Size, ranges: Mapping[str, DimRange]) -> tuple[int, int]:
    """The least and the largest value ``size`` (a tree :func:`read_size`
    gave) takes with its symbols anywhere in ``ranges``, or a wider
    interval: interval arithmetic, exact where each symbol appears once and
    the expression is monotone in it (what a compiler writes), and at worst
    wider, never narrower. Divisors are at least 1 (read_size's check)."""
    if type(size) is int:
        return size, size
    if isinstance(size, str):
        return lowest(ranges[size]), highest(ranges[size])
    (op, (a, b)), = size.items()
    (al, ah), (bl, bh) = bounds(a, ranges), bounds(b, ranges)
    if op == "add":
        return al + bl, ah + bh
    if op == "sub":
        return al - bh, ah - bl
    if op == "min":
        return min(al, bl), min(ah, bh)
    if op == "max":
        return max(al, bl), max(ah, bh)
    if op == "mod":
        # In 0..divisor-1; x itself when 0 <= x < every divisor.
        return (al, ah) if 0 <= al and ah < bl else (0, bh - 1 if al < 0 else min(ah, bh - 1))
    # mul, and floordiv and ceildiv by a positive divisor, are monotone in each operand on each side of
    # zero: their extremes are at the corners.
    if op == "mul":
        values = [x * y for x in (al, ah) for y in (bl, bh)]
    elif op == "floordiv":
        values = [x // y for x in (al, ah) for y in (bl, bh)]
    else:
        values = [-(-x // y) for x in (al, ah) for y in (bl, bh)]
    return min(values), max(values)


def corners(ranges: Mapping[str, DimRange]) -> list[dict[str, int]]:
    """Bindings at which a reader checks what intervals cannot bound
    (a view and its buffer of one size, a tensor map's rules): every symbol
    at its least size, and every one at its largest; ``[{}]`` without
    symbols. A call at other sizes is checked when it binds them."""
    if not ranges:
        return [{}]
    low = {name: lowest(limits) for name, limits in ranges.items()}
    high = {name: highest(limits) for name, limits in ranges.items()}
    return [low] if low == high else [low, high]


def values_text(values: Mapping[str, int]) -> str:
    """``values`` as errors write a binding: ``batch = 2, seq = 7``."""
    return ", ".join(f"{name} = {value}" for name, value in sorted(values.items()))


def sizes_text(sizes: tuple[Size, ...]) -> str:
    """A shape or launch shape of sizes as errors write it: ``[n, 64]``."""
    return "[" + ", ".join(size_text(s) for s in sizes) + "]"
