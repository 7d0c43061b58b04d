"""Size symbols: dims whose size is known at each call (docs/dynamic-shapes.md).

A dynamic dim of a graph tensor is a size expression over named symbols
(``batch``, ``2 * seq``), and each symbol has a declared range. This module
reads and evaluates those expressions and binds the symbols from the
arguments of a call; it imports no MLIR, so that runtimes can use it.

Expressions are kept as JSON-ready trees: an int, a symbol's name, or
``{op: [a, b]}`` with op one of ``add``, ``sub``, ``mul``, ``floordiv``,
``ceildiv``, ``mod``, and ``min`` and ``max`` (which a CUDA manifest's launch
shapes may use; affine expressions have neither, so :func:`parse_size` does
not read them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Union

__all__ = ["DimRange", "Size", "bind", "evaluate", "parse_size", "size_text", "symbols_of"]

Size = Union[int, str, dict]

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_$.]*)|(.))")
_PRODUCTS = ("*", "floordiv", "ceildiv", "mod")
_OPS = {"+": "add", "-": "sub", "*": "mul", "floordiv": "floordiv", "ceildiv": "ceildiv", "mod": "mod"}
_SPELLING = {v: k for k, v in _OPS.items()}


@dataclass(frozen=True)
class DimRange:
    """The sizes a symbol may take: ``min`` to ``max``, a multiple of ``multiple_of``."""

    min: int
    max: int
    multiple_of: int = 1

    def __str__(self) -> str:
        step = f", a multiple of {self.multiple_of}" if self.multiple_of > 1 else ""
        return f"[{self.min}, {self.max}]{step}"

    def contains(self, value: int) -> bool:
        return self.min <= value <= self.max and value % self.multiple_of == 0


def parse_size(text: str) -> Size:
    """The tree of one size as MLIR prints an affine expression with named
    symbols (``2 * seq``, ``batch * seq``, ``seq floordiv 2 + 1``);
    ValueError if it is not one."""
    tokens = [m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text) if m.group(0).strip()]
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise ValueError(f"size expression {text!r} ends early")
        position += 1
        return tokens[position - 1]

    def atom() -> Size:
        token = take()
        if token == "(":
            value = sum_()
            if take() != ")":
                raise ValueError(f"size expression {text!r}: unbalanced parentheses")
            return value
        if token == "-":
            return {"sub": [0, atom()]}
        if token.isdigit():
            return int(token)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", token) and token not in _PRODUCTS:
            return token
        raise ValueError(f"size expression {text!r}: unexpected {token!r}")

    def product() -> Size:
        value = atom()
        while peek() in _PRODUCTS:
            value = {_OPS[take()]: [value, atom()]}
        return value

    def sum_() -> Size:
        value = product()
        while peek() in ("+", "-"):
            value = {_OPS[take()]: [value, product()]}
        return value

    tree = sum_()
    if position != len(tokens):
        raise ValueError(f"size expression {text!r}: unexpected {tokens[position]!r}")
    return tree


def size_text(size: Size) -> str:
    """``size`` written as :func:`parse_size` reads it (``min(a, b)`` and
    ``max(a, b)`` as functions, which it does not read)."""
    if isinstance(size, dict):
        ((op, (a, b)),) = size.items()
        if op in ("min", "max"):
            return f"{op}({size_text(a)}, {size_text(b)})"
        return f"({size_text(a)} {_SPELLING[op]} {size_text(b)})"
    return str(size)


def symbols_of(size: Size) -> set[str]:
    """The symbols ``size`` names."""
    if isinstance(size, dict):
        return set().union(*(symbols_of(s) for s in next(iter(size.values()))))
    return {size} if isinstance(size, str) else set()


def evaluate(size: Size, values: Mapping[str, int]) -> int:
    """The value of ``size`` with each symbol's value from ``values``
    (floor division and a non-negative mod, as affine expressions mean)."""
    if isinstance(size, int):
        return size
    if isinstance(size, str):
        return values[size]
    ((op, (a, b)),) = size.items()
    x, y = evaluate(a, values), evaluate(b, values)
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    if op == "floordiv":
        return x // y
    if op == "ceildiv":  # divisors are positive; written so that symbolic sizes evaluate too
        return (x + y - 1) // y
    if op == "mod":
        return x % y
    if op == "min":
        return min(x, y)
    if op == "max":
        return max(x, y)
    raise ValueError(f"unknown size operation {op!r}")


def bind(name: str, sizes: Sequence[Sequence[Size]], shapes: Sequence[Sequence[int]],
         ranges: Mapping[str, DimRange]) -> dict[str, int]:
    """Each symbol's value in a call of ``name`` whose arguments, of sizes
    ``sizes`` (per argument, per dim: an int or a tree), have ``shapes``:
    read from the dims that are the symbol alone, then every dynamic dim
    checked against its expression. ValueError naming the argument, the dim
    and the value when a size is outside its symbol's range or two dims that
    must agree do not."""
    values: dict[str, int] = {}
    where: dict[str, tuple[int, int]] = {}  # the argument and dim each value was read from
    for index, (spec, shape) in enumerate(zip(sizes, shapes)):
        for d, size in enumerate(spec):
            if not isinstance(size, str) or size in values:
                continue
            value = int(shape[d])
            limits = ranges[size]
            if not limits.contains(value):
                raise ValueError(f"{name}: argument {index} has {value} as dim {d} ({size}), outside the range "
                                 f"{limits} declared for {size}")
            values[size], where[size] = value, (index, d)
    for index, (spec, shape) in enumerate(zip(sizes, shapes)):
        for d, size in enumerate(spec):
            if isinstance(size, int) or isinstance(size, str) and shape[d] == values[size]:
                continue
            missing = symbols_of(size) - values.keys()
            if missing:
                raise ValueError(f"{name}: argument {index} dim {d} is {size_text(size)}, but no argument's dim "
                                 f"is {sorted(missing)[0]} alone, to read it from")
            expected = evaluate(size, values)
            if int(shape[d]) != expected:
                told = ", ".join(f"{s} = {values[s]} (from argument {where[s][0]} dim {where[s][1]})"
                                 for s in sorted(symbols_of(size)))
                raise ValueError(f"{name}: argument {index} has {int(shape[d])} as dim {d}, but it is "
                                 f"{size_text(size)} = {expected} with {told}")
    return values
