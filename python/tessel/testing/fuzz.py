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
"""

from __future__ import annotations

import io
import math
import operator
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
from mlir import ir

from .. import ops
from ..backends.cpu import compile_cpu
from ..compiler import compile as compile_module
from ..tracing import Tensor, as_tensor, trace

__all__ = ["Node", "Graph", "Outcome", "random_graph", "trace_graphs", "run", "run_seeds", "run_isolated", "check",
           "report", "OPS", "conv2d_reference", "pool2d_reference"]

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

    ``value`` is the exact reference (float64, int64 or bool); inputs and
    constants keep their array in ``attrs["array"]``. ``exact`` nodes are
    computed exactly by tessel too; ``positive`` ones are at least 0.25 by
    construction (not just by value).
    """

    op: str
    args: tuple[int, ...]
    attrs: dict[str, Any]
    dtype: np.dtype
    value: np.ndarray
    exact: bool
    positive: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def bound(self) -> float:
        return float(np.abs(self.value).max(initial=0))

    def describe(self, index: int) -> str:
        attrs = {k: v for k, v in self.attrs.items() if k != "array"}
        if "array" in self.attrs:
            array = self.attrs["array"]
            attrs["value"] = array.tolist() if array.size <= 8 else f"random in [{array.min()}, {array.max()}]"
        fields = [f"%{a}" for a in self.args] + [f"{k}={v!r}" for k, v in attrs.items()]
        return f"%{index} = {self.op}({', '.join(fields)}) : {self.dtype.name}{list(self.shape)}"


@dataclass
class Graph:
    """A random graph: nodes in topological order and the indices of its outputs."""

    seed: int
    nodes: list[Node]
    outputs: list[int]

    @property
    def inputs(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op == "input"]

    def arrays(self) -> list[np.ndarray]:
        """The input values, in argument order."""
        return [self.nodes[i].attrs["array"] for i in self.inputs]

    def ops(self) -> list[str]:
        return [n.op for n in self.nodes if n.op not in ("input", "const")]

    def build(self, args: Sequence[Tensor]) -> list[Tensor]:
        """Builds the graph's ops while tracing, on one Tensor per input; returns the outputs."""
        given = iter(args)
        values: list[Tensor] = []
        for n in self.nodes:
            if n.op == "input":
                values.append(next(given))
            elif n.op == "const":
                values.append(as_tensor(n.attrs["array"]))
            else:
                values.append(OPS[n.op].build(*(values[a] for a in n.args), **n.attrs))
        return [values[o] for o in self.outputs]

    def evaluate(self, rng: np.random.Generator) -> list[np.ndarray]:
        """The outputs of one perturbed evaluation of the reference."""
        values: list[np.ndarray] = []
        for n in self.nodes:
            args = [values[a] for a in n.args]
            values.append(n.value if n.op in ("input", "const") else apply(n.op, n.dtype, args, n.attrs, rng))
        return [values[o] for o in self.outputs]

    def __str__(self) -> str:
        lines = [n.describe(i) for i, n in enumerate(self.nodes)]
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


def _broadcast(*shapes: Sequence[int]) -> Optional[tuple[int, ...]]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


class _Generator:
    """Draws one graph; each ``_op_*`` method appends one op (plus the helpers that keep it sane)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.dtype = NUMERIC[self.rng.choice(3, p=[0.7, 0.15, 0.15])]
        self.max_inputs = int(self.rng.integers(1, 5))
        self.nodes: list[Node] = []

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
    def leaf(self, op: str, array: np.ndarray) -> int:
        array = np.asarray(array)
        self.nodes.append(Node(op, (), {"array": array}, array.dtype, array.astype(_reference_dtype(array.dtype)),
                               exact=True))
        return len(self.nodes) - 1

    def input(self, shape: Sequence[int], dtype: np.dtype, **bounds: int) -> int:
        return self.leaf("input", self.array(shape, dtype, **bounds))

    def const(self, shape: Sequence[int], dtype: np.dtype) -> int:
        if dtype.kind == "f":
            return self.leaf("const", np.round(self.array(shape, dtype), 2).astype(dtype))
        return self.leaf("const", self.array(shape, dtype, -5, 6))

    def scalar(self, value: float, dtype: np.dtype) -> int:
        return self.leaf("const", np.asarray(value, dtype))

    def add(self, op: str, *args: int, positive: bool = False, **attrs: Any) -> int:
        nodes = [self.nodes[a] for a in args]
        dtype = _result_dtype(op, [n.dtype for n in nodes], attrs)
        try:
            value = apply(op, dtype, [n.value for n in nodes], attrs)
        except FloatingPointError:
            raise _Skip from None
        if value.size > MAX_ELEMENTS or dtype.kind == "i" and np.abs(value).max(initial=0) >= 2**31:
            raise _Skip
        exact = dtype.kind != "f" or (op in EXACT or op == "reduce" and attrs["kind"] in ("max", "min")
                                      or op == "pool2d" and attrs["kind"] == "max") and all(n.exact for n in nodes)
        self.nodes.append(Node(op, args, attrs, dtype, value, exact, positive))
        return len(self.nodes) - 1

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
            return n.dtype == node.dtype and joint is not None and _shape_size(joint) <= MAX_ELEMENTS and (
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
            x = self.fit(x, self.limit(x) / _count(self.nodes[x].shape, _axes(axis, rank)))
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
        bound = self.limit(x) / (2 * math.sqrt(_shape_size(shape)) + 2)
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
            other = int(self.choice(SIZES))
            b = self.operand(batch + ((k, other) if lhs else (other, k)), node.dtype)
        a = self.fit(a, math.sqrt(self.limit(a) / k))
        b = self.fit(b, self.limit(a) / k / max(1.0, self.nodes[a].bound))
        self.add("matmul", *((a, b) if lhs else (b, a)))

    def op_linear(self) -> None:
        x = self.need(self.numeric(rank=1))
        node = self.nodes[x]
        k, n = node.shape[-1], int(self.choice(SIZES))
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
        size = self.nodes[x].value.size
        shape = [1] * int(self.rng.integers(1, 5))
        for p in _prime_factors(size):
            shape[int(self.rng.integers(len(shape)))] *= p
        if self.coin(0.3):
            shape[int(self.rng.integers(len(shape)))] = -1
        self.add("reshape", x, shape=tuple(shape))

    def op_broadcast_to(self) -> None:
        x = self.any_node(rank=0)
        shape = [int(self.choice(SIZES)) if d == 1 and self.coin(0.7) else d for d in self.nodes[x].shape]
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
                shape[dim] = int(self.choice(SIZES))
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
        return Graph(self.seed, self.nodes, sorted(outputs + extra))


def random_graph(seed: int) -> Graph:
    """The graph of ``seed``: the same on every machine and every run."""
    return _Generator(seed).graph()


# Running and checking ---------------------------------------------------------

def trace_graphs(graphs: Sequence[Graph], name: str = "fuzz") -> ir.Module:
    """One module whose function takes every graph's inputs and returns every graph's outputs, in order."""
    counts = [len(g.inputs) for g in graphs]

    def fn(*args: Tensor) -> list[Tensor]:
        results, at = [], 0
        for graph, count in zip(graphs, counts):
            results += graph.build(args[at:at + count])
            at += count
        return results

    return trace(fn, *(a for g in graphs for a in g.arrays()), name=name)


def run(graphs: Sequence[Graph], schedules: str = "cpu") -> list[list[np.ndarray]]:
    """Compiles ``graphs`` as one module and runs it; the outputs of each graph.

    ``schedules`` is the target: the CPU, or a GPU such as ``"sm_90"``,
    whose artifact (every kernel assembled by ptxas when it is installed)
    runs on the PTX emulator.
    """
    module = trace_graphs(graphs)
    if schedules == "cpu":
        executable = compile_cpu(module)
    else:
        executable = compile_module(module, target=f"cuda:{schedules}").emulate()
    results = executable(*(a for g in graphs for a in g.arrays()))
    results = list(results) if isinstance(results, tuple) else [results]
    split, at = [], 0
    for graph in graphs:
        split.append(results[at:at + len(graph.outputs)])
        at += len(graph.outputs)
    return split


Outcome = Union[list[np.ndarray], str]  # a graph's outputs, or why there are none


def run_seeds(seeds: Sequence[int], schedules: str = "cpu") -> dict[int, Outcome]:
    """Runs the graphs of ``seeds`` as one module; if that fails, each alone to find the culprits."""
    graphs = [random_graph(seed) for seed in seeds]
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
                 timeout: float = 300, schedules: str = "cpu") -> dict[int, Outcome]:
    """:func:`run_seeds` on each batch, in ``workers`` parallel processes of ``per_process`` batches each.

    A compiler crash or hang then fails only the graphs involved (each
    graph of the batch is retried alone) instead of the whole session.
    """
    groups = [list(batches[i:i + per_process]) for i in range(0, len(batches), per_process)]
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda group: _run_process(group, timeout, schedules), groups))
    return {seed: outcome for part in parts for seed, outcome in part.items()}


def _run_process(batches: list[Sequence[int]], timeout: float,
                 schedules: str) -> dict[int, Outcome]:
    command = [sys.executable, "-m", __name__, schedules,
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
    return {**outcomes, **(_run_process(rest, timeout, schedules) if rest else {})}


def check(graph: Graph, got: Sequence[np.ndarray]) -> list[str]:
    """The mismatches between tessel's outputs ``got`` and the reference, one line each."""
    rtol = max(RTOL.get(n.dtype, 0) for n in graph.nodes)
    perturbed = [graph.evaluate(np.random.default_rng([graph.seed, i])) for i in range(PERTURBED_RUNS)]
    problems = []
    for k, (index, actual) in enumerate(zip(graph.outputs, got)):
        node = graph.nodes[index]
        where = f"output {k} (%{index})"
        if actual.shape != node.shape or actual.dtype != node.dtype:
            problems.append(f"{where}: got {actual.dtype.name}{list(actual.shape)}, "
                            f"expected {node.dtype.name}{list(node.shape)}")
            continue
        expected = node.value
        if node.dtype.kind != "f":
            wrong = actual.astype(expected.dtype) != expected
            tol = 0.0
        else:
            spread = max(float(np.abs(p[k] - expected).max(initial=0)) for p in perturbed)
            tol = rtol * max(1.0, node.bound) + SPREAD_FACTOR * spread
            wrong = ~(np.abs(actual.astype(np.float64) - expected) <= tol)
        if wrong.any():
            at = tuple(int(i) for i in np.argwhere(wrong)[0])
            problems.append(f"{where}: {int(wrong.sum())} of {wrong.size} elements differ beyond {tol:.3g}; "
                            f"first at {list(at)}: got {actual[at]!r}, expected {expected[at]!r}")
    return problems


def report(graph: Graph, problem: str) -> str:
    """A failure message: the seed, the problem, the ops with their shapes and inputs, the module."""
    try:
        module = str(trace_graphs([graph], name=f"seed{graph.seed}"))
    except Exception as e:  # the problem may be that the graph does not trace
        module = f"(does not trace: {e})"
    return f"fuzz graph seed {graph.seed}: {problem}\nops:\n{graph}\nmodule:\n{module}"


if __name__ == "__main__":  # a worker of run_isolated: "cpu" or a GPU target, then batches "seed,seed,..."
    for argument in sys.argv[2:]:
        pickle.dump(run_seeds([int(seed) for seed in argument.split(",")], sys.argv[1]), sys.stdout.buffer)
        sys.stdout.buffer.flush()
