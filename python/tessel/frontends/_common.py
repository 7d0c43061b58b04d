"""Helpers that more than one front end uses.

A front end's values are :class:`tessel.Tensor` (computed at run time) or
numpy arrays (known while importing: weights, shape arithmetic); these
helpers take either.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .. import ops
from ..errors import UnsupportedError
from ..shapes import evaluate, parse_size
from ..tracing import Tensor, as_tensor

__all__ = ["Value", "SymbolicSize", "SizeLike", "as_size", "sizes_of", "dims", "is_symbolic", "shape_text",
           "size_tensor", "size_array", "sizes_tensor", "size_bounds", "broadcast_sizes", "filled", "by_rows",
           "taken_range", "selected", "numpy_or", "cast_to", "matmul", "attention", "attention_stages", "arg_extreme",
           "gathered_along", "reshaped", "indexed", "concatenated", "flipped", "conv_transpose", "pooled"]

Value = Union[Tensor, np.ndarray]


# Size symbols ------------------------------------------------------------------
#
# A dim of a traced tensor may be a size symbol, or an expression over
# symbols (docs/dynamic-shapes.md); Tensor.shape gives those as the text of
# their MLIR affine expression ("seq", "batch * seq", "seq - 1"). While
# importing, the front ends compute with such sizes (ONNX Shape arithmetic,
# torch's SymInts): a SymbolicSize is one, in a canonical form, so that two
# sizes that are the same expression compare equal whatever their spelling.


@dataclass(frozen=True)
class _Quotient:
    """A term that is no polynomial: ``num floordiv den`` or ``num mod den`` (den > 1)."""

    op: str
    num: "SymbolicSize"
    den: int

    def __str__(self) -> str:
        return f"({self.num}) {self.op} {self.den}"

    def value(self, values: Mapping[str, int]) -> int:
        num = self.num.evaluate(values)
        return num // self.den if self.op == "floordiv" else num % self.den


_Atom = Union[str, _Quotient]
_Monomial = tuple[_Atom, ...]  # sorted by text; () is the constant term


def _atom_key(atom: _Atom) -> str:
    return atom if isinstance(atom, str) else str(atom)


class _Symbols(dict):
    """Each symbol's name, as a size of its own (``make(name)``), for
    :func:`tessel.shapes.evaluate` to build a size from its tree."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, name: str) -> Any:
        return self.make(name)


class SymbolicSize:
    """An integer size that depends on size symbols: a polynomial with
    integer coefficients over the symbols (and over quotients and remainders
    by constants, which stay opaque). Arithmetic with ints and other sizes
    gives a SymbolicSize, or an int where the symbols cancel; ``str`` is the
    MLIR text tessel's shapes take. A symbolic value has no truth value, no
    int and no order while importing: those raise TypeError."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[_Monomial, int]) -> None:
        self.terms: tuple[tuple[_Monomial, int], ...] = tuple(sorted(
            ((m, c) for m, c in terms.items() if c), key=lambda t: tuple(map(_atom_key, t[0]))))

    @classmethod
    def symbol(cls, name: str) -> SymbolicSize:
        return cls({(name,): 1})

    @staticmethod
    def _made(terms: Mapping[_Monomial, int]) -> SizeLike:
        """The size of ``terms``: an int when only the constant term is left."""
        size = SymbolicSize(terms)
        if not size.terms:
            return 0
        if len(size.terms) == 1 and size.terms[0][0] == ():
            return size.terms[0][1]
        return size

    @staticmethod
    def _of(value: Any) -> Optional[dict[_Monomial, int]]:
        if isinstance(value, SymbolicSize):
            return dict(value.terms)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return {(): int(value)}
        return None

    def __add__(self, other: Any) -> SizeLike:
        terms = self._of(other)
        if terms is None:
            return NotImplemented
        for m, c in self.terms:
            terms[m] = terms.get(m, 0) + c
        return self._made(terms)

    __radd__ = __add__

    def __neg__(self) -> SizeLike:
        return self._made({m: -c for m, c in self.terms})

    def __sub__(self, other: Any) -> SizeLike:
        return self + (-other) if self._of(other) is not None else NotImplemented

    def __rsub__(self, other: Any) -> SizeLike:
        return (-self) + other if self._of(other) is not None else NotImplemented

    def __mul__(self, other: Any) -> SizeLike:
        terms = self._of(other)
        if terms is None:
            return NotImplemented
        product: dict[_Monomial, int] = {}
        for m, c in self.terms:
            for n, d in terms.items():
                key = tuple(sorted(m + n, key=_atom_key))
                product[key] = product.get(key, 0) + c * d
        return self._made(product)

    __rmul__ = __mul__

    def _split(self, den: int) -> tuple[SizeLike, int]:
        """``(q, r)`` with ``self = q * den + r`` and r a constant, where
        every non-constant coefficient is a multiple of ``den``; else (0, -1)."""
        constant = 0
        whole: dict[_Monomial, int] = {}
        for m, c in self.terms:
            if m == ():
                constant = c
            elif c % den:
                return 0, -1
            else:
                whole[m] = c // den
        return self._made(whole) + constant // den, constant % den

    def __floordiv__(self, other: Any) -> SizeLike:
        if isinstance(other, SymbolicSize):
            return self._divided(other)
        if not isinstance(other, numbers.Integral) or other <= 0:
            return NotImplemented
        if other == 1:
            return self
        quotient, remainder = self._split(int(other))
        return quotient if remainder >= 0 else SymbolicSize({(_Quotient("floordiv", self, int(other)),): 1})

    def __mod__(self, other: Any) -> SizeLike:
        if not isinstance(other, numbers.Integral) or other <= 0:
            return NotImplemented
        if other == 1:
            return 0
        _, remainder = self._split(int(other))
        return remainder if remainder >= 0 else SymbolicSize({(_Quotient("mod", self, int(other)),): 1})

    def _divided(self, other: SymbolicSize) -> SizeLike:
        """``self / other`` where ``other`` is one term dividing each of
        self's (``batch * seq * 64 / seq``); UnsupportedError otherwise."""
        if len(other.terms) == 1:
            (divisor, coefficient), = other.terms
            quotient: dict[_Monomial, int] = {}
            for m, c in self.terms:
                rest = list(m)
                for atom in divisor:
                    if atom not in rest:
                        break
                    rest.remove(atom)
                else:
                    if c % coefficient == 0:
                        quotient[tuple(rest)] = c // coefficient
                        continue
                break
            else:
                return self._made(quotient)
        raise UnsupportedError(f"the size ({self}) / ({other}) is no size expression (a quotient by a symbolic "
                               "size must be exact)")

    def __rfloordiv__(self, other: Any) -> SizeLike:
        terms = self._of(other)
        if terms is None:
            return NotImplemented
        raise UnsupportedError(f"the size {other} / ({self}) is no size expression (a division by a size symbol)")

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SymbolicSize) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)

    def __bool__(self) -> bool:
        raise TypeError(f"the size {self} depends on size symbols: it has no truth value while importing")

    def __index__(self) -> int:
        raise TypeError(f"the size {self} depends on size symbols: it is known only at each call")

    __int__ = __index__

    def __str__(self) -> str:
        def term(monomial: _Monomial, c: int) -> str:
            factors = [_atom_key(a) for a in monomial] + ([str(abs(c))] if abs(c) != 1 or not monomial else [])
            return " * ".join(factors)
        # Positive terms first, the constant last: "batch * seq - 1".
        ordered = sorted(self.terms, key=lambda t: (t[1] < 0, t[0] == ()))
        text = ""
        for monomial, c in ordered:
            if not text:
                text = ("-" if c < 0 else "") + term(monomial, c)
            else:
                text += (" - " if c < 0 else " + ") + term(monomial, c)
        return text

    def __repr__(self) -> str:
        return f"SymbolicSize({str(self)!r})"

    def symbols(self) -> set[str]:
        """The size symbols this size names."""
        found: set[str] = set()
        for monomial, _ in self.terms:
            for atom in monomial:
                found |= {atom} if isinstance(atom, str) else atom.num.symbols()
        return found

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The size with each symbol's value from ``values``."""
        return sum(c * math.prod(values[a] if isinstance(a, str) else a.value(values) for a in m)
                   for m, c in self.terms)

    @classmethod
    def parse(cls, text: str) -> SizeLike:
        """The size of a dim as :attr:`Tensor.shape` gives it (``"seq * 2"``)."""
        # The tree evaluated over symbols instead of their values.
        return evaluate(parse_size(text), _Symbols(cls.symbol))


SizeLike = Union[int, SymbolicSize]


def as_size(dim: Union[int, str, SymbolicSize, np.integer]) -> SizeLike:
    """One dim (an int, the text of a symbolic dim, or a size) as a size."""
    if isinstance(dim, SymbolicSize):
        return dim
    if isinstance(dim, str):
        return SymbolicSize.parse(dim)
    return int(dim)


def sizes_of(shape: Sequence[Any]) -> list[SizeLike]:
    """A shape (Tensor.shape's ints and texts, or sizes) as sizes."""
    return [as_size(d) for d in shape]


def dims(shape: Sequence[Any]) -> list[Union[int, str]]:
    """A shape as tessel's ops take it: ints, and the text of each symbolic size."""
    return [str(d) if isinstance(d, SymbolicSize) else d if isinstance(d, str) else int(d) for d in shape]


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` (a size, or a value's shape) depends on size symbols."""
    if isinstance(value, (SymbolicSize, str)):
        return True
    if isinstance(value, (list, tuple)):
        return any(is_symbolic(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype == object and any(isinstance(v, SymbolicSize) for v in value.flat)
    shape = getattr(value, "shape", None)
    return shape is not None and any(isinstance(d, str) for d in shape)


def shape_text(shape: Sequence[Any]) -> str:
    """``[batch, seq * 2, 64]``: a shape (or sizes) for error messages."""
    return "[" + ", ".join(map(str, shape)) + "]"


def size_tensor(size: SizeLike) -> Value:
    """``size`` as a 0-d int64 value: an array for an int, else computed at
    run time from the symbols (each one the sum of that many ones), for a
    size that an op uses as a number (``x / seq``, an index ``seq - 1``)."""
    if not isinstance(size, SymbolicSize):
        return np.asarray(int(size), np.int64)
    total: Optional[Tensor] = None
    for monomial, c in size.terms:
        term: Value = np.asarray(c, np.int64)
        for atom in monomial:
            if isinstance(atom, str):
                factor = ops.broadcast_to(np.int64(1), [atom]).sum()
            else:  # sizes are never negative: graph.div's truncation is floor division
                num, den = as_tensor(size_tensor(atom.num)), np.asarray(atom.den, np.int64)
                factor = num / den if atom.op == "floordiv" else ops.remainder(num, den)
            term = factor if isinstance(term, np.ndarray) and term == 1 else factor * term
        total = as_tensor(term) if total is None else total + term
    return total


def size_array(values: Any) -> np.ndarray:
    """Sizes (ints and SymbolicSizes, nested as numpy takes them) as an
    int64 array, or an object array where any depends on size symbols."""
    array = np.array(values, dtype=object)
    if any(isinstance(v, SymbolicSize) for v in array.flat):
        return array
    return array.astype(np.int64)


def sizes_tensor(array: np.ndarray) -> Value:
    """An array of sizes (see :func:`size_array`) as an int64 value
    computed at run time, for an op that uses them as numbers."""
    if array.dtype != object:
        return array
    flat = [reshaped(size_tensor(v), [1]) if isinstance(v, SymbolicSize) else np.array([v], np.int64)
            for v in array.flat]
    return reshaped(concatenated(flat, 0), list(array.shape)) if flat else array.astype(np.int64)


def size_bounds(size: SizeLike, ranges: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """The least and the largest value of ``size`` with each symbol in its
    ``(min, max)`` of ``ranges``, by interval arithmetic: bounds that hold
    (exact for one term, ``seq - 1``; maybe wider for terms that move
    together, ``batch * seq - seq``), so that what they decide holds at
    every size."""
    if not isinstance(size, SymbolicSize):
        return int(size), int(size)

    def atom_bounds(atom: _Atom) -> tuple[int, int]:
        if isinstance(atom, str):
            low, high = ranges[atom][:2]
            return int(low), int(high)
        low, high = size_bounds(atom.num, ranges)
        return (low // atom.den, high // atom.den) if atom.op == "floordiv" else (0, atom.den - 1)

    low = high = 0
    for monomial, c in size.terms:
        term_low = term_high = c
        for atom in monomial:
            a, b = atom_bounds(atom)
            products = (term_low * a, term_low * b, term_high * a, term_high * b)
            term_low, term_high = min(products), max(products)
        low, high = low + term_low, high + term_high
    return low, high


def broadcast_sizes(*shapes: Sequence[Any]) -> list[SizeLike]:
    """numpy's broadcast of shapes with symbolic dims: a dim of 1 takes the
    other's size; a symbolic size meets only 1 or itself (as graph ops
    broadcast), else UnsupportedError naming both."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[SizeLike] = [1] * rank
    for shape in shapes:
        for i, d in enumerate(sizes_of(shape), rank - len(shape)):
            if d == 1 or d == result[i]:
                continue
            if result[i] != 1:
                raise UnsupportedError(f"shapes {[dims(s) for s in shapes]} do not broadcast: {dims([result[i]])[0]} "
                                       f"against {dims([d])[0]} (a size symbol broadcasts only against 1 or itself)")
            result[i] = d
    return result


def filled(shape: Sequence[Any], value: Any, dtype: Any) -> Value:
    """``numpy.full(shape, value, dtype)``; over size symbols a scalar
    broadcast to the shape (graph.broadcast_to), which costs no memory."""
    if is_symbolic(list(shape)):
        return ops.broadcast_to(np.asarray(value, dtype), dims(shape))
    return np.full([int(d) for d in shape], value, dtype)


def by_rows(fn: Callable[[Tensor], Tensor], x: Value) -> Value:
    """``fn`` (a row-wise op: a matmul by a weight, a linear layer) of a
    2-D ``x`` whose rows are a product of size symbols (``[batch * seq,
    K]``, as ``view(-1, K)`` makes it), computed on ``x`` with its rows
    split into their factors in the flattened tensor's order (``[seq,
    batch, K]``) and flattened again: with :func:`reshaped`, flattening and
    restoring the rows around the matmul is then no reshape at all, where
    the CPU lowering would have to expand a buffer of ``seq * batch`` rows
    into two dynamic dims, which it cannot (docs/dynamic-shapes.md)."""
    rows = as_size(x.shape[0]) if len(x.shape) == 2 else 1
    factors = _row_factors(as_tensor(x), rows) if isinstance(rows, SymbolicSize) else None
    if factors is None:
        return fn(x)
    y = fn(reshaped(x, factors + [x.shape[1]]))
    return reshaped(y, [x.shape[0], y.shape[-1]])


def _row_factors(x: Tensor, rows: SymbolicSize) -> Optional[list[SizeLike]]:
    """The leading dims of the tensor that ``x`` [rows, K] flattens (its
    graph.reshape's operand), whose product is ``rows``, in their order;
    else ``rows``' factors, when it is one product. Splitting the rows in
    the flattened tensor's order keeps each reshape's groups of dims to one
    symbol (the lowering cannot expand ``seq, batch`` into ``batch, seq``)."""
    owner = x.value.owner
    if getattr(owner, "name", None) == "graph.reshape":
        source = sizes_of(Tensor(owner.operands[0]).shape)
        product: SizeLike = 1
        for i, size in enumerate(source):
            product = product * size
            if product == rows:
                return source[:i + 1] if i > 0 else None
    if len(rows.terms) != 1:
        return None
    monomial, coefficient = rows.terms[0]
    factors: list[SizeLike] = [SymbolicSize.symbol(a) for a in monomial if isinstance(a, str)]
    if len(factors) != len(monomial):
        return None
    factors += [coefficient] if coefficient != 1 else []
    return factors if len(factors) > 1 else None


def taken_range(x: Value, axis: int, start: SizeLike, count: SizeLike, step: int = 1) -> Value:
    """Elements ``start, start + step, ...`` (``count`` of them) of ``x``
    along ``axis``, for bounds the caller has checked (a negative ``start``
    counts from the end): a graph.slice where all are static; a whole
    symbolic dim as it is; otherwise one graph.gather at those indices
    (graph.slice takes a dim with a size symbol only whole, and only static
    bounds; graph.gather counts negative indices from the end)."""
    size = as_size(x.shape[axis])
    if not any(isinstance(v, SymbolicSize) for v in (size, start, count)):
        first = int(start) + int(size) if int(start) < 0 else int(start)
        return indexed(x, (slice(None),) * axis + (slice(first, first + (int(count) - 1) * step + 1, step),))
    if start == 0 and step == 1 and count == size:
        return x
    indices = ops.iota(dims([count]), 0) * np.int64(step) if step != 1 else ops.iota(dims([count]), 0)
    return ops.take(x, indices + size_tensor(start) if start != 0 else indices, axis)


def selected(x: Value, axis: int, index: SizeLike) -> Value:
    """``x`` at ``index`` (checked; negative: from the end) along ``axis``,
    which it drops: an index on a static dim, else a graph.gather of a 0-d
    index."""
    if not isinstance(index, SymbolicSize) and not isinstance(as_size(x.shape[axis]), SymbolicSize):
        return indexed(x, (slice(None),) * axis + (int(index),))
    return ops.take(x, size_tensor(index), axis)


def numpy_or(values: Sequence[Optional[Value]], numpy_fn: Callable, tensor_fn: Callable) -> Value:
    """``numpy_fn`` when every value is known while building, else ``tensor_fn``."""
    if all(v is None or isinstance(v, np.ndarray) for v in values):
        return numpy_fn(*values)
    return tensor_fn(*values)


def cast_to(x: Value, dtype: np.dtype) -> Value:
    """``x`` converted to ``dtype`` (numpy's astype; graph.cast), unchanged
    if it has it. Sizes (an object array holding SymbolicSizes) stay sizes
    as integers, and become a run-time tensor as anything else."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        if np.dtype(dtype).kind in "iu":
            return x
        x = sizes_tensor(x)
    if np.dtype(x.dtype) == np.dtype(dtype):
        return x
    return numpy_or([x], lambda v: v.astype(dtype), lambda v: ops.cast(v, dtype))


def matmul(a: Value, b: Value) -> Value:
    """numpy.matmul, also for 1-D operands (a vector is a row on the left,
    a column on the right, and its dim is dropped from the result)."""
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim >= 2 and b.ndim >= 2:
        return a @ b
    left = a.reshape([1, a.shape[0]]) if a.ndim == 1 else a
    right = b.reshape([b.shape[0], 1]) if b.ndim == 1 else b
    result = left @ right
    shape = list(result.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-1 if b.ndim == 1 else -2)
    return result.reshape(shape)


def _all(x: Tensor, axis: int) -> Tensor:
    """Whether every element of the bool ``x`` along ``axis`` holds, keeping the dim."""
    return ops.cast(x, np.int32).min(axis, True) > 0


# Larger triangles are computed at run time rather than stored (the graph
# folder's kMaxFoldedElements).
_TRIANGLE_CONSTANT_ELEMENTS = 1 << 22


def triangle(rows: Union[int, str], cols: Union[int, str], diagonal: int = 0, upper: bool = False) -> Value:
    """The bool ``[rows, cols]`` mask of ``numpy.triu`` (``upper``) or
    ``numpy.tril`` of ones at ``diagonal``: a constant up to 4M elements,
    beyond that, or when a size is a size symbol, a comparison of a column
    and a row of indices (graph.iota), which costs no memory at all."""
    if isinstance(rows, int) and isinstance(cols, int) and rows * cols <= _TRIANGLE_CONSTANT_ELEMENTS:
        row = np.arange(rows, dtype=np.int64).reshape(rows, 1) + diagonal
        col = np.arange(cols, dtype=np.int64)
    else:
        row = ops.iota((rows, 1), 0) + diagonal
        col = ops.iota((1, cols), 1)
    return col >= row if upper else col <= row


def attention(q: Value, k: Value, v: Value, mask: Optional[Value] = None, *, is_causal: bool = False,
              scale: Optional[float] = None, softcap: float = 0.0) -> Tensor:
    """Scaled dot-product attention over ``[..., seq, head_dim]`` operands.

    ``softmax(q @ k^T * scale + mask) @ v`` with ``scale`` defaulting to
    ``1 / sqrt(head_dim)``. A bool ``mask`` keeps the scores where it holds
    (-inf elsewhere), a float one is added. ``is_causal`` lets query i see
    keys 0..i (aligned top-left, as torch and ONNX). On 4-D
    ``[batch, heads, seq, head_dim]`` operands, K and V may have fewer heads
    (grouped-query attention): each serves ``heads / kv_heads`` query heads.
    ``softcap`` > 0 bounds the scores with ``tanh(s / cap) * cap``. A row
    whose keys are all masked attends to nothing: zeros, not NaN (torch's
    safe softmax).
    """
    return attention_stages(q, k, v, mask, is_causal=is_causal, scale=scale, softcap=softcap)[0]


def attention_stages(q: Value, k: Value, v: Value, mask: Optional[Value] = None, *, is_causal: bool = False,
                     scale: Optional[float] = None, softcap: float = 0.0, softmax_dtype: Optional[np.dtype] = None
                     ) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor, Tensor]]:
    """:func:`attention` and its scores at each stage: ``q @ k^T * scale``,
    after softcap, after the mask, and the probabilities (ONNX's
    qk_matmul_output modes 0-3). With ``softmax_dtype`` the softmax runs in
    that dtype; the probabilities come back in q's.
    """
    q, k, v = as_tensor(q), as_tensor(k), as_tensor(v)
    if q.ndim == 4 and k.ndim == 4 and q.shape[1] != k.shape[1]:
        heads, kv_heads = q.shape[1], k.shape[1]
        group = heads // kv_heads
        k, v = (ops.reshape(ops.broadcast_to(ops.unsqueeze(t, 2), [t.shape[0], kv_heads, group] + list(t.shape[2:])),
                            [t.shape[0], heads] + list(t.shape[2:])) for t in (k, v))
    axes = list(range(k.ndim))
    axes[-2:] = axes[-1], axes[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    raw = (q @ k.transpose(axes)) * scale
    capped = ops.tanh(raw * (1 / softcap)) * softcap if softcap else raw
    scores = capped
    if mask is not None:
        scores = ops.where(mask, scores, float("-inf")) if np.dtype(mask.dtype) == np.bool_ else scores + mask
    if is_causal:
        rows, cols = scores.shape[-2], scores.shape[-1]
        scores = ops.where(triangle(rows, cols), scores, float("-inf"))
    probs = ops.softmax(scores if softmax_dtype is None else cast_to(scores, softmax_dtype), axis=-1)
    if mask is not None:  # without one, a (causal) row always sees its first key
        probs = ops.where(_all(scores == float("-inf"), -1), 0.0, probs)
    probs = as_tensor(cast_to(probs, q.dtype))
    return probs @ v, (raw, capped, scores, probs)


def arg_extreme(x: Tensor, axis: int, kind: str, keep: bool, last: bool = False) -> Tensor:
    """The int64 index of the first (``last``: the last) maximum or minimum
    (``kind``) along ``axis``; a NaN is the extreme, as in numpy and torch."""
    extreme = getattr(x, kind)(axis, True)
    hit = ops.where(x != x, True, x == extreme)  # a NaN extreme: the NaNs
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    size = as_size(x.shape[axis])
    index = ops.iota(shape, axis) if isinstance(size, SymbolicSize) else \
        np.arange(size, dtype=np.int64).reshape(shape)
    if last:
        return ops.where(hit, index, np.int64(-1)).max(axis, keep)
    return ops.where(hit, index, size_tensor(size)).min(axis, keep)


def gathered_along(x: Value, indices: Value, axis: int) -> Value:
    """``numpy.take_along_axis`` (ONNX GatherElements) where ``indices``
    may be smaller than ``x`` off the axis; negative indices count from the
    end. On tensors one graph.gather of the flattened ``x`` at the linear
    index of each element: no one-hot of the axis."""
    rank = len(x.shape)
    axis %= rank
    size = np.asarray(x.shape[axis], np.dtype(indices.dtype))
    indices = numpy_or([indices], lambda i: np.where(i < 0, i + size, i), lambda i: ops.where(i < 0, i + size, i))
    if isinstance(x, np.ndarray) and isinstance(indices, np.ndarray):
        region = tuple(slice(0, d) for d in indices.shape)
        region = region[:axis] + (slice(None),) + region[axis + 1:]
        return np.take_along_axis(x[region], indices, axis)
    strides = np.cumprod((list(x.shape[1:]) + [1])[::-1])[::-1].astype(np.int64)
    linear = cast_to(indices, np.dtype(np.int64)) * strides[axis]
    for d, extent in enumerate(indices.shape):
        if d != axis:
            shape = [1] * rank
            shape[d] = extent
            linear = linear + (np.arange(extent, dtype=np.int64) * strides[d]).reshape(shape)
    return ops.take(ops.reshape(x, [-1]), linear, 0)


def reshaped(x: Value, shape: Sequence[Any]) -> Value:
    """``x`` in ``shape``, whose dims may be sizes (see :func:`dims`). Over
    size symbols, a reshape of a reshape is one reshape of the first one's
    operand (none where that has ``shape`` already): flattening ``[seq,
    batch, 32]`` to ``[batch * seq, 32]`` and back is then no reshape, where
    the CPU lowering would expand ``batch * seq`` into two symbols of one
    group (which it cannot)."""
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    x = as_tensor(x)
    if is_symbolic(x):
        owner = x.value.owner
        if getattr(owner, "name", None) == "graph.reshape":
            x = Tensor(owner.operands[0])
        if -1 not in list(shape) and sizes_of(x.shape) == sizes_of(shape):
            return x
    return x.reshape(dims(shape))


def indexed(x: Value, index: Any) -> Value:
    """``x[index]``: numpy indexing, or graph.slice/gather on a Tensor."""
    return numpy_or([x], lambda v: v[index], lambda v: as_tensor(v)[index])


def concatenated(values: Sequence[Value], axis: int) -> Value:
    return numpy_or(values, lambda *v: np.concatenate(v, axis), lambda *v: ops.concatenate(list(v), axis))


def flipped(w: Value, axes: Sequence[int]) -> Value:
    """``w`` reversed along ``axes``."""
    for axis in axes:
        index = np.arange(w.shape[axis] - 1, -1, -1, dtype=np.int64)
        w = numpy_or([w], lambda v, a=axis, i=index: np.take(v, i, a), lambda v, a=axis, i=index: ops.take(v, i, a))
    return w


def conv_transpose(x: Value, w: Value, bias: Optional[Value], strides: Sequence[int], dilations: Sequence[int],
                   before: Sequence[int], after: Sequence[int], extra: Sequence[int], groups: int) -> Value:
    """A 2-D transposed convolution (ONNX ConvTranspose, torch's
    conv_transpose2d) of x [N, C_in, H, W] by w [C_in, C_out / groups, kh,
    kw], cropped by ``before``/``after`` and grown by ``extra``
    (output_padding) at the end of each spatial dim, as the convolution it
    is the gradient of: the input with stride - 1 zeros between elements,
    padded by the dilated kernel's reach less one less the crop, convolved
    at stride 1 with the flipped kernel, in and out channels swapped within
    each group."""
    batch, channels, sizes, kernel = x.shape[0], x.shape[1], list(x.shape[2:]), list(w.shape[2:])
    if any(s > 1 for s in strides):  # [N, C, H, 1, W, 1] next to zeros: [N, C, H, s, W, s], the last zeros cut
        spread = reshaped(x, [batch, channels, sizes[0], 1, sizes[1], 1])
        for axis, s in ((3, strides[0]), (5, strides[1])):
            if s > 1:
                shape = list(spread.shape)
                shape[axis] = s - 1
                spread = concatenated([spread, ops.broadcast_to(np.zeros((), np.dtype(x.dtype)), shape)], axis)
        x = reshaped(spread, [batch, channels, sizes[0] * strides[0], sizes[1] * strides[1]])
        x = indexed(x, (slice(None), slice(None), slice(0, (sizes[0] - 1) * strides[0] + 1),
                        slice(0, (sizes[1] - 1) * strides[1] + 1)))
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    low = [r - 1 - b for r, b in zip(reach, before)]
    high = [r - 1 - a + e for r, a, e in zip(reach, after, extra)]
    if any(v < 0 for v in low + high):  # a negative pad crops
        x = indexed(x, (slice(None), slice(None)) + tuple(slice(max(0, -lo), x.shape[2 + i] - max(0, -hi))
                                                          for i, (lo, hi) in enumerate(zip(low, high))))
    c_in, per_group = w.shape[0], w.shape[1]
    w = reshaped(w, [groups, c_in // groups, per_group, *kernel])
    w = numpy_or([w], lambda v: np.transpose(v, (0, 2, 1, 3, 4)), lambda v: ops.transpose(v, [0, 2, 1, 3, 4]))
    w = flipped(reshaped(w, [groups * per_group, c_in // groups, *kernel]), (2, 3))
    return ops.conv2d(x, w, bias, stride=(1, 1), padding=[max(0, low[0]), max(0, low[1]), max(0, high[0]),
                                                          max(0, high[1])], dilation=tuple(dilations), groups=groups)


def pooled(kind: str, x: Value, kernel: Sequence[int], stride: Sequence[int], pads: Sequence[int], *,
           ceil_mode: bool = False, count_include_pad: bool = False) -> Tensor:
    """2-D max or average pooling (``kind``) of x [N, C, H, W], pads
    [top, left, bottom, right]. With ``ceil_mode`` a last partial window
    counts if it starts inside the input or its leading pad (torch's and
    ONNX's rule): extra trailing padding, which an average counting pads
    (``count_include_pad``) still leaves out of its divisor."""
    given, padded, outs = list(pads), list(pads), []
    for i, (size, k, s) in enumerate(zip(x.shape[2:], kernel, stride)):
        span = size + given[i] + given[i + 2] - k
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + given[i]:
            out -= 1
        padded[i + 2] += max(0, (out - 1) * s + k - (size + given[i] + given[i + 2]))
        outs.append(out)
    if kind == "max":
        return ops.max_pool2d(x, tuple(kernel), tuple(stride), padded)
    y = ops.avg_pool2d(x, tuple(kernel), tuple(stride), padded, count_include_pad=count_include_pad)
    if count_include_pad and padded != given:
        # Each window's elements within the input and its given pads: not the overhang.
        counts = []
        for i, (size, k, s, out) in enumerate(zip(x.shape[2:], kernel, stride, outs)):
            starts = np.arange(out) * s - given[i]
            counts.append(np.minimum(starts + k, size + given[i + 2]) - starts)
        y = y * ((kernel[0] * kernel[1]) / np.outer(*counts)).astype(np.dtype(y.dtype))
    return y
