"""ONNX models into the ``graph`` dialect: ``tessel.from_onnx(path_or_model)``.

The model's graph is traced with :func:`tessel.trace`: graph inputs become
the function's arguments, initializers and ``Constant`` nodes numpy arrays
(constants of the module), and each node a converter on :mod:`tessel.ops`.
Values computed only from constants (shape arithmetic: ``Shape``,
``Gather`` on shapes, ``Concat`` of dims, ...) stay numpy arrays, so the
inputs that must be known while building (a ``Reshape``'s shape, a
``Slice``'s bounds) are. Opsets 7 and newer of the default domain are
read (a few ops only in their newer definitions, ``_FIRST_DEFINITION``).
An op, attribute or dtype that is not supported raises
``tessel.UnsupportedError`` naming the node and listing the supported ops.

A malformed model (an input no node defines, nodes out of order, a node
with the wrong inputs or attributes for its op, initializer data that does
not match its dims, an output computed with another type than declared) is
a ``tessel.CompileError`` naming the node, tensor or file: every failure of
the importer is one of the two. Nothing is allocated from a declared shape;
a constant the importer folds (``ConstantOfShape``, ``Expand``, ...) is
checked against ``MAX_CONSTANT_BYTES`` before it is built.
"""

from __future__ import annotations

import difflib
import functools
import keyword
import math
import operator
import os
import re
import string
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np

from .. import ops
from ..backends.signature import TensorSpec
from ..dtypes import ELEMENT_DTYPES, is_float
from ..errors import CompileError, UnsupportedError, require_extra
from ..tracing import Tensor, as_tensor, trace
from . import _interpolate
from ._common import (SizeLike, SymbolicSize, Value, arg_extreme, as_size, attention_stages, broadcast_sizes,
                      by_rows, cast_to, concatenated, conv_transpose, dims, filled, flipped, gathered_along, indexed,
                      is_symbolic, matmul, numpy_or, pooled, reshaped, shape_text, size_array, size_bounds, size_tensor,
                      sizes_of, sizes_tensor, taken_range, triangle)

__all__ = ["from_onnx", "SUPPORTED_OPS", "MAX_CONSTANT_BYTES"]

MIN_OPSET = 7

# Ops whose definitions before these opsets mean something else than the
# converters implement (Softmax before 13 flattens to 2-D at its axis; Clip,
# Pad and Slice took attributes; Resize had other inputs and modes). A node
# of an older definition is refused, naming the version converter; any
# other op reads the same from opset 7 on (later versions add types, or
# inputs and attributes the converters check).
_FIRST_DEFINITION = {"Softmax": 13, "LogSoftmax": 13, "Hardmax": 13, "Clip": 11, "Pad": 11, "Slice": 10,
                     "Resize": 13}

# The largest array the importer builds from a shape, a count or an
# attribute (and that a module then holds as one constant): a malformed or
# hostile model is an error, not an out-of-memory kill.
MAX_CONSTANT_BYTES = 1 << 30


@contextmanager
def _located(where: str) -> Iterator[None]:
    """Errors while handling ``where`` (a node, tensor or file) name it: a
    CompileError gets it as a prefix, any other exception (numpy's, or a
    converter's own indexing, on a malformed node) becomes a CompileError."""
    try:
        yield
    except CompileError as e:
        raise type(e)(f"{where}: {e.summary}", e.diagnostics) from None
    except Exception as e:  # noqa: BLE001 - turned into the importer's one error type, cause chained
        raise CompileError(f"{where}: cannot be imported ({type(e).__name__}: {e})") from e


def _label(proto: Any, index: int) -> str:
    """How errors name a node: its name (else its index) and op."""
    return f"ONNX node {proto.name or '#' + str(index)} ({proto.op_type})"


class _Node:
    """One ONNX node while converting: its attributes and input values."""

    def __init__(self, proto: Any, inputs: list[Optional[Value]], helper: Any,
                 ranges: dict[str, tuple[int, int]]) -> None:
        # ranges: each size symbol's (min, max), to decide what depends on a size's value.
        self.proto, self.inputs, self.ranges = proto, inputs, ranges
        self.attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
        self.op = proto.op_type

    def unsupported(self, reason: str) -> UnsupportedError:
        # The conversion loop prefixes the node's label.
        return UnsupportedError(reason)

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def input(self, i: int) -> Optional[Value]:
        return self.inputs[i] if i < len(self.inputs) else None

    def constant(self, i: int, what: str) -> Optional[np.ndarray]:
        """Input ``i`` as a numpy array; it must be known while building."""
        value = self.input(i)
        if value is None or isinstance(value, np.ndarray):
            return value
        raise self.unsupported(f"its {what} (input {i}) must be a constant, not computed at run time (a graph "
                               f"input is fixed with from_onnx(..., constants={{{self.proto.input[i]!r}: ...}}))")

    def symbolic(self) -> list[str]:
        """The inputs that depend on size symbols, ``input 0 [batch, seq, 64]``-like."""
        return [f"input {i} " + (shape_text(v.shape) if not isinstance(v, np.ndarray) else f"= {shape_text(v.flat)}")
                for i, v in enumerate(self.inputs) if v is not None and is_symbolic(v)]

    def bounds(self, size: SizeLike) -> tuple[int, int]:
        """The least and largest value of ``size`` over the symbols' ranges."""
        return size_bounds(size, self.ranges)

    def only(self, *names: str) -> None:
        """Rejects attributes outside ``names`` that change the result."""
        extra = sorted(set(self.attrs) - set(names))
        if extra:
            raise self.unsupported(f"attribute {extra[0]} is not supported")


def _sized(shape: Sequence[Any], dtype: Any) -> tuple[int, ...]:
    """``shape`` as ints, once an array of it and ``dtype`` is known to be
    buildable: no negative dim, at most MAX_CONSTANT_BYTES."""
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise CompileError(f"shape {list(dims)} has a negative dim")
    size = math.prod(dims) * np.dtype(dtype).itemsize
    if size > MAX_CONSTANT_BYTES:
        raise UnsupportedError(f"it would build a constant of shape {list(dims)} ({size} bytes) while importing; "
                               f"tessel builds at most {MAX_CONSTANT_BYTES} bytes")
    return dims


def _folded(values: Sequence[Optional[Value]]) -> Sequence[Optional[Value]]:
    """``values``, the operands of an elementwise op, once their broadcast
    is known to be buildable where it is computed in numpy (all known).
    Sizes that meet a run-time tensor become one (``x / seq``)."""
    tensor = next((v for v in values if isinstance(v, Tensor)), None)
    if tensor is not None:
        return [cast_to(sizes_tensor(v), tensor.dtype) if isinstance(v, np.ndarray) and v.dtype == object else v
                for v in values]
    if all(v is None or isinstance(v, np.ndarray) for v in values):
        arrays = [v for v in values if v is not None]
        if arrays:
            widest = max((a.dtype for a in arrays), key=lambda d: d.itemsize)
            _sized(np.broadcast_shapes(*(a.shape for a in arrays)), widest)
    return values


def _array(tensor: Any) -> np.ndarray:
    """A TensorProto (an initializer, a Constant's value) as a numpy array,
    once its data is known to match its dims."""
    from onnx import TensorProto, helper, numpy_helper

    dims = tuple(tensor.dims)
    if any(d < 0 for d in dims):
        raise CompileError(f"its dims {list(dims)} include a negative one")
    dtype, count = _np_dtype(tensor.data_type), math.prod(dims)
    # Types numpy has stand one value per element (raw: itemsize bytes);
    # complex, float8, sub-byte and string data are laid out otherwise,
    # and their mismatches are left to onnx's own reading.
    if dtype.kind in "biuf" and tensor.data_location != TensorProto.EXTERNAL:
        if tensor.HasField("raw_data"):
            if len(tensor.raw_data) != count * dtype.itemsize:
                raise CompileError(f"its raw data has {len(tensor.raw_data)} bytes; {dtype.name}{list(dims)} "
                                   f"takes {count * dtype.itemsize}")
        elif len(values := getattr(tensor, helper.tensor_dtype_to_field(tensor.data_type))) != count:
            raise CompileError(f"it holds {len(values)} values; {dtype.name}{list(dims)} takes {count}")
    return numpy_helper.to_array(tensor)


def _broadcast(x: Value, shape: Sequence[SizeLike]) -> Value:
    if is_symbolic(list(shape)):
        return ops.broadcast_to(x, dims(shape))
    return numpy_or([x], lambda v: np.broadcast_to(v, _sized(shape, v.dtype)).copy(),
                    lambda v: ops.broadcast_to(v, shape))


def _np_dtype(onnx_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type, supported by tessel or not."""
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
    except (KeyError, TypeError, ValueError):
        raise UnsupportedError(f"element type {onnx_type} is not supported") from None


def _supported(dtype: np.dtype) -> np.dtype:
    """``dtype``, once it is one tessel computes in."""
    if dtype not in ELEMENT_DTYPES.values():
        raise UnsupportedError(f"dtype {dtype.name} is not supported; tessel takes "
                               + ", ".join(d.name for d in ELEMENT_DTYPES.values()))
    return dtype


def _dtype(onnx_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type that tessel computes in."""
    return _supported(_np_dtype(onnx_type))


def _axes(node: _Node, rank: int, i: int = 1) -> Optional[list[int]]:
    """Reduction/squeeze axes from the input (opset >= 13/18) or attribute."""
    axes = node.constant(i, "axes") if node.input(i) is not None else node.attr("axes")
    if axes is None:
        return None
    return [int(a) % rank if rank else 0 for a in np.atleast_1d(axes)]


# Converters -----------------------------------------------------------------

def _binary(fn: Callable[[Value, Value], Value]) -> Callable[[_Node], Value]:
    return lambda n: fn(*_folded(n.inputs))


def _variadic(fn: Callable[[Value, Value], Value]) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        result, *rest = _folded(n.inputs)
        for value in rest:
            result = fn(result, value)
        return result
    return convert


def _unary(tensor_fn: Callable[[Tensor], Tensor], numpy_fn: Callable[[np.ndarray], np.ndarray]):
    return lambda n: numpy_or(n.inputs[:1], numpy_fn, lambda x: tensor_fn(as_tensor(x)))


def _div(a: Value, b: Value) -> Value:
    """Integer division truncates, as in ONNX (and graph.div); numpy's ``/`` would give floats."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and object in (a.dtype, b.dtype):
        # Sizes: never negative, so truncation is floor division (exact for a divisor that is a symbol's).
        if np.any(b <= 0):
            raise UnsupportedError(f"a division of the sizes {dims(a.flat)} by {list(b.flat)}, not positive")
        return size_array(np.floor_divide(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)
    return a / b


def _maximum(a: Value, b: Value) -> Value:
    return numpy_or([a, b], np.maximum, ops.maximum)


def _minimum(a: Value, b: Value) -> Value:
    return numpy_or([a, b], np.minimum, ops.minimum)


def _where(c: Value, a: Value, b: Value) -> Value:
    return numpy_or([c, a, b], np.where, ops.where)


def _zeros_like(x: Value) -> Value:
    return np.zeros((), np.dtype(x.dtype))


def _compare(name: str) -> Callable[[_Node], Value]:
    fn = getattr(operator, name)

    def convert(n: _Node) -> Value:
        a, b = _folded(n.inputs)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and object in (a.dtype, b.dtype):
            return np.vectorize(lambda x, y: _size_compare(n, name, x, y), otypes=[bool])(a, b)
        return fn(a, b)
    return convert


def _size_compare(n: _Node, name: str, a: SizeLike, b: SizeLike) -> bool:
    """``a <name> b`` for sizes: decided by the bounds of ``a - b`` over the
    symbols' ranges, UnsupportedError where it depends on the sizes of a call."""
    low, high = n.bounds(as_size(a) - as_size(b))
    outcomes = {getattr(operator, name)(d, 0) for d in {low, high, min(max(0, low), high)}}
    if len(outcomes) > 1:
        raise n.unsupported(f"comparing the sizes {dims([a])[0]} and {dims([b])[0]} ({name}) depends on the "
                            "size symbols' values at each call")
    return outcomes.pop()


def _not(n: _Node) -> Value:
    return _where(n.inputs[0], np.array(False), np.array(True))


def _logical(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        a, b = _folded(n.inputs)
        if kind == "and":
            return _where(a, b, np.array(False))
        if kind == "or":
            return _where(a, np.array(True), b)
        return a != b
    return convert


@dataclass(frozen=True)
class _FloatSizes:
    """Sizes cast to a float type (torch's ``arange(seq, dtype=float)``
    exports as a Range to ``Cast(seq)``): Range takes them as sizes, every
    other op as the float tensor they are at run time (``_convert``)."""

    sizes: np.ndarray
    dtype: np.dtype

    def value(self) -> Value:
        return cast_to(sizes_tensor(self.sizes), self.dtype)


def _cast(n: _Node) -> Union[Value, _FloatSizes]:
    x, dtype = n.inputs[0], _dtype(n.attr("to"))
    if isinstance(x, np.ndarray) and x.dtype == object:
        # Sizes stay sizes as integers; as floats, see _FloatSizes.
        return x if dtype.kind in "iu" else _FloatSizes(x, dtype) if dtype.kind == "f" else cast_to(x, dtype)
    return cast_to(x, dtype)


def _cast_like(n: _Node) -> Value:
    return cast_to(n.inputs[0], np.dtype(n.inputs[1].dtype))


def _clip(n: _Node) -> Value:
    x = n.inputs[0]
    if n.input(1) is not None:
        x = _maximum(x, n.inputs[1])
    if n.input(2) is not None:
        x = _minimum(x, n.inputs[2])
    return x


def _pow(n: _Node) -> Value:
    base, exponent = n.inputs
    if not is_float(base.dtype):
        raise n.unsupported(f"Pow of an integer base ({np.dtype(base.dtype).name}) is not supported")
    if np.dtype(exponent.dtype) != np.dtype(base.dtype):
        exponent = cast_to(exponent, np.dtype(base.dtype))
    return numpy_or([base, exponent], np.power, ops.pow)


def _gemm(n: _Node) -> Value:
    n.only("alpha", "beta", "transA", "transB")
    a, b = n.inputs[0], n.inputs[1]
    if n.attr("transA", 0):
        a = ops.transpose(a)
    if n.attr("transB", 0):
        b = ops.transpose(b)
    y = by_rows(lambda rows: rows @ b, as_tensor(a))
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if n.input(2) is not None:
        y = y + (n.inputs[2] if beta == 1.0 else n.inputs[2] * np.asarray(beta, n.inputs[2].dtype))
    return y


def _reduce(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        n.only("axes", "keepdims", "noop_with_empty_axes")
        x = as_tensor(n.inputs[0])
        axes = _axes(n, x.ndim)
        if axes is not None and len(axes) == 0:
            axes = None
        if axes is None and n.attr("noop_with_empty_axes", 0):
            return x
        keep = bool(n.attr("keepdims", 1))
        axis = None if axes is None else tuple(axes)
        if kind == "prod":
            return _product(x, sorted(axis) if axis is not None else list(range(x.ndim)), keep)
        if kind == "sum_square":
            return (x * x).sum(axis, keep)
        if kind == "l1":
            return abs(x).sum(axis, keep)
        if kind == "l2":
            return ops.sqrt((x * x).sum(axis, keep))
        if kind == "log_sum":
            return ops.log(x.sum(axis, keep))
        if kind == "log_sum_exp":
            top = x.max(axis, True)
            total = ops.exp(x - top).sum(axis, True)
            result = ops.log(total) + top
            return result if keep else ops.squeeze(result, list(range(x.ndim)) if axis is None else list(axis))
        if x.dtype == np.bool_ and kind in ("max", "min"):  # any / all, through integers
            return getattr(ops.cast(x, np.int32), kind)(axis, keep) > 0
        return getattr(x, kind)(axis, keep)
    return convert


def _softmax(log: bool) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        n.only("axis")
        fn = ops.log_softmax if log else ops.softmax
        return fn(n.inputs[0], axis=n.attr("axis", -1))
    return convert


def _layer_norm(n: _Node) -> Union[Value, tuple[Value, ...]]:
    n.only("axis", "epsilon", "stash_type")
    x = as_tensor(n.inputs[0])
    axis = n.attr("axis", -1) % x.ndim
    eps = n.attr("epsilon", 1e-5)
    y = ops.layer_norm(x, n.input(1), n.input(2), eps=eps, axis=axis)
    if not any(n.proto.output[1:]):
        return y
    # The optional Mean and InvStdDev outputs keep the normalized dims as 1.
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axes, True)
    centered = x - mean
    return y, mean, ops.rsqrt((centered * centered).mean(axes, True) + eps)


def _rms_norm(n: _Node) -> Value:
    n.only("axis", "epsilon", "stash_type")
    x = as_tensor(n.inputs[0])
    return ops.rms_norm(x, n.input(1), eps=n.attr("epsilon", 1e-5), axis=n.attr("axis", -1) % x.ndim)


def _batch_norm(n: _Node) -> Value:
    n.only("epsilon", "momentum", "training_mode")
    if n.attr("training_mode", 0):
        raise n.unsupported("training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = n.inputs[:5]
    return ops.batch_norm(x, mean, var, scale, bias, eps=n.attr("epsilon", 1e-5))


def _reshape(n: _Node) -> Value:
    n.only("allowzero")
    x = n.inputs[0]
    shape = sizes_of(n.constant(1, "shape").flat)
    if not n.attr("allowzero", 0):
        shape = [as_size(x.shape[i]) if isinstance(s, int) and s == 0 else s for i, s in enumerate(shape)]
    if is_symbolic(shape) or is_symbolic(x):
        # The -1 from the element count: an exact quotient of sizes (batch * seq * 64 / (batch * 64) = seq).
        rest = [s for s in shape if not (isinstance(s, int) and s == -1)]
        if len(rest) == len(shape) - 1:
            shape[shape.index(-1)] = math.prod(sizes_of(x.shape)) // math.prod(rest, start=1)
    return reshaped(x, shape)


def _transpose(n: _Node) -> Value:
    perm = n.attr("perm")
    return numpy_or(n.inputs[:1], lambda v: np.transpose(v, perm), lambda v: ops.transpose(v, perm))


def _flatten(n: _Node) -> Value:
    x = n.inputs[0]
    axis = n.attr("axis", 1)
    axis = axis + len(x.shape) if axis < 0 else axis
    sizes = sizes_of(x.shape)
    return reshaped(x, [math.prod(sizes[:axis], start=1), math.prod(sizes[axis:], start=1)])


def _squeeze(n: _Node) -> Value:
    x = n.inputs[0]
    axes = _axes(n, len(x.shape))
    shape = [s for d, s in enumerate(x.shape) if (s != 1 if axes is None else d not in axes)]
    return reshaped(x, shape)


def _unsqueeze(n: _Node) -> Value:
    x = n.inputs[0]
    rank = len(x.shape) + len(np.atleast_1d(n.constant(1, "axes") if n.input(1) is not None else n.attr("axes")))
    axes = sorted(_axes(n, rank))
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshaped(x, shape)


def _concat(n: _Node) -> Value:
    axis = n.attr("axis")
    values = [v for v in n.inputs if v is not None]
    return concatenated(values, axis)


def _slice(n: _Node) -> Value:
    x = n.inputs[0]
    starts, ends = n.constant(1, "starts"), n.constant(2, "ends")
    axes = n.constant(3, "axes")
    steps = n.constant(4, "steps")
    rank = len(x.shape)
    index = [slice(None)] * rank
    axes = range(len(starts)) if axes is None else [int(a) % rank for a in axes]
    if is_symbolic(x) or is_symbolic(starts) or is_symbolic(ends):
        for i, axis in enumerate(axes):
            x = _symbolic_slice(n, x, axis, as_size(starts[i]), as_size(ends[i]), 1 if steps is None else int(steps[i]))
        return x
    for i, axis in enumerate(axes):
        step = 1 if steps is None else int(steps[i])
        if step < 0:
            raise n.unsupported("negative slice steps are not supported")
        size = x.shape[axis]
        start, end = (int(max(-2**62, min(2**62, v))) for v in (starts[i], ends[i]))
        index[axis] = slice(*slice(start, end, step).indices(size))
    return indexed(x, tuple(index))


def _symbolic_slice(n: _Node, x: Value, axis: int, start: SizeLike, end: SizeLike, step: int) -> Value:
    """One axis of a Slice where the size or a bound is symbolic: ONNX's
    clamping of the bounds to the axis, which must not depend on the
    symbols' values (``x[:, -1:]``, ``x[:, 1:]`` and ``x[:, :seq]`` are
    fine; ``x[:, :4]`` on a dim of at least 4 too), else UnsupportedError."""
    size = as_size(x.shape[axis])
    if step <= 0:
        raise n.unsupported(f"slice step {step} over the size {dims([size])[0]} is not supported (positive steps)")

    def clamped(bound: SizeLike, what: str) -> SizeLike:
        if isinstance(bound, int) and bound < 0:
            bound = bound + size
        if n.bounds(bound)[0] >= 0 and n.bounds(size - bound)[0] >= 0:
            return bound  # within [0, size] at every size
        if n.bounds(bound - size)[0] >= 0:
            return size  # past the end at every size (INT64_MAX)
        raise n.unsupported(f"the {what} {dims([bound])[0]} of axis {axis}, of size {dims([size])[0]}, is clamped "
                            "to the axis at some sizes of the symbols' ranges, not at others")

    first, end = clamped(start, "start"), clamped(end, "end")
    count = (end - first + step - 1) // step
    if n.bounds(count)[0] < 0:
        raise n.unsupported(f"the slice [{dims([first])[0]}:{dims([end])[0]}] of axis {axis} is empty at some sizes")
    # A start from the end stays negative: graph.gather counts it from the end at run time.
    return taken_range(x, axis, start if isinstance(start, int) and start < 0 else first, count, step)


def _gather(n: _Node) -> Value:
    x, indices = n.inputs
    axis = n.attr("axis", 0)

    def take(v: np.ndarray, i: np.ndarray) -> np.ndarray:
        at = axis % v.ndim
        _sized(v.shape[:at] + i.shape + v.shape[at + 1:], v.dtype)
        return np.take(v, i, axis)
    return numpy_or([x, indices], take, lambda v, i: ops.take(v, i, axis))


def _expand(n: _Node) -> Value:
    x = n.inputs[0]
    target = n.constant(1, "shape")
    if is_symbolic(x) or is_symbolic(target):
        return _broadcast(x, broadcast_sizes(sizes_of(x.shape), sizes_of(target.flat)))
    shape = np.broadcast_shapes(tuple(x.shape), tuple(int(s) for s in target))
    return _broadcast(x, shape)


def _shape(n: _Node) -> Value:
    """Shape: int64, or sizes (an object array) where a dim is a size symbol's."""
    shape = size_array(sizes_of(n.inputs[0].shape))
    start, end = n.attr("start", 0), n.attr("end", None)
    return shape[start:end]


def _constant(n: _Node) -> Value:
    if "value" in n.attrs:
        return _array(n.attrs["value"])
    for name, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if name in n.attrs:
            return np.array(n.attrs[name], dtype)
    for name, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if name in n.attrs:
            return np.array(n.attrs[name], dtype)
    raise n.unsupported(f"attribute {sorted(n.attrs)[0] if n.attrs else 'value'} is not supported")


def _constant_of_shape(n: _Node) -> Value:
    value = _array(n.attrs["value"]) if "value" in n.attrs else np.zeros(1, np.float32)
    shape = n.constant(0, "shape")
    if is_symbolic(shape):
        return filled(list(shape.flat), value.reshape(-1)[0], value.dtype)
    return np.full(_sized(shape, value.dtype), value.reshape(-1)[0], value.dtype)


def _range(n: _Node) -> Value:
    if any(isinstance(v, _FloatSizes) for v in n.inputs):
        bounds = [v.sizes.reshape(()) if isinstance(v, _FloatSizes) else n.constant(i, "bounds").reshape(())
                  for i, v in enumerate(n.inputs)]
        dtype = next(v.dtype for v in n.inputs if isinstance(v, _FloatSizes))
        return _symbolic_range(n, *(b.item() for b in bounds), dtype)
    start, limit, delta = (n.constant(i, "bounds").reshape(()) for i in range(3))
    if object in (start.dtype, limit.dtype, delta.dtype):
        return _symbolic_range(n, start.item(), limit.item(), delta.item(),
                               next((v.dtype for v in (start, limit, delta) if v.dtype != object), np.dtype(np.int64)))
    if delta == 0:
        raise CompileError("its delta is 0")
    _sized([max(0, math.ceil((limit - start) / delta))], start.dtype)
    return np.arange(start, limit, delta).astype(start.dtype)


def _symbolic_range(n: _Node, start: Any, limit: Any, delta: Any, dtype: np.dtype) -> Value:
    """Range to a size symbol's bound (positions ``0, ..., seq - 1``): an
    iota of ``ceil((limit - start) / delta)`` elements, in ``dtype`` (the
    type of the bounds that are no sizes, int64 if none)."""
    whole = [v if isinstance(v, SymbolicSize) else int(v) if float(v).is_integer() else None
             for v in (start, limit, delta)]
    if None in whole or whole[2] <= 0:
        raise n.unsupported(f"a Range over sizes ({dims([start])[0]} to {dims([limit])[0]}) takes whole bounds and "
                            f"a positive whole delta, got {delta}")
    start, limit, delta = whole
    count = (limit - start + delta - 1) // delta
    if n.bounds(count)[0] < 0:
        raise n.unsupported(f"a Range from {dims([start])[0]} to {dims([limit])[0]} is empty at some sizes")
    values = ops.iota(dims([count]), 0) * np.int64(delta) if delta != 1 else ops.iota(dims([count]), 0)
    return cast_to(values if start == 0 else values + size_tensor(start), dtype)


def _window_pads(n: _Node, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """The pads before and after each spatial dim of a window op: the
    ``pads`` attribute, or those ``auto_pad`` SAME_UPPER/SAME_LOWER imply
    (output ``ceil(size / stride)``, the odd one after or before)."""
    spatial = len(sizes)
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        totals = [max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
                  for size, k, s, d in zip(sizes, kernel, strides, dilations)]
        before = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in totals]
        return before, [t - b for t, b in zip(totals, before)]
    if auto == "VALID":
        return [0] * spatial, [0] * spatial
    if auto != "NOTSET":
        raise n.unsupported(f"auto_pad={auto} is not supported")
    pads = list(n.attr("pads", [0] * 2 * spatial))
    if len(pads) != 2 * spatial:
        raise CompileError(f"pads {pads} has {len(pads)} values; {spatial}-D windows take {2 * spatial}")
    return pads[:spatial], pads[spatial:]


def _window(n: _Node, x: Value, kernel: Sequence[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """A 1-D or 2-D window op's strides, dilations and pads (top, left,
    bottom, right) as the 2-D graph ops take them: a 1-D window is a 2-D one
    of height 1 (the caller unsqueezes dim 2)."""
    rank = len(x.shape)
    if rank not in (3, 4):
        raise n.unsupported(f"only 1-D and 2-D windows (3-D or 4-D input) are supported, got rank {rank}")
    spatial = rank - 2
    strides, dilations = list(n.attr("strides", [1] * spatial)), list(n.attr("dilations", [1] * spatial))
    before, after = _window_pads(n, x.shape[2:], kernel, strides, dilations)
    if spatial == 1:
        strides, dilations, before, after = [1] + strides, [1] + dilations, [0] + before, [0] + after
    return strides, dilations, before + after, list(kernel) if spatial == 2 else [1, *kernel]


def _to_2d(x: Value) -> Value:
    """A 1-D window op's [N, C, L] operand as [N, C, 1, L]."""
    return reshaped(x, [x.shape[0], x.shape[1], 1, x.shape[2]]) if len(x.shape) == 3 else x


def _from_2d(y: Value, rank: int) -> Value:
    return reshaped(y, [y.shape[0], y.shape[1], y.shape[3]]) if rank == 3 else y


def _conv(n: _Node) -> Value:
    n.only("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    x, w = n.inputs[0], n.inputs[1]
    strides, dilations, pads, _ = _window(n, x, w.shape[2:])
    y = ops.conv2d(_to_2d(x), _to_2d(w), n.input(2), stride=tuple(strides), padding=pads,
                   dilation=tuple(dilations), groups=n.attr("group", 1))
    return _from_2d(y, len(x.shape))


def _conv_transpose(n: _Node) -> Value:
    """ConvTranspose: its pads (given, or those output_shape or auto_pad
    imply) and the shared conv_transpose."""
    n.only("auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides")
    x, w = n.inputs[0], n.inputs[1]
    rank, groups = len(x.shape), n.attr("group", 1)
    if rank not in (3, 4):
        raise n.unsupported(f"only 1-D and 2-D transposed convolution (3-D or 4-D input) is supported, got rank {rank}")
    spatial = rank - 2
    sizes, kernel = list(x.shape[2:]), list(w.shape[2:])
    strides, dilations = list(n.attr("strides", [1] * spatial)), list(n.attr("dilations", [1] * spatial))
    extra = list(n.attr("output_padding", [0] * spatial))
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]  # for output_shape's pads
    auto = n.attr("auto_pad", "NOTSET")
    if n.attr("output_shape") is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        shape = list(n.attr("output_shape") or [size * s for size, s in zip(sizes, strides)])[-spatial:]
        totals = [s * (size - 1) + e + r - o for s, size, e, r, o in zip(strides, sizes, extra, reach, shape)]
        before = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in totals]
        after = [t - b for t, b in zip(totals, before)]
    elif auto in ("NOTSET", "VALID"):
        pads = [0] * 2 * spatial if auto == "VALID" else list(n.attr("pads", [0] * 2 * spatial))
        before, after = pads[:spatial], pads[spatial:]
    else:
        raise n.unsupported(f"auto_pad={auto} is not supported")
    if spatial == 1:  # over a height of one
        strides, dilations, extra, before, after = [1] + strides, [1] + dilations, [0] + extra, [0] + before, \
            [0] + after
    return _from_2d(conv_transpose(_to_2d(x), _to_2d(w), n.input(2), strides, dilations, before, after, extra,
                                   groups), rank)


def _pool(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        n.only("auto_pad", "kernel_shape", "pads", "strides", "count_include_pad", "ceil_mode", "dilations",
               "storage_order")
        x = n.inputs[0]
        strides, dilations, pads, kernel = _window(n, x, n.attr("kernel_shape"))
        if any(d != 1 for d in dilations):
            raise n.unsupported("dilations are not supported")
        if len(n.proto.output) > 1 and n.proto.output[1]:
            raise n.unsupported("the Indices output is not supported")
        y = pooled(kind, _to_2d(x), kernel, strides, pads, ceil_mode=bool(n.attr("ceil_mode", 0)),
                   count_include_pad=bool(n.attr("count_include_pad", 0)))
        return _from_2d(y, len(x.shape))
    return convert


def _lp_pool(n: _Node) -> Value:
    """LpPool: ``(sum |x|^p)^(1/p)`` over each window, the sum an average
    over the whole window (pads count as zeros) times its size."""
    n.only("auto_pad", "kernel_shape", "pads", "strides", "ceil_mode", "dilations", "p")
    x = n.inputs[0]
    strides, dilations, pads, kernel = _window(n, x, n.attr("kernel_shape"))
    if n.attr("ceil_mode", 0) or any(d != 1 for d in dilations):
        raise n.unsupported("ceil_mode and dilations are not supported")
    p = float(n.attr("p", 2))
    powered = ops.pow(abs(as_tensor(x)), p)
    total = ops.avg_pool2d(_to_2d(powered), tuple(kernel), tuple(strides), pads, count_include_pad=True)
    return _from_2d(ops.pow(total * float(math.prod(kernel)), 1 / p), len(x.shape))


def _global_lp_pool(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    p = float(n.attr("p", 2))
    return ops.pow(ops.pow(abs(x), p).sum(tuple(range(2, x.ndim)), True), 1 / p)


def _instance_norm(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    channel = [x.shape[1]] + [1] * (x.ndim - 2)
    return _normalized(x, tuple(range(2, x.ndim)), n.attr("epsilon", 1e-5)) * reshaped(n.inputs[1], channel) + \
        reshaped(n.inputs[2], channel)


def _group_norm(n: _Node) -> Value:
    """GroupNormalization: scale and bias per channel (opset 21), or per
    group (opset 18's definition, which onnx later deprecated)."""
    n.only("epsilon", "num_groups", "stash_type")
    x = as_tensor(n.inputs[0])
    groups, channels = n.attr("num_groups"), x.shape[1]
    if groups <= 0 or channels % groups:
        raise CompileError(f"num_groups {groups} does not divide the {channels} channels")
    grouped = ops.reshape(x, [x.shape[0], groups, -1])
    y = ops.reshape(_normalized(grouped, (2,), n.attr("epsilon", 1e-5)), list(x.shape))
    scale, bias = n.inputs[1], n.inputs[2]
    if scale.shape[0] != channels:  # per group: each group's value for its channels
        scale, bias = (reshaped(_broadcast(reshaped(v, [groups, 1]), [groups, channels // groups]), [channels])
                       for v in (scale, bias))
    channel = [channels] + [1] * (x.ndim - 2)
    return y * reshaped(scale, channel) + reshaped(bias, channel)


def _normalized(x: Tensor, axes: tuple[int, ...], eps: float) -> Tensor:
    """``(x - mean) / sqrt(var + eps)`` over ``axes``."""
    centered = x - x.mean(axes, True)
    return centered * ops.rsqrt((centered * centered).mean(axes, True) + eps)


def _global_pool(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        x = as_tensor(n.inputs[0])
        axes = tuple(range(2, x.ndim))
        return x.mean(axes, True) if kind == "avg" else x.max(axes, True)
    return convert


def _leaky_relu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return ops.where(x < 0, x * n.attr("alpha", 0.01), x)


def _prelu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return ops.where(x < 0, x * n.inputs[1], x)


def _elu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return ops.where(x < 0, (ops.exp(x) - 1) * n.attr("alpha", 1.0), x)


def _selu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    alpha, gamma = n.attr("alpha", 1.67326319217681884765625), n.attr("gamma", 1.05070102214813232421875)
    return ops.where(x < 0, (ops.exp(x) - 1) * alpha, x) * gamma


def _celu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    alpha = n.attr("alpha", 1.0)
    return ops.maximum(x, 0.0) + ops.minimum(x * 0.0, (ops.exp(x * (1 / alpha)) - 1) * alpha)


def _hard_sigmoid(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return ops.maximum(ops.minimum(x * n.attr("alpha", 0.2) + n.attr("beta", 0.5), 1.0), 0.0)


def _hard_swish(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return x * ops.maximum(ops.minimum(x * (1 / 6) + 0.5, 1.0), 0.0)


def _softplus(x: Tensor) -> Tensor:
    # log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
    return ops.maximum(x, 0.0) + ops.log(ops.exp(-abs(x)) + 1.0)


def _gelu(n: _Node) -> Value:
    n.only("approximate")
    return ops.gelu(n.inputs[0], approximate=n.attr("approximate", "none"))


def _thresholded_relu(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return ops.where(x > n.attr("alpha", 1.0), x, 0.0)


def _shrink(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    lambd, bias = n.attr("lambd", 0.5), n.attr("bias", 0.0)
    return ops.where(x < -lambd, x + bias, ops.where(x > lambd, x - bias, x * 0))


def _sign(x: Tensor) -> Tensor:
    return ops.where(x > 0, 1, ops.where(x < 0, -1, 0)).astype(x.dtype) if not is_float(x.dtype) else \
        ops.where(x > 0, 1.0, ops.where(x < 0, -1.0, 0.0))


def _mean(n: _Node) -> Value:
    total = _variadic(lambda a, b: a + b)(n)
    return total * np.asarray(1 / len(n.inputs), np.dtype(total.dtype))


def _split(n: _Node) -> tuple[Value, ...]:
    x = n.inputs[0]
    axis = n.attr("axis", 0) % len(x.shape)
    outputs = len(n.proto.output)
    sizes = n.constant(1, "split") if n.input(1) is not None else n.attr("split")
    if sizes is None:
        size = -(-x.shape[axis] // n.attr("num_outputs", outputs))
        sizes = [min(size, x.shape[axis] - i * size) for i in range(outputs)]
    results, at = [], 0
    for size in sizes_of(list(sizes)):
        results.append(taken_range(x, axis, at, size))
        at = at + size
    return tuple(results)


def _tile(n: _Node) -> Value:
    x = n.inputs[0]
    repeats, shape = [int(r) for r in n.constant(1, "repeats")], sizes_of(x.shape)
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise CompileError(f"repeats {repeats} do not fit its rank-{len(shape)} input (one count >= 0 per dim)")
    # A unit dim before each dim, broadcast to the repeats: one broadcast
    # however many copies, not a concatenation of that many operands.
    spread = [d for s in shape for d in (1, s)]
    copies = [d for r, s in zip(repeats, shape) for d in (r, s)]
    return reshaped(_broadcast(reshaped(x, spread), copies), [r * s for r, s in zip(repeats, shape)])


def _dropout(n: _Node) -> Value:
    training = n.constant(2, "training_mode")  # known: dropout or not is the graph's shape
    if training is not None and bool(training):
        raise n.unsupported("training_mode=true is not supported (inference only)")
    if len(n.proto.output) > 1 and n.proto.output[1]:
        raise n.unsupported("the mask output is not supported")
    return n.inputs[0]


def _trilu(n: _Node) -> Value:
    x = n.inputs[0]
    k = int(n.constant(1, "k")) if n.input(1) is not None else 0
    rows, cols = x.shape[-2], x.shape[-1]
    return _where(triangle(rows, cols, k, bool(n.attr("upper", 1))), x, _zeros_like(x))


def _swish(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    return x * ops.sigmoid(x * n.attr("alpha", 1.0))


def _lp_normalization(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    axis, p = n.attr("axis", -1), n.attr("p", 2)
    if p == 1:
        norm = abs(x).sum(axis, True)
    elif p == 2:
        norm = ops.sqrt((x * x).sum(axis, True))
    else:
        raise n.unsupported(f"p={p} is not supported (1 or 2)")
    return ops.where(norm == 0, x * 0, x / norm)


def _space_to_depth(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    b, c, h, w = x.shape
    s = n.attr("blocksize")
    perm = (0, 3, 5, 1, 2, 4) if n.attr("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4)
    return x.reshape([b, c, h // s, s, w // s, s]).transpose(*perm).reshape([b, c * s * s, h // s, w // s])


def _depth_to_space(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    b, c, h, w = x.shape
    s = n.attr("blocksize")
    if n.attr("mode", "DCR") == "DCR":
        y = x.reshape([b, s, s, c // (s * s), h, w]).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape([b, c // (s * s), s, s, h, w]).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape([b, c // (s * s), h * s, w * s])


def _eye_like(n: _Node) -> Value:
    x = n.inputs[0]
    dtype = _dtype(n.attr("dtype")) if "dtype" in n.attrs else np.dtype(x.dtype)
    rows, cols = _sized(x.shape, dtype)
    return np.eye(rows, cols, n.attr("k", 0), dtype=dtype)


def _is_inf(n: _Node) -> Value:
    x = as_tensor(n.inputs[0])
    positive, negative = x == np.inf, x == -np.inf
    if not n.attr("detect_negative", 1):
        return positive
    if not n.attr("detect_positive", 1):
        return negative
    return _where(positive, np.array(True), negative)


def _pad(n: _Node) -> Value:
    n.only("mode")
    x = n.inputs[0]
    mode = n.attr("mode", "constant")
    if mode not in ("constant", "edge"):
        raise n.unsupported(f"mode {mode!r} is not supported (constant, edge)")
    pads = [int(p) for p in n.constant(1, "pads")]
    rank = len(x.shape)
    axes = [int(a) % rank for a in n.constant(3, "axes")] if n.input(3) is not None else list(range(rank))
    fill = n.constant(2, "constant_value") if n.input(2) is not None else None
    fill = np.zeros((), np.dtype(x.dtype)) if fill is None or fill.size == 0 else fill.reshape(()).astype(x.dtype)
    if any(p < 0 for p in pads):
        raise n.unsupported("negative pads (cropping) are not supported")
    result = x
    for i, axis in enumerate(axes):
        before, after = pads[i], pads[i + len(axes)]
        parts = []
        for width, edge in ((before, 0), (after, -1)):
            if not width:
                parts.append(None)
                continue
            shape = list(result.shape)
            shape[axis] = width
            if mode == "constant":
                parts.append(np.full(_sized(shape, x.dtype), fill, np.dtype(x.dtype)))
            else:
                index = [slice(None)] * rank
                index[axis] = slice(0, 1) if edge == 0 else slice(result.shape[axis] - 1, result.shape[axis])
                piece = indexed(result, tuple(index))
                parts.append(_broadcast(piece, shape))
        pieces = [p for p in (parts[0], result, parts[1]) if p is not None]
        if len(pieces) > 1:
            result = concatenated(pieces, axis)
    return result


def _mod(n: _Node) -> Value:
    """ONNX Mod: with ``fmod`` the remainder has the dividend's sign (C's
    fmod), else the divisor's (Python's ``%``)."""
    a, b = _folded(n.inputs)
    if n.attr("fmod", 0):
        return numpy_or([a, b], np.fmod, ops.fmod)
    return numpy_or([a, b], np.mod, ops.remainder)


def _gather_elements(n: _Node) -> Value:
    return gathered_along(n.inputs[0], n.inputs[1], n.attr("axis", 0))


def _negative_log_likelihood(n: _Node, log_prob: Value, target: Value, weight: Optional[Value]) -> Value:
    """ONNX NegativeLogLikelihoodLoss of ``log_prob`` [N, C, d...] at
    ``target`` [N, d...], weighted per class, with the node's reduction and
    ignore_index."""
    reduction = n.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise CompileError(f"reduction {reduction!r} is not one of none, sum, mean")
    ignore = n.attr("ignore_index")
    kept = None if ignore is None else target != np.asarray(ignore, np.dtype(target.dtype))
    # An ignored target may be any value: read class 0 there, weighted 0.
    safe = target if kept is None else _where(kept, target, _zeros_like(target))
    picked = reshaped(gathered_along(log_prob, reshaped(safe, [safe.shape[0], 1, *safe.shape[1:]]), 1),
                       list(safe.shape))
    dtype = np.dtype(log_prob.dtype)
    weights = np.ones(safe.shape, dtype) if weight is None else \
        numpy_or([weight, safe], lambda w, t: np.take(w, t, 0), lambda w, t: ops.take(w, t, 0))
    if kept is not None:
        weights = _where(kept, weights, np.zeros((), dtype))
    loss = -(as_tensor(picked) * weights)
    if reduction == "none":
        return loss
    total = loss.sum()
    return total if reduction == "sum" else total / as_tensor(weights).sum()


def _nll_loss(n: _Node) -> Value:
    return _negative_log_likelihood(n, n.inputs[0], n.inputs[1], n.input(2))


def _softmax_cross_entropy_loss(n: _Node) -> Union[Value, tuple[Value, ...]]:
    log_prob = ops.log_softmax(n.inputs[0], axis=1)
    loss = _negative_log_likelihood(n, log_prob, n.inputs[1], n.input(2))
    return (loss, log_prob) if len(n.proto.output) > 1 and n.proto.output[1] else loss


def _arg_reduce(kind: str) -> Callable[[_Node], Value]:
    """ArgMax/ArgMin: the first (or, with select_last_index, last) index of
    the extreme along ``axis``; a NaN counts as the extreme, as in numpy."""
    def convert(n: _Node) -> Value:
        n.only("axis", "keepdims", "select_last_index")
        x = as_tensor(n.inputs[0])
        axis = n.attr("axis", 0) % max(x.ndim, 1)
        return arg_extreme(x, axis, kind, bool(n.attr("keepdims", 1)), bool(n.attr("select_last_index", 0)))
    return convert


# The most elements TopK selects: it unrolls one max and one select per element.
_MAX_TOP_K = 64


def _top_k(n: _Node) -> tuple[Value, Value]:
    """TopK with a constant k: k rounds, each taking the extreme of the
    elements not yet taken (the lowest index among equal ones, as ONNX
    orders them), so the results come sorted."""
    n.only("axis", "largest", "sorted")
    x = as_tensor(n.inputs[0])
    k = int(n.constant(1, "k").reshape(-1)[0])
    axis = n.attr("axis", -1) % x.ndim
    size = x.shape[axis]
    if not 0 <= k <= size:
        raise CompileError(f"k = {k} is not in [0, {size}], the size of axis {axis}")
    if k > _MAX_TOP_K:
        raise n.unsupported(f"k = {k} is more than the {_MAX_TOP_K} elements tessel's TopK selects")
    kind = "max" if n.attr("largest", 1) else "min"
    shape = [1] * x.ndim
    shape[axis] = size
    index = np.arange(size, dtype=np.int64).reshape(shape)
    taken = np.zeros(shape, bool)
    values, indices = [], []
    for _ in range(k):
        # Taken elements stand aside; among the rest, the extreme's first index.
        extreme = getattr(ops.where(taken, x.min(axis, True) if kind == "max" else x.max(axis, True), x),
                          kind)(axis, True)
        hit = ops.where(taken, False, ops.where(x != x, True, x == extreme))
        at = ops.where(hit, index, np.int64(size)).min(axis, True)
        values.append(extreme)
        indices.append(at)
        taken = ops.where(taken, True, index == at)
    if not values:
        empty = [d if i != axis else 0 for i, d in enumerate(x.shape)]
        return np.zeros(empty, x.dtype), np.zeros(empty, np.int64)
    return ops.concatenate(values, axis), ops.concatenate(indices, axis)


def _einsum(n: _Node) -> Value:
    """Einsum as sums, transposes and batched matmuls, contracting the
    operands left to right: of two operands' shared letters, those a later
    operand or the output needs are the batch, the others the matmul's K."""
    equation = n.attr("equation").replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(n.inputs):
        raise CompileError(f"equation {equation!r} names {len(specs)} operands; the node has {len(n.inputs)}")
    # An ellipsis stands for the leading dims, broadcast across operands
    # (right-aligned, as numpy): letters of their own, first in an implicit output.
    spare = [c for c in string.ascii_letters if c not in equation]
    spans = [len(value.shape) - len(spec) + 3 if "..." in spec else 0 for spec, value in zip(specs, n.inputs)]
    dots = "".join(spare[:max(spans, default=0)])
    specs = [spec.replace("...", dots[len(dots) - span:]) for spec, span in zip(specs, spans)]
    if not arrow:  # the implicit output: the letters used once, in order
        letters = "".join(specs)
        output = dots + "".join(sorted(c for c in set(letters) - set(dots) if letters.count(c) == 1))
    output = output.replace("...", dots)
    if "." in "".join(specs) + output:
        raise CompileError(f"equation {equation!r} has a '.' outside an ellipsis")
    sizes: dict[str, int] = {}
    for spec, value in zip(specs, n.inputs):
        if len(spec) != len(value.shape):
            raise CompileError(f"operand {spec!r} of {equation!r} has rank {len(value.shape)}")
        for letter, size in zip(spec, value.shape):
            if sizes.setdefault(letter, size) != size and 1 not in (size, sizes[letter]):
                raise CompileError(f"letter {letter!r} of {equation!r} is both {sizes[letter]} and {size}")
            sizes[letter] = max(size, sizes[letter]) if size else 0
    operands = [_einsum_diagonal(spec, ops.broadcast_to(value, [sizes[c] for c in spec]) if
                                 list(value.shape) != [sizes[c] for c in spec] else as_tensor(value))
                for spec, value in zip(specs, n.inputs)]
    spec, x = operands[0]
    for i, (other_spec, other) in enumerate(operands[1:], 1):
        later = set(output).union(*(s for s, _ in operands[i + 1:]))
        spec, x = _einsum_sum(spec, x, later | set(other_spec))
        other_spec, other = _einsum_sum(other_spec, other, later | set(spec))
        spec, x = _einsum_pair(spec, x, other_spec, other, later)
    spec, x = _einsum_sum(spec, x, set(output))
    return ops.transpose(x, [spec.index(c) for c in output]) if spec != output else x


def _einsum_diagonal(spec: str, x: Tensor) -> tuple[str, Tensor]:
    """An operand with a repeated letter (``ii``) as its diagonal."""
    while len(set(spec)) < len(spec):
        letter = next(c for c in spec if spec.count(c) > 1)
        first = spec.index(letter)
        second = spec.index(letter, first + 1)
        shape = [1] * x.ndim
        shape[first] = shape[second] = x.shape[first]
        on_diagonal = np.eye(x.shape[first], dtype=bool).reshape(shape)
        x = ops.where(on_diagonal, x, np.zeros((), x.dtype)).sum(second)
        spec = spec[:second] + spec[second + 1:]
    return spec, x


def _einsum_sum(spec: str, x: Tensor, needed: set[str]) -> tuple[str, Tensor]:
    """``x`` summed over its letters that ``needed`` lacks."""
    gone = tuple(i for i, c in enumerate(spec) if c not in needed)
    if not gone:
        return spec, x
    return "".join(c for c in spec if c in needed), x.sum(gone, False)


def _einsum_pair(a_spec: str, a: Tensor, b_spec: str, b: Tensor, needed: set[str]) -> tuple[str, Tensor]:
    """Two operands as one [batch, M, K] @ [batch, K, N] matmul over their
    shared letters (batch: those still ``needed``; K: the others)."""
    shared = [c for c in a_spec if c in b_spec]
    batch = [c for c in shared if c in needed]
    inner = [c for c in shared if c not in needed]
    rows = [c for c in a_spec if c not in shared]
    cols = [c for c in b_spec if c not in shared]
    extent = dict(zip(a_spec, a.shape)) | dict(zip(b_spec, b.shape))

    def flat(x: Tensor, spec: str, groups: list[list[str]]) -> Tensor:
        order = [spec.index(c) for group in groups for c in group]
        x = ops.transpose(x, order) if order != list(range(x.ndim)) else x
        return ops.reshape(x, [math.prod(extent[c] for c in group) for group in groups])

    y = flat(a, a_spec, [batch, rows, inner]) @ flat(b, b_spec, [batch, inner, cols])
    spec = "".join(batch + rows + cols)
    return spec, ops.reshape(y, [extent[c] for c in spec])


def _scan(x: Value, axis: int, combine: Callable[[Value, Value], Value], identity: Any) -> Value:
    """The inclusive prefix scan of ``x`` along ``axis`` by ``combine``, in
    log2(n) steps: at step k each element combines with the one 2^k before
    it (Hillis-Steele), the first 2^k combining with ``identity``."""
    size, shift = x.shape[axis], 1
    while shift < size:
        index = [slice(None)] * len(x.shape)
        index[axis] = slice(0, size - shift)
        shape = list(x.shape)
        shape[axis] = shift
        before = _broadcast(np.asarray(identity, np.dtype(x.dtype)), shape)
        x = combine(x, concatenated([before, indexed(x, tuple(index))], axis))
        shift *= 2
    return x


def _cumulative(kind: str) -> Callable[[_Node], Value]:
    """CumSum and CumProd (axis a constant), exclusive and reversed ones too."""
    def convert(n: _Node) -> Value:
        n.only("exclusive", "reverse")
        x = n.inputs[0]
        rank = len(x.shape)
        axis = int(n.constant(1, "axis").reshape(-1)[0])
        if not -rank <= axis < rank:
            raise CompileError(f"axis {axis} is not an axis of its rank-{rank} input")
        axis %= rank
        combine, identity = (lambda a, b: a + b, 0) if kind == "sum" else (lambda a, b: a * b, 1)
        if n.attr("reverse", 0):
            x = flipped(x, [axis])
        if n.attr("exclusive", 0):  # shifted by one: the identity first, the last element dropped
            index = [slice(None)] * rank
            index[axis] = slice(0, x.shape[axis] - 1)
            shape = list(x.shape)
            shape[axis] = 1
            x = concatenated([_broadcast(np.asarray(identity, np.dtype(x.dtype)), shape),
                               indexed(x, tuple(index))], axis)
        y = _scan(x, axis, combine, identity)
        return flipped(y, [axis]) if n.attr("reverse", 0) else y
    return convert


def _product(x: Value, axes: Sequence[int], keep: bool) -> Value:
    """The product over ``axes``, pairwise along each (log2(n)
    multiplications of halves, an odd last element carried)."""
    for axis in axes:
        if x.shape[axis] == 0:  # the empty product
            x = _broadcast(np.ones((), np.dtype(x.dtype)), [1 if i == axis else d for i, d in enumerate(x.shape)])
        while x.shape[axis] > 1:
            size, half = x.shape[axis], x.shape[axis] // 2
            index = [slice(None)] * len(x.shape)
            parts = []
            for at in ((0, half), (half, 2 * half), (2 * half, size)):
                index[axis] = slice(*at)
                parts.append(indexed(x, tuple(index)))
            x = parts[0] * parts[1]
            if size % 2:
                x = concatenated([x, parts[2]], axis)
    return x if keep else reshaped(x, [d for i, d in enumerate(x.shape) if i not in axes])


def _rotary_embedding(n: _Node) -> Value:
    """RotaryEmbedding: x [batch, heads, seq, head] (or [batch, seq, hidden]
    with num_heads), its first rotary_embedding_dim channels rotated by the
    cos/sin caches (at position_ids), as halves or interleaved pairs."""
    n.only("interleaved", "num_heads", "rotary_embedding_dim")
    x, cos, sin, positions = as_tensor(n.inputs[0]), n.inputs[1], n.inputs[2], n.input(3)
    shape = list(x.shape)
    if x.ndim == 4:
        x = ops.transpose(x, [0, 2, 1, 3])  # [batch, seq, heads, head]
    elif x.ndim == 3:
        heads = n.attr("num_heads", 0)
        if not heads or shape[2] % heads:
            raise CompileError(f"num_heads {heads} does not divide the hidden size {shape[2]} of its 3-D input")
        x = ops.reshape(x, [shape[0], shape[1], heads, shape[2] // heads])
    else:
        raise CompileError(f"its input has rank {x.ndim}; RotaryEmbedding takes 3-D or 4-D input")
    head = x.shape[3]
    rotated = n.attr("rotary_embedding_dim", 0) or head
    if rotated % 2 or rotated > head:
        raise CompileError(f"rotary_embedding_dim {rotated} is not an even size of at most the head size {head}")
    if positions is not None:
        cos, sin = (numpy_or([c, positions], lambda v, p: np.take(v, p, 0), lambda v, p: ops.take(v, p, 0))
                    for c in (cos, sin))
    if tuple(cos.shape)[-1] != rotated // 2:
        raise CompileError(f"its caches' last dim is {cos.shape[-1]}; rotary_embedding_dim / 2 is {rotated // 2}")
    cos, sin = (reshaped(c, [c.shape[0], c.shape[1], 1, rotated // 2]) for c in (cos, sin))
    part = x[:, :, :, :rotated] if rotated < head else x
    b, s, h = part.shape[:3]
    if n.attr("interleaved", 0):
        pairs = ops.reshape(part, [b, s, h, rotated // 2, 2])
        x1, x2 = (ops.reshape(pairs[:, :, :, :, i:i + 1], [b, s, h, rotated // 2]) for i in (0, 1))
    else:
        x1, x2 = part[:, :, :, :rotated // 2], part[:, :, :, rotated // 2:]
    real, imag = x1 * cos - x2 * sin, x1 * sin + x2 * cos
    if n.attr("interleaved", 0):
        joined = ops.reshape(ops.concatenate([ops.unsqueeze(real, 4), ops.unsqueeze(imag, 4)], 4), [b, s, h, rotated])
    else:
        joined = ops.concatenate([real, imag], 3)
    if rotated < head:
        joined = ops.concatenate([joined, x[:, :, :, rotated:]], 3)
    return ops.transpose(joined, [0, 2, 1, 3]) if len(shape) == 4 else ops.reshape(joined, shape)


def _center_crop_pad(n: _Node) -> Value:
    """CenterCropPad: each named axis cropped (the window's start rounded
    down) or zero-padded (the odd pad after) to its size."""
    x = n.inputs[0]
    rank = len(x.shape)
    sizes = [int(s) for s in n.constant(1, "shape").reshape(-1)]
    axes = [int(a) % rank for a in n.attr("axes", range(rank))]
    if len(sizes) != len(axes):
        raise CompileError(f"its shape has {len(sizes)} values; it crops or pads {len(axes)} axes")
    for axis, size in zip(axes, sizes):
        have = x.shape[axis]
        if size < have:
            index = [slice(None)] * rank
            start = (have - size) // 2
            index[axis] = slice(start, start + size)
            x = indexed(x, tuple(index))
        elif size > have:
            before = (size - have) // 2
            parts = []
            for width in (before, size - have - before):
                shape = list(x.shape)
                shape[axis] = width
                parts.append(_broadcast(np.zeros((), np.dtype(x.dtype)), shape) if width else None)
            x = concatenated([p for p in (parts[0], x, parts[1]) if p is not None], axis)
    return x


def _compress(n: _Node) -> Value:
    """Compress with a constant condition: a gather of the kept indices."""
    x, condition = n.inputs[0], n.constant(1, "condition").reshape(-1).astype(bool)
    axis = n.attr("axis")
    if axis is None:
        x, axis = reshaped(x, [math.prod(x.shape)]), 0
    axis %= len(x.shape)
    kept = np.nonzero(condition[:x.shape[axis]])[0].astype(np.int64)
    return numpy_or([x], lambda v: np.take(v, kept, axis), lambda v: ops.take(v, kept, axis))


# GridSample's mode names: opset 16's, and the ones of opset 20 on.
_GRID_SAMPLE_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic",
                      "bicubic": "cubic"}


def _outside(x: Tensor, low: float, high: float) -> Tensor:
    """Where float32 ``x`` is below ``low`` or above ``high`` (not NaN)."""
    return ops.where(x < np.float32(low), np.array(True), x > np.float32(high))


def _reflected(x: Tensor, low: float, high: float) -> Tensor:
    """Float32 ``x`` outside [low, high] reflected at the bounds until inside, as the onnx reference's
    ``_gs_reflect``."""
    span = high - low
    if span == 0:  # one pixel, corners aligned: the reference divides by zero; torch takes the pixel
        return ops.where(_outside(x, low, high), np.float32(low), x)
    period = np.float32(2 * span)
    # The exact fmod by the period first keeps a far coordinate's fraction, which x - low would round off.
    t = ops.remainder(ops.fmod(x, period) - np.float32(low), period)
    mirrored = ops.where(t > np.float32(span), period - t, t) + np.float32(low)
    return ops.where(_outside(x, low, high), mirrored, x)


def _grid_taps(pixel: Tensor, size: int, mode: str, padding: str,
               align: bool) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
    """One spatial dim of a GridSample, from the float32 pixel coordinates [N, P]: the index of each tap
    [N, P, taps] (int64, within ``size``), whether it lies inside the image (zeros padding only) and the
    float32 weights [N, P, taps] (not for nearest), in the onnx reference's order of operations."""
    low, high = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    x = ops.round(pixel) if mode == "nearest" else pixel  # halves to even, as torch and the reference
    # Only a coordinate outside [low, high] moves: a border-padded cubic one at -0.4 keeps its taps -2 to 1.
    if padding == "border":
        x = ops.where(_outside(x, low, high), ops.minimum(ops.maximum(x, np.float32(0)), np.float32(size - 1)), x)
    elif padding == "reflection":
        x = _reflected(x, low, high)
    base = ops.floor(x)
    offsets = {"nearest": [0.0], "linear": [0.0, 1.0], "cubic": [-1.0, 0.0, 1.0, 2.0]}[mode]
    taps = ops.unsqueeze(base, 2) + np.array(offsets, np.float32)
    if padding == "reflection":
        taps = _reflected(taps, low, high)
    # The where maps NaN to index 0; far taps clamp into range (weighted 0 with zeros padding).
    index = ops.cast(ops.minimum(ops.where(taps >= np.float32(0), taps, np.float32(0)), np.float32(size - 1)),
                     np.int64)
    inside = ops.where(taps >= np.float32(0), taps <= np.float32(size - 1), np.array(False)) \
        if padding == "zeros" else None
    if mode == "nearest":
        return index, inside, None
    t = x - base
    if mode == "linear":
        weights = [1.0 - t, t]
    else:  # Keys' cubic convolution with alpha -0.75, term by term as the reference
        a, near, far = -0.75, 1.0 - t, 2.0 - t
        weights = [((a * (t + 1.0) - 5 * a) * (t + 1.0) + 8 * a) * (t + 1.0) - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1.0,
                   ((a + 2) * near - (a + 3)) * near * near + 1.0,
                   ((a * far - 5 * a) * far + 8 * a) * far - 4 * a]
    return index, inside, ops.concatenate([ops.unsqueeze(w, 2) for w in weights], 2)


def _grid_sample(n: _Node) -> Value:
    """GridSample of any spatial rank r: X [N, C, d1..dr] sampled at the normalized grid [N, o1..or, r]
    (its last entry indexes d1). Each output point gathers its nearest, 2^r linear or 4^r cubic taps as rows
    of X laid out [N * d1..dr, C] in one graph.gather, then weighs them one dim at a time, the last first
    as the reference."""
    n.only("align_corners", "mode", "padding_mode")
    x, grid = as_tensor(n.inputs[0]), as_tensor(n.inputs[1])
    mode, padding = _GRID_SAMPLE_MODES.get(n.attr("mode", "linear")), n.attr("padding_mode", "zeros")
    align = bool(n.attr("align_corners", 0))
    if mode is None or padding not in ("zeros", "border", "reflection"):
        raise CompileError(f"mode {n.attr('mode')!r} or padding_mode {padding!r} is not one of "
                           f"{', '.join(_GRID_SAMPLE_MODES)} and zeros, border, reflection")
    batch, channels, dims, rank = x.shape[0], x.shape[1], list(x.shape[2:]), x.ndim - 2
    if rank < 1 or grid.ndim != x.ndim or grid.shape[0] != batch or grid.shape[-1] != rank:
        raise CompileError(f"grid {list(grid.shape)} does not sample X {list(x.shape)}: it takes [N, ..., r] "
                           "for X's N and r spatial dims")
    if 0 in x.shape or 0 in grid.shape:
        raise n.unsupported("an empty X or grid is not supported")
    if mode != "nearest" and not is_float(x.dtype):
        raise n.unsupported(f"{mode} sampling of {np.dtype(x.dtype).name} X is not supported (nearest is)")
    out, points = list(grid.shape[1:-1]), math.prod(grid.shape[1:-1])
    grid = grid.reshape([batch, points, rank])
    rows = np.arange(batch, dtype=np.int64).reshape([batch] + [1] * (rank + 1)) * np.int64(math.prod(dims))
    inside, weights = None, []
    for i, size in enumerate(dims):
        g = grid[:, :, rank - 1 - i]
        # Denormalized in the grid's dtype, then float32: the reference's coordinates.
        pixel = (g + 1.0) / 2.0 * float(size - 1) if align else ((g + 1.0) * float(size) - 1.0) / 2.0
        index, valid, w = _grid_taps(cast_to(pixel, np.dtype(np.float32)), size, mode, padding, align)
        shape = [batch, points] + [1] * rank
        shape[2 + i] = index.shape[2]  # dim i's taps along axis 2 + i
        rows = rows + ops.reshape(index, shape) * np.int64(math.prod(dims[i + 1:]))
        if valid is not None:
            valid = ops.reshape(valid, shape)
            inside = valid if inside is None else ops.where(inside, valid, np.array(False))
        weights.append(None if w is None else cast_to(w, x.dtype))
    table = ops.reshape(ops.transpose(x, [0, *range(2, x.ndim), 1]), [-1, channels])
    values = ops.take(table, rows, 0)  # [N, P, taps of d1, ..., taps of dr, C]
    if inside is not None:
        values = ops.where(ops.unsqueeze(inside, rank + 2), values, np.zeros((), np.dtype(x.dtype)))
    for i in reversed(range(rank)):
        if weights[i] is None:
            values = ops.squeeze(values, 2 + i)
        else:
            w = ops.reshape(weights[i], [batch, points] + [1] * i + [weights[i].shape[2], 1])
            values = (values * w).sum(2 + i)
    return ops.reshape(ops.transpose(values, [0, 2, 1]), [batch, channels, *out])


def _scattered(n: _Node, data: Value, targets: np.ndarray, updates: Value) -> Value:
    """``data`` with ``updates`` written (or combined by the node's
    reduction) at the flat positions ``targets`` (one per update element,
    known while importing), in the updates' order: a gather of the updates
    and a select per round, one round per repeat of a position."""
    reduction = n.attr("reduction", "none")
    combine = {"none": lambda old, new: new, "add": lambda old, new: old + new,
               "mul": lambda old, new: old * new, "max": _maximum, "min": _minimum}.get(reduction)
    if combine is None:
        raise CompileError(f"reduction {reduction!r} is not one of none, add, mul, max, min")
    size, targets = math.prod(data.shape), targets.reshape(-1)
    # The r-th update (in order) to each position is in round r.
    order = np.argsort(targets, kind="stable")
    repeat = np.empty_like(order)
    repeat[order] = np.arange(targets.size) - np.searchsorted(targets[order], targets[order])
    flat, values = reshaped(data, [size]), reshaped(updates, [targets.size])
    for r in range(int(repeat.max()) + 1 if targets.size else 0):
        source, written = np.zeros(size, np.int64), np.zeros(size, bool)
        source[targets[repeat == r]] = np.nonzero(repeat == r)[0]
        written[targets[repeat == r]] = True
        picked = numpy_or([values], lambda v, s=source: np.take(v, s), lambda v, s=source: ops.take(v, s, 0))
        flat = _where(written, combine(flat, picked), flat)
    return reshaped(flat, list(data.shape))


def _scatter_elements(n: _Node) -> Value:
    """ScatterElements with constant indices."""
    data, indices, updates = n.inputs[0], n.constant(1, "indices"), n.inputs[2]
    axis = n.attr("axis", 0) % len(data.shape)
    coords = list(np.indices(indices.shape, dtype=np.int64))
    coords[axis] = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
    return _scattered(n, data, np.ravel_multi_index(coords, data.shape), updates)


def _scatter_nd(n: _Node) -> Value:
    """ScatterND with constant indices: each k-tuple names a block of the
    data's trailing dims, written by one slice of the updates."""
    data, indices, updates = n.inputs[0], n.constant(1, "indices"), n.inputs[2]
    k = indices.shape[-1]
    lead = np.asarray(data.shape[:k], np.int64)
    tuples = indices.reshape(-1, k).astype(np.int64)
    tuples = np.where(tuples < 0, tuples + lead, tuples)
    block = math.prod(data.shape[k:])
    starts = np.ravel_multi_index(tuple(tuples.T), data.shape[:k]) * block if k else np.zeros(len(tuples), np.int64)
    return _scattered(n, data, starts[:, None] + np.arange(block, dtype=np.int64), updates)


def _hardmax(n: _Node) -> Value:
    n.only("axis")
    x = as_tensor(n.inputs[0])
    axis = n.attr("axis", -1) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    first = arg_extreme(x, axis, "max", True)
    return ops.cast(first == np.arange(x.shape[axis], dtype=np.int64).reshape(shape), x.dtype)


def _one_hot(n: _Node) -> Value:
    indices, depth, values = n.inputs[0], int(n.constant(1, "depth").reshape(())), n.inputs[2]
    rank = len(indices.shape) + 1
    axis = n.attr("axis", -1) % rank
    classes = np.arange(_sized([depth], indices.dtype)[0], dtype=np.dtype(indices.dtype))
    classes = classes.reshape([depth] + [1] * (rank - 1 - axis))
    positive = _where(indices < 0, indices + np.asarray(depth, np.dtype(indices.dtype)), indices)
    expanded = numpy_or([positive], lambda v: np.expand_dims(v, axis), lambda v: ops.unsqueeze(v, axis))
    off, on = (indexed(values, i) for i in (0, 1))
    return _where(expanded == classes, on, off)


def _attention_heads(n: _Node, x: Tensor, heads: Optional[int], name: str) -> Tensor:
    """A 3-D Attention operand (batch, seq, heads * head_dim) as 4-D (batch, heads, seq, head_dim)."""
    if not heads or heads < 0 or x.shape[2] % heads:
        raise n.unsupported(f"3-D inputs without q_num_heads and kv_num_heads that divide {name}'s hidden size "
                            "are not supported")
    return x.reshape([x.shape[0], x.shape[1], heads, x.shape[2] // heads]).transpose([0, 2, 1, 3])


def _attention(n: _Node) -> Union[Value, tuple[Value, ...]]:
    """Scaled dot-product attention on 4-D (batch, heads, seq, head_dim) inputs, or 3-D (batch, seq, hidden)
    ones split into q_num_heads and kv_num_heads heads; grouped K/V heads; a boolean or additive mask (one
    shorter than the keys masks the rest); causal and sliding-window masking at the queries' absolute
    positions (after past_key, or per batch from nonpad_kv_seqlen, which also masks the padding keys);
    softcap; softmax_precision; the past/present K/V cache and qk_matmul_output."""
    n.only("is_causal", "scale", "softcap", "q_num_heads", "kv_num_heads", "qk_matmul_output_mode",
           "softmax_precision", "left_window_size", "right_window_size")
    q, k, v = (as_tensor(n.inputs[i]) for i in range(3))
    q_heads, kv_heads, three_d = n.attr("q_num_heads"), n.attr("kv_num_heads"), q.ndim == 3
    if q.ndim == k.ndim == v.ndim == 3:
        q = _attention_heads(n, q, q_heads, "Q")
        k, v = (_attention_heads(n, t, kv_heads, name) for t, name in ((k, "K"), (v, "V")))
    elif not q.ndim == k.ndim == v.ndim == 4:
        raise n.unsupported("Q, K and V that are not all 3-D or all 4-D are not supported")
    elif q_heads not in (None, q.shape[1]) or kv_heads not in (None, k.shape[1]):
        raise n.unsupported("q_num_heads or kv_num_heads other than the heads of 4-D inputs is not supported")
    if k.shape[1] != v.shape[1] or q.shape[1] % k.shape[1]:
        raise n.unsupported("query heads that are not a multiple of the key and value heads are not supported")
    mode, softcap, precision = n.attr("qk_matmul_output_mode", 0), n.attr("softcap", 0.0), n.attr("softmax_precision")
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if mode not in (0, 1, 2, 3) or softcap < 0 or min(left, right) < -1:
        raise n.unsupported(f"qk_matmul_output_mode {mode}, softcap {softcap} or window sizes {left}, {right} "
                            "outside the spec's values are not supported")
    # DOUBLE runs in float32, tessel's widest float: the probabilities, rounded to the inputs' float32 or
    # float16, differ by an ulp or so.
    softmax_dtypes = {None: None, 1: np.dtype(np.float32), 10: np.dtype(np.float16), 11: np.dtype(np.float32)}
    if precision not in softmax_dtypes:
        raise n.unsupported(f"softmax_precision {precision} (only FLOAT, FLOAT16 and DOUBLE are) is not supported")
    past_k, past_v, lengths = n.input(4), n.input(5), n.input(6)
    if (past_k is None) != (past_v is None) or (past_k is not None and lengths is not None):
        raise n.unsupported("past_key without past_value (or the reverse), or with nonpad_kv_seqlen, is not supported")
    offset: Union[int, Value] = 0  # the keys before the first query's position
    if past_k is not None:
        offset = past_k.shape[2]
        k, v = (ops.concatenate([past, t], 2) for past, t in ((past_k, k), (past_v, v)))
    q_len, kv_len = q.shape[2], k.shape[2]
    ahead = np.arange(kv_len)[None, :] - np.arange(q_len)[:, None]  # key j's distance after query i
    allowed: list[Value] = []  # the conditions a key must meet, each broadcasting to (batch, heads, q, kv)
    if lengths is not None:  # per batch: the offset, and keys from nonpad_kv_seqlen on are padding
        lengths = numpy_or([lengths], lambda x: x.reshape(-1, 1, 1, 1), lambda x: x.reshape([-1, 1, 1, 1]))
        ahead = ahead.astype(lengths.dtype)
        allowed.append(lengths > np.arange(kv_len, dtype=lengths.dtype))
        offset = lengths - q_len
    # Value operands on the left: a numpy array on the left would take a Tensor as an object array.
    if n.attr("is_causal", 0):
        allowed.append(offset >= ahead)
    if left >= 0:
        allowed.append(offset - left <= ahead)
    if right >= 0:
        allowed.append(offset + right >= ahead)
    mask = n.input(3)
    boolean = mask is None or np.dtype(mask.dtype) == np.bool_
    masked = np.array(False) if boolean else np.dtype(mask.dtype).type(-np.inf)
    if mask is not None:
        if mask.ndim == 0 or mask.shape[-1] > kv_len:
            raise n.unsupported("an attn_mask that is 0-D or longer than the key sequence is not supported")
        if mask.shape[-1] < kv_len:  # the spec pads it with masked keys
            fill = np.full(tuple(mask.shape[:-1]) + (kv_len - mask.shape[-1],), masked)
            mask = numpy_or([mask], lambda m: np.concatenate([m, fill], -1),
                            lambda m: ops.concatenate([m, fill], m.ndim - 1))
    for condition in allowed:
        mask = condition if mask is None else _where(condition, mask, masked)
    y, stages = attention_stages(q, k, v, mask, scale=n.attr("scale"), softcap=softcap,
                                 softmax_dtype=softmax_dtypes[precision])
    if three_d:  # back to (batch, seq, heads * head_dim)
        y = y.transpose([0, 2, 1, 3]).reshape([q.shape[0], q_len, -1])
    if not any(n.proto.output[1:]):
        return y
    # Mode 0 is the scores before softcap, as the spec and its function body say (onnx's reference gives mode 1's).
    return (y, k, v, stages[mode])[:len(n.proto.output)]


def _saturated(value: float, dtype: np.dtype) -> np.ndarray:
    """``value`` in ``dtype`` as the reference casts Resize's float results:
    rounded for integers, and clipped to the dtype's range."""
    if dtype.kind in "iu":
        return np.asarray(np.clip(np.round(value), np.iinfo(dtype).min, np.iinfo(dtype).max)).astype(dtype)
    return np.asarray(np.clip(value, np.finfo(dtype).min, np.finfo(dtype).max)).astype(dtype)


def _resampled(n: _Node, x: Value, axis: int, weights: np.ndarray, outside: Optional[np.ndarray]) -> Value:
    """``x`` resized along ``axis`` by ``weights`` ``[out, in]`` (float64): a
    gather where every row copies one element, else a matmul in float32;
    outputs that ``outside`` marks are the extrapolation_value."""
    dtype = np.dtype(x.dtype)
    if outside is not None:  # their rows are replaced: any one copy keeps the gather
        weights = np.where(outside[:, None], np.eye(1, weights.shape[1]), weights)
    if _interpolate.copied(weights) is None and not is_float(dtype):
        raise n.unsupported(f"{n.attr('mode', 'nearest')} Resize of {dtype.name} data is not supported (only where "
                            "each output copies one element); tessel interpolates floats")
    y = _interpolate.resampled(x, axis, weights)
    if outside is not None and outside.any():
        mask = outside.reshape((-1,) + (1,) * (len(x.shape) - axis - 1))
        y = ops.where(mask, _saturated(n.attr("extrapolation_value", 0.0), dtype), y)
    return y


def _resize(n: _Node) -> Value:
    """Resize (opsets 13 to 19), one axis at a time: the weights of each are
    built while importing (frontends/_interpolate.py), so scales, sizes and
    roi must be constants."""
    n.only("antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
           "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode")
    x = n.inputs[0]
    dtype, rank = _supported(np.dtype(x.dtype)), len(x.shape)
    mode, coordinates = n.attr("mode", "nearest"), n.attr("coordinate_transformation_mode", "half_pixel")
    nearest_mode, policy = n.attr("nearest_mode", "round_prefer_floor"), n.attr("keep_aspect_ratio_policy", "stretch")
    for name, value, known in (("mode", mode, _interpolate.MODES),
                               ("coordinate_transformation_mode", coordinates, _interpolate.COORDINATE_MODES),
                               ("nearest_mode", nearest_mode, _interpolate.NEAREST_MODES),
                               ("keep_aspect_ratio_policy", policy, ("stretch", "not_larger", "not_smaller"))):
        if value not in known:
            raise n.unsupported(f"{name}={value} is not supported; tessel takes {', '.join(known)}")
    antialias = bool(n.attr("antialias", 0))
    if antialias and mode == "nearest":
        raise n.unsupported("antialias=1 with mode nearest is not supported (antialiasing is defined for linear "
                            "and cubic)")
    if coordinates == "tf_crop_and_resize" and dtype == np.bool_:
        raise n.unsupported("tf_crop_and_resize of bool data is not supported (its extrapolation_value is a float)")
    axes = [int(a) for a in n.attr("axes", range(rank))]
    if not all(-rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        raise CompileError(f"its axes {axes} are not distinct axes of its rank-{rank} input")
    axes = [a % rank for a in axes]
    # An empty scales or sizes stands for an omitted one (as exporters of opsets 11 to 13 give them).
    scales, sizes = (None if v is None or v.size == 0 else v.reshape(-1)
                     for v in (n.constant(2, "scales"), n.constant(3, "sizes")))
    if (scales is None) == (sizes is None):
        raise CompileError(f"it takes one of scales and sizes, not {'both' if scales is not None else 'neither'}")
    values, what = (scales, "scales") if sizes is None else (sizes, "sizes")
    if len(values) != len(axes):
        raise CompileError(f"its {what} has {len(values)} values; it resizes {len(axes)} axes")
    dims = [x.shape[a] for a in axes]
    if 0 in dims:
        raise n.unsupported("resizing a dim of size 0 is not supported")
    if sizes is None:
        factors = [float(s) for s in scales]
        if not all(math.isfinite(f) and f > 0 for f in factors):
            raise CompileError(f"its scales {scales.tolist()} are not all positive")
        outs = [int(f * d) for f, d in zip(factors, dims)]
    else:
        if any(s < 0 for s in sizes):
            raise CompileError(f"its sizes {sizes.tolist()} include a negative one")
        factors, outs = [int(s) / d for s, d in zip(sizes, dims)], [int(s) for s in sizes]
        if policy != "stretch":  # one scale for all axes, the smallest or largest; sizes rounded half up
            scale = (min if policy == "not_larger" else max)(factors)
            factors, outs = [scale] * len(dims), [int(scale * d + 0.5) for d in dims]
    starts, ends = [np.float64(0.0)] * len(axes), [np.float64(1.0)] * len(axes)
    if coordinates == "tf_crop_and_resize":
        roi = n.constant(1, "roi")
        if roi is None or roi.size != 2 * len(axes) or not np.all(np.isfinite(roi)):
            raise CompileError(f"tf_crop_and_resize takes a finite roi of {2 * len(axes)} values, a start and an "
                               "end per axis")
        # Kept in their dtype: the reference computes the coordinates with them so.
        starts, ends = list(roi.reshape(-1)[:len(axes)]), list(roi.reshape(-1)[len(axes):])
        spec_outs = [math.floor(d * (float(e) - float(s)) * f) for d, s, e, f in zip(dims, starts, ends, factors)]
        if sizes is None and spec_outs != outs:
            raise n.unsupported(f"tf_crop_and_resize by scales to a part of the input is not supported: the ONNX spec "
                                f"makes its output {spec_outs} (the roi's part of the size), the onnx reference {outs}")
    y = x
    for axis, size, out, factor, start, end in zip(axes, dims, outs, factors, starts, ends):
        if math.isclose(factor, 1.0) and out == size and math.isclose(start, 0.0) and math.isclose(end, 1.0):
            continue  # the reference leaves such an axis as it is, even where the scale is only close to 1
        _sized((out, max(size, _interpolate.tap_count(mode, factor, antialias))), np.float64)
        sampled = _interpolate.source_coordinates(coordinates, size, out, factor, (start, end))
        weights_at = functools.partial(_interpolate.weights, size_in=size, scale=factor, mode=mode,
                                       nearest_mode=nearest_mode, cubic_a=n.attr("cubic_coeff_a", -0.75),
                                       antialias=antialias, exclude_outside=bool(n.attr("exclude_outside", 0)))
        weights = weights_at(sampled)
        if coordinates == "pytorch_half_pixel" and out == 1 and not np.array_equal(weights, weights_at(np.zeros(1))):
            raise n.unsupported(f"pytorch_half_pixel to a length of 1 is not supported here: the ONNX spec samples the "
                                f"input at 0, the onnx reference at {sampled[0]:g}, and the results differ")
        outside = (sampled < 0) | (sampled > size - 1) if coordinates == "tf_crop_and_resize" else None
        y = _resampled(n, y, axis, weights, outside)
    return y


def _is_nan(n: _Node) -> Value:
    # NaN is the one value unequal to itself (graph.compare's ne is unordered on floats, as numpy's is).
    x = n.inputs[0]
    return x != x


_FLOAT_UNARY: dict[str, tuple[Callable, Callable]] = {
    "Neg": (lambda x: -x, np.negative), "Abs": (abs, np.abs), "Exp": (ops.exp, np.exp), "Log": (ops.log, np.log),
    "Sqrt": (ops.sqrt, np.sqrt), "Relu": (ops.relu, lambda x: np.maximum(x, 0)),
    "Sigmoid": (ops.sigmoid, lambda x: 1 / (1 + np.exp(-x))), "Tanh": (ops.tanh, np.tanh),
    "Sin": (ops.sin, np.sin), "Cos": (ops.cos, np.cos),
    "Erf": (ops.erf, lambda x: np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)),
    "Reciprocal": (lambda x: 1 / x, np.reciprocal), "Softplus": (_softplus, lambda x: np.log1p(np.exp(x))),
    "Softsign": (lambda x: x / (abs(x) + 1), lambda x: x / (1 + np.abs(x))),
    "Mish": (lambda x: x * ops.tanh(_softplus(x)), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "Sign": (_sign, np.sign), "Identity": (lambda x: x, lambda x: x),
    "Floor": (ops.floor, np.floor), "Ceil": (ops.ceil, np.ceil), "Round": (ops.round, np.round),
}

CONVERTERS: dict[str, Callable[[_Node], Any]] = {
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b), "Mul": _binary(lambda a, b: a * b),
    "Div": _binary(_div), "Pow": _pow,
    "Max": _variadic(_maximum), "Min": _variadic(_minimum), "Sum": _variadic(lambda a, b: a + b), "Mean": _mean,
    "Equal": _compare("eq"), "Less": _compare("lt"), "LessOrEqual": _compare("le"), "Greater": _compare("gt"),
    "GreaterOrEqual": _compare("ge"), "Not": _not, "And": _logical("and"), "Or": _logical("or"),
    "Xor": _logical("xor"), "Where": lambda n: _where(*_folded(n.inputs)), "Cast": _cast, "CastLike": _cast_like,
    "Clip": _clip, "MatMul": lambda n: matmul(*n.inputs), "Gemm": _gemm,
    "ReduceSum": _reduce("sum"), "ReduceMean": _reduce("mean"), "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"), "ReduceSumSquare": _reduce("sum_square"), "ReduceL1": _reduce("l1"),
    "ReduceL2": _reduce("l2"), "ReduceLogSum": _reduce("log_sum"), "ReduceLogSumExp": _reduce("log_sum_exp"),
    "ReduceProd": _reduce("prod"), "CumSum": _cumulative("sum"), "CumProd": _cumulative("prod"),
    "RotaryEmbedding": _rotary_embedding, "CenterCropPad": _center_crop_pad, "Compress": _compress,
    "Softmax": _softmax(False), "LogSoftmax": _softmax(True), "LayerNormalization": _layer_norm,
    "RMSNormalization": _rms_norm,
    "BatchNormalization": _batch_norm, "Reshape": _reshape, "Transpose": _transpose, "Flatten": _flatten,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Concat": _concat, "Slice": _slice, "Gather": _gather,
    "Expand": _expand, "Shape": _shape, "Size": lambda n: size_array(math.prod(sizes_of(n.inputs[0].shape), start=1)),
    "Constant": _constant, "ConstantOfShape": _constant_of_shape, "Range": _range, "Split": _split,
    "Tile": _tile, "Dropout": _dropout, "Conv": _conv, "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool("avg"), "GlobalMaxPool": _global_pool("max"), "LeakyRelu": _leaky_relu,
    "PRelu": _prelu, "Elu": _elu, "Selu": _selu, "Celu": _celu, "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish, "Gelu": _gelu, "ThresholdedRelu": _thresholded_relu, "Shrink": _shrink,
    "Trilu": _trilu, "Swish": _swish, "LpNormalization": _lp_normalization, "SpaceToDepth": _space_to_depth,
    "DepthToSpace": _depth_to_space, "EyeLike": _eye_like, "IsInf": _is_inf, "Pad": _pad, "OneHot": _one_hot,
    "Attention": _attention, "ConvTranspose": _conv_transpose, "LpPool": _lp_pool,
    "GlobalLpPool": _global_lp_pool, "InstanceNormalization": _instance_norm, "GroupNormalization": _group_norm,
    "Mod": _mod, "GatherElements": _gather_elements, "ScatterElements": _scatter_elements,
    "Scatter": _scatter_elements,
    "ScatterND": _scatter_nd,
    "NegativeLogLikelihoodLoss": _nll_loss, "SoftmaxCrossEntropyLoss": _softmax_cross_entropy_loss,
    "ArgMax": _arg_reduce("max"), "ArgMin": _arg_reduce("min"), "Hardmax": _hardmax, "TopK": _top_k, "Einsum": _einsum,
    "Resize": _resize, "IsNaN": _is_nan,
    "GridSample": _grid_sample,
    **{name: _unary(*fns) for name, fns in _FLOAT_UNARY.items()},
}

SUPPORTED_OPS = tuple(sorted(CONVERTERS))


def _onnx() -> Any:
    """The onnx package with the submodules the importer uses
    (MissingExtraError where it is not installed)."""
    onnx = require_extra("onnx", "onnx", "tessel.from_onnx")
    for submodule in ("defs", "helper", "numpy_helper"):
        require_extra(f"onnx.{submodule}", "onnx", "tessel.from_onnx")
    return onnx


def _load(onnx: Any, model: Any) -> Any:
    if isinstance(model, (str, os.PathLike)):
        try:
            return onnx.load(os.fspath(model))
        except Exception as e:  # noqa: BLE001 - onnx raises many types for a bad file
            raise UnsupportedError(f"{model}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx takes a path or an onnx.ModelProto, got {type(model).__name__}")
    return model


Dims = Optional[tuple[Optional[int], ...]]


def _declared(value: Any, where: str) -> tuple[Optional[np.dtype], Dims]:
    """The element type and dims a graph input's or output's ValueInfo
    declares, None for what it leaves out: no element type, or no shape
    field (a scalar's shape is present, with zero dims); a dim given by
    name or not at all is None."""
    kind = value.type.WhichOneof("value")
    if kind not in (None, "tensor_type"):
        raise UnsupportedError(f"{where} is a {kind.removesuffix('_type')}, not a tensor; tessel takes tensors")
    tensor = value.type.tensor_type
    with _located(where):
        dtype = _np_dtype(tensor.elem_type) if tensor.elem_type else None
    if not tensor.HasField("shape"):
        return dtype, None
    return dtype, tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)


def _describe(dtype: Optional[np.dtype], dims: Dims) -> str:
    """``float32[2, ?]``: ``?`` for a dim, ``any`` for a dtype, that is not declared."""
    text = "any" if dtype is None else np.dtype(dtype).name
    if dims is None:
        return text + " of any shape"
    return text + "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _matches(dtype: Any, shape: Sequence[int], declared: tuple[Optional[np.dtype], Dims]) -> bool:
    """Whether a value of ``dtype`` and ``shape`` is what ``declared`` says."""
    want_dtype, want_dims = declared
    if want_dtype is not None and np.dtype(dtype) != want_dtype:
        return False
    return want_dims is None or (len(want_dims) == len(shape) and
                                 all(w is None or w == s for w, s in zip(want_dims, shape)))


def _symbol_name(dim_param: str, taken: set[str]) -> str:
    """The size symbol of a ``dim_param``: itself where it is an identifier
    (``batch``), else made one (``sequence length`` -> ``sequence_length``,
    ``2d`` -> ``d_2d``), unlike any name in ``taken``."""
    name = re.sub(r"\W", "_", dim_param) or "d"
    if name[0].isdigit():
        name = "d_" + name
    if keyword.iskeyword(name) or name in ("floordiv", "ceildiv", "mod", "symbol"):  # words of MLIR's affine syntax
        name += "_"
    while name in taken and name != dim_param:
        name += "_"
    return name


def _argument(value: Any, symbols: dict[str, str], dims_given: dict[str, Any]) -> TensorSpec:
    """What a graph input that becomes an argument takes; never allocated.
    Each of its ``dim_param``s is a size symbol (``symbols``: dim_param ->
    symbol name, filled here), whose range ``dims_given`` must have."""
    where = f"ONNX input {value.name!r}"
    dtype, dims = _declared(value, where)
    if dtype is None:
        raise CompileError(f"{where} declares no element type")
    with _located(where):
        _supported(dtype)
    if dims is None:
        raise UnsupportedError(f"{where} declares no shape (not even a scalar's, of zero dims); tessel needs "
                               "static shapes: declare one, or fix the input with constants=")
    shape: list[Union[int, str]] = []
    for d, (size, dim) in enumerate(zip(dims, value.type.tensor_type.shape.dim)):
        if size is not None:
            shape.append(size)
            continue
        param = dim.dim_param if dim.HasField("dim_param") else ""
        if not param:
            raise UnsupportedError(f"{where} has an unknown dim {d} (no dim_value or dim_param); tessel needs "
                                   "static dims or named ones (size symbols, with ranges from dims=)")
        if param not in symbols:
            symbols[param] = _symbol_name(param, set(symbols.values()))
        name = symbols[param]
        if param not in dims_given and name not in dims_given:
            raise UnsupportedError(f"{where} dim {d} is the dim_param {param!r}, which needs a range: "
                                   f"from_onnx(..., dims={{{param!r}: (min, max)}})")
        shape.append(name)
    static = [d for d in shape if isinstance(d, int)]
    if any(d < 0 for d in static):
        raise CompileError(f"{where} has a negative dim: {list(dims)}")
    if math.prod(static) * dtype.itemsize >= 1 << 63:
        raise UnsupportedError(f"{where} of shape {list(dims)} has more bytes than a 64-bit size counts")
    return TensorSpec(tuple(shape), dtype)


def _fixed(value: Any, array: Any) -> np.ndarray:
    """A ``constants=`` value for graph input ``value``, once it is what the input declares."""
    array = np.asarray(array)
    where = f"ONNX input {value.name!r}"
    declared = _declared(value, where)
    if not _matches(array.dtype, array.shape, declared):
        raise CompileError(f"constants[{value.name!r}] is {_describe(array.dtype, array.shape)}, but {where} is "
                           f"declared {_describe(*declared)}")
    return array


# Where each value is computed: its first producer's index and label.
Producers = dict[str, tuple[int, str]]


def _lookup(env: dict[str, Value], name: str, index: int, producers: Producers, what: str) -> Value:
    """The value of ``name`` for node ``index`` (the graph's outputs: the
    number of nodes); ``what`` names it in the error where it has none."""
    if name in env:
        return env[name]
    if name not in producers:
        raise CompileError(f"{what} is not a graph input, an initializer or an output of any node")
    at, producer = producers[name]
    if at >= index:
        raise CompileError(f"{what} is computed by a later node, {producer}; ONNX nodes must be in "
                           "topological order")
    raise UnsupportedError(f"{what} is an output of {producer} that tessel does not compute")


@functools.lru_cache(maxsize=None)
def _schema(op_type: str, version: int) -> Any:
    """The ONNX schema of a default-domain op at opset ``version``; that of
    its first opset for an op newer than the model's, None for one the
    installed onnx does not know."""
    from onnx import defs

    version = min(version, defs.onnx_opset_version())  # a model may name any opset
    for args in ((op_type, version, ""), (op_type, "")):
        try:
            return defs.get_schema(*args)
        except defs.SchemaError:
            continue
    return None


def _check_signature(proto: Any, schema: Any) -> None:
    """Rejects a node whose inputs, outputs or attributes its op's schema
    does not allow (converters rely on it: a missing input or attribute
    would otherwise fail in them, or be read as its default)."""
    from onnx import AttributeProto, defs

    if schema is None:
        return
    op, inputs = proto.op_type, list(proto.input)
    for kind, count, low, high in (("inputs", len(inputs), schema.min_input, schema.max_input),
                                   ("outputs", len(proto.output), schema.min_output, schema.max_output)):
        if not low <= count <= high:
            takes = str(low) if low == high else f"{low} to {high}" if high < 1 << 30 else f"at least {low}"
            raise CompileError(f"it has {count} {kind if count != 1 else kind[:-1]}; {op} takes {takes}")
    for i, name in enumerate(inputs):
        # An empty name omits an optional input; the last formal input may repeat (variadic).
        formal = schema.inputs[min(i, len(schema.inputs) - 1)]
        if not name and formal.option != defs.OpSchema.FormalParameterOption.Optional:
            raise CompileError(f"its input {i} ({formal.name}) is required")
    for attribute in proto.attribute:
        formal = schema.attributes.get(attribute.name)
        if formal is not None and attribute.type != formal.type.value:
            kinds = AttributeProto.AttributeType
            given = kinds.Name(attribute.type) if attribute.type in kinds.values() else str(attribute.type)
            raise CompileError(f"attribute {attribute.name} is {given}; {op} takes {formal.type.name}")
    given = {a.name for a in proto.attribute}
    missing = sorted(name for name, formal in schema.attributes.items() if formal.required and name not in given)
    if missing:
        raise CompileError(f"attribute {missing[0]} is required")


def _convert(proto: Any, index: int, env: dict[str, Value], producers: Producers, version: int,
             helper: Any, ranges: dict[str, tuple[int, int]]) -> tuple[Value, ...]:
    """Node ``index``'s output values, one per output (fewer when tessel
    does not compute its optional ones)."""
    if proto.domain not in ("", "ai.onnx"):
        raise UnsupportedError(f"domain {proto.domain!r} is not supported")
    convert = CONVERTERS.get(proto.op_type)
    if convert is None:
        nearest = difflib.get_close_matches(proto.op_type, SUPPORTED_OPS, n=4, cutoff=0.6)
        listing = "nearest supported: " + ", ".join(nearest) if nearest else "supported: " + ", ".join(SUPPORTED_OPS)
        raise UnsupportedError(f"this op is not supported; {listing} (tessel.frontends.onnx.SUPPORTED_OPS)")
    schema = _schema(proto.op_type, version)
    first = _FIRST_DEFINITION.get(proto.op_type)
    if first is not None and schema is not None and schema.since_version < first:
        raise UnsupportedError(f"its definition of opset {schema.since_version} is not supported; tessel reads "
                               f"{proto.op_type} from opset {first}: convert the model with "
                               f"onnx.version_converter.convert_version(model, {max(first, 13)})")
    _check_signature(proto, schema)
    inputs = [_lookup(env, name, index, producers, f"input {name!r}") if name else None for name in proto.input]
    if proto.op_type != "Range":
        inputs = [v.value() if isinstance(v, _FloatSizes) else v for v in inputs]
    outputs = [name for name in proto.output if name]
    for i, name in enumerate(outputs):
        if name in env or name in outputs[:i]:
            raise CompileError(f"its output {name!r} is already defined; ONNX graphs define each name once")
    node = _Node(proto, inputs, helper, ranges)
    try:
        result = convert(node)
    except (TypeError, ValueError, ArithmeticError) as e:
        # A converter that computes with sizes as ints, given a size symbol's.
        symbolic = node.symbolic()
        if not symbolic:
            raise
        raise UnsupportedError(f"this conversion does not take size symbols yet ({'; '.join(symbolic)}): "
                               f"{type(e).__name__}: {e}") from None
    # numpy arithmetic on 0-d arrays gives scalars (sizes too): keep values arrays,
    # sizes that no longer depend on a symbol int64.
    return tuple(_as_value(v) for v in (result if isinstance(result, tuple) else (result,)))


def _as_value(value: Any) -> Any:
    """A converter's result as a value: numpy arithmetic on 0-d arrays
    gives scalars (on sizes, Python objects), which become arrays again;
    sizes that no longer depend on a symbol int64 ones."""
    if isinstance(value, _FloatSizes):
        return value
    if isinstance(value, SymbolicSize) or (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, np.ndarray) and value.dtype == object):
        return size_array(value)
    return np.asarray(value) if isinstance(value, np.generic) else value


def _output(value: Any, env: dict[str, Value], producers: Producers, nodes: int) -> Tensor:
    """Graph output ``value``'s computed value, once it is what the output declares."""
    where = f"ONNX output {value.name!r}"
    with _located(where):
        result = _lookup(env, value.name, nodes, producers, "its value")
        result = as_tensor(result.value() if isinstance(result, _FloatSizes) else result)
    declared = _declared(value, where)
    if not _matches(result.dtype, result.shape, declared):
        raise CompileError(f"{where} is declared {_describe(*declared)}, but the graph computes "
                           f"{_describe(np.dtype(result.dtype), tuple(result.shape))}")
    return result


def from_onnx(model: Union[str, os.PathLike[str], Any], *, name: Optional[str] = None,
              constants: Optional[dict[str, np.ndarray]] = None,
              dims: Optional[dict[str, tuple[int, ...]]] = None) -> Any:
    """An ONNX model (a path or an ``onnx.ModelProto``) as a graph-dialect module.

    Graph inputs that are not initializers become the arguments of
    ``func.func @name`` (default: the graph's name, else ``main``), in order;
    initializers become constants. ``constants`` fixes graph inputs by name
    while importing (an axes or shape input that the model takes at run
    time): they become constants, not arguments, and must have the dtype and
    shape the input declares. The graph's outputs must compute the dtypes
    and shapes they declare (a dim given by name matches any).

    An input dim given by name (a ``dim_param``, ``batch``) is a size
    symbol: one compile serves every size in its range, which ``dims``
    gives by that name, ``(min, max)`` or ``(min, max, multiple_of)``
    (docs/dynamic-shapes.md); a dim_param without one is an error naming it.
    A name that is not an identifier becomes one (``sequence length`` ->
    ``sequence_length``; ``dims`` may use either). Shape arithmetic
    (``Shape``, ``Gather``, ``Concat``, ``Reshape``, ``Range``, ...) is
    computed while importing with the symbols; what depends on their values
    at a call is an UnsupportedError naming the node.
    """
    onnx = _onnx()
    model = _load(onnx, model)
    opsets = {o.domain: o.version for o in model.opset_import}
    version = opsets.get("", opsets.get("ai.onnx"))
    if version is None or version < MIN_OPSET:
        raise UnsupportedError(f"ONNX opset {version} is not supported; tessel reads opset {MIN_OPSET} and newer")
    graph = model.graph
    if not graph.output:
        raise CompileError(f"ONNX graph {graph.name!r} has no outputs")
    values: dict[str, Value] = {}  # known while importing: initializers and constants
    for tensor in graph.initializer:
        where = f"ONNX initializer {tensor.name!r}"
        if tensor.name in values:
            raise CompileError(f"{where} is defined twice")
        with _located(where):
            values[tensor.name] = _array(tensor)
    declared: dict[str, Any] = {}
    for value in graph.input:
        if value.name in declared:
            raise CompileError(f"ONNX input {value.name!r} is declared twice")
        declared[value.name] = value
    unknown = sorted(set(constants or ()) - set(declared))
    if unknown:
        raise UnsupportedError(f"constants names {unknown[0]!r}, which is not an input of the model")
    values.update((key, _fixed(declared[key], array)) for key, array in (constants or {}).items())
    arguments = [value for value in graph.input if value.name not in values]
    dims_given = dict(dims or {})
    symbols: dict[str, str] = {}  # dim_param -> size symbol
    specs = [_argument(value, symbols, dims_given) for value in arguments]
    unknown = sorted(set(dims_given) - set(symbols) - set(symbols.values()))
    if unknown:
        named = ", ".join(repr(p) for p in symbols) or "none"
        raise UnsupportedError(f"dims names {unknown[0]!r}, which is no dim_param of the model's inputs "
                               f"(they name {named})")
    ranges = {symbols[param] if param in symbols else param: tuple(limits) for param, limits in dims_given.items()}
    producers: Producers = {}
    for index, proto in enumerate(graph.node):
        for output in proto.output:
            if output:
                producers.setdefault(output, (index, _label(proto, index)))

    def build(*args: Tensor) -> list[Tensor]:
        env: dict[str, Value] = dict(values)
        env.update((v.name, a) for v, a in zip(arguments, args))
        for index, proto in enumerate(graph.node):
            with _located(_label(proto, index)):
                results = _convert(proto, index, env, producers, version, onnx.helper, ranges)
            env.update((output, value) for output, value in zip(proto.output, results) if output)
        return [_output(value, env, producers, len(graph.node)) for value in graph.output]

    return trace(build, *specs, name=name or graph.name or "main", dims=ranges or None)
