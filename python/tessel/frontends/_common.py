"""Helpers that more than one front end uses.

A front end's values are :class:`tessel.Tensor` (computed at run time) or
numpy arrays (known while importing: weights, shape arithmetic); these
helpers take either.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .. import ops
from ..tracing import Tensor, as_tensor

__all__ = ["Value", "numpy_or", "cast_to", "matmul", "attention", "attention_stages", "arg_extreme", "gathered_along",
           "reshaped", "indexed", "concatenated", "flipped", "conv_transpose", "pooled"]

Value = Union[Tensor, np.ndarray]


def numpy_or(values: Sequence[Optional[Value]], numpy_fn: Callable, tensor_fn: Callable) -> Value:
    """``numpy_fn`` when every value is known while building, else ``tensor_fn``."""
    if all(v is None or isinstance(v, np.ndarray) for v in values):
        return numpy_fn(*values)
    return tensor_fn(*values)


def cast_to(x: Value, dtype: np.dtype) -> Value:
    """``x`` converted to ``dtype`` (numpy's astype; graph.cast), unchanged if it has it."""
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
    index = np.arange(x.shape[axis], dtype=np.int64).reshape(shape)
    if last:
        return ops.where(hit, index, np.int64(-1)).max(axis, keep)
    return ops.where(hit, index, np.int64(x.shape[axis])).min(axis, keep)


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


def reshaped(x: Value, shape: Sequence[int]) -> Value:
    return numpy_or([x], lambda v: v.reshape(shape), lambda v: as_tensor(v).reshape(shape))


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
