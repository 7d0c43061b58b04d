"""Random valid graphs and a float64 numpy reference, for differential testing.

:func:`random_graph` draws a small DAG (3-12 ops over 1-4 inputs) from a seed.
Each node holds its exact reference value (floats in float64, ints in int64),
computed while generating, so the generator keeps values in a sane range with
real magnitudes: it squashes with ``tanh`` (or clamps integers) before an op
could overflow or lose meaning, feeds ``log``/``sqrt``/divisors from
``abs(x) + c``, and compares or truncates to integers only values that every
precision computes exactly (inputs, constants, data movement, max/min, ...),
so no result depends on which side of a rounding a value falls.

:func:`check` compares tessel's results with the reference. The tolerance of
a float output is ``rtol * max(1, max|expected|)`` plus the spread of
perturbed evaluations: the reference run again with every rounding point of
every op (including those inside decomposed ops like layer_norm) perturbed
by up to one unit roundoff of its dtype, times its magnitude. An
ill-conditioned graph (cancellation, a normalization of a nearly constant
row) thus gets a tolerance that matches its sensitivity to rounding, and a
well-conditioned one stays tight. Integer and bool outputs must match
exactly.

:func:`run_seeds` compiles several graphs as one module (their inputs and
outputs side by side); :func:`run_isolated` does so in worker processes, so
that a compiler crash fails its graphs instead of the caller.

``random_graph(seed, symbolic=True)`` draws a graph over size symbols
(docs/dynamic-shapes.md): some input dims are symbols (``n``, ``m``, ``p``)
with declared ranges, shared between inputs wherever shapes must agree, and
only ops that take symbols are drawn. Each node then holds its symbolic
shape (ints and :class:`Size` objects) and one reference value per
*binding* of the symbols (every symbol at its maximum, at its minimum, and
at two sizes between), and every choice that keeps values sane holds at
all the bindings. The graph is compiled once and run at every binding;
:func:`check` compares each.
"""

from __future__ import annotations

import io
import math
import operator
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
from mlir import ir

from .. import ops
from ..backends.cpu import compile_cpu
from ..backends.signature import TensorSpec
from ..compiler import compile as compile_module
from ..tracing import Tensor, as_tensor, trace

__all__ = ["Node", "Graph", "Size", "Outcome", "random_graph", "trace_graphs", "run", "run_seeds", "run_isolated",
           "check", "report", "OPS", "SYMBOLIC_OPS", "conv2d_reference", "pool2d_reference"]

F32, F16, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int64, np.bool_))
NUMERIC = (F32, F16, I32)
# Unit roundoff of each float dtype.
UNIT = {F32: 2.0**-24, F16: 2.0**-11}
# Relative tolerance of a graph by the lowest float precision it uses.
RTOL = {F32: 1e-4, F16: 5e-3}
# Largest magnitude a value may reach: f16 overflows at 65504 and gets coarse
# long before; i32 must not overflow in sums and products.
LIMIT = {F32: 1e4, F16: 500.0, I32: 2.0**20, I64: 2.0**20}
MAX_ELEMENTS = 4096
SIZES = (1, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 16)
PERTURBED_RUNS, SPREAD_FACTOR = 2, 8.0
# Size symbols of symbolic graphs, the largest sizes their ranges may have
# (small, so that several symbolic dims still fit MAX_ELEMENTS; primes
# among them, so that no tile divides them), and how often a dim drawn for
# a symbolic graph is a symbol.
SYMBOLS = ("n", "m", "p")
SYMBOL_MAXIMA = (5, 8, 13, 16, 31)
SYMBOL_RATE = 0.4
# Bindings of a symbolic graph beyond every symbol at its maximum and at its minimum.
MIDDLE_BINDINGS = 2


@dataclass(frozen=True)
class Size:
    """A dim given by size symbols: a sum of positive multiples of products
    of symbols (``n``, ``n * 2``, ``m * n``, ``n + 3``).

    ``terms`` holds (symbols, coefficient) pairs, the symbols of a product
    sorted and the pairs sorted, so that equal sizes compare equal however
    they were built (``n + n`` is ``n * 2``), as tessel's ``#graph.shape``
    simplifies them. Arithmetic with ints and other Sizes gives a Size, or an
    int when no symbol is left. Every coefficient is positive, so a size is
    largest where every symbol is at its maximum.
    """

    terms: tuple[tuple[tuple[str, ...], int], ...]

    @staticmethod
    def of(terms: dict[tuple[str, ...], int]) -> Dim:
        """The size of ``terms`` (symbols: coefficient), an int when it names no symbol."""
        kept = tuple(sorted((symbols, c) for symbols, c in terms.items() if c))
        if all(not symbols for symbols, _ in kept):
            return sum(c for _, c in kept)
        return Size(kept)

    @staticmethod
    def symbol(name: str) -> Size:
        return Size((((name,), 1),))

    def __add__(self, other: Dim) -> Dim:
        terms = _terms(self)
        for symbols, c in _terms(other).items():
            terms[symbols] = terms.get(symbols, 0) + c
        return Size.of(terms)

    __radd__ = __add__

    def __mul__(self, other: Dim) -> Dim:
        terms: dict[tuple[str, ...], int] = {}
        for s1, c1 in _terms(self).items():
            for s2, c2 in _terms(other).items():
                key = tuple(sorted(s1 + s2))
                terms[key] = terms.get(key, 0) + c1 * c2
        return Size.of(terms)

    __rmul__ = __mul__

    @property
    def symbols(self) -> set[str]:
        return {s for symbols, _ in self.terms for s in symbols}

    def evaluate(self, values: dict[str, int]) -> int:
        """The size with each symbol at ``values[symbol]``."""
        return sum(c * math.prod(values[s] for s in symbols) for symbols, c in self.terms)

    def text(self, prefix: str = "") -> str:
        """The size as ``#graph.shape`` and ``tessel.trace`` spell it, each symbol's name after ``prefix``."""
        def term(symbols: tuple[str, ...], c: int) -> str:
            return " * ".join([prefix + s for s in symbols] + ([str(c)] if c != 1 or not symbols else []))

        # The constant last, as MLIR prints sums (n + 3).
        return " + ".join(term(*t) for t in sorted(self.terms, key=lambda t: not t[0]))

    def __repr__(self) -> str:
        return self.text()


Dim = Union[int, Size]


def _terms(dim: Dim) -> dict[tuple[str, ...], int]:
    return dict(dim.terms) if isinstance(dim, Size) else {(): int(dim)}


def _evaluate(dim: Dim, binding: dict[str, int]) -> int:
    return dim.evaluate(binding) if isinstance(dim, Size) else int(dim)


def _is_static(shape: Sequence[Dim]) -> bool:
    return not any(isinstance(d, Size) for d in shape)


def _resolve(attrs: dict[str, Any], binding: dict[str, int]) -> dict[str, Any]:
    """``attrs`` with the sizes of a ``shape`` (reshape, broadcast_to) at ``binding``."""
    if "shape" not in attrs or _is_static(attrs["shape"]):
        return attrs
    return {**attrs, "shape": tuple(_evaluate(d, binding) for d in attrs["shape"])}


def _traced(value: Any, prefix: str) -> Any:
    """``value`` (an attribute) with each Size as the text tracing takes."""
    if isinstance(value, Size):
        return value.text(prefix)
    if isinstance(value, (tuple, list)):
        return type(value)(_traced(v, prefix) for v in value)
    return value


class Rounding:
    """Where one op rounds: the identity for the exact reference, a random perturbation otherwise.

    ``r(v, mag)`` adds up to one unit roundoff of the op's dtype times
    ``mag`` (default ``|v|``); ``wide=True`` uses f32's, for the parts of
    f16 ops that tessel computes in f32 (accumulations, normalizations).
    """

    def __init__(self, dtype: np.dtype, rng: Optional[np.random.Generator]) -> None:
        self.unit = UNIT.get(dtype) if rng is not None else None
        self.rng = rng

    def __call__(self, v: np.ndarray, mag: Optional[np.ndarray] = None, wide: bool = False) -> np.ndarray:
        if self.unit is None:
            return v
        unit = UNIT[F32] if wide else self.unit
        return v + unit * (np.abs(v) if mag is None else mag) * self.rng.uniform(-1, 1, np.shape(v))


# Reference helpers ----------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * x))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _div(r: Rounding, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "i":  # graph.div truncates toward zero
        return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))
    return r(a / b)


def _axes(axis: Any, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in ([axis] if isinstance(axis, int) else axis)))


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(shape[a] for a in axes)


def _reduce(r: Rounding, x: np.ndarray, kind: str, axis: Any, keepdims: bool) -> np.ndarray:
    axes = _axes(axis, x.ndim)
    value = getattr(np, kind)(x, axis=axes, keepdims=keepdims)
    if kind in ("max", "min"):
        return value
    n = _count(x.shape, axes)
    mag = getattr(np, kind)(np.abs(x), axis=axes, keepdims=keepdims) * math.sqrt(n)
    return r(r(value, mag, wide=True))


def _softmax(r: Rounding, x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    """As graph-decompose computes it: shift by the max, exp, sum, divide (f16 in f32)."""
    top = x.max(axis, keepdims=True)
    shifted = r(x - top, np.abs(x) + np.abs(top), wide=True)
    e = r(np.exp(shifted), wide=True)
    total = e.sum(axis, keepdims=True)
    total = r(total, total * math.sqrt(x.shape[axis]), wide=True)
    if log:
        log_total = r(np.log(total), wide=True)
        return r(r(shifted - log_total, np.abs(shifted) + np.abs(log_total), wide=True))
    return r(r(e / total, wide=True))


def _norm_axis(axis: Optional[int], params: Sequence[np.ndarray], rank: int) -> tuple[int, ...]:
    first = axis if axis is not None else -params[0].ndim if params else -1
    return tuple(range(first % rank, rank))


def _layer_norm(r: Rounding, x: np.ndarray, *params: np.ndarray, names: tuple[str, ...], axis: Optional[int],
                eps: float, rms: bool) -> np.ndarray:
    """(x - mean) * rsqrt(var + eps) * weight + bias (rms: x * rsqrt(mean(x^2) + eps) * weight)."""
    axes = _norm_axis(axis, params, x.ndim)
    root_n = math.sqrt(_count(x.shape, axes))
    if rms:
        centered = x
    else:
        mean = r(x.mean(axes, keepdims=True), np.abs(x).mean(axes, keepdims=True) * root_n, wide=True)
        centered = r(x - mean, np.abs(x) + np.abs(mean), wide=True)
    square = r(centered * centered, wide=True)
    var = r(square.mean(axes, keepdims=True), square.mean(axes, keepdims=True) * root_n, wide=True)
    y = r(centered * r(1 / np.sqrt(r(var + eps, wide=True)), wide=True), wide=True)
    given = dict(zip(names, params))
    if "weight" in given:
        y = r(y * given["weight"], wide=True)
    if "bias" in given:
        y = r(y + given["bias"], np.abs(y) + np.abs(given["bias"]), wide=True)
    return r(y)


def _contract(r: Rounding, value: np.ndarray, mag: np.ndarray, k: int) -> np.ndarray:
    """A sum of k products: f16 accumulates in f32, then rounds once."""
    return r(r(value, mag * math.sqrt(k), wide=True))


def _matmul(r: Rounding, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _contract(r, a @ b, np.abs(a) @ np.abs(b), a.shape[-1])


def _linear(r: Rounding, x: np.ndarray, w: np.ndarray, *bias: np.ndarray) -> np.ndarray:
    y = _contract(r, x @ w.T, np.abs(x) @ np.abs(w.T), x.shape[-1])
    return r(y + bias[0], np.abs(y) + np.abs(bias[0])) if bias else y


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _padding(v: Any) -> tuple[int, int, int, int]:
    """[top, left, bottom, right] from ops' spellings: an int, a (height, width) pair or four values."""
    return (v,) * 4 if isinstance(v, int) else tuple(v) * 2 if len(v) == 2 else tuple(v)


def conv2d_reference(x: np.ndarray, w: np.ndarray, *bias: np.ndarray, stride: Any, padding: Any, dilation: Any,
            groups: int, layout: str) -> np.ndarray:
    """Direct convolution: NCHW input with [F, C/groups, KH, KW] weight, or NHWC with HWIO."""
    if layout == "NHWC":
        x, w = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    top, left, bottom, right = _padding(padding)
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    f, cg, kh, kw = w.shape
    oh, ow = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1, (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], f, oh, ow), np.result_type(x, w))
    fg = f // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                rows, cols = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                patch = x[:, g * cg:(g + 1) * cg, rows, cols]
                out[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, w[g * fg:(g + 1) * fg, :, i, j])
    if bias:
        out += bias[0][:, None, None]
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


def _conv2d_ref(r: Rounding, x: np.ndarray, w: np.ndarray, *bias: np.ndarray, **attrs: Any) -> np.ndarray:
    k = w[0].size if attrs["layout"] == "NCHW" else w[..., 0].size
    value = conv2d_reference(x, w, *bias, **attrs)
    return _contract(r, value, conv2d_reference(np.abs(x), np.abs(w), *map(np.abs, bias), **attrs), k)


def pool2d_reference(x: np.ndarray, kind: str, kernel: Any, stride: Any, padding: Any, count_include_pad: bool,
            layout: str) -> np.ndarray:
    """Pooling with torch's semantics: -inf padding for max; avg counts padded zeros or not."""
    if layout == "NHWC":
        return pool2d_reference(x.transpose(0, 3, 1, 2), kind, kernel, stride, padding, count_include_pad,
                       "NCHW").transpose(0, 2, 3, 1)
    kernel = _pair(kernel)
    sh, sw = _pair(kernel if stride is None else stride)
    top, left, bottom, right = _padding(padding)
    pads = ((0, 0), (0, 0), (top, bottom), (left, right))
    windows = np.lib.stride_tricks.sliding_window_view
    if kind == "max":
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        return windows(np.pad(x, pads, constant_values=fill), kernel, axis=(2, 3))[:, :, ::sh, ::sw].max((-2, -1))
    sums = windows(np.pad(x, pads), kernel, axis=(2, 3))[:, :, ::sh, ::sw].sum((-2, -1))
    counted = windows(np.pad(np.ones_like(x), pads, constant_values=int(count_include_pad)), kernel, axis=(2, 3))
    return sums / counted[:, :, ::sh, ::sw].sum((-2, -1))


def _pool2d_ref(r: Rounding, x: np.ndarray, **attrs: Any) -> np.ndarray:
    value = pool2d_reference(x, **attrs)
    if attrs["kind"] == "max":
        return value
    return _contract(r, value, pool2d_reference(np.abs(x), **attrs), math.prod(_pair(attrs["kernel"])))


def _pool2d_build(x: Tensor, kind: str, kernel: Any, stride: Any, padding: Any, count_include_pad: bool,
                  layout: str) -> Tensor:
    if kind == "max":
        return ops.max_pool2d(x, kernel, stride, padding, layout=layout)
    return ops.avg_pool2d(x, kernel, stride, padding, count_include_pad, layout=layout)


def _take_ref(r: Rounding, x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """numpy.take with graph.gather's clamping of out-of-range indices."""
    n = x.shape[axis]
    return np.take(x, np.clip(np.where(indices < 0, indices + n, indices), 0, n - 1), axis)


def _cast_ref(r: Rounding, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype)


# Op table -------------------------------------------------------------------

@dataclass(frozen=True)
class OpDef:
    """How to build one fuzzed op while tracing and how to compute its reference.

    ``build(*tensors, **attrs)`` returns a Tensor; ``reference(r, *arrays,
    **attrs)`` computes in float64 (int64 for integers) and marks each
    rounding point of the op with ``r`` (see :class:`Rounding`). Ops without
    rounding (data movement, max/min, neg, abs, relu, casts) compute exactly
    what tessel computes.
    """

    build: Callable[..., Tensor]
    reference: Callable[..., np.ndarray]


def _unary(build: Callable[[Tensor], Tensor], fn: Callable[[np.ndarray], np.ndarray]) -> OpDef:
    return OpDef(build, lambda r, x: r(fn(x)))


OPS: dict[str, OpDef] = {
    "add": OpDef(operator.add, lambda r, a, b: r(a + b, np.abs(a) + np.abs(b))),
    "sub": OpDef(operator.sub, lambda r, a, b: r(a - b, np.abs(a) + np.abs(b))),
    "mul": OpDef(operator.mul, lambda r, a, b: r(a * b)),
    "div": OpDef(operator.truediv, _div),
    "maximum": OpDef(ops.maximum, lambda r, a, b: np.maximum(a, b)),
    "minimum": OpDef(ops.minimum, lambda r, a, b: np.minimum(a, b)),
    "pow": OpDef(ops.pow, lambda r, a, b: r(a**b)),
    "neg": OpDef(operator.neg, lambda r, x: -x),
    "abs": OpDef(ops.abs, lambda r, x: np.abs(x)),
    "relu": OpDef(ops.relu, lambda r, x: np.maximum(x, 0)),
    "exp": _unary(ops.exp, np.exp),
    "log": _unary(ops.log, np.log),
    "sqrt": _unary(ops.sqrt, np.sqrt),
    "rsqrt": _unary(ops.rsqrt, lambda x: 1 / np.sqrt(x)),
    "tanh": _unary(ops.tanh, np.tanh),
    "sigmoid": _unary(ops.sigmoid, _sigmoid),
    "silu": _unary(ops.silu, lambda x: x * _sigmoid(x)),
    "gelu": _unary(ops.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": _unary(lambda x: ops.gelu(x, approximate="tanh"),
                        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    "compare": OpDef(lambda a, b, predicate: getattr(operator, predicate)(a, b),
                     lambda r, a, b, predicate: getattr(operator, predicate)(a, b)),
    "where": OpDef(ops.where, lambda r, c, a, b: np.where(c, a, b)),
    "reduce": OpDef(lambda x, kind, axis, keepdims: getattr(ops, kind)(x, axis, keepdims), _reduce),
    "softmax": OpDef(lambda x, axis, log: (ops.log_softmax if log else ops.softmax)(x, axis), _softmax),
    "layer_norm": OpDef(lambda x, *p, names, axis, eps, rms: (ops.rms_norm if rms else ops.layer_norm)(
        x, **dict(zip(names, p)), eps=eps, axis=axis), _layer_norm),
    "matmul": OpDef(operator.matmul, _matmul),
    "linear": OpDef(ops.linear, _linear),
    "conv2d": OpDef(ops.conv2d, _conv2d_ref),
    "pool2d": OpDef(_pool2d_build, _pool2d_ref),
    "transpose": OpDef(lambda x, perm: x.T if perm is None else ops.transpose(x, perm),
                       lambda r, x, perm: x.transpose(perm)),
    "reshape": OpDef(lambda x, shape: x.reshape(shape), lambda r, x, shape: x.reshape(shape)),
    "broadcast_to": OpDef(ops.broadcast_to, lambda r, x, shape: np.broadcast_to(x, shape)),
    "concatenate": OpDef(lambda *xs, axis: ops.concatenate(xs, axis), lambda r, *xs, axis: np.concatenate(xs, axis)),
    "slice": OpDef(lambda x, key: x[key], lambda r, x, key: x[key]),
    "take": OpDef(lambda x, indices, axis: x.take(indices, axis), _take_ref),
    "cast": OpDef(lambda x, dtype: x.astype(dtype), _cast_ref),
}

# Ops whose result is exact (the same in every precision) when their operands are.
EXACT = {"neg", "abs", "relu", "maximum", "minimum", "compare", "where", "transpose", "reshape", "broadcast_to",
         "concatenate", "slice", "take", "cast"}
# The ops that take tensors with size symbols (the Graph_SymbolicSizes ops of
# docs/dynamic-shapes.md): the only ones symbolic graphs draw.
SYMBOLIC_OPS = set(OPS) - {"slice", "take", "conv2d", "pool2d"}
ELEMENTWISE = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "compare", "where"}


def _reference_dtype(dtype: np.dtype) -> np.dtype:
    return {"f": np.dtype(np.float64), "i": I64}.get(dtype.kind, dtype)


def _result_dtype(op: str, args: Sequence[np.dtype], attrs: dict[str, Any]) -> np.dtype:
    if op == "compare":
        return BOOL
    return attrs["dtype"] if op == "cast" else args[-1] if op == "where" else args[0]


def apply(op: str, dtype: np.dtype, args: Sequence[np.ndarray], attrs: dict[str, Any],
          rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """The reference value of one op of result ``dtype``; perturbed when ``rng`` is given."""
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        value = OPS[op].reference(Rounding(dtype, rng), *args, **attrs)
    return np.array(value, _reference_dtype(dtype))


# Graphs ---------------------------------------------------------------------

@dataclass
class Node:
    """One value of a graph: an input, a constant or an op applied to earlier nodes.

    ``values`` holds the exact reference (float64, int64 or bool) at each of
    the graph's bindings (one for a graph without size symbols); inputs and
    constants keep their array in ``attrs["array"]`` (an input's at the
    first binding, the largest sizes: at the others it is the leading block
    of that array). ``dims`` is the symbolic shape, None where every dim is
    static. ``exact`` nodes are computed exactly by tessel too;
    ``positive`` ones are at least 0.25 by construction (not just by value).
    """

    op: str
    args: tuple[int, ...]
    attrs: dict[str, Any]
    dtype: np.dtype
    values: tuple[np.ndarray, ...]
    exact: bool
    positive: bool = False
    dims: Optional[tuple[Dim, ...]] = None

    @property
    def value(self) -> np.ndarray:
        """The reference at the first binding (every symbol at its maximum)."""
        return self.values[0]

    @property
    def shape(self) -> tuple[Dim, ...]:
        return self.dims if self.dims is not None else self.value.shape

    @property
    def bound(self) -> float:
        """The largest magnitude at any binding."""
        return max(float(np.abs(v).max(initial=0)) for v in self.values)

    def describe(self, index: int) -> str:
        attrs = {k: v for k, v in self.attrs.items() if k != "array"}
        if "array" in self.attrs:
            array = self.attrs["array"]
            attrs["value"] = array.tolist() if array.size <= 8 else f"random in [{array.min()}, {array.max()}]"
        fields = [f"%{a}" for a in self.args] + [f"{k}={v!r}" for k, v in attrs.items()]
        return f"%{index} = {self.op}({', '.join(fields)}) : {self.dtype.name}{list(self.shape)}"


@dataclass
class Graph:
    """A random graph: nodes in topological order and the indices of its outputs.

    A symbolic graph also has its symbols' ``ranges`` (``(min, max)`` or
    ``(min, max, multiple_of)``, as ``tessel.trace``'s ``dims=`` takes them)
    and the ``bindings`` (symbol: size) it runs at; a static graph has one
    empty binding.
    """

    seed: int
    nodes: list[Node]
    outputs: list[int]
    ranges: dict[str, tuple[int, ...]] = field(default_factory=dict)
    bindings: list[dict[str, int]] = field(default_factory=lambda: [{}])

    @property
    def inputs(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op == "input"]

    def arrays(self, binding: int = 0) -> list[np.ndarray]:
        """The input values at ``binding``, in argument order."""
        nodes = [self.nodes[i] for i in self.inputs]
        return [n.attrs["array"] if n.dims is None else
                np.ascontiguousarray(n.attrs["array"][tuple(slice(0, size) for size in n.values[binding].shape)])
                for n in nodes]

    def specs(self, prefix: str = "") -> list[Union[np.ndarray, TensorSpec]]:
        """What ``tessel.trace`` takes for each input: its array, or a TensorSpec
        naming its symbols after ``prefix``."""
        nodes = [self.nodes[i] for i in self.inputs]
        return [n.attrs["array"] if n.dims is None else TensorSpec(_traced(n.dims, prefix), n.dtype) for n in nodes]

    def ops(self) -> list[str]:
        return [n.op for n in self.nodes if n.op not in ("input", "const")]

    def build(self, args: Sequence[Tensor], prefix: str = "") -> list[Tensor]:
        """Builds the graph's ops while tracing, on one Tensor per input; returns the outputs.

        ``prefix`` goes before each symbol's name, so that the symbols of
        several graphs traced into one function stay apart.
        """
        given = iter(args)
        values: list[Tensor] = []
        for n in self.nodes:
            if n.op == "input":
                values.append(next(given))
            elif n.op == "const":
                values.append(as_tensor(n.attrs["array"]))
            else:
                attrs = {k: _traced(v, prefix) for k, v in n.attrs.items()}
                values.append(OPS[n.op].build(*(values[a] for a in n.args), **attrs))
        return [values[o] for o in self.outputs]

    def evaluate(self, rng: np.random.Generator, binding: int = 0) -> list[np.ndarray]:
        """The outputs of one perturbed evaluation of the reference at ``binding``."""
        values: list[np.ndarray] = []
        for n in self.nodes:
            args = [values[a] for a in n.args]
            values.append(n.values[binding] if n.op in ("input", "const") else
                          apply(n.op, n.dtype, args, _resolve(n.attrs, self.bindings[binding]), rng))
        return [values[o] for o in self.outputs]

    def describe_binding(self, binding: int) -> str:
        return ", ".join(f"{s}={v}" for s, v in self.bindings[binding].items())

    def __str__(self) -> str:
        lines = [n.describe(i) for i, n in enumerate(self.nodes)]
        if self.ranges:
            ranges = ", ".join(f"{s} in {list(r)}" for s, r in self.ranges.items())
            sizes = "; ".join(self.describe_binding(b) for b in range(len(self.bindings)))
            lines.insert(0, f"symbols {ranges}; run at {sizes}")
        return "\n".join(lines + [f"return {', '.join(f'%{o}' for o in self.outputs)}"])


class _Skip(Exception):
    """The op drawn does not fit the graph built so far; draw another."""


def _shape_size(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


def _broadcast(*shapes: Sequence[Dim]) -> Optional[tuple[Dim, ...]]:
    """numpy's broadcast of ``shapes``, None where they do not broadcast.

    A Size meets only 1 or itself: tessel never takes a symbol for 1
    (docs/dynamic-shapes.md), so ``n`` against 5 does not broadcast even
    where ``n`` may be 5.
    """
    result: list[Dim] = []
    for i in range(1, max((len(s) for s in shapes), default=0) + 1):
        dims = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(dims) > 1:
            return None
        result.insert(0, dims.pop() if dims else 1)
    return tuple(result)


def _result_dims(op: str, args: Sequence[tuple[Dim, ...]], attrs: dict[str, Any],
                 shape: tuple[int, ...]) -> tuple[Dim, ...]:
    """The symbolic shape of ``op``'s result, as tessel's shape rules give it;
    ``shape`` is its shape at the first binding (for a reshape's -1, which
    is static)."""
    first = args[0]
    if op in ELEMENTWISE:
        joint = _broadcast(*args)
        assert joint is not None
        return joint
    if op == "reduce":
        axes = _axes(attrs["axis"], len(first))
        if attrs["keepdims"]:
            return tuple(1 if d in axes else n for d, n in enumerate(first))
        return tuple(n for d, n in enumerate(first) if d not in axes)
    if op == "matmul":
        batch = _broadcast(first[:-2], args[1][:-2])
        assert batch is not None
        return (*batch, first[-2], args[1][-1])
    if op == "linear":
        return (*first[:-1], args[1][0])
    if op == "transpose":
        perm = attrs["perm"] if attrs["perm"] is not None else range(len(first) - 1, -1, -1)
        return tuple(first[p] for p in perm)
    if op in ("reshape", "broadcast_to"):
        return tuple(n if n != -1 else shape[d] for d, n in enumerate(attrs["shape"]))
    if op == "concatenate":
        axis = attrs["axis"] % len(first)
        return (*first[:axis], sum(a[axis] for a in args), *first[axis + 1:])
    return first  # unary ops, cast, softmax, norms


class _Generator:
    """Draws one graph; each ``_op_*`` method appends one op (plus the helpers that keep it sane)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.dtype = NUMERIC[self.rng.choice(3, p=[0.7, 0.15, 0.15])]
        self.max_inputs = int(self.rng.integers(1, 5))
        self.nodes: list[Node] = []
        # Symbols' ranges and the sizes the graph runs at: none here (_SymbolicGenerator).
        self.ranges: dict[str, tuple[int, ...]] = {}
        self.bindings: list[dict[str, int]] = [{}]

    # Sizes --------------------------------------------------------------------
    def extent(self, dim: Dim) -> int:
        """A dim's largest size in the graph's ranges (the first binding's)."""
        return _evaluate(dim, self.bindings[0])

    def elements(self, shape: Sequence[Dim]) -> int:
        return math.prod(self.extent(d) for d in shape)

    def count(self, shape: Sequence[Dim], axes: Sequence[int]) -> int:
        return math.prod(self.extent(shape[a]) for a in axes)

    def size(self, known: bool = False) -> Dim:
        """A dim for a new operand; with ``known``, for a shape that only ops name
        (broadcast_to's), so it may only be a symbol some input has."""
        return int(self.choice(SIZES))

    # Random choices ---------------------------------------------------------
    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def shape(self, rank: int, max_elements: int = 1024) -> tuple[int, ...]:
        while True:
            shape = tuple(int(self.choice(SIZES)) for _ in range(rank))
            if _shape_size(shape) <= max_elements:
                return shape

    def related(self, shape: Sequence[int]) -> tuple[int, ...]:
        """A shape that broadcasts against ``shape``: leading dims dropped or added, some dims 1."""
        drop = int(self.rng.integers(0, len(shape))) if shape and self.coin(0.4) else 0
        related = [1 if self.coin(0.3) else d for d in shape[drop:]]
        if not drop and len(related) < 4 and self.coin(0.15):
            related.insert(0, int(self.choice((1, 2, 3))))
        return tuple(related) or (1,)

    def pick(self, ok: Callable[[Node], bool], consts: bool = False) -> Optional[int]:
        """A node satisfying ``ok``, recent ones more likely; None when there is none."""
        found = [i for i, n in enumerate(self.nodes) if ok(n) and (n.op != "const" or consts and self.coin(0.1))]
        if not found:
            return None
        weights = np.array(found, float) + 1
        return found[int(self.rng.choice(len(found), p=weights / weights.sum()))]

    def array(self, shape: Sequence[int], dtype: np.dtype, low: int = -20, high: int = 21) -> np.ndarray:
        if dtype == BOOL:
            return self.rng.random(shape) < 0.5
        if dtype.kind == "i":
            return self.rng.integers(low, high, size=shape).astype(dtype)
        return (self.rng.standard_normal(shape) * self.choice((0.5, 1.0, 2.0))).astype(dtype)

    # Nodes ------------------------------------------------------------------
    def leaf(self, op: str, array: np.ndarray, dims: Optional[Sequence[Dim]] = None) -> int:
        """An input or constant of value ``array``, an input of symbolic shape ``dims``
        (``array`` at the largest sizes, its leading blocks at the others)."""
        array = np.asarray(array)
        value = array.astype(_reference_dtype(array.dtype))
        if dims is None or _is_static(dims):
            values, dims = (value,) * len(self.bindings), None
        else:
            dims = tuple(dims)
            values = tuple(value[tuple(slice(0, _evaluate(d, b)) for d in dims)] for b in self.bindings)
        self.nodes.append(Node(op, (), {"array": array}, array.dtype, values, exact=True, dims=dims))
        return len(self.nodes) - 1

    def input(self, shape: Sequence[Dim], dtype: np.dtype, **bounds: int) -> int:
        return self.leaf("input", self.array([self.extent(d) for d in shape], dtype, **bounds), dims=shape)

    def const(self, shape: Sequence[int], dtype: np.dtype) -> int:
        if dtype.kind == "f":
            return self.leaf("const", np.round(self.array(shape, dtype), 2).astype(dtype))
        return self.leaf("const", self.array(shape, dtype, -5, 6))

    def scalar(self, value: float, dtype: np.dtype) -> int:
        return self.leaf("const", np.asarray(value, dtype))

    def add(self, op: str, *args: int, positive: bool = False, **attrs: Any) -> int:
        """Appends ``op`` on nodes ``args``; _Skip where at some binding it overflows or grows too large."""
        nodes = [self.nodes[a] for a in args]
        dtype = _result_dtype(op, [n.dtype for n in nodes], attrs)
        try:
            values = tuple(apply(op, dtype, [n.values[b] for n in nodes], _resolve(attrs, binding))
                           for b, binding in enumerate(self.bindings))
        except FloatingPointError:
            raise _Skip from None
        # The first binding has the largest sizes; integers may overflow at any.
        if values[0].size > MAX_ELEMENTS or dtype.kind == "i" and max(
                np.abs(v).max(initial=0) for v in values) >= 2**31:
            raise _Skip
        exact = dtype.kind != "f" or (op in EXACT or op == "reduce" and attrs["kind"] in ("max", "min")
                                      or op == "pool2d" and attrs["kind"] == "max") and all(n.exact for n in nodes)
        self.nodes.append(Node(op, args, attrs, dtype, values, exact, positive, self.dims_of(op, nodes, attrs, values)))
        return len(self.nodes) - 1

    def dims_of(self, op: str, nodes: Sequence[Node], attrs: dict[str, Any],
                values: Sequence[np.ndarray]) -> Optional[tuple[Dim, ...]]:
        """The symbolic shape of a new node (None: static)."""
        return None

    def operand(self, shape: Sequence[int], dtype: np.dtype) -> int:
        """A node of exactly this shape and dtype: an existing one, a new input or a constant."""
        found = self.pick(lambda n: n.shape == tuple(shape) and n.dtype == dtype)
        if found is not None and self.coin(0.4):
            return found
        if len(self.inputs()) < self.max_inputs and self.coin(0.4):
            return self.input(shape, dtype)
        return self.const(shape, dtype)

    def inputs(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op == "input"]

    def partner(self, a: int, *shapes: Sequence[int], exact: bool = False) -> int:
        """A second operand for an elementwise op with ``a`` (also broadcasting against ``shapes``)."""
        node = self.nodes[a]
        shapes = (node.shape, *shapes)

        def fits(n: Node) -> bool:
            joint = _broadcast(n.shape, *shapes)
            return n.dtype == node.dtype and joint is not None and self.elements(joint) <= MAX_ELEMENTS and (
                n.exact or not exact)

        draw = self.rng.random()
        found = self.pick(fits)
        if found is not None and draw < 0.5:
            return found
        if draw < 0.7:
            return self.scalar(np.round(self.rng.standard_normal(), 1) if node.dtype.kind == "f"
                               else int(self.rng.integers(-3, 4)), node.dtype)
        shape = self.related(_broadcast(*shapes))
        if len(self.inputs()) < self.max_inputs and draw < 0.9:
            return self.input(shape, node.dtype)
        return self.const(shape, node.dtype)

    # Keeping values sane ------------------------------------------------------
    def fit(self, i: int, limit: float) -> int:
        """Node ``i``, or ``i`` squashed (tanh, scaled) or clamped so that its magnitude is at most ``limit``."""
        node = self.nodes[i]
        if node.bound <= limit:
            return i
        if node.dtype.kind == "i":
            top = max(1, int(limit))
            return self.add("minimum", self.add("maximum", i, self.scalar(-top, node.dtype)),
                            self.scalar(top, node.dtype))
        squashed = self.add(self.choice(("tanh", "tanh", "sigmoid")), i)
        return squashed if limit >= 1 else self.add("mul", squashed, self.scalar(limit, node.dtype))

    def positive(self, i: int) -> int:
        """Node ``i`` if positive by construction, else ``abs(i) + c`` (c >= 0.5; 1 for integers)."""
        node = self.nodes[i]
        if node.positive:
            return i
        c = self.choice((0.5, 1.0, 2.0)) if node.dtype.kind == "f" else 1
        return self.add("add", self.add("abs", self.fit(i, LIMIT[node.dtype] / 2)), self.scalar(c, node.dtype),
                        positive=True)

    def limit(self, i: int) -> float:
        return LIMIT[self.nodes[i].dtype]

    # Ops ----------------------------------------------------------------------
    def numeric(self, rank: int = 0, kinds: str = "fi") -> Optional[int]:
        return self.pick(lambda n: n.dtype.kind in kinds and n.value.ndim >= rank, consts=True)

    def image(self) -> int:
        return self.need(self.pick(lambda n: n.dtype.kind in "fi" and n.value.ndim == 4))

    def need(self, i: Optional[int]) -> int:
        if i is None:
            raise _Skip
        return i

    def op_binary(self) -> None:
        a = self.need(self.numeric())
        floating = self.nodes[a].dtype.kind == "f"
        name = self.choice(("add", "sub", "mul", "div", "maximum", "minimum") + (("pow",) if floating else ()))
        b = self.partner(a)
        if name in ("add", "sub"):
            a, b = self.fit(a, self.limit(a) / 2), self.fit(b, self.limit(a) / 2)
        elif name == "mul":
            a = self.fit(a, math.sqrt(self.limit(a)))
            b = self.fit(b, self.limit(a) / max(1.0, self.nodes[a].bound))
        elif name == "div":
            a, b = self.fit(a, self.limit(a) / 4), self.positive(b)
        else:  # pow: positive base, bounded exponent
            a, b = self.positive(self.fit(a, 10)), self.fit(b, 2)
        if name not in ("div", "pow") and self.coin(0.3):
            a, b = b, a
        self.add(name, a, b)

    def op_unary(self) -> None:
        x = self.need(self.numeric())
        if self.nodes[x].dtype.kind != "f":
            self.add(self.choice(("neg", "abs", "relu")), x)
            return
        name = self.choice(("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu",
                            "gelu_tanh"))
        if name == "exp":  # up to e^8 (f32) or e^5 (f16)
            x = self.fit(x, self.choice((1, 3, 8 if self.nodes[x].dtype == F32 else 5)))
            self.add(name, x, positive=self.nodes[x].bound <= 1.3)
        elif name in ("log", "sqrt", "rsqrt"):
            self.add(name, self.positive(x), positive=name == "sqrt")
        else:
            self.add(name, x)

    def op_where(self) -> None:
        a = self.need(self.pick(lambda n: n.exact and n.dtype != BOOL, consts=True))
        condition = self.add("compare", a, self.partner(a, exact=True),
                             predicate=self.choice(("lt", "le", "gt", "ge", "eq", "ne")))
        if self.coin(0.8):
            shape = self.nodes[condition].shape
            x = self.need(self.pick(lambda n: n.dtype != BOOL and _broadcast(n.shape, shape) is not None, consts=True))
            self.add("where", condition, x, self.partner(x, shape))

    def op_reduce(self) -> None:
        x = self.need(self.numeric(rank=1))
        rank = self.nodes[x].value.ndim
        kind = self.choice(("sum", "max", "min") + (("mean",) if self.nodes[x].dtype.kind == "f" else ()))
        if self.coin(0.15):
            axis = None
        else:
            axes = sorted(self.rng.choice(rank, int(self.rng.integers(1, rank + 1)), replace=False).tolist())
            axes = [a - rank if self.coin(0.3) else a for a in axes]
            axis = axes[0] if len(axes) == 1 and self.coin() else tuple(axes)
        if kind == "sum":
            x = self.fit(x, self.limit(x) / self.count(self.nodes[x].shape, _axes(axis, rank)))
        self.add("reduce", x, kind=kind, axis=axis, keepdims=self.coin())

    def axis(self, rank: int) -> int:
        return int(self.rng.integers(-rank, rank))

    def op_softmax(self) -> None:
        x = self.need(self.numeric(rank=1, kinds="f"))
        self.add("softmax", self.fit(x, self.limit(x) / 4), axis=self.axis(self.nodes[x].value.ndim), log=self.coin())

    def op_norm(self) -> None:
        x = self.need(self.numeric(rank=1, kinds="f"))
        node, rms = self.nodes[x], self.coin(0.4)
        axis = self.axis(node.value.ndim)
        shape = node.shape[axis:]
        bound = self.limit(x) / (2 * math.sqrt(self.elements(shape)) + 2)
        names = tuple(p for p in (("weight",) if rms else ("weight", "bias")) if self.coin(0.6))
        params = [self.fit(self.operand(shape, node.dtype), bound) for _ in names]
        if names and axis == -len(shape) and self.coin():
            axis = None  # the default: the trailing dims of the parameters
        self.add("layer_norm", x, *params, names=names, axis=axis, eps=self.choice((1e-5, 1e-3, 1e-6)), rms=rms)

    def op_matmul(self) -> None:
        a = self.need(self.numeric(rank=2))
        node = self.nodes[a]
        lhs = self.coin(0.7)
        k = node.shape[-1] if lhs else node.shape[-2]

        def fits(n: Node) -> bool:
            return (n.dtype == node.dtype and n.value.ndim >= 2 and n.shape[-2 if lhs else -1] == k
                    and _broadcast(n.shape[:-2], node.shape[:-2]) is not None)

        b = self.pick(fits)
        if b is None or self.coin(0.4):
            batch = self.related(node.shape[:-2]) if node.value.ndim > 2 else (2,) * self.coin(0.15)
            other = self.size()
            b = self.operand(batch + ((k, other) if lhs else (other, k)), node.dtype)
        a = self.fit(a, math.sqrt(self.limit(a) / self.extent(k)))
        b = self.fit(b, self.limit(a) / self.extent(k) / max(1.0, self.nodes[a].bound))
        self.add("matmul", *((a, b) if lhs else (b, a)))

    def op_linear(self) -> None:
        # graph.linear needs static input features (K) and a weight of static shape.
        x = self.need(self.pick(lambda n: n.dtype.kind in "fi" and n.value.ndim >= 1
                                and not isinstance(n.shape[-1], Size), consts=True))
        node = self.nodes[x]
        k, n = node.shape[-1], _Generator.size(self)
        x = self.fit(x, math.sqrt(self.limit(x) / (2 * k)))
        weight = self.fit(self.operand((n, k), node.dtype), self.limit(x) / (2 * k) / max(1.0, self.nodes[x].bound))
        bias = [self.fit(self.operand((n,), node.dtype), self.limit(x) / 2)] if self.coin() else []
        self.add("linear", x, weight, *bias)

    def op_conv2d(self) -> None:
        x = self.image()
        node = self.nodes[x]
        layout = self.choice(("NCHW", "NHWC"))
        c, h, w = node.shape[1:] if layout == "NCHW" else node.shape[3:] + node.shape[1:3]
        groups = self.choice([g for g in range(1, c + 1) if c % g == 0])
        filters = groups * int(self.rng.integers(1, 3))
        kernel = [int(self.rng.integers(1, 4)) for _ in range(2)]
        dilation = [int(self.rng.integers(1, 3)) for _ in range(2)]
        stride = [int(self.rng.integers(1, 3)) for _ in range(2)]
        padding = self.choice(([int(self.rng.integers(0, 3)) for _ in range(4)], self.rng.integers(0, 3, 2).tolist(),
                               int(self.rng.integers(0, 3))))
        pads = _padding(padding)
        for d, size in enumerate((h, w)):
            if dilation[d] * (kernel[d] - 1) + 1 > size + pads[d] + pads[d + 2]:
                kernel[d], dilation[d] = 1, 1
        cg = c // groups
        weight_shape = (filters, cg, *kernel) if layout == "NCHW" else (*kernel, cg, filters)
        k = cg * kernel[0] * kernel[1]
        x = self.fit(x, math.sqrt(self.limit(x) / (2 * k)))
        weight_bound = self.limit(x) / (2 * k) / max(1.0, self.nodes[x].bound)
        weight = self.fit(self.operand(weight_shape, node.dtype), weight_bound)
        bias = [self.fit(self.operand((filters,), node.dtype), self.limit(x) / 2)] if self.coin() else []
        self.add("conv2d", x, weight, *bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                 layout=layout)

    def op_pool2d(self) -> None:
        x = self.image()
        node = self.nodes[x]
        kind = self.choice(("max", "avg") if node.dtype.kind == "f" else ("max",))
        layout = self.choice(("NCHW", "NHWC"))
        h, w = node.shape[2:] if layout == "NCHW" else node.shape[1:3]
        kernel = [min(size, int(self.rng.integers(1, 4))) for size in (h, w)]
        pads = [int(self.rng.integers(0, min(2, kernel[d % 2]))) for d in range(4)]
        stride = None if self.coin(0.3) else [int(self.rng.integers(1, 4)) for _ in range(2)]
        self.add("pool2d", x, kind=kind, kernel=kernel, stride=stride, padding=pads,
                 count_include_pad=self.coin(), layout=layout)

    def any_node(self, rank: int = 1) -> int:
        return self.need(self.pick(lambda n: n.value.ndim >= rank, consts=True))

    def op_transpose(self) -> None:
        x = self.any_node(rank=2)
        perm = None if self.coin(0.2) else tuple(int(p) for p in self.rng.permutation(self.nodes[x].value.ndim))
        self.add("transpose", x, perm=perm)

    def op_reshape(self) -> None:
        x = self.any_node(rank=0)
        self.add("reshape", x, shape=self.reshaped(self.nodes[x]))

    def reshaped(self, node: Node) -> tuple[Dim, ...]:
        """A new shape for ``node``'s elements: its size's prime factors dealt to 1-4 dims, maybe one -1."""
        size = node.value.size
        shape = [1] * int(self.rng.integers(1, 5))
        for p in _prime_factors(size):
            shape[int(self.rng.integers(len(shape)))] *= p
        if self.coin(0.3):
            shape[int(self.rng.integers(len(shape)))] = -1
        return tuple(shape)

    def op_broadcast_to(self) -> None:
        x = self.any_node(rank=0)
        shape = [self.size(known=True) if d == 1 and self.coin(0.7) else d for d in self.nodes[x].shape]
        while len(shape) < 4 and (self.coin(0.4) or tuple(shape) == self.nodes[x].shape):
            shape.insert(0, int(self.choice((1, 2, 3, 5))))
        self.add("broadcast_to", x, shape=tuple(shape))

    def op_concatenate(self) -> None:
        x = self.any_node()
        node = self.nodes[x]
        axis = self.axis(node.value.ndim)
        dim = axis % node.value.ndim

        def fits(n: Node) -> bool:
            return n.dtype == node.dtype and n.value.ndim == node.value.ndim and all(
                s == t for d, (s, t) in enumerate(zip(n.shape, node.shape)) if d != dim)

        parts = [x]
        for _ in range(int(self.rng.integers(1, 3))):
            found = self.pick(fits, consts=True)
            if found is None or self.coin(0.3):
                shape = list(node.shape)
                shape[dim] = self.size()
                found = self.operand(shape, node.dtype)
            parts.insert(int(self.rng.integers(0, len(parts) + 1)), found)
        self.add("concatenate", *parts, axis=axis)

    def op_slice(self) -> None:
        x = self.any_node()
        key: list[Any] = []
        for size in self.nodes[x].shape:
            draw = self.rng.random()
            if draw < 0.2:
                key.append(int(self.rng.integers(-size, size)))
                continue
            while True:
                start = None if self.coin(0.3) else int(self.rng.integers(-size - 1, size + 1))
                stop = None if self.coin(0.3) else int(self.rng.integers(-size - 2, size + 3))
                entry = slice(start, stop, None if self.coin(0.3) else int(self.rng.integers(1, 4)))
                if draw < 0.35:
                    entry = slice(None)
                if len(range(*entry.indices(size))):
                    break
            key.append(entry)
        if self.coin(0.15):
            key.insert(int(self.rng.integers(0, len(key) + 1)), None)
        if self.coin(0.15) and key[-1] == slice(None):
            key[-1] = Ellipsis
        self.add("slice", x, key=tuple(key))

    def op_take(self) -> None:
        x = self.any_node()
        node = self.nodes[x]
        axis = self.axis(node.value.ndim)
        n = node.shape[axis]
        shape = self.shape(int(self.rng.integers(0, 3)), max_elements=16)
        wide = 3 if self.coin(0.1) else 0  # a few out-of-range indices, which graph.gather clamps
        if len(self.inputs()) < self.max_inputs and self.coin(0.3):
            indices = self.input(shape, I32, low=-n, high=n)
        else:
            indices = self.leaf("const", self.array(shape, self.choice((I32, I64)), -n - wide, n + wide))
        self.add("take", x, indices, axis=axis)

    def op_cast(self) -> None:
        x = self.any_node(rank=0)
        node = self.nodes[x]
        if node.dtype == BOOL:
            targets = [F32, F16, I32]
        elif node.dtype.kind == "i":
            targets = [F32, BOOL] + ([F16] if node.bound <= 2048 else [])
        else:
            targets = [t for t in (F32, F16) if t != node.dtype] + ([I32, BOOL] if node.exact else [])
        self.add("cast", x, dtype=self.choice(targets))

    FAMILIES: dict[str, float] = {
        "binary": 24, "unary": 18, "where": 7, "reduce": 9, "softmax": 4, "norm": 5, "matmul": 6, "linear": 3,
        "transpose": 4, "reshape": 5, "broadcast_to": 3, "concatenate": 4, "slice": 6, "take": 4, "cast": 5,
        "conv2d": 3, "pool2d": 3,
    }

    def graph(self) -> Graph:
        self.input(self.shape(int(self.rng.choice([1, 2, 3, 4], p=[0.15, 0.3, 0.25, 0.3]))), self.dtype)
        target = int(self.rng.integers(3, 13))
        names = list(self.FAMILIES)
        weights = np.array(list(self.FAMILIES.values()), float)
        for _ in range(1000):
            if sum(n.op not in ("input", "const") for n in self.nodes) >= target:
                break
            try:
                getattr(self, "op_" + names[int(self.rng.choice(len(names), p=weights / weights.sum()))])()
            except _Skip:
                pass
        used = {a for n in self.nodes for a in n.args}
        computed = [i for i, n in enumerate(self.nodes) if n.op not in ("input", "const")]
        outputs = [i for i in computed if i not in used]
        extra = [i for i in computed if i in used and self.coin(0.1)]  # also used
        return Graph(self.seed, self.nodes, sorted(outputs + extra), self.ranges, self.bindings)


class _SymbolicGenerator(_Generator):
    """Draws one graph over size symbols, of the ops that take them.

    One to three symbols, most with the range [1, max] (max in
    SYMBOL_MAXIMA), a few a range of multiples of 2 or 4; the first input
    has at least one symbolic dim, and new operands' dims are symbols at
    SYMBOL_RATE, so that some ops meet the same symbol from two sides
    (broadcasting, matmul's K, concatenation) and others meet two symbols.
    Every node is evaluated at every binding (:meth:`add`), so the checks
    that keep values sane hold at every size the graph runs at.
    """

    FAMILIES = {name: weight for name, weight in _Generator.FAMILIES.items()
                if name in SYMBOLIC_OPS | {"binary", "unary", "norm"}}

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        for name in SYMBOLS[:int(self.rng.choice([1, 2, 3], p=[0.35, 0.45, 0.2]))]:
            top = int(self.choice(SYMBOL_MAXIMA))
            if self.coin(0.15):  # a range of multiples, which the compile may rely on
                step = int(self.choice((2, 4)))
                self.ranges[name] = (step, max(step, top - top % step), step)
            else:
                self.ranges[name] = (1, top)
        sizes = {name: list(range(r[0], r[1] + 1, r[2] if len(r) > 2 else 1)) for name, r in self.ranges.items()}
        # The largest sizes first: the generator's bounds and element counts read them (extent).
        self.bindings = [{name: s[-1] for name, s in sizes.items()}, {name: s[0] for name, s in sizes.items()}]
        # Sizes strictly inside the range, different ones where there are enough.
        middle = {name: self.rng.choice(s[1:-1] or s, MIDDLE_BINDINGS, replace=len(s) < MIDDLE_BINDINGS + 2)
                  for name, s in sizes.items()}
        self.bindings += [{name: int(m[i]) for name, m in middle.items()} for i in range(MIDDLE_BINDINGS)]

    def symbol(self) -> Size:
        return Size.symbol(self.choice(list(self.ranges)))

    def size(self, known: bool = False) -> Dim:
        # tessel reads each symbol from an argument's dim: a symbol no input has cannot be bound.
        symbols = sorted({s for i in self.inputs() for d in self.nodes[i].shape if isinstance(d, Size)
                          for s in d.symbols}) if known else list(self.ranges)
        return Size.symbol(self.choice(symbols)) if symbols and self.coin(SYMBOL_RATE) else super().size()

    def shape(self, rank: int, max_elements: int = 1024) -> tuple[Dim, ...]:
        """A shape with at least one symbol."""
        while True:
            shape = [self.size() for _ in range(rank)]
            if rank and _is_static(shape):
                shape[int(self.rng.integers(rank))] = self.symbol()
            if self.elements(shape) <= max_elements:
                return tuple(shape)

    def related(self, shape: Sequence[Dim]) -> tuple[Dim, ...]:
        """As the base's, with sizes that are not a symbol alone (``n * 2``) broadcast from 1:
        an input's dim can only be a symbol, and constants have none."""
        return tuple(d if _plain(d) else 1 for d in super().related(shape))

    def input(self, shape: Sequence[Dim], dtype: np.dtype, **bounds: int) -> int:
        if not all(_plain(d) for d in shape):
            raise _Skip  # a dim like n * 2: no argument's dim can be that (tessel reads symbols from arguments)
        return super().input(shape, dtype, **bounds)

    def const(self, shape: Sequence[Dim], dtype: np.dtype) -> int:
        if not _is_static(shape):
            return self.input(shape, dtype)  # constants have no symbols
        return super().const(shape, dtype)

    def dims_of(self, op: str, nodes: Sequence[Node], attrs: dict[str, Any],
                values: Sequence[np.ndarray]) -> Optional[tuple[Dim, ...]]:
        dims = _result_dims(op, [n.shape for n in nodes], attrs, values[0].shape)
        # The rules above against numpy's own shapes, at every binding.
        for value, binding in zip(values, self.bindings):
            assert tuple(_evaluate(d, binding) for d in dims) == value.shape, (op, dims, binding, value.shape)
        return None if _is_static(dims) else dims

    def reshaped(self, node: Node) -> tuple[Dim, ...]:
        """The node's symbols and the prime factors of its static size dealt to 1-4 dims.

        tessel reshapes over symbols when both sides have the same product of
        the same symbolic factors; a dim that is a sum (``n + 3``) is no such
        product. A -1 only where the other dims keep the node's symbols as
        they are, the one case in which tracing infers it.
        """
        if _is_static(node.shape):
            return super().reshaped(node)
        terms = [_terms(d) for d in node.shape]
        if any(len(t) != 1 for t in terms):
            raise _Skip
        shape: list[Dim] = [1] * int(self.rng.integers(1, 5))
        for symbol in sorted(s for t in terms for symbols in t for s in symbols):
            at = int(self.rng.integers(len(shape)))
            shape[at] = shape[at] * Size.symbol(symbol)
        for p in _prime_factors(math.prod(c for t in terms for c in t.values())):
            at = int(self.rng.integers(len(shape)))
            shape[at] = shape[at] * p
        static = [i for i, d in enumerate(shape) if not isinstance(d, Size)]
        kept = sorted(map(str, _symbolic(node.shape))) == sorted(map(str, _symbolic(shape)))
        if static and kept and all(_plain(d) for d in shape) and self.coin(0.3):
            shape[int(self.choice(static))] = -1
        return tuple(shape)


def _symbolic(shape: Sequence[Dim]) -> list[Size]:
    return [d for d in shape if isinstance(d, Size)]


def _plain(dim: Dim) -> bool:
    """An int or a symbol alone: what an argument's dim may be."""
    return not isinstance(dim, Size) or len(dim.terms) == 1 and len(dim.terms[0][0]) == 1 and dim.terms[0][1] == 1


def random_graph(seed: int, symbolic: bool = False) -> Graph:
    """The graph of ``seed``: the same on every machine and every run; over size symbols with ``symbolic``."""
    return (_SymbolicGenerator if symbolic else _Generator)(seed).graph()


# Running and checking ---------------------------------------------------------

def _prefixes(graphs: Sequence[Graph]) -> list[str]:
    """What goes before each graph's symbols in a module of several: their ranges differ."""
    return [f"g{i}_" if len(graphs) > 1 and g.ranges else "" for i, g in enumerate(graphs)]


def trace_graphs(graphs: Sequence[Graph], name: str = "fuzz") -> ir.Module:
    """One module whose function takes every graph's inputs and returns every graph's outputs, in order."""
    counts, prefixes = [len(g.inputs) for g in graphs], _prefixes(graphs)

    def fn(*args: Tensor) -> list[Tensor]:
        results, at = [], 0
        for graph, count, prefix in zip(graphs, counts, prefixes):
            results += graph.build(args[at:at + count], prefix)
            at += count
        return results

    dims = {prefix + s: r for g, prefix in zip(graphs, prefixes) for s, r in g.ranges.items()}
    return trace(fn, *(a for g, prefix in zip(graphs, prefixes) for a in g.specs(prefix)), name=name, dims=dims)


def run(graphs: Sequence[Graph], schedules: str = "cpu") -> list[list[np.ndarray]]:
    """Compiles ``graphs`` as one module and runs it; the outputs of each graph.

    ``schedules`` is the target: the CPU, or a GPU such as ``"sm_90"``,
    whose artifact (every kernel assembled by ptxas when it is installed)
    runs on the PTX emulator. The module runs once per binding (of the
    graph that has most); a graph's outputs are those of each of its
    bindings in turn.
    """
    module = trace_graphs(graphs)
    if schedules == "cpu":
        executable = compile_cpu(module)
    else:
        executable = compile_module(module, target=f"cuda:{schedules}").emulate()
    split: list[list[np.ndarray]] = [[] for _ in graphs]
    for b in range(max(len(g.bindings) for g in graphs)):
        # A graph with fewer bindings runs again at its last one; only its own are kept.
        results = executable(*(a for g in graphs for a in g.arrays(min(b, len(g.bindings) - 1))))
        results = list(results) if isinstance(results, tuple) else [results]
        at = 0
        for outputs, graph in zip(split, graphs):
            if b < len(graph.bindings):
                outputs += results[at:at + len(graph.outputs)]
            at += len(graph.outputs)
    return split


# A graph's outputs (at each of its bindings in turn: see run), or why there are none.
Outcome = Union[list[np.ndarray], str]


def run_seeds(seeds: Sequence[int], schedules: str = "cpu", symbolic: bool = False) -> dict[int, Outcome]:
    """Runs the graphs of ``seeds`` as one module; if that fails, each alone to find the culprits."""
    graphs = [random_graph(seed, symbolic) for seed in seeds]
    try:
        return dict(zip(seeds, run(graphs, schedules)))
    except Exception:
        outcomes: dict[int, Outcome] = {}
        for graph in graphs:
            try:
                outcomes[graph.seed] = run([graph], schedules)[0]
            except Exception as e:
                outcomes[graph.seed] = f"{type(e).__name__}: {e}"
        return outcomes


def run_isolated(batches: Sequence[Sequence[int]], workers: int, per_process: int = 4,
                 timeout: float = 300, schedules: str = "cpu", symbolic: bool = False) -> dict[int, Outcome]:
    """:func:`run_seeds` on each batch, in ``workers`` parallel processes of ``per_process`` batches each.

    A compiler crash or hang then fails only the graphs involved (each
    graph of the batch is retried alone) instead of the whole session.
    """
    groups = [list(batches[i:i + per_process]) for i in range(0, len(batches), per_process)]
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda group: _run_process(group, timeout, schedules, symbolic), groups))
    return {seed: outcome for part in parts for seed, outcome in part.items()}


def _run_process(batches: list[Sequence[int]], timeout: float,
                 schedules: str, symbolic: bool) -> dict[int, Outcome]:
    command = [sys.executable, "-m", __name__, schedules, *(["--symbolic"] if symbolic else []),
               *(",".join(map(str, batch)) for batch in batches)]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout)
        stdout, failure = done.stdout, f"compiling or running killed the process (exit status {done.returncode})"
        failure += ":\n" + done.stderr.decode(errors="replace")[:3000]
    except subprocess.TimeoutExpired as e:
        stdout, failure = e.stdout or b"", f"compiling and running took over {timeout:.0f} s"
    stream, outcomes, finished = io.BytesIO(stdout), {}, 0
    while finished < len(batches):  # one pickled dict per finished batch
        try:
            outcomes.update(pickle.load(stream))
        except (EOFError, pickle.UnpicklingError):
            break
        finished += 1
    if finished == len(batches):
        return outcomes
    failed, rest = batches[finished], batches[finished + 1:]
    if len(failed) == 1:
        outcomes[failed[0]] = failure
    else:
        rest = [[seed] for seed in failed] + rest
    return {**outcomes, **(_run_process(rest, timeout, schedules, symbolic) if rest else {})}


def check(graph: Graph, got: Sequence[np.ndarray]) -> list[str]:
    """The mismatches between tessel's outputs ``got`` (at each binding in turn) and the reference, one line each."""
    rtol = max(RTOL.get(n.dtype, 0) for n in graph.nodes)
    problems = []
    count = len(graph.outputs)
    if len(got) != count * len(graph.bindings):
        problems.append(f"got {len(got)} outputs, expected {count} at each of {len(graph.bindings)} bindings")
    for b in range(len(graph.bindings)):
        # Static graphs keep the perturbations they always had.
        perturbed = [graph.evaluate(np.random.default_rng([graph.seed, i, b][:3 if b else 2]), b)
                     for i in range(PERTURBED_RUNS)]
        at_sizes = f" at {graph.describe_binding(b)}" if graph.ranges else ""
        for k, (index, actual) in enumerate(zip(graph.outputs, got[b * count:(b + 1) * count])):
            node = graph.nodes[index]
            expected = node.values[b]
            where = f"output {k} (%{index}){at_sizes}"
            if actual.shape != expected.shape or actual.dtype != node.dtype:
                problems.append(f"{where}: got {actual.dtype.name}{list(actual.shape)}, "
                                f"expected {node.dtype.name}{list(expected.shape)}")
                continue
            if node.dtype.kind != "f":
                wrong = actual.astype(expected.dtype) != expected
                tol = 0.0
            else:
                spread = max(float(np.abs(p[k] - expected).max(initial=0)) for p in perturbed)
                tol = rtol * max(1.0, float(np.abs(expected).max(initial=0))) + SPREAD_FACTOR * spread
                wrong = ~(np.abs(actual.astype(np.float64) - expected) <= tol)
            if wrong.any():
                first = tuple(int(i) for i in np.argwhere(wrong)[0])
                problems.append(f"{where}: {int(wrong.sum())} of {wrong.size} elements differ beyond {tol:.3g}; "
                                f"first at {list(first)}: got {actual[first]!r}, expected {expected[first]!r}")
    return problems


def report(graph: Graph, problem: str) -> str:
    """A failure message: the seed, the problem, the ops with their shapes and inputs, the module."""
    try:
        module = str(trace_graphs([graph], name=f"seed{graph.seed}"))
    except Exception as e:  # the problem may be that the graph does not trace
        module = f"(does not trace: {e})"
    return f"fuzz graph seed {graph.seed}: {problem}\nops:\n{graph}\nmodule:\n{module}"


if __name__ == "__main__":
    # A worker of run_isolated: "cpu" or a GPU target, maybe --symbolic, then batches "seed,seed,...".
    symbolic = "--symbolic" in sys.argv[2:]
    for argument in (a for a in sys.argv[2:] if a != "--symbolic"):
        pickle.dump(run_seeds([int(seed) for seed in argument.split(",")], sys.argv[1], symbolic), sys.stdout.buffer)
        sys.stdout.buffer.flush()
