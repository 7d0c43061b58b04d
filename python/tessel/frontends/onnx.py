"""ONNX models into the ``graph`` dialect: ``tessel.from_onnx(path_or_model)``.

The model's graph is traced with :func:`tessel.trace`: graph inputs become
the function's arguments, initializers and ``Constant`` nodes numpy arrays
(constants of the module), and each node a converter on :mod:`tessel.ops`.
Values computed only from constants (shape arithmetic: ``Shape``,
``Gather`` on shapes, ``Concat`` of dims, ...) stay numpy arrays, so the
inputs that must be known while building (a ``Reshape``'s shape, a
``Slice``'s bounds) are. Opsets 13 and newer of the default domain are
read. An op, attribute or dtype that is not supported raises
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

import functools
import math
import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np

from .. import ops
from ..backends.signature import TensorSpec
from ..errors import CompileError, UnsupportedError, require_extra
from ..tracing import Tensor, as_tensor, trace
from ._common import Value, attention, cast_to, matmul, numpy_or

__all__ = ["from_onnx", "SUPPORTED_OPS", "MAX_CONSTANT_BYTES"]

MIN_OPSET = 13

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

    def __init__(self, proto: Any, inputs: list[Optional[Value]], helper: Any) -> None:
        self.proto, self.inputs = proto, inputs
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
        raise self.unsupported(f"its {what} (input {i}) must be a constant, not computed at run time")

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
    is known to be buildable where it is computed in numpy (all known)."""
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


def _reshaped(x: Value, shape: Sequence[int]) -> Value:
    return numpy_or([x], lambda v: v.reshape(shape), lambda v: as_tensor(v).reshape(shape))


def _indexed(x: Value, index: Any) -> Value:
    """``x[index]``: numpy indexing, or graph.slice/gather on a Tensor."""
    return numpy_or([x], lambda v: v[index], lambda v: as_tensor(v)[index])


def _broadcast(x: Value, shape: Sequence[int]) -> Value:
    return numpy_or([x], lambda v: np.broadcast_to(v, _sized(shape, v.dtype)).copy(),
                    lambda v: ops.broadcast_to(v, shape))


def _concatenated(values: Sequence[Value], axis: int) -> Value:
    return numpy_or(values, lambda *v: np.concatenate(v, axis), lambda *v: ops.concatenate(list(v), axis))


def _np_dtype(onnx_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type, supported by tessel or not."""
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
    except (KeyError, TypeError, ValueError):
        raise UnsupportedError(f"element type {onnx_type} is not supported") from None


def _supported(dtype: np.dtype) -> np.dtype:
    """``dtype``, once it is one tessel computes in."""
    if dtype not in (np.float32, np.float16, np.int32, np.int64, np.bool_):
        raise UnsupportedError(f"dtype {dtype.name} is not supported; tessel takes float32, float16, "
                               "int32, int64 and bool")
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
    import operator

    fn = getattr(operator, name)
    return lambda n: fn(*_folded(n.inputs))


def _not(n: _Node) -> Value:
    return _where(n.inputs[0], np.bool_(False), np.bool_(True))


def _logical(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        a, b = _folded(n.inputs)
        if kind == "and":
            return _where(a, b, np.bool_(False))
        if kind == "or":
            return _where(a, np.bool_(True), b)
        return a != b
    return convert


def _cast(n: _Node) -> Value:
    return cast_to(n.inputs[0], _dtype(n.attr("to")))


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
    if np.dtype(base.dtype).kind != "f":
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
    y = as_tensor(a) @ b
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
    shape = [int(s) for s in n.constant(1, "shape")]
    if not n.attr("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return _reshaped(x, shape)


def _transpose(n: _Node) -> Value:
    perm = n.attr("perm")
    return numpy_or(n.inputs[:1], lambda v: np.transpose(v, perm), lambda v: ops.transpose(v, perm))


def _flatten(n: _Node) -> Value:
    x = n.inputs[0]
    axis = n.attr("axis", 1)
    axis = axis + len(x.shape) if axis < 0 else axis
    shape = [int(np.prod(x.shape[:axis], dtype=np.int64)), int(np.prod(x.shape[axis:], dtype=np.int64))]
    return _reshaped(x, shape)


def _squeeze(n: _Node) -> Value:
    x = n.inputs[0]
    axes = _axes(n, len(x.shape))
    shape = [s for d, s in enumerate(x.shape) if (s != 1 if axes is None else d not in axes)]
    return _reshaped(x, shape)


def _unsqueeze(n: _Node) -> Value:
    x = n.inputs[0]
    rank = len(x.shape) + len(np.atleast_1d(n.constant(1, "axes") if n.input(1) is not None else n.attr("axes")))
    axes = sorted(_axes(n, rank))
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return _reshaped(x, shape)


def _concat(n: _Node) -> Value:
    axis = n.attr("axis")
    values = [v for v in n.inputs if v is not None]
    return _concatenated(values, axis)


def _slice(n: _Node) -> Value:
    x = n.inputs[0]
    starts, ends = n.constant(1, "starts"), n.constant(2, "ends")
    axes = n.constant(3, "axes")
    steps = n.constant(4, "steps")
    rank = len(x.shape)
    index = [slice(None)] * rank
    axes = range(len(starts)) if axes is None else [int(a) % rank for a in axes]
    for i, axis in enumerate(axes):
        step = 1 if steps is None else int(steps[i])
        if step < 0:
            raise n.unsupported("negative slice steps are not supported")
        size = x.shape[axis]
        start, end = (int(max(-2**62, min(2**62, v))) for v in (starts[i], ends[i]))
        index[axis] = slice(*slice(start, end, step).indices(size))
    return _indexed(x, tuple(index))


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
    shape = np.broadcast_shapes(tuple(x.shape), tuple(int(s) for s in n.constant(1, "shape")))
    return _broadcast(x, shape)


def _shape(n: _Node) -> Value:
    shape = np.array(n.inputs[0].shape, np.int64)
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
    return np.full(_sized(n.constant(0, "shape"), value.dtype), value.reshape(-1)[0], value.dtype)


def _range(n: _Node) -> Value:
    start, limit, delta = (n.constant(i, "bounds").reshape(()) for i in range(3))
    if delta == 0:
        raise CompileError("its delta is 0")
    _sized([max(0, math.ceil((limit - start) / delta))], start.dtype)
    return np.arange(start, limit, delta).astype(start.dtype)


def _pads(n: _Node, spatial: int) -> list[int]:
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise n.unsupported(f"auto_pad={n.attr('auto_pad')} is not supported")
    pads = n.attr("pads", [0] * 2 * spatial)
    if len(pads) != 2 * spatial:
        raise CompileError(f"pads {pads} has {len(pads)} values; {spatial}-D windows take {2 * spatial}")
    return [pads[0], pads[1], pads[2], pads[3]]  # top, left, bottom, right


def _conv(n: _Node) -> Value:
    n.only("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    x = n.inputs[0]
    if len(x.shape) != 4:
        raise n.unsupported(f"only 2-D convolution (4-D input) is supported, got rank {len(x.shape)}")
    return ops.conv2d(x, n.inputs[1], n.input(2), stride=tuple(n.attr("strides", [1, 1])),
                      padding=_pads(n, 2), dilation=tuple(n.attr("dilations", [1, 1])), groups=n.attr("group", 1))


def _pool(kind: str) -> Callable[[_Node], Value]:
    def convert(n: _Node) -> Value:
        n.only("auto_pad", "kernel_shape", "pads", "strides", "count_include_pad", "ceil_mode", "dilations",
               "storage_order")
        x = n.inputs[0]
        if len(x.shape) != 4:
            raise n.unsupported(f"only 2-D pooling (4-D input) is supported, got rank {len(x.shape)}")
        if n.attr("ceil_mode", 0) or any(d != 1 for d in n.attr("dilations", [1, 1])):
            raise n.unsupported("ceil_mode and dilations are not supported")
        if len(n.proto.output) > 1 and n.proto.output[1]:
            raise n.unsupported("the Indices output is not supported")
        kernel = tuple(n.attr("kernel_shape"))
        stride = tuple(n.attr("strides", [1, 1]))
        if kind == "max":
            return ops.max_pool2d(x, kernel, stride, _pads(n, 2))
        return ops.avg_pool2d(x, kernel, stride, _pads(n, 2), count_include_pad=bool(n.attr("count_include_pad", 0)))
    return convert


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
    return ops.where(x > 0, 1, ops.where(x < 0, -1, 0)).astype(x.dtype) if x.dtype.kind != "f" else \
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
    for size in sizes:
        index = [slice(None)] * len(x.shape)
        index[axis] = slice(at, at + int(size))
        results.append(_indexed(x, tuple(index)))
        at += int(size)
    return tuple(results)


def _tile(n: _Node) -> Value:
    x = n.inputs[0]
    repeats, shape = [int(r) for r in n.constant(1, "repeats")], [int(s) for s in x.shape]
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise CompileError(f"repeats {repeats} do not fit its rank-{len(shape)} input (one count >= 0 per dim)")
    # A unit dim before each dim, broadcast to the repeats: one broadcast
    # however many copies, not a concatenation of that many operands.
    spread = [d for s in shape for d in (1, s)]
    copies = [d for r, s in zip(repeats, shape) for d in (r, s)]
    return _reshaped(_broadcast(_reshaped(x, spread), copies), [r * s for r, s in zip(repeats, shape)])


def _dropout(n: _Node) -> Value:
    if n.input(2) is not None and not isinstance(n.inputs[2], np.ndarray):
        raise n.unsupported("a run-time training_mode is not supported")
    if n.input(2) is not None and bool(n.inputs[2]):
        raise n.unsupported("training_mode=true is not supported (inference only)")
    if len(n.proto.output) > 1 and n.proto.output[1]:
        raise n.unsupported("the mask output is not supported")
    return n.inputs[0]


def _trilu(n: _Node) -> Value:
    x = n.inputs[0]
    k = int(n.constant(1, "k")) if n.input(1) is not None else 0
    rows, cols = x.shape[-2], x.shape[-1]
    keep = (np.triu if n.attr("upper", 1) else np.tril)(np.ones(_sized((rows, cols), bool), bool), k)
    return _where(keep, x, _zeros_like(x))


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
    return _where(positive, np.bool_(True), negative)


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
                piece = _indexed(result, tuple(index))
                parts.append(_broadcast(piece, shape))
        pieces = [p for p in (parts[0], result, parts[1]) if p is not None]
        if len(pieces) > 1:
            result = _concatenated(pieces, axis)
    return result


def _one_hot(n: _Node) -> Value:
    indices, depth, values = n.inputs[0], int(n.constant(1, "depth").reshape(())), n.inputs[2]
    rank = len(indices.shape) + 1
    axis = n.attr("axis", -1) % rank
    classes = np.arange(_sized([depth], indices.dtype)[0], dtype=np.dtype(indices.dtype))
    classes = classes.reshape([depth] + [1] * (rank - 1 - axis))
    positive = _where(indices < 0, indices + np.asarray(depth, np.dtype(indices.dtype)), indices)
    expanded = numpy_or([positive], lambda v: np.expand_dims(v, axis), lambda v: ops.unsqueeze(v, axis))
    off, on = (_indexed(values, i) for i in (0, 1))
    return _where(expanded == classes, on, off)


def _attention(n: _Node) -> Union[Value, tuple[Value, ...]]:
    """Scaled dot-product attention on 4-D [batch, heads, seq, head_dim]
    inputs (grouped K/V heads allowed), with an optional boolean or additive
    mask, causal masking and softcap."""
    n.only("is_causal", "scale", "softcap", "q_num_heads", "kv_num_heads", "qk_matmul_output_mode")
    q, k, v = (as_tensor(n.inputs[i]) for i in range(3))
    if q.ndim != 4:
        raise n.unsupported("only 4-D (batch, heads, seq, head_dim) inputs are supported")
    if any(n.input(i) is not None for i in range(4, len(n.inputs))) or any(n.proto.output[1:]):
        raise n.unsupported("past key/value caches, sequence lengths and the extra outputs are not supported")
    if n.attr("qk_matmul_output_mode", 0):
        raise n.unsupported("qk_matmul_output_mode is not supported")
    mask = n.input(3)
    if mask is not None and tuple(mask.shape)[-1] != k.shape[-2]:
        raise n.unsupported("a mask shorter than the key sequence is not supported")
    return attention(q, k, v, mask, is_causal=bool(n.attr("is_causal", 0)), scale=n.attr("scale"),
                     softcap=n.attr("softcap", 0.0))


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
    "Softmax": _softmax(False), "LogSoftmax": _softmax(True), "LayerNormalization": _layer_norm,
    "RMSNormalization": _rms_norm,
    "BatchNormalization": _batch_norm, "Reshape": _reshape, "Transpose": _transpose, "Flatten": _flatten,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Concat": _concat, "Slice": _slice, "Gather": _gather,
    "Expand": _expand, "Shape": _shape, "Size": lambda n: np.array(math.prod(n.inputs[0].shape), np.int64),
    "Constant": _constant, "ConstantOfShape": _constant_of_shape, "Range": _range, "Split": _split,
    "Tile": _tile, "Dropout": _dropout, "Conv": _conv, "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool("avg"), "GlobalMaxPool": _global_pool("max"), "LeakyRelu": _leaky_relu,
    "PRelu": _prelu, "Elu": _elu, "Selu": _selu, "Celu": _celu, "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish, "Gelu": _gelu, "ThresholdedRelu": _thresholded_relu, "Shrink": _shrink,
    "Trilu": _trilu, "Swish": _swish, "LpNormalization": _lp_normalization, "SpaceToDepth": _space_to_depth,
    "DepthToSpace": _depth_to_space, "EyeLike": _eye_like, "IsInf": _is_inf, "Pad": _pad, "OneHot": _one_hot,
    "Attention": _attention,
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


def _argument(value: Any) -> TensorSpec:
    """What a graph input that becomes an argument takes; never allocated."""
    where = f"ONNX input {value.name!r}"
    dtype, dims = _declared(value, where)
    if dtype is None:
        raise CompileError(f"{where} declares no element type")
    with _located(where):
        _supported(dtype)
    if dims is None:
        raise UnsupportedError(f"{where} declares no shape (not even a scalar's, of zero dims); tessel needs "
                               "static shapes: declare one, or fix the input with constants=")
    if None in dims:
        raise UnsupportedError(f"{where} has a dynamic or unknown shape; tessel needs static shapes")
    if any(d < 0 for d in dims):
        raise CompileError(f"{where} has a negative dim: {list(dims)}")
    if math.prod(dims) * dtype.itemsize >= 1 << 63:
        raise UnsupportedError(f"{where} of shape {list(dims)} has more bytes than a 64-bit size counts")
    return TensorSpec(dims, dtype)


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
             helper: Any) -> tuple[Value, ...]:
    """Node ``index``'s output values, one per output (fewer when tessel
    does not compute its optional ones)."""
    if proto.domain not in ("", "ai.onnx"):
        raise UnsupportedError(f"domain {proto.domain!r} is not supported")
    convert = CONVERTERS.get(proto.op_type)
    if convert is None:
        raise UnsupportedError("this op is not supported; supported: " + ", ".join(SUPPORTED_OPS))
    _check_signature(proto, _schema(proto.op_type, version))
    inputs = [_lookup(env, name, index, producers, f"input {name!r}") if name else None for name in proto.input]
    outputs = [name for name in proto.output if name]
    for i, name in enumerate(outputs):
        if name in env or name in outputs[:i]:
            raise CompileError(f"its output {name!r} is already defined; ONNX graphs define each name once")
    result = convert(_Node(proto, inputs, helper))
    return result if isinstance(result, tuple) else (result,)


def _output(value: Any, env: dict[str, Value], producers: Producers, nodes: int) -> Tensor:
    """Graph output ``value``'s computed value, once it is what the output declares."""
    where = f"ONNX output {value.name!r}"
    with _located(where):
        result = as_tensor(_lookup(env, value.name, nodes, producers, "its value"))
    declared = _declared(value, where)
    if not _matches(result.dtype, result.shape, declared):
        raise CompileError(f"{where} is declared {_describe(*declared)}, but the graph computes "
                           f"{_describe(np.dtype(result.dtype), tuple(result.shape))}")
    return result


def from_onnx(model: Union[str, os.PathLike[str], Any], *, name: Optional[str] = None,
              constants: Optional[dict[str, np.ndarray]] = None) -> Any:
    """An ONNX model (a path or an ``onnx.ModelProto``) as a graph-dialect module.

    Graph inputs that are not initializers become the arguments of
    ``func.func @name`` (default: the graph's name, else ``main``), in order;
    initializers become constants. Shapes must be static. ``constants``
    fixes graph inputs by name while importing (an axes or shape input that
    the model takes at run time): they become constants, not arguments, and
    must have the dtype and shape the input declares. The graph's outputs
    must compute the dtypes and shapes they declare (a dim given by name
    matches any).
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
    specs = [_argument(value) for value in arguments]
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
                results = _convert(proto, index, env, producers, version, onnx.helper)
            env.update((output, value) for output, value in zip(proto.output, results) if output)
        return [_output(value, env, producers, len(graph.node)) for value in graph.output]

    return trace(build, *specs, name=name or graph.name or "main")
