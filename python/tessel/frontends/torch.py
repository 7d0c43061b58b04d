"""PyTorch models into the ``graph`` dialect: ``tessel.from_torch(model_or_fn, example_args)``.

The model is exported with :func:`torch.export.export` and decomposed to
core ATen (``run_decompositions``), except for the composite ops that the
graph dialect has as ops of its own, or converts whole (``_KEPT``: linear,
matmul, silu, rms_norm, scaled_dot_product_attention, bicubic upsampling). The FX graph is
then traced with :func:`tessel.trace`: the example args become the
function's arguments, parameters and buffers numpy constants (or arguments,
with ``params_as_args=True``), and each ``call_function`` node a converter
on :mod:`tessel.ops`. A node whose inputs are all known while importing
(weights, ``arange``, ``full``, a causal mask) is evaluated by torch itself
and stays a numpy array, so shape arithmetic and masks get torch's exact
semantics. Every result is checked against the shape and dtype that export
recorded for its node. An op that is not supported raises
``tessel.UnsupportedError`` naming the aten op, the FX node and the line of
the user's source that made it, with the supported ops nearest in name.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import operator
import os
import re
import types
import warnings
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .. import ops
from ..backends.signature import TensorSpec
from ..dtypes import BFLOAT16, words
from ..errors import CompileError, UnsupportedError, require_extra
from ..tracing import Tensor, as_tensor, trace
from . import _interpolate
from ._common import (SizeLike, SymbolicSize, Value, arg_extreme, as_size, attention, by_rows, cast_to,
                      conv_transpose, dims, filled, gathered_along, is_symbolic, matmul, numpy_or, pooled, reshaped,
                      selected, shape_text, size_tensor, sizes_of, taken_range, triangle)

try:
    import torch
    from torch.fx.node import map_aggregate
except ImportError:  # from_torch says how to install it
    torch = None

__all__ = ["from_torch", "SUPPORTED_OPS"]

# Composite ops kept out of the decomposition: each is one graph op (or a
# short composition) here, where its decomposition would be several, with
# reshapes and transposes that the graph passes then have to fold away.
_KEPT = ("linear.default", "matmul.default", "silu.default", "rms_norm.default",
         "scaled_dot_product_attention.default", "upsample_bicubic2d.vec")

# Ops with nothing to compute: run-time checks of metadata that export records.
_IGNORED = ("aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
            "aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default")

# Converters that read sizes (torch's SymInts, SymbolicSizes here) as
# sizes: a shape, bounds, counts. Any other converter gets each symbolic
# size among its arguments as a 0-d int64 tensor computed at run time
# (``x / seq``).
_TAKES_SIZES = frozenset({
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.expand.default",
    "aten.slice.Tensor", "aten.select.int", "aten.split.Tensor", "aten.split_with_sizes.default",
    "aten.narrow.default", "aten.repeat.default", "aten.constant_pad_nd.default", "aten.full.default",
    "aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.native_group_norm.default",
    "aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default", "aten.flatten.using_ints",
    "aten.unsqueeze.default", "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims"})

# Folding a node whose inputs are all known makes its result a constant; one
# much larger than its inputs (an expand of a weight over the batch) is
# built as a graph op on constant operands instead.
_FOLD_LIMIT = 1 << 20


# Dtypes ---------------------------------------------------------------------

@functools.cache
def _dtype_pairs() -> tuple[tuple[Any, np.dtype], ...]:
    pairs = [(torch.float32, np.float32), (torch.float16, np.float16), (torch.float64, np.float64),
             (torch.int64, np.int64), (torch.int32, np.int32), (torch.int16, np.int16),
             (torch.int8, np.int8), (torch.uint8, np.uint8), (torch.bool, np.bool_)]
    if BFLOAT16 is not None:
        pairs.append((torch.bfloat16, BFLOAT16))
    return tuple((t, np.dtype(n)) for t, n in pairs)


# The element types of graph tensors (uint8 appears only in folded values).
_ARGUMENT_DTYPES = () if torch is None else (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
                                              torch.int16, torch.int32, torch.int64, torch.bool)


def _numpy_dtype(dtype: Any) -> np.dtype:
    for t, n in _dtype_pairs():
        if t == dtype:
            return n
    raise UnsupportedError(f"dtype {dtype} is not supported")


def _torch_dtype(dtype: np.dtype) -> Any:
    for t, n in _dtype_pairs():
        if n == np.dtype(dtype):
            return t
    raise UnsupportedError(f"dtype {np.dtype(dtype).name} is not supported")


def _to_numpy(t: Any) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:  # no buffer-protocol format: reinterpret the 16-bit words
        return t.view(torch.int16).numpy().view(BFLOAT16)
    return t.numpy()


def _to_torch(a: np.ndarray) -> Any:
    a = np.require(a, requirements=["C", "W"])  # torch wants writable memory
    if a.dtype == BFLOAT16:  # torch.from_numpy has no bfloat16: move the words
        return torch.from_numpy(words(a)).view(torch.bfloat16)
    return torch.from_numpy(a)


# Nodes ----------------------------------------------------------------------

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in \S+\n\s*(?P<code>[^\n]*)')


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", str(target))


def _source(fx: Any) -> Optional[str]:
    """``file:line `code``` of the user's line that made ``fx``: the innermost
    frame of its recorded stack outside torch and tessel."""
    frames = list(_FRAME.finditer(fx.meta.get("stack_trace") or ""))
    if not frames:
        return None
    library = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.dirname(__file__)) + os.sep)
    user = [f for f in frames if not f["file"].startswith(library)]
    frame = (user or frames)[-1]
    return f"{frame['file']}:{frame['line']} `{frame['code'].strip()}`"


class _Node:
    """One FX node while converting: its values, and where it came from."""

    def __init__(self, fx: Any, args: tuple, kwargs: dict, hint: str, symbols: _Symbols) -> None:
        # hint: what to add to the error of an op that only training mode makes.
        self.fx, self.args, self.kwargs, self.hint, self.symbols = fx, args, kwargs, hint, symbols
        self.op = _op_name(fx.target)

    def where(self) -> str:
        source = _source(self.fx)
        return f"torch node {self.fx.name} ({self.op})" + (f" from {source}" if source else "")

    def unsupported(self, reason: str) -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {reason}")

    @property
    def sizes(self) -> list[SizeLike]:
        """The shape of the (first) result, as export recorded it (a size
        symbol's dim as a SymbolicSize)."""
        val = self.fx.meta["val"]
        return [self.symbols.size(d, self) for d in (val[0] if isinstance(val, (tuple, list)) else val).shape]

    @property
    def shape(self) -> list[Union[int, str]]:
        """:attr:`sizes` as tessel's ops take a shape (a symbolic dim as its text)."""
        return dims(self.sizes)

    def symbolic(self) -> list[str]:
        """What of the node depends on size symbols: ``operand 0 [batch, seq, 64]``-like phrases."""
        operands = [v for v in _leaves((self.args, self.kwargs)) if isinstance(v, (Tensor, np.ndarray, SymbolicSize))]
        found = [f"operand {i} {shape_text(v.shape)}" for i, v in enumerate(operands)
                 if not isinstance(v, SymbolicSize) and is_symbolic(v)]
        found += [f"size {v}" for v in operands if isinstance(v, SymbolicSize)]
        results = [v for v in _leaves(self.fx.meta.get("val")) if isinstance(v, torch.Tensor)]
        shapes = [[self.symbols.size(d, self) for d in v.shape] for v in results]
        found += [f"result {shape_text(shape)}" for shape in shapes if is_symbolic(shape)]
        return found

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the (first) result, as export recorded it."""
        val = self.fx.meta["val"]
        return _numpy_dtype((val[0] if isinstance(val, (tuple, list)) else val).dtype)

    def only_first_result(self, what: str) -> None:
        """Rejects uses of results past the first (``what`` names them)."""
        if any(u.target is operator.getitem and u.args[1] != 0 for u in self.fx.users):
            raise self.unsupported(f"{what} is not supported")


class _Symbols:
    """The size symbols of an exported program: each torch symbol's tessel
    name (the user's ``Dim`` name where one was given) and range."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}  # sympy.Symbol -> tessel name
        self.ranges: dict[str, tuple[int, ...]] = {}  # (min, max) or (min, max, multiple_of)
        # The root of a derived Dim (``8 * k``) in terms of the tessel symbol
        # that is the derived size: k -> S / 8.
        self.roots: dict[Any, Any] = {}

    def size(self, value: Any, n: Optional[_Node] = None) -> SizeLike:
        """A torch size (an int, a SymInt or its sympy expression) as a
        size; UnsupportedError, naming ``n``, for an expression tessel's
        sizes cannot say (Max, Min, a true division) or a symbol that is no
        input's (a data-dependent size)."""
        if isinstance(value, int):
            return value
        expr = value.node.expr if isinstance(value, torch.SymInt) else value
        try:
            return self._size(expr.xreplace(self.roots) if self.roots else expr)
        except UnsupportedError as e:
            raise (n.unsupported(e.summary) if n is not None else e) from None

    def _size(self, expr: Any) -> SizeLike:
        import sympy
        from torch.utils._sympy import functions

        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            if expr not in self.names:
                raise UnsupportedError(f"the size {expr} is data-dependent (no input's dim): sizes computed from "
                                       "tensor values are not supported")
            return SymbolicSize.symbol(self.names[expr])
        coefficient, rest = expr.as_coeff_Mul() if isinstance(expr, sympy.Mul) else (sympy.S.One, expr)
        if coefficient.is_Rational and not coefficient.is_Integer:
            # A derived Dim's root (S / 8): the quotient is exact, S being declared a multiple of 8.
            return self._size(coefficient.p * rest) // coefficient.q
        args = [self._size(a) for a in expr.args]
        if isinstance(expr, sympy.Add):
            return sum(args[1:], args[0])
        if isinstance(expr, sympy.Mul):
            return math.prod(args[1:], start=args[0])
        if isinstance(expr, (sympy.Pow, functions.PowByNatural)) and isinstance(args[1], int) and args[1] > 0:
            return math.prod([args[0]] * args[1])
        if isinstance(expr, (functions.FloorDiv, functions.CleanDiv)):
            return args[0] // args[1]
        if isinstance(expr, functions.CeilDiv) and isinstance(args[1], int):
            return (args[0] + args[1] - 1) // args[1]
        if isinstance(expr, (functions.Mod, functions.PythonMod)) and isinstance(args[1], int):
            return args[0] % args[1]
        names = {symbol: sympy.Symbol(name) for symbol, name in self.names.items()}
        raise UnsupportedError(f"the size {expr.xreplace(names)} ({type(expr).__name__}) is not a size expression "
                               "tessel takes (sums, products, floor division and remainders by constants)")


def _leaves(value: Any) -> list[Any]:
    found: list[Any] = []
    map_aggregate(value, lambda v: found.append(v))
    return found


def _fold(n: _Node) -> Any:
    """Runs the node's op in torch on its known inputs; tensors come back as numpy."""
    args, kwargs = map_aggregate((n.args, n.kwargs), lambda v: _to_torch(v) if isinstance(v, np.ndarray) else v)
    with torch.no_grad():
        result = n.fx.target(*args, **kwargs)
    return map_aggregate(result, lambda v: _to_numpy(v) if isinstance(v, torch.Tensor) else v)


def _folds(n: _Node) -> bool:
    """Whether the node is evaluated while importing (see _FOLD_LIMIT)."""
    leaves = _leaves((n.args, n.kwargs))
    if any(isinstance(v, (Tensor, SymbolicSize)) for v in leaves) or not isinstance(n.fx.target, torch._ops.OpOverload):
        return False
    results = [v for v in _leaves(n.fx.meta.get("val")) if isinstance(v, torch.Tensor)]
    if any(isinstance(d, torch.SymInt) for v in results for d in v.shape):
        return False  # its size is known only at each call
    if torch.Tag.nondeterministic_seeded in n.fx.target.tags:
        return False
    if n.op not in CONVERTERS:
        return True
    size = sum(v.numel() for v in results)
    return size <= max(_FOLD_LIMIT, 4 * sum(v.size for v in leaves if isinstance(v, np.ndarray)))


def _check(n: _Node, result: Any) -> None:
    """A translation must give the shape and dtype export recorded: never a silent wrong answer."""
    expected = n.fx.meta.get("val")
    pairs = zip(result, expected) if isinstance(result, tuple) else [(result, expected)]
    for got, want in pairs:
        if isinstance(want, torch.Tensor) and isinstance(got, (Tensor, np.ndarray)):
            shape, dtype = [n.symbols.size(d, n) for d in want.shape], _numpy_dtype(want.dtype)
            if sizes_of(got.shape) != shape or np.dtype(got.dtype) != dtype:
                raise n.unsupported(f"translated to {np.dtype(got.dtype).name}{list(got.shape)} where torch "
                                    f"computes {dtype.name}{dims(shape)} (a tessel bug: please report it)")


# Operand helpers ------------------------------------------------------------

def _operands(n: _Node, *values: Any) -> list[Any]:
    """Operands (None stays None) as values of the node's result dtype:
    torch's type promotion, read from what export recorded."""
    return [None if v is None else cast_to(v, n.dtype) if isinstance(v, (Tensor, np.ndarray))
            else np.asarray(v, n.dtype) for v in values]


def _stand_in(v: Any) -> Any:
    # torch.result_type only needs the dtype and whether the tensor is 0-d.
    if isinstance(v, (Tensor, np.ndarray)):
        return torch.empty((0,) * min(len(v.shape), 1), dtype=_torch_dtype(v.dtype))
    return v


def _promoted(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` cast to torch's common dtype (comparisons, where the result is bool)."""
    dtype = _numpy_dtype(torch.result_type(_stand_in(a), _stand_in(b)))
    return tuple(cast_to(v, dtype) if isinstance(v, (Tensor, np.ndarray)) else v for v in (a, b))


def _bool(x: Value) -> Value:
    return x if np.dtype(x.dtype) == np.bool_ else as_tensor(x) != 0


def _axis(dim: int, rank: int) -> int:
    return dim % rank if rank else 0


def _dims(dim: Union[None, int, Sequence[int]], rank: int) -> Optional[tuple[int, ...]]:
    """Reduction dims; None (all) for None or [] as in aten."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return None
    return tuple(_axis(d, rank) for d in ([dim] if isinstance(dim, int) else dim))


def _pair(value: Union[int, Sequence[int]]) -> list[int]:
    values = [value] if isinstance(value, int) else list(value)
    return values * 2 if len(values) == 1 else values


def _index(rank: int, dim: int, entry: Any) -> tuple:
    return (slice(None),) * _axis(dim, rank) + (entry,)


# Converters: each takes the node and the aten op's arguments by its schema --

def _same(n: _Node, x: Value, *args: Any, **kwargs: Any) -> Value:
    return x


def _to_copy(n: _Node, x: Value, **kwargs: Any) -> Value:
    return cast_to(x, n.dtype)


def _add(n: _Node, a: Any, b: Any, alpha: Any = 1) -> Value:
    a, b = _operands(n, a, b)
    return as_tensor(a) + (b if alpha == 1 else b * alpha)


def _sub(n: _Node, a: Any, b: Any, alpha: Any = 1) -> Value:
    a, b = _operands(n, a, b)
    return as_tensor(a) - (b if alpha == 1 else b * alpha)


def _rsub(n: _Node, a: Any, b: Any, alpha: Any = 1) -> Value:
    a, b = _operands(n, a, b)
    return b - (as_tensor(a) if alpha == 1 else as_tensor(a) * alpha)


def _mul(n: _Node, a: Any, b: Any) -> Value:
    a, b = _operands(n, a, b)
    return as_tensor(a) * b


def _div(n: _Node, a: Any, b: Any, *, rounding_mode: Optional[str] = None) -> Value:
    a, b = _operands(n, a, b)
    quotient = as_tensor(a) / b  # graph.div truncates integers
    if rounding_mode is None or (n.dtype.kind != "f" and rounding_mode == "trunc"):
        return quotient
    if n.dtype.kind == "f":
        return _trunc(quotient) if rounding_mode == "trunc" else _floor_divide_floats(a, b)
    # Floor division of integers: one less where the remainder's sign differs from the divisor's.
    remainder = a - quotient * b
    return quotient - ops.where(ops.where(remainder != 0, (remainder < 0) != (b < 0), False), 1, 0)


def _floor_divide_floats(a: Value, b: Value) -> Tensor:
    """torch's (and Python's) float floor division: from the exact fmod,
    not floor(a / b), whose rounding can be one off."""
    a, b = as_tensor(a), as_tensor(b)
    mod = ops.fmod(a, b)
    div = (a - mod) / b
    div = ops.where(ops.where(mod != 0, (b < 0) != (mod < 0), False), div - 1, div)
    whole = ops.floor(div)
    whole = ops.where(div - whole > 0.5, whole + 1, whole)
    # A zero quotient keeps a / b's sign; a zero divisor gives a / b's inf or NaN.
    return ops.where(b == 0, a / b, ops.where(div != 0, whole, (a / b) * 0.0))


def _pow(n: _Node, base: Any, exponent: Any) -> Value:
    if isinstance(exponent, (int, float)) and float(exponent).is_integer() and 1 <= exponent <= 4:
        # Exact for negative bases and integers, unlike exp(log(x) * y).
        base = as_tensor(_operands(n, base)[0])
        result = base
        for _ in range(int(exponent) - 1):
            result = result * base
        return result
    if n.dtype.kind != "f":
        raise n.unsupported(f"an integer power ({n.dtype.name}) is supported only for exponents 1 to 4")
    return ops.pow(*_operands(n, base, exponent))


def _binary(fn: Callable[[Value, Value], Value]) -> Callable[..., Value]:
    return lambda n, a, b: fn(*_operands(n, a, b))


def _compare(name: str) -> Callable[..., Value]:
    fn = getattr(operator, name)

    def convert(n: _Node, a: Any, b: Any) -> Value:
        a, b = _promoted(a, b)
        return fn(as_tensor(a), b)
    return convert


def _logical_not(n: _Node, x: Value) -> Value:
    return ops.where(_bool(x), np.bool_(False), np.bool_(True))


def _logical(kind: str) -> Callable[..., Value]:
    def convert(n: _Node, a: Value, b: Value) -> Value:
        a, b = _bool(a), _bool(b)
        if kind == "and":
            return ops.where(a, b, np.bool_(False))
        if kind == "or":
            return ops.where(a, np.bool_(True), b)
        return as_tensor(a) != b
    return convert


def _bitwise(kind: str) -> Callable[..., Value]:
    def convert(n: _Node, *args: Value) -> Value:
        if n.dtype != np.bool_:
            raise n.unsupported(f"bitwise ops on {n.dtype.name} are not supported (bool only)")
        return _logical_not(n, *args) if kind == "not" else _logical(kind)(n, *args)
    return convert


def _where(n: _Node, condition: Value, a: Any, b: Any) -> Value:
    return ops.where(_bool(condition), *_operands(n, a, b))


def _unary(fn: Callable[[Tensor], Tensor]) -> Callable[..., Value]:
    """An elementwise op; integer inputs of float ops (sqrt of an int) are cast first, as torch does."""
    return lambda n, x: fn(as_tensor(cast_to(x, n.dtype)))


def _gelu(n: _Node, x: Value, *, approximate: str = "none") -> Value:
    return ops.gelu(x, approximate=approximate)


def _clamp(n: _Node, x: Value, min: Any = None, max: Any = None) -> Value:  # noqa: A002 - aten's names
    x, low, high = _operands(n, x, min, max)
    if low is not None:
        x = ops.maximum(x, low)
    if high is not None:
        x = ops.minimum(x, high)
    return x


def _hardtanh(n: _Node, x: Value, min_val: float = -1.0, max_val: float = 1.0) -> Value:
    return _clamp(n, x, min_val, max_val)


def _leaky_relu(n: _Node, x: Value, negative_slope: float = 0.01) -> Value:
    x = as_tensor(x)
    return ops.where(x > 0, x, x * negative_slope)


def _elu(n: _Node, x: Value, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Value:
    x = as_tensor(x)
    return ops.where(x > 0, x * scale, (ops.exp(x * input_scale) - 1.0) * (alpha * scale))


def _reduce(kind: str) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Value:
        x = as_tensor(cast_to(x, n.dtype))  # sums of ints and bools are int64 in torch
        return getattr(x, kind)(_dims(dim, x.ndim), keepdim)
    return convert


def _reduce_with_indices(kind: str) -> Callable[..., tuple]:
    """max.dim/min.dim: the values and the index of the first extreme."""
    def convert(n: _Node, x: Value, dim: int, keepdim: bool = False) -> tuple:
        x = as_tensor(x)
        axis = _axis(dim, x.ndim)
        return getattr(x, kind)(axis, keepdim), arg_extreme(x, axis, kind, keepdim)
    return convert


def _arg_reduce(kind: str) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, dim: Optional[int] = None, keepdim: bool = False) -> Value:
        x = as_tensor(x)
        if dim is None:  # over all elements, as of the flattened tensor
            index = arg_extreme(ops.reshape(x, [-1]), 0, kind, False)
            return ops.reshape(index, [1] * x.ndim) if keepdim else index
        return arg_extreme(x, _axis(dim, x.ndim), kind, keepdim)
    return convert


def _rounding(fn: Callable[[Tensor], Tensor]) -> Callable[..., Value]:
    """floor/ceil/round/trunc: integers are already whole."""
    def convert(n: _Node, x: Value, *, decimals: int = 0) -> Value:
        x = as_tensor(x)
        if x.dtype.kind != "f":
            return x
        if decimals:  # as torch: round(x * 10^d) / 10^d
            return fn(x * float(10 ** decimals)) * (1 / float(10 ** decimals))
        return fn(x)
    return convert


def _trunc(x: Tensor) -> Tensor:
    return ops.where(x < 0, ops.ceil(x), ops.floor(x))


def _any_all(kind: str) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, dim: Any = None, keepdim: bool = False) -> Value:
        x = ops.cast(_bool(x), np.int32)
        return getattr(x, "max" if kind == "any" else "min")(_dims(dim, x.ndim), keepdim) > 0
    return convert


def _var(n: _Node, x: Value, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Value:
    x = as_tensor(x)
    axes = _dims(dim, x.ndim) or tuple(range(x.ndim))
    centered = x - x.mean(axes, True)
    count = math.prod(sizes_of([x.shape[d] for d in axes])) - (1 if correction is None else correction)
    if isinstance(count, SymbolicSize):  # known at each call: divided by at run time (0 / 0 is NaN there too)
        return (centered * centered).sum(axes, keepdim) / cast_to(size_tensor(count), x.dtype)
    # No degrees of freedom left: torch's 0 / 0 gives NaN.
    return (centered * centered).sum(axes, keepdim) * (1.0 / count if count > 0 else math.inf)


def _vector_norm(n: _Node, x: Value, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                 dtype: Any = None) -> Value:
    x = abs(as_tensor(cast_to(x, n.dtype)))
    dims = _dims(dim, x.ndim)
    if ord == 2:
        return ops.sqrt((x * x).sum(dims, keepdim))
    if ord == 1:
        return x.sum(dims, keepdim)
    if ord == math.inf:
        return x.max(dims, keepdim)
    raise n.unsupported(f"ord={ord} is not supported (1, 2, inf)")


def _softmax(log: bool) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, dim: int, half_to_float: bool = False) -> Value:
        if half_to_float:
            raise n.unsupported("half_to_float is not supported")
        return (ops.log_softmax if log else ops.softmax)(x, axis=dim)
    return convert


def _native_layer_norm(n: _Node, x: Value, normalized_shape: Sequence[int], weight: Optional[Value],
                       bias: Optional[Value], eps: float) -> tuple:
    x = as_tensor(x)
    axis = x.ndim - len(normalized_shape)
    y = ops.layer_norm(x, weight, bias, eps=eps, axis=axis)
    if not any(u.target is operator.getitem and u.args[1] != 0 for u in n.fx.users):
        return y, None, None
    # The mean and 1/std results keep the normalized dims as 1.
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axes, True)
    centered = x - mean
    return y, mean, ops.rsqrt((centered * centered).mean(axes, True) + eps)


def _rms_norm(n: _Node, x: Value, normalized_shape: Sequence[int], weight: Optional[Value] = None,
              eps: Optional[float] = None) -> Value:
    x = as_tensor(x)
    eps = float(torch.finfo(_torch_dtype(x.dtype)).eps) if eps is None else eps
    return ops.rms_norm(x, weight, eps=eps, axis=x.ndim - len(normalized_shape))


def _batch_norm(n: _Node, x: Value, weight: Optional[Value], bias: Optional[Value], mean: Value, var: Value,
                momentum: float, eps: float) -> tuple:
    n.only_first_result("the saved mean/invstd results (training)")
    channels = x.shape[1]
    weight = np.ones(channels, x.dtype) if weight is None else weight
    bias = np.zeros(channels, x.dtype) if bias is None else bias
    return ops.batch_norm(x, mean, var, weight, bias, eps=eps, axis=1), None, None


def _batch_norm_batch_statistics(n: _Node, x: Value, weight: Optional[Value], bias: Optional[Value],
                                 training: bool, momentum: float, eps: float) -> tuple:
    """Batch norm over the batch's own statistics (no running stats: InstanceNorm, track_running_stats=False)."""
    n.only_first_result("the saved mean/invstd results (training)")
    x = as_tensor(x)
    axes = tuple(d for d in range(x.ndim) if d != 1)
    mean = x.mean(axes)
    centered = x - ops.reshape(mean, [1, -1] + [1] * (x.ndim - 2))
    return _batch_norm(n, x, weight, bias, mean, (centered * centered).mean(axes), momentum, eps)


def _group_norm(n: _Node, x: Value, weight: Optional[Value], bias: Optional[Value], batch: SizeLike,
                channels: int, spatial: SizeLike, groups: int, eps: float) -> tuple:
    n.only_first_result("the saved mean/rstd results (training)")
    x = as_tensor(x)
    y = ops.layer_norm(x.reshape(dims([batch, groups, -1])), eps=eps, axis=2).reshape(x.shape)
    per_channel = [channels] + [1] * (x.ndim - 2)
    if weight is not None:
        y = y * numpy_or([weight], lambda w: w.reshape(per_channel), lambda w: ops.reshape(w, per_channel))
    if bias is not None:
        y = y + numpy_or([bias], lambda b: b.reshape(per_channel), lambda b: ops.reshape(b, per_channel))
    return y, None, None


def _linear(n: _Node, x: Value, weight: Value, bias: Optional[Value] = None) -> Value:
    x = as_tensor(x)
    if x.ndim == 1:  # a vector: one row, dropped again
        return ops.linear(x.reshape([1, -1]), weight, bias).reshape(n.shape)
    return by_rows(lambda rows: ops.linear(rows, weight, bias), x)


def _mm(n: _Node, a: Value, b: Value) -> Value:
    return by_rows(lambda rows: rows @ b, as_tensor(a)) if len(b.shape) == 2 else as_tensor(a) @ b


def _addmm(n: _Node, bias: Value, a: Value, b: Value, *, beta: Any = 1, alpha: Any = 1) -> Value:
    y = _mm(n, a, b)
    if alpha != 1:
        y = y * alpha
    if beta == 0:  # torch ignores the bias then, NaNs included
        return y
    return y + (bias if beta == 1 else as_tensor(bias) * beta)


def _sdpa(n: _Node, q: Value, k: Value, v: Value, attn_mask: Optional[Value] = None, dropout_p: float = 0.0,
          is_causal: bool = False, *, scale: Optional[float] = None, enable_gqa: bool = False) -> Value:
    if dropout_p:
        raise n.unsupported(f"dropout_p={dropout_p} is not supported (inference only)")
    return attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale)


def _transformer_encoder_layer(n: _Node, src: Value, embed_dim: int, num_heads: int, qkv_weight: Value,
                               qkv_bias: Value, proj_weight: Value, proj_bias: Value, use_gelu: bool,
                               norm_first: bool, eps: float, norm_weight_1: Value, norm_bias_1: Value,
                               norm_weight_2: Value, norm_bias_2: Value, ffn_weight_1: Value, ffn_bias_1: Value,
                               ffn_weight_2: Value, ffn_bias_2: Value, mask: Optional[Value] = None,
                               mask_type: Optional[int] = None) -> Value:
    """nn.TransformerEncoderLayer's inference fast path (batch first) as the
    layer it stands for: self-attention and the feed-forward block, each
    with its residual, layer norms before (norm_first) or after."""
    if mask is not None:
        raise n.unsupported("a mask on the fused encoder layer is not supported (pass none, or call the layer "
                            "with grad enabled for the unfused path)")
    x = as_tensor(src)
    batch, length = x.shape[0], x.shape[1]
    head = embed_dim // num_heads

    def attend(y: Tensor) -> Tensor:
        q, k, v = (ops.transpose(ops.reshape(t, [batch, length, num_heads, head]), [0, 2, 1, 3])
                   for t in (y[:, :, i * embed_dim:(i + 1) * embed_dim]
                             for y in [ops.linear(y, qkv_weight, qkv_bias)] for i in range(3)))
        heads = ops.reshape(ops.transpose(attention(q, k, v), [0, 2, 1, 3]), [batch, length, embed_dim])
        return ops.linear(heads, proj_weight, proj_bias)

    def feed_forward(y: Tensor) -> Tensor:
        hidden = ops.linear(y, ffn_weight_1, ffn_bias_1)
        return ops.linear(ops.gelu(hidden) if use_gelu else ops.relu(hidden), ffn_weight_2, ffn_bias_2)

    def norm(y: Tensor, weight: Value, bias: Value) -> Tensor:
        return ops.layer_norm(y, weight, bias, eps=eps)

    if norm_first:
        x = x + attend(norm(x, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(x + attend(x), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)


def _convolution(n: _Node, x: Value, weight: Value, bias: Optional[Value], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Value:
    x = as_tensor(x)
    if x.ndim not in (3, 4):
        raise n.unsupported(f"only 1-D and 2-D convolution are supported, got a rank-{x.ndim} input")
    one_d = x.ndim == 3
    if one_d:  # 1-D as 2-D over a height of one
        x = ops.unsqueeze(x, 2)
        weight = numpy_or([weight], lambda w: np.expand_dims(w, 2), lambda w: ops.unsqueeze(w, 2))
        stride, padding, dilation, output_padding = ([first, *v] for first, v in zip(
            (1, 0, 1, 0), (stride, padding, dilation, output_padding)))
    if transposed:
        y = conv_transpose(x, weight, bias, _pair(stride), _pair(dilation), _pair(padding), _pair(padding),
                           _pair(output_padding), groups)
    else:
        y = ops.conv2d(x, weight, bias, _pair(stride), _pair(padding), _pair(dilation), groups)
    return ops.squeeze(y, 2) if one_d else y


def _pooled(n: _Node, kind: str, x: Value, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
            count_include_pad: bool = False) -> Tensor:
    x = as_tensor(x)
    if x.ndim != 4:
        raise n.unsupported(f"only 2-D pooling of NCHW tensors is supported, got rank {x.ndim}")
    kernel, padding = _pair(kernel_size), _pair(padding)
    y = pooled(kind, x, kernel, _pair(stride) if stride else kernel, padding * 2, ceil_mode=ceil_mode,
               count_include_pad=count_include_pad)
    if sizes_of(y.shape) != n.sizes:
        raise CompileError(f"pooling gives {list(y.shape)} where torch recorded {list(n.shape)}")
    return y


def _max_pool(n: _Node, x: Value, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False) -> tuple:
    n.only_first_result("the indices result of max_pool2d_with_indices")
    if _pair(dilation) != [1, 1]:
        raise n.unsupported("dilation is not supported")
    return _pooled(n, "max", x, kernel_size, stride, padding, ceil_mode), None


def _avg_pool(n: _Node, x: Value, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Value:
    if divisor_override is not None:
        raise n.unsupported("divisor_override is not supported")
    return _pooled(n, "avg", x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _upsampled(n: _Node, x: Value, mode: str, coordinates: str) -> Value:
    """upsample_{nearest,bilinear,bicubic}2d: each spatial axis resized by
    the ``[out, in]`` weights of ``frontends/_interpolate.py`` (torch's
    nearest is ONNX's asymmetric floor; bilinear and bicubic are half-pixel
    (not ONNX's pytorch_half_pixel, which current torch no longer is) or
    align-corners, cubic with a = -0.75), the sizes from export's record."""
    for axis in (2, 3):
        size_in, size_out = x.shape[axis], n.shape[axis]
        coords = _interpolate.source_coordinates(coordinates, size_in, size_out, size_out / size_in)
        weights = _interpolate.weights(coords, size_in, size_out / size_in, mode, nearest_mode="floor", cubic_a=-0.75)
        x = _interpolate.resampled(x, axis, weights)
    return x


def _upsample_nearest(n: _Node, x: Value, output_size: Any = None, scale_factors: Any = None) -> Value:
    if scale_factors is not None and output_size is None and any(
            math.floor(x.shape[2 + i] * s) != n.shape[2 + i] or float(s) != n.shape[2 + i] / x.shape[2 + i]
            for i, s in enumerate(scale_factors)):
        raise n.unsupported(f"scale factors {list(scale_factors)} that are not the output's size over the input's")
    return _upsampled(n, x, "nearest", "asymmetric")


def _upsample_smooth(mode: str) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, output_size: Any = None, align_corners: bool = False,
                scale_factors: Any = None) -> Value:
        if scale_factors is not None and output_size is None and any(
                float(s) != n.shape[2 + i] / x.shape[2 + i] for i, s in enumerate(scale_factors)):
            raise n.unsupported(f"scale factors {list(scale_factors)} that are not the output's size over the "
                                "input's")
        return _upsampled(n, x, mode, "align_corners" if align_corners else "half_pixel")
    return convert


def _adaptive_avg_pool(n: _Node, x: Value, output_size: Sequence[int]) -> Value:
    x = as_tensor(x)
    sizes, outputs = x.shape[-2:], _pair(output_size)
    if any(size % out for size, out in zip(sizes, outputs)):
        raise n.unsupported(f"an output size {outputs} that does not divide the input size {list(sizes)} "
                            "(uneven windows) is not supported")
    kernel = [size // out for size, out in zip(sizes, outputs)]
    return ops.avg_pool2d(x, kernel, kernel)


def _embedding(n: _Node, weight: Value, indices: Value, *args: Any) -> Value:
    return ops.take(weight, indices, 0)


def _index_select(n: _Node, x: Value, dim: int, index: Value) -> Value:
    return ops.take(x, index, _axis(dim, len(x.shape)))


def _index_tensor(n: _Node, x: Value, indices: Sequence[Optional[Value]]) -> Value:
    """``x[..., i0, i1, ...]``: one index tensor is a graph.gather along its
    dim; several, on adjacent dims, one gather of those dims flattened at
    the linear index ``(i0 * size1 + i1) * size2 + ...`` (the index tensors
    broadcast, as torch's do; negative ones count from the end)."""
    present = [(d, i) for d, i in enumerate(indices) if i is not None]
    if any(np.dtype(i.dtype) == np.bool_ for _, i in present):
        raise n.unsupported("boolean mask indexing (a data-dependent shape) is not supported")
    if len(present) == 1:
        return ops.take(x, present[0][1], present[0][0])
    first, last = present[0][0], present[-1][0]
    if last - first + 1 != len(present):
        raise n.unsupported(f"index tensors on dims {[d for d, _ in present]}, which are not adjacent, are not "
                            "supported")
    sizes = sizes_of(x.shape)
    if sum(isinstance(d, SymbolicSize) for d in sizes[first:last + 1]) > 1:
        raise n.unsupported(f"index tensors on dims {first} to {last} of sizes {shape_text(sizes[first:last + 1])} "
                            "are not supported: gathered as one flattened dim, that dim would be a product of size "
                            "symbols, which the CPU lowering does not take yet")
    linear: Optional[Value] = None
    for d, index in present:
        index, size = cast_to(index, np.dtype(np.int64)), size_tensor(sizes[d])
        if not isinstance(index, np.ndarray) or (index < 0).any():
            index = ops.where(as_tensor(index) < 0, as_tensor(index) + size, index)
        linear = index if linear is None else as_tensor(linear) * size + index
    flat = reshaped(x, sizes[:first] + [math.prod(sizes[first:last + 1])] + sizes[last + 1:])
    return ops.take(flat, linear, first)


def _reshape_to_result(n: _Node, x: Value, *args: Any) -> Value:
    """view, reshape, flatten, (un)squeeze: the result shape is the one export recorded."""
    return reshaped(x, n.sizes)


def _expand(n: _Node, x: Value, *args: Any, **kwargs: Any) -> Value:
    return ops.broadcast_to(x, n.shape)


def _permute(n: _Node, x: Value, dims: Sequence[int]) -> Value:
    return ops.transpose(x, list(dims))


def _transpose(n: _Node, x: Value, dim0: int = 0, dim1: int = 1) -> Value:
    perm = list(range(len(x.shape)))
    a, b = _axis(dim0, len(perm)), _axis(dim1, len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    return ops.transpose(x, perm)


def _cat(n: _Node, tensors: Sequence[Value], dim: int = 0) -> Value:
    # torch (legacy) skips 1-D empty tensors, whatever the others' rank.
    values = _operands(n, *(t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0)))
    return ops.concatenate(values, _axis(dim, len(n.shape)))


def _split(n: _Node, x: Value, split: Any, dim: int = 0) -> tuple:
    """split/split_with_sizes: consecutive pieces of the lengths export recorded for the results."""
    x = as_tensor(x)
    axis = _axis(dim, x.ndim)
    results, at = [], 0
    for piece in n.fx.meta["val"]:
        length = n.symbols.size(piece.shape[axis], n)
        results.append(taken_range(x, axis, at, length))
        at = at + length
    return tuple(results)


def _unbind(n: _Node, x: Value, dim: int = 0) -> tuple:
    x = as_tensor(x)
    axis = _axis(dim, x.ndim)
    size = as_size(x.shape[axis])
    if isinstance(size, SymbolicSize):
        raise n.unsupported(f"unbinding dim {axis} of size {size} (a size symbol: a number of results known only "
                            "at each call) is not supported")
    return tuple(x[_index(x.ndim, dim, i)] for i in range(size))


def _slice(n: _Node, x: Value, dim: int = 0, start: Optional[SizeLike] = None, end: Optional[SizeLike] = None,
           step: int = 1) -> Value:
    """slice.Tensor: ``x[start:end:step]`` along ``dim``. Over size symbols,
    the count of elements is the one export recorded (torch's guards keep
    it within bounds at every size of the ranges)."""
    x = as_tensor(x)
    axis = _axis(dim, x.ndim)
    size, count = as_size(x.shape[axis]), n.sizes[axis]
    if not any(isinstance(v, SymbolicSize) for v in (size, start, end, count)):
        return x[_index(x.ndim, dim, slice(start, end, step))]
    return taken_range(x, axis, 0 if start is None else start, count, step)


def _select(n: _Node, x: Value, dim: int, index: SizeLike) -> Value:
    x = as_tensor(x)
    return selected(x, _axis(dim, x.ndim), index)


def _triangle(upper: bool) -> Callable[..., Value]:
    def convert(n: _Node, x: Value, diagonal: int = 0) -> Value:
        return ops.where(triangle(*n.shape[-2:], diagonal, upper), x, np.zeros((), n.dtype))
    return convert


def _repeat(n: _Node, x: Value, repeats: Sequence[int]) -> Value:
    # Tile through one broadcast: [s0, s1] -> [1, s0, 1, s1] -> [r0, s0, r1, s1] -> [r0*s0, r1*s1].
    shape = [1] * (len(repeats) - len(x.shape)) + list(x.shape)
    interleaved = ops.reshape(x, dims([d for s in shape for d in (1, s)]))
    expanded = ops.broadcast_to(interleaved, dims([d for r, s in zip(repeats, shape) for d in (r, s)]))
    return ops.reshape(expanded, n.shape)


def _constant_pad(n: _Node, x: Value, pad: Sequence[int], value: Any = 0) -> Value:
    x = as_tensor(x)
    # pad lists (before, after) pairs from the last dim backwards; negative pads crop.
    for i in range(len(pad) // 2):
        dim = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before < 0 or after < 0:
            size = as_size(x.shape[dim])
            x = taken_range(x, dim, max(-before, 0), size - max(-before, 0) - max(-after, 0))
        parts = []
        for width in (before, after):
            shape = list(x.shape)
            shape[dim] = max(width, 0)
            parts.append(filled(shape, value, x.dtype) if width > 0 else None)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        if len(pieces) > 1:
            x = ops.concatenate(pieces, dim)
    return x


def _full_like(n: _Node, x: Value, fill_value: Any, **kwargs: Any) -> Value:
    return filled(n.sizes, fill_value, n.dtype)


def _constant_like(fill_value: int) -> Callable[..., Value]:
    return lambda n, x, **kwargs: filled(n.sizes, fill_value, n.dtype)


def _full(n: _Node, size: Sequence[SizeLike], fill_value: Any, **kwargs: Any) -> Value:
    """full (ones, zeros and new_* decompose to it): folded by torch where
    its shape is static; over size symbols one broadcast scalar."""
    return filled(n.sizes, fill_value, n.dtype) if is_symbolic(n.sizes) else _fold(n)


def _arange(n: _Node, *args: Any, **kwargs: Any) -> Value:
    """arange: folded by torch where its length is static; a length that
    is a size symbol's expression is an iota, ``start + step * i`` (the
    bounds too may be symbolic, ``arange(past, past + seq)``)."""
    if not is_symbolic(n.sizes):
        return _fold(n)
    bounds = list(args[:3]) if n.op == "aten.arange.start_step" else [0, *args[:1]] if n.op == "aten.arange.default" \
        else list(args[:2])
    start, step = bounds[0], (bounds[2] if len(bounds) > 2 else kwargs.get("step", 1))
    if not all(isinstance(v, (int, SymbolicSize)) for v in (start, step)):
        raise n.unsupported(f"a non-integer start {start} or step {step} over size symbols is not supported")
    index = ops.iota(n.shape, 0, n.dtype)
    if step != 1:
        index = index * np.asarray(step, n.dtype)
    return index if start == 0 else index + cast_to(size_tensor(start), n.dtype)


CONVERTERS: dict[str, Callable[..., Any]] = {
    # Arithmetic and activations.
    "aten.add.Tensor": _add, "aten.add.Scalar": _add, "aten.sub.Tensor": _sub, "aten.sub.Scalar": _sub,
    "aten.rsub.Tensor": _rsub, "aten.rsub.Scalar": _rsub, "aten.mul.Tensor": _mul, "aten.mul.Scalar": _mul,
    "aten.div.Tensor": _div, "aten.div.Scalar": _div, "aten.div.Tensor_mode": _div,
    "aten.pow.Tensor_Scalar": _pow, "aten.pow.Tensor_Tensor": _pow, "aten.pow.Scalar": _pow,
    "aten.maximum.default": _binary(ops.maximum), "aten.minimum.default": _binary(ops.minimum),
    "aten.neg.default": _unary(ops.neg), "aten.abs.default": _unary(ops.abs), "aten.exp.default": _unary(ops.exp),
    "aten.log.default": _unary(ops.log), "aten.sqrt.default": _unary(ops.sqrt),
    "aten.rsqrt.default": _unary(ops.rsqrt), "aten.reciprocal.default": _unary(lambda x: 1 / x),
    "aten.relu.default": _unary(ops.relu), "aten.sigmoid.default": _unary(ops.sigmoid),
    "aten.tanh.default": _unary(ops.tanh), "aten.sin.default": _unary(ops.sin), "aten.cos.default": _unary(ops.cos),
    "aten.erf.default": _unary(ops.erf), "aten.floor.default": _rounding(ops.floor),
    "aten.ceil.default": _rounding(ops.ceil), "aten.round.default": _rounding(ops.round),
    "aten.round.decimals": _rounding(ops.round), "aten.trunc.default": _rounding(_trunc),
    "aten.fmod.Tensor": _binary(ops.fmod), "aten.fmod.Scalar": _binary(ops.fmod),
    "aten.remainder.Tensor": _binary(ops.remainder), "aten.remainder.Scalar": _binary(ops.remainder),
    "aten.silu.default": _unary(ops.silu), "aten.gelu.default": _gelu,
    "aten.clamp.default": _clamp, "aten.clamp.Tensor": _clamp, "aten.hardtanh.default": _hardtanh,
    "aten.leaky_relu.default": _leaky_relu, "aten.elu.default": _elu,
    # Comparisons, logic, selection.
    **{f"aten.{name}.{kind}": _compare(name) for name in ("eq", "ne", "lt", "le", "gt", "ge")
       for kind in ("Tensor", "Scalar")},
    "aten.logical_not.default": _logical_not, "aten.logical_and.default": _logical("and"),
    "aten.logical_or.default": _logical("or"), "aten.logical_xor.default": _logical("xor"),
    "aten.bitwise_not.default": _bitwise("not"), "aten.bitwise_and.Tensor": _bitwise("and"),
    "aten.bitwise_or.Tensor": _bitwise("or"), "aten.bitwise_xor.Tensor": _bitwise("xor"),
    "aten.where.self": _where,
    "aten.triu.default": _triangle(True), "aten.tril.default": _triangle(False),
    # Reductions and normalizations.
    "aten.sum.dim_IntList": _reduce("sum"), "aten.sum.default": _reduce("sum"), "aten.mean.dim": _reduce("mean"),
    "aten.mean.default": _reduce("mean"), "aten.amax.default": _reduce("max"), "aten.amin.default": _reduce("min"),
    "aten.max.dim": _reduce_with_indices("max"), "aten.min.dim": _reduce_with_indices("min"),
    "aten.argmax.default": _arg_reduce("max"), "aten.argmin.default": _arg_reduce("min"),
    "aten.any.dim": _any_all("any"), "aten.any.dims": _any_all("any"), "aten.any.default": _any_all("any"),
    "aten.all.dim": _any_all("all"), "aten.all.dims": _any_all("all"), "aten.all.default": _any_all("all"),
    "aten.var.correction": _var, "aten.linalg_vector_norm.default": _vector_norm,
    "aten._softmax.default": _softmax(False), "aten._log_softmax.default": _softmax(True),
    "aten.native_layer_norm.default": _native_layer_norm, "aten.rms_norm.default": _rms_norm,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm,
    "aten._native_batch_norm_legit.no_stats": _batch_norm_batch_statistics,
    "aten.native_group_norm.default": _group_norm,
    # Contractions, convolution, pooling, attention.
    "aten.linear.default": _linear, "aten.matmul.default": lambda n, a, b: matmul(a, b),
    "aten.mm.default": _mm, "aten.bmm.default": _mm, "aten.addmm.default": _addmm,
    "aten.baddbmm.default": _addmm, "aten.convolution.default": _convolution,
    "aten.max_pool2d_with_indices.default": _max_pool, "aten.avg_pool2d.default": _avg_pool,
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool,
    "aten.upsample_nearest2d.vec": _upsample_nearest, "aten.upsample_bilinear2d.vec": _upsample_smooth("linear"),
    "aten.upsample_bicubic2d.vec": _upsample_smooth("cubic"),
    "aten.scaled_dot_product_attention.default": _sdpa,
    "aten._transformer_encoder_layer_fwd.default": _transformer_encoder_layer,
    # Data movement, casts and constants.
    **{f"aten.{name}": _reshape_to_result for name in (
        "view.default", "_unsafe_view.default", "reshape.default", "flatten.using_ints", "unsqueeze.default",
        "squeeze.default", "squeeze.dim", "squeeze.dims")},
    "aten.expand.default": _expand, "aten.permute.default": _permute, "aten.transpose.int": _transpose,
    "aten.t.default": _transpose, "aten.cat.default": _cat, "aten.split.Tensor": _split,
    "aten.split_with_sizes.default": _split, "aten.unbind.int": _unbind, "aten.slice.Tensor": _slice,
    "aten.select.int": _select, "aten.repeat.default": _repeat, "aten.constant_pad_nd.default": _constant_pad,
    "aten.gather.default": lambda n, x, dim, index, sparse_grad=False: gathered_along(x, index, dim),
    "aten.embedding.default": _embedding, "aten.index_select.default": _index_select, "aten.index.Tensor": _index_tensor,
    "aten.clone.default": _same, "aten.alias.default": _same, "aten.detach.default": _same,
    "aten.lift_fresh_copy.default": _same, "aten._to_copy.default": _to_copy,
    "aten.full_like.default": _full_like, "aten.full.default": _full, "aten.arange.default": _arange,
    "aten.arange.start": _arange, "aten.arange.start_step": _arange, "aten.zeros_like.default": _constant_like(0),
    "aten.ones_like.default": _constant_like(1),
}

SUPPORTED_OPS = tuple(sorted(CONVERTERS))


# The front end ----------------------------------------------------------------

def _unsupported_op(n: _Node) -> UnsupportedError:
    """The error for an op without a converter, listing the supported ops
    whose names are nearest (all of them when none is near)."""
    packets: dict[str, list[str]] = {}
    for op in SUPPORTED_OPS:
        packets.setdefault(op.split(".")[1], []).append(op)
    nearest = difflib.get_close_matches(n.op.split(".")[1] if "." in n.op else n.op, list(packets), n=4, cutoff=0.6)
    listing = ("nearest supported: " + ", ".join(op for name in nearest for op in packets[name]) if nearest
               else "supported: " + ", ".join(sorted(packets)))
    training = n.hint if "dropout" in n.op or "batch_norm" in n.op or \
        torch.Tag.nondeterministic_seeded in getattr(n.fx.target, "tags", ()) else ""
    return UnsupportedError(f"{n.where()}: this op is not supported{training}; {listing} "
                            f"(tessel.frontends.torch.SUPPORTED_OPS; ops on values known while importing, "
                            f"such as weights, run in torch)")


def _convert(n: _Node) -> Any:
    """The node's value: folded by torch, or built by its converter; checked."""
    if n.op == "getitem":
        return n.args[0][n.args[1]]
    if n.op in _IGNORED:
        return None
    val = n.fx.meta.get("val")
    if isinstance(val, (int, torch.SymInt)) and not isinstance(val, bool):
        # Size arithmetic (sym_size, operator.mul, ...): the size export recorded.
        return n.symbols.size(val, n)
    if isinstance(val, torch.SymBool):  # a guard's condition, read only by asserts
        return None
    convert = _fold if _folds(n) else CONVERTERS.get(n.op)
    if convert is None:
        raise _unsupported_op(n)
    args, kwargs = n.args, n.kwargs
    if convert is not _fold and n.op not in _TAKES_SIZES:
        args, kwargs = map_aggregate((args, kwargs), lambda v: size_tensor(v) if isinstance(v, SymbolicSize) else v)
    try:
        result = convert(n) if convert is _fold else convert(n, *args, **kwargs)
        _check(n, result)
    except CompileError as e:  # an unsupported dtype, or a shape or dtype a graph op rejects
        if e.summary.startswith("torch node"):
            raise
        raise type(e)(f"{n.where()}: {e.summary}", e.diagnostics) from None
    except (TypeError, ValueError, ArithmeticError) as e:
        # A converter that computes with sizes as ints, given a size symbol's.
        symbolic = n.symbolic()
        if not symbolic:
            raise
        raise n.unsupported(f"this conversion does not take size symbols yet ({'; '.join(symbolic)}): "
                            f"{type(e).__name__}: {e}") from None
    return result


def _export_failure(e: Exception) -> str:
    """torch.export's failure in tessel's words (what failed, the usual
    fix), then torch's own message."""
    text = str(e)
    output = re.search(r"Found <class '([^']+)'> in output", text)
    if "Constraints violated" in text:
        what = ("the model does not run at every size the dynamic_shapes allow (torch's guards below say which "
                "sizes it takes, and often suggest the Dims to use): narrow their min and max, or fix the dims "
                "that torch found to be constants")
    elif "data-dependent" in text:
        what = ("the model's control flow depends on tensor values (an `if` or `while` on a tensor, `.item()`, "
                "`bool(tensor)`), which one compiled program cannot follow: compute both sides and choose with "
                "torch.where, or use torch.cond")
    elif output:
        what = (f"the model returns a {output[1]}, which torch.export cannot flatten into tensors: return tensors "
                "(or tuples, lists and dicts of them), or register the class with "
                "torch.utils._pytree.register_pytree_node")
    else:
        what = ("torch.export could not trace the model (the usual fixes: model.eval(), tensors as the example "
                "arguments, no Python side effects in forward)")
    return f"torch.export could not export the model: {what}. torch says: {type(e).__name__}: {text}"


def _caches_by_default(module: Any) -> bool:
    """Whether ``module`` returns a key/value cache unless told not to (a
    Hugging Face model whose config says ``use_cache``, with a ``use_cache``
    argument): torch.export cannot return transformers' cache objects."""
    try:
        takes = "use_cache" in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False
    return takes and bool(getattr(getattr(module, "config", None), "use_cache", False))


def _export(model_or_fn: Any, example_args: tuple, dynamic_shapes: Any = None) -> tuple[Any, list[dict[int, str]]]:
    """The exported program, decomposed to core ATen except _KEPT, and the
    names the user gave to the dims of its tensor inputs (``Dim``s of
    ``dynamic_shapes``), one dict per tensor input, in order."""
    names: list[dict[int, str]] = []
    if isinstance(model_or_fn, torch.export.ExportedProgram):
        if dynamic_shapes is not None:
            raise UnsupportedError("dynamic_shapes applies to exporting; an ExportedProgram already has its "
                                   "dynamic shapes (pass it with dynamic_shapes=None)")
        program = model_or_fn
    else:
        module = model_or_fn
        if not isinstance(module, torch.nn.Module):
            if not callable(module):
                raise TypeError(f"from_torch takes an nn.Module, an ExportedProgram or a function, "
                                f"got {type(module).__name__}")
            module = _as_module(model_or_fn)
        kwargs = {}
        if _caches_by_default(module):
            kwargs["use_cache"] = False
            warnings.warn(f"from_torch: {type(module).__name__} is exported with use_cache=False: torch.export "
                          "cannot return its key/value cache object; the other outputs are returned", stacklevel=3)
            if isinstance(dynamic_shapes, (tuple, list)):  # export matches them to the arguments and kwargs
                dynamic_shapes = (*dynamic_shapes, *[None] * (len(example_args) + 1 - len(dynamic_shapes)))
            elif isinstance(dynamic_shapes, dict):
                dynamic_shapes = {**dynamic_shapes, "use_cache": None}
        if dynamic_shapes is not None:
            names = _dim_names(module, example_args, kwargs, dynamic_shapes)
        try:
            program = torch.export.export(module, example_args, kwargs, dynamic_shapes=dynamic_shapes)
        except Exception as e:  # noqa: BLE001 - export raises many types for code it cannot capture
            raise UnsupportedError(_export_failure(e)) from e
    table = torch.export.default_decompositions()
    for name in _KEPT:
        packet, overload = name.split(".")
        table.pop(getattr(getattr(torch.ops.aten, packet), overload), None)
    return program.run_decompositions(table), names


def _dim_names(module: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> list[dict[int, str]]:
    """The ``Dim`` names of ``dynamic_shapes`` (as torch.export takes it: a
    tuple matching the arguments, or a dict by parameter name; per tensor a
    dict ``{dim: Dim}`` or a list of one entry per dim) for each tensor
    among the arguments, in the order export makes them inputs; a derived
    dim (``8 * k``) gives its root's name. Hints (``Dim.AUTO``,
    ``Dim.DYNAMIC``) name none."""
    try:
        combined = inspect.signature(module.forward).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return []  # export itself reports arguments that do not fit
    if isinstance(dynamic_shapes, dict):
        specs = [dynamic_shapes.get(key) for key in combined]
    else:
        specs = list(dynamic_shapes) + [None] * (len(combined) - len(dynamic_shapes))
    names: list[dict[int, str]] = []

    def walk(value: Any, spec: Any) -> None:
        if isinstance(value, torch.Tensor):
            entries = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(
                spec, (list, tuple)) else ()
            roots = {int(d): getattr(e, "root", e) for d, e in entries}
            names.append({d: e.__name__ for d, e in roots.items() if type(e) is torch.export.Dim})
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, spec[i] if isinstance(spec, (list, tuple)) and i < len(spec) else None)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, spec.get(key) if isinstance(spec, dict) else None)

    for value, spec in zip(combined.values(), specs):
        walk(value, spec)
    return names


def _symbols(program: Any, inputs: list[tuple[str, Any]], given: list[dict[int, str]]) -> _Symbols:
    """The program's size symbols: each input dim that is a torch symbol
    named after the user's ``Dim`` (``given``, per tensor input) or, for
    ``Dim.AUTO``/``Dim.DYNAMIC`` ones, torch's own name (``s0``), with the
    range of ``program.range_constraints`` (the user's bounds narrowed by
    torch's guards). An input dim that is a derived ``Dim``, ``c * k + d``
    with ``d`` a multiple of ``c`` and ``k`` no input dim alone, is a symbol
    of its own, ``k_times_c`` (``_plus_d``), declared a multiple of ``c``:
    how a torch user says that a size comes in whole tensor-core rows.
    UnsupportedError for any other expression or a symbol without an upper
    bound."""
    import sympy

    symbols = _Symbols()
    taken = {name for names in given for name in names.values()}
    derived = []

    def fresh(name: str) -> str:
        """``name``, or with underscores after it where the user took it."""
        while name in taken:
            name += "_"
        return name

    def declare(symbol: Any, name: str, where: str, bounds: Any, multiple: int = 1) -> None:
        upper = int(bounds.upper) if bounds is not None and isinstance(bounds.upper, sympy.Integer) else None
        if upper is None:
            raise UnsupportedError(f"{where} ({name}) has no upper bound: give it one, "
                                   f"torch.export.Dim({name!r}, min=..., max=...)")
        symbols.names[symbol] = name
        taken.add(name)
        # Sizes start at 1 here: export's default minimum is 0, an empty tensor tessel does not compile for.
        symbols.ranges[name] = (max(1, int(bounds.lower)), upper) + ((multiple,) if multiple > 1 else ())

    for index, (arg_name, val) in enumerate(inputs):
        names = given[index] if index < len(given) else {}
        for d, size in enumerate(val.shape):
            if not isinstance(size, torch.SymInt):
                continue
            expr, where = size.node.expr, f"torch input {arg_name!r} dim {d}"
            if not expr.is_Symbol:
                derived.append((expr, where, names.get(d)))
            elif expr not in symbols.names:
                name = names.get(d)
                if name is None:  # Dim.AUTO or Dim.DYNAMIC: torch's name, unless the user took it
                    name = fresh(str(expr))
                declare(expr, name, where, program.range_constraints.get(expr))
    for expr, where, root_name in derived:
        refusal = (f"{where} is {expr}, an expression of size symbols that is not a derived Dim c * k + d with d a "
                   "multiple of c over a root k that no input dim is alone: tessel reads each symbol from an input "
                   "dim that is that symbol (or its multiple) alone")
        if len(expr.free_symbols) != 1:
            raise UnsupportedError(refusal)
        (root,) = expr.free_symbols
        line = sympy.Poly(expr, root)
        c, d = (int(line.coeff_monomial(m)) for m in (root, 1)) if line.degree() == 1 else (0, 0)
        if root in symbols.names or c < 1 or d % c:
            raise UnsupportedError(refusal)
        if root in symbols.roots:  # the same derived Dim again, or refused as another one of its root
            if not sympy.expand(expr.xreplace(symbols.roots)).is_Symbol:
                raise UnsupportedError(refusal)
            continue
        name = fresh(str(root_name or root) + (f"_times_{c}" if c > 1 else "") + (
            f"_plus_{d}" if d > 0 else f"_minus_{-d}" if d < 0 else ""))
        derived_symbol = sympy.Symbol(name, integer=True, positive=True)
        symbols.roots[root] = (derived_symbol - d) / c
        declare(derived_symbol, name, where, program.range_constraints.get(expr), c)
    return symbols


def from_torch(model_or_fn: Any, example_args: Any, *, dynamic_shapes: Any = None, params_as_args: bool = False,
               name: str = "main") -> Any:
    """A PyTorch model or function as a graph-dialect module.

    ``model_or_fn`` is an ``nn.Module`` (in ``eval()`` mode for inference:
    dropout and batch-norm statistics in training mode are not supported),
    a function of tensors, or a ``torch.export.ExportedProgram``;
    ``example_args`` is a tuple of tensors (or one tensor) giving the
    shapes and dtypes of the arguments of ``func.func @name``. The results
    are the model's tensor outputs, flattened in order (a tuple or dict of
    tensors gives several). Parameters and buffers become constants, or,
    with ``params_as_args=True``, leading arguments in the order
    ``named_parameters()`` then ``named_buffers()`` list them (as
    ``torch.export`` lifts them).

    ``dynamic_shapes`` (as :func:`torch.export.export` takes it, e.g.
    ``({0: Dim("batch", min=1, max=64), 1: Dim("seq", min=1, max=2048)},)``)
    makes dims size symbols: the function is compiled once for every size
    in their ranges (docs/dynamic-shapes.md). Each symbol is named after its
    ``Dim`` (``Dim.AUTO``/``Dim.DYNAMIC`` ones after torch's symbol, ``s0``)
    and takes the range export recorded: the ``Dim``'s bounds narrowed by
    torch's own guards, from 1 at least; a derived ``Dim`` ``8 * k`` is the
    symbol ``k_times_8``, declared a multiple of 8 (what lets a symbolic
    contraction dim run on tensor cores). Every dynamic dim needs an upper
    bound, and the example sizes must be 2 or more (export specializes an
    example size of 0 or 1 to a constant). Raises ``tessel.UnsupportedError`` for an op, dtype or feature
    that is not supported, naming the aten op, the node and the user's line.
    """
    if torch is None:
        require_extra("torch", "torch", "tessel.from_torch")  # raises, naming the extra
    example_args = example_args if isinstance(example_args, tuple) else (example_args,)
    program, dim_names = _export(model_or_fn, example_args, dynamic_shapes)
    hint = ""
    if isinstance(model_or_fn, torch.nn.Module) and model_or_fn.training:
        hint = " (the model is in training mode: call model.eval() for inference)"

    from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

    signature = program.graph_signature
    state = {**program.state_dict, **program.constants}
    known: dict[str, Any] = {}  # placeholder name -> value known while importing
    arguments: list[str] = []
    for spec in signature.input_specs:
        arg_name = spec.arg.name
        if spec.kind == InputKind.USER_INPUT or (params_as_args and spec.kind in (InputKind.PARAMETER,
                                                                                    InputKind.BUFFER)):
            if isinstance(spec.arg, TensorArgument):
                arguments.append(arg_name)
            else:  # a non-tensor example argument, specialized by export
                known[arg_name] = getattr(spec.arg, "value", None)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            known[arg_name] = _to_numpy(state[spec.target])
        else:
            raise UnsupportedError(f"torch input {arg_name!r} of kind {spec.kind.name} is not supported")
    for spec in signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise UnsupportedError(f"the model updates {spec.target!r} in place ({spec.kind.name}), which is not "
                                   f"supported{hint}")

    graph = program.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    user_inputs = [(spec.arg.name, placeholders[spec.arg.name].meta["val"]) for spec in signature.input_specs
                   if spec.kind == InputKind.USER_INPUT and isinstance(spec.arg, TensorArgument)]
    symbols = _symbols(program, user_inputs, dim_names)
    examples = []
    for arg_name in arguments:
        val = placeholders[arg_name].meta["val"]
        if val.dtype not in _ARGUMENT_DTYPES:
            names = ", ".join(str(d).removeprefix("torch.") for d in _ARGUMENT_DTYPES)
            raise UnsupportedError(f"torch input {arg_name!r} has dtype {val.dtype}; tessel takes {names}")
        examples.append(TensorSpec(tuple(dims([symbols.size(d) for d in val.shape])), _numpy_dtype(val.dtype)))

    def build(*args: Tensor) -> list[Tensor]:
        env: dict[Any, Any] = {}
        given = dict(zip(arguments, args))
        for fx in graph.nodes:
            if fx.op == "placeholder":
                env[fx] = given[fx.name] if fx.name in given else known[fx.name]
            elif fx.op == "call_function":
                fx_args, fx_kwargs = map_aggregate((fx.args, fx.kwargs),
                                                   lambda v: env[v] if isinstance(v, torch.fx.Node) else v)
                env[fx] = _convert(_Node(fx, fx_args, fx_kwargs, hint, symbols))
            elif fx.op == "output":
                outputs = [env[v] if isinstance(v, torch.fx.Node) else v for v in fx.args[0]]
                bad = [v for v in outputs if not isinstance(v, (Tensor, np.ndarray))]
                if bad:
                    raise UnsupportedError(f"the model returns {type(bad[0]).__name__}; tessel returns tensors only")
                return [as_tensor(v) for v in outputs]
            else:
                raise UnsupportedError(f"torch node {fx.name} ({fx.op}) is not supported")
        raise UnsupportedError("the exported graph has no output")

    return trace(build, *examples, name=name, dims=symbols.ranges or None)


def _as_module(fn: Callable[..., Any]) -> Any:
    """``fn`` as an nn.Module, the form torch.export takes."""
    if isinstance(fn, types.FunctionType):
        # torch.export records only the stack frames of functions named
        # "forward": renamed so, fn's own lines are where its nodes come from.
        fn = types.FunctionType(fn.__code__.replace(co_name="forward"), fn.__globals__, "forward",
                                fn.__defaults__, fn.__closure__)

    class Function(torch.nn.Module):
        forward = staticmethod(fn)

    return Function()
