"""numpy/torch-style functions that build graph ops while tracing.

Each function builds one ``graph`` op (or, where noted, a short composition)
at the caller's line. Operands may be :class:`tessel.Tensor`, numpy arrays or
scalars (see :func:`tessel.tracing.tensors` for how those become constants).
Shape and dtype errors raise :class:`tessel.CompileError`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
from mlir import ir

from .dialects import graph
from .tracing import Axes, Tensor, TensorLike, as_tensor, build, element_type, enum_attr, error, tensor_type, tensors

__all__ = [
    "matmul", "linear", "relu", "gelu", "silu", "sigmoid", "tanh", "sin", "cos", "erf", "exp", "log", "sqrt", "rsqrt",
    "floor", "ceil", "round", "abs", "neg", "pow", "fmod", "remainder", "maximum", "minimum", "where", "sum", "mean",
    "max", "min", "softmax",
    "log_softmax", "layer_norm", "rms_norm", "batch_norm", "transpose", "reshape", "broadcast_to", "iota", "arange",
    "squeeze", "unsqueeze", "flatten", "concatenate", "take", "cast", "conv2d", "max_pool2d",
    "avg_pool2d",
]

Pair = Union[int, Sequence[int]]

# Case numbers of the I32EnumAttrs in GraphOps.td.
_LAYOUTS = {"NCHW": 0, "NHWC": 1}
_POOL_KINDS = {"max": 0, "avg": 1}


# Contractions ---------------------------------------------------------------

def matmul(a: TensorLike, b: TensorLike) -> Tensor:
    """``numpy.matmul``: ``[..., M, K] @ [..., K, N]`` with broadcast batch dims (graph.matmul)."""
    return build(graph.MatmulOp, *tensors(a, b))


def linear(x: TensorLike, weight: TensorLike, bias: Optional[TensorLike] = None) -> Tensor:
    """``x @ weight.T + bias`` with weight ``[N, K]`` (torch.nn.functional.linear; graph.linear)."""
    x, weight, bias = tensors(x, weight, bias)
    return build(graph.LinearOp, x, weight, bias=bias)


# Elementwise ----------------------------------------------------------------

def relu(x: TensorLike) -> Tensor:
    """``max(x, 0)`` (graph.relu)."""
    return build(graph.ReluOp, as_tensor(x))


def gelu(x: TensorLike, approximate: str = "none") -> Tensor:
    """GELU, exact (erf) or with ``approximate="tanh"``, as torch (graph.gelu)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return build(graph.GeluOp, as_tensor(x), approximate_tanh=approximate == "tanh")


def silu(x: TensorLike) -> Tensor:
    """``x * sigmoid(x)`` (graph.silu)."""
    return build(graph.SiluOp, as_tensor(x))


def sigmoid(x: TensorLike) -> Tensor:
    """``1 / (1 + exp(-x))`` (graph.sigmoid)."""
    return build(graph.SigmoidOp, as_tensor(x))


def tanh(x: TensorLike) -> Tensor:
    """Hyperbolic tangent (graph.tanh)."""
    return build(graph.TanhOp, as_tensor(x))


def sin(x: TensorLike) -> Tensor:
    """Sine, in radians (graph.sin)."""
    return build(graph.SinOp, as_tensor(x))


def cos(x: TensorLike) -> Tensor:
    """Cosine, in radians (graph.cos)."""
    return build(graph.CosOp, as_tensor(x))


def erf(x: TensorLike) -> Tensor:
    """The error function (graph.erf)."""
    return build(graph.ErfOp, as_tensor(x))


def floor(x: TensorLike) -> Tensor:
    """The largest integer not above ``x`` (graph.floor)."""
    return build(graph.FloorOp, as_tensor(x))


def ceil(x: TensorLike) -> Tensor:
    """The smallest integer not below ``x`` (graph.ceil)."""
    return build(graph.CeilOp, as_tensor(x))


def round(x: TensorLike) -> Tensor:  # noqa: A001 - numpy's and torch's name
    """The nearest integer, halves to even, as ``numpy.round`` (graph.round)."""
    return build(graph.RoundOp, as_tensor(x))


def exp(x: TensorLike) -> Tensor:
    """``e ** x`` (graph.exp)."""
    return build(graph.ExpOp, as_tensor(x))


def log(x: TensorLike) -> Tensor:
    """Natural logarithm (graph.log)."""
    return build(graph.LogOp, as_tensor(x))


def sqrt(x: TensorLike) -> Tensor:
    """Square root (graph.sqrt)."""
    return build(graph.SqrtOp, as_tensor(x))


def rsqrt(x: TensorLike) -> Tensor:
    """``1 / sqrt(x)`` (graph.rsqrt)."""
    return build(graph.RsqrtOp, as_tensor(x))


def abs(x: TensorLike) -> Tensor:
    """``|x|`` (graph.abs)."""
    return build(graph.AbsOp, as_tensor(x))


def neg(x: TensorLike) -> Tensor:
    """``-x`` (graph.neg)."""
    return build(graph.NegOp, as_tensor(x))


def pow(a: TensorLike, b: TensorLike) -> Tensor:
    """``a ** b`` for float tensors, broadcasting (graph.pow)."""
    return build(graph.PowOp, *tensors(a, b))


def fmod(a: TensorLike, b: TensorLike) -> Tensor:
    """``numpy.fmod``: the remainder with the sign of ``a``, broadcasting
    (graph.rem); an integer remainder by 0 is 0."""
    return build(graph.RemOp, *tensors(a, b))


def remainder(a: TensorLike, b: TensorLike) -> Tensor:
    """``numpy.remainder`` (Python's ``%``): the remainder with the sign of ``b``."""
    a, b = tensors(a, b)
    r = fmod(a, b)
    # fmod's remainder has a's sign; where that differs from b's, add b once.
    wrong_sign = where(r != 0, (r < 0) != (b < 0), False)
    return where(wrong_sign, r + b, r)


def maximum(a: TensorLike, b: TensorLike) -> Tensor:
    """Elementwise maximum, broadcasting; NaN propagates (graph.maximum)."""
    return build(graph.MaximumOp, *tensors(a, b))


def minimum(a: TensorLike, b: TensorLike) -> Tensor:
    """Elementwise minimum, broadcasting; NaN propagates (graph.minimum)."""
    return build(graph.MinimumOp, *tensors(a, b))


def where(condition: TensorLike, a: TensorLike, b: TensorLike) -> Tensor:
    """``numpy.where``: ``a`` where the bool ``condition`` holds, else ``b`` (graph.select)."""
    return build(graph.SelectOp, as_tensor(condition), *tensors(a, b))


# Reductions and normalizations ----------------------------------------------

def sum(x: TensorLike, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` (all dims when None); see :meth:`Tensor.sum`."""
    return as_tensor(x).sum(axis, keepdims)


def mean(x: TensorLike, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (all dims when None), float tensors; see :meth:`Tensor.mean`."""
    return as_tensor(x).mean(axis, keepdims)


def max(x: TensorLike, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Maximum over ``axis`` (all dims when None); see :meth:`Tensor.max`."""
    return as_tensor(x).max(axis, keepdims)


def min(x: TensorLike, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Minimum over ``axis`` (all dims when None); see :meth:`Tensor.min`."""
    return as_tensor(x).min(axis, keepdims)


def softmax(x: TensorLike, axis: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably (graph.softmax)."""
    return build(graph.SoftmaxOp, as_tensor(x), axis)


def log_softmax(x: TensorLike, axis: int = -1) -> Tensor:
    """``log(softmax(x))`` along ``axis``, computed stably (graph.log_softmax)."""
    return build(graph.LogSoftmaxOp, as_tensor(x), axis)


def _first_normalized_axis(axis: Optional[int], param: Optional[Tensor]) -> int:
    # torch's normalized_shape is the shape of the weight: its trailing dims.
    if axis is not None:
        return axis
    return -param.ndim if param is not None else -1


def layer_norm(x: TensorLike, weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None,
               eps: float = 1e-5, axis: Optional[int] = None) -> Tensor:
    """Layer normalization over the dims from ``axis`` on, then ``* weight + bias`` (graph.layer_norm).

    ``axis`` is the first normalized dimension; by default the trailing
    ``weight.ndim`` (or ``bias.ndim``) dims, like torch's ``normalized_shape``,
    or the last dim without parameters. The variance is biased.
    """
    x, weight, bias = tensors(x, weight, bias)
    axis = _first_normalized_axis(axis, weight if weight is not None else bias)
    return build(graph.LayerNormOp, x, axis, float(eps), weight=weight, bias=bias)


def rms_norm(x: TensorLike, weight: Optional[TensorLike] = None, eps: float = 1e-6,
             axis: Optional[int] = None) -> Tensor:
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the dims from ``axis`` on (graph.rms_norm).

    ``axis`` defaults as in :func:`layer_norm`.
    """
    x, weight = tensors(x, weight)
    return build(graph.RmsNormOp, x, _first_normalized_axis(axis, weight), float(eps), weight=weight)


def batch_norm(x: TensorLike, mean: TensorLike, var: TensorLike, weight: TensorLike, bias: TensorLike,
               eps: float = 1e-5, axis: int = 1) -> Tensor:
    """Inference batch norm: ``(x - mean) / sqrt(var + eps) * weight + bias`` (graph.batch_norm).

    The 1-D parameters apply along the channel ``axis`` (1 for NCHW, -1 for NHWC).
    """
    x, mean, var, weight, bias = tensors(x, mean, var, weight, bias)
    return build(graph.BatchNormOp, x, weight, bias, mean, var, axis, float(eps))


# Data movement --------------------------------------------------------------

def transpose(x: TensorLike, perm: Optional[Sequence[int]] = None) -> Tensor:
    """Result dim i is input dim ``perm[i]``; reverses the dims when None (graph.transpose)."""
    return as_tensor(x).transpose(perm)


def reshape(x: TensorLike, shape: Union[int, Sequence[int]]) -> Tensor:
    """Same elements, new shape; one dim may be -1 (graph.reshape)."""
    return as_tensor(x).reshape(shape)


def iota(shape: Sequence[Union[int, str]], dim: int, dtype: Any = np.int64) -> Tensor:
    """Each element its index along ``dim``: ``numpy.arange`` along that dim,
    repeated along the others (graph.iota). Dims may be size symbols, as a
    traced tensor's ``shape`` gives them."""
    return build(graph.IotaOp, tensor_type(shape, element_type(dtype)), _axis(dim, len(shape)))


def arange(n: Union[int, str], dtype: Any = np.int64) -> Tensor:
    """``numpy.arange(n)``, ``n`` an int or a size symbol (``x.shape[1]``)."""
    return iota((n,), 0, dtype)


def broadcast_to(x: TensorLike, shape: Sequence[int]) -> Tensor:
    """Broadcasts to ``shape`` with numpy's rules (graph.broadcast_to)."""
    return as_tensor(x).broadcast_to(shape)


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def squeeze(x: TensorLike, axis: Axes = None) -> Tensor:
    """Drops size-1 dims: those in ``axis``, or all of them when None (a graph.reshape)."""
    x = as_tensor(x)
    if axis is None:
        drop = {d for d, size in enumerate(x.shape) if size == 1}
    else:
        drop = {_axis(a, x.ndim) for a in ([axis] if isinstance(axis, int) else axis)}
        wrong = [d for d in sorted(drop) if x.shape[d] != 1]
        if wrong:
            raise error(f"cannot squeeze axis {wrong[0]} of size {x.shape[wrong[0]]}")
    return x.reshape([size for d, size in enumerate(x.shape) if d not in drop])


def unsqueeze(x: TensorLike, axis: int) -> Tensor:
    """Inserts a size-1 dim at ``axis`` of the result (a graph.reshape)."""
    x = as_tensor(x)
    shape = list(x.shape)
    shape.insert(_axis(axis, x.ndim + 1), 1)
    return x.reshape(shape)


def flatten(x: TensorLike, start_axis: int = 0, end_axis: int = -1) -> Tensor:
    """Merges dims ``start_axis..end_axis`` into one, like torch.flatten (a graph.reshape)."""
    x = as_tensor(x)
    if x.ndim == 0:
        return x.reshape([1])
    start, end = _axis(start_axis, x.ndim), _axis(end_axis, x.ndim)
    if start > end:
        raise error(f"flatten start axis {start_axis} comes after end axis {end_axis}")
    return x.reshape(x.shape[:start] + (-1,) + x.shape[end + 1:])


def concatenate(xs: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """Joins tensors along ``axis`` (graph.concat)."""
    return build(graph.ConcatOp, list(tensors(*xs)), axis)


def take(x: TensorLike, indices: TensorLike, axis: int = 0) -> Tensor:
    """``numpy.take`` along ``axis`` (embedding lookup; graph.gather); see :meth:`Tensor.take`."""
    return as_tensor(x).take(indices, axis)


def cast(x: TensorLike, dtype: Any) -> Tensor:
    """Converts to ``dtype`` with numpy's astype semantics (graph.cast)."""
    return as_tensor(x).astype(dtype)


# Convolution and pooling ----------------------------------------------------

def _pair(value: Pair, what: str) -> list[int]:
    pair = [value, value] if isinstance(value, int) else list(value)
    if len(pair) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {value!r}")
    return pair


def _padding(padding: Pair) -> list[int]:
    """[top, left, bottom, right] from an int, a (height, width) pair or four values."""
    if isinstance(padding, int):
        return [padding] * 4
    padding = list(padding)
    if len(padding) == 2:
        return padding * 2
    if len(padding) != 4:
        raise ValueError(f"padding must be an int, a pair or [top, left, bottom, right], got {padding!r}")
    return padding


def _layout(layout: str) -> ir.IntegerAttr:
    if layout.upper() not in _LAYOUTS:
        raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
    return enum_attr(_LAYOUTS[layout.upper()])


def conv2d(x: TensorLike, weight: TensorLike, bias: Optional[TensorLike] = None, stride: Pair = 1,
           padding: Pair = 0, dilation: Pair = 1, groups: int = 1, layout: str = "NCHW") -> Tensor:
    """2-D cross-correlation with zero padding and groups (graph.conv2d).

    NCHW takes weight ``[F, C / groups, KH, KW]`` (torch); NHWC takes weight
    ``[KH, KW, C / groups, F]`` (HWIO). ``padding`` is an int, a
    (height, width) pair or ``[top, left, bottom, right]``.
    """
    x, weight, bias = tensors(x, weight, bias)
    return build(graph.Conv2DOp, _layout(layout), x, weight, _pair(stride, "stride"), _padding(padding),
                 _pair(dilation, "dilation"), groups, bias=bias)


def _pool(kind: str, x: TensorLike, kernel_size: Pair, stride: Optional[Pair], padding: Pair,
          layout: str, count_include_pad: bool) -> Tensor:
    kernel = _pair(kernel_size, "kernel_size")
    return build(graph.Pool2DOp, enum_attr(_POOL_KINDS[kind]), _layout(layout), as_tensor(x), kernel,
                 kernel if stride is None else _pair(stride, "stride"), _padding(padding),
                 count_include_pad=count_include_pad)


def max_pool2d(x: TensorLike, kernel_size: Pair, stride: Optional[Pair] = None, padding: Pair = 0,
               layout: str = "NCHW") -> Tensor:
    """2-D max pooling; ``stride`` defaults to ``kernel_size``, padding is -inf (graph.pool2d)."""
    return _pool("max", x, kernel_size, stride, padding, layout, count_include_pad=False)


def avg_pool2d(x: TensorLike, kernel_size: Pair, stride: Optional[Pair] = None, padding: Pair = 0,
               count_include_pad: bool = True, layout: str = "NCHW") -> Tensor:
    """2-D average pooling (graph.pool2d); ``stride`` defaults to ``kernel_size``.

    Padded cells count as zeros in the average when ``count_include_pad``, as in torch.
    """
    return _pool("avg", x, kernel_size, stride, padding, layout, count_include_pad)
