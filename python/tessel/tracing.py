"""Python tracing front end: run a function on symbolic tensors, get a graph module.

``trace(fn, *examples)`` calls ``fn`` with one symbolic :class:`Tensor` per
example and records every operation as a ``graph`` dialect op in a public
``func.func``. Result types come from the ops' own shape inference, so the
rules live in one place (the C++ dialect); this module only translates Python
syntax into ops. Every op is located at the user's line, and any shape or
dtype error raises :class:`tessel.CompileError` pointing there.
"""

from __future__ import annotations

import inspect
import math
import numbers
import operator
import os
import sys
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np
from mlir import ir
from mlir.dialects import func

from .backends.signature import TensorSpec, symbolic_shape
from .dialects import graph
from .dtypes import ELEMENT_DTYPES, words
from .errors import CompileError, Diagnostic, UnsupportedError
from .ir import compile_error, context, format_location, verify

__all__ = ["Tensor", "TensorLike", "Axes", "tensor_type", "trace"]

_ELEMENT_TYPES = {dtype: name for name, dtype in ELEMENT_DTYPES.items()}

# Case numbers of the I32EnumAttrs in GraphOps.td.
_REDUCE_KINDS = {"sum": 0, "mean": 1, "max": 2, "min": 3}
_COMPARE_PREDICATES = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# graph.slice's limit that takes a dim to its end (a size symbol's dim).
_SLICE_TO_END = 2**63 - 1


def location() -> ir.Location:
    """The file location of the innermost caller outside the tessel package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ir.Location.unknown()
    info = inspect.getframeinfo(frame, context=0)
    column = info.positions.col_offset if info.positions else None
    # MLIR columns are 1-based, Python's are 0-based.
    return ir.Location.file(info.filename, info.lineno, 1 if column is None else column + 1)


def error(message: str, kind: type[CompileError] = CompileError) -> CompileError:
    """An error found in Python, located at the user's line like MLIR's own."""
    return kind("tracing failed", [Diagnostic("error", format_location(location()), message)])


def tensor_type(shape: Sequence[Union[int, str]], element: ir.Type) -> ir.RankedTensorType:
    """A tensor type of ``element`` and ``shape``, checked; a string dim is a
    size over the function's symbols (``"seq"``, ``"2 * seq"``)."""
    shape = [d if isinstance(d, str) else int(d) for d in shape]
    static = [d for d in shape if not isinstance(d, str)]
    if any(d < 0 for d in static):
        raise error(f"invalid shape {tuple(shape)}: sizes must be non-negative")
    check_int64(static, f"shape {tuple(shape)}")
    if len(static) == len(shape):
        return ir.RankedTensorType.get(shape, element)
    try:
        encoding = ir.Attribute.parse(f"#graph.shape<[{', '.join(map(str, shape))}]>")
    except ir.MLIRError as e:
        raise compile_error(f"invalid shape {tuple(shape)}", e) from None
    return ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if isinstance(d, str) else d
                                    for d in shape], element, encoding)


def _value(arg: Any) -> Any:
    if isinstance(arg, Tensor):
        return arg.value
    if isinstance(arg, list):
        return [_value(a) for a in arg]
    return arg


def check_int64(value: Any, what: str) -> None:
    """Refuses an int (or a list holding one) that no 64-bit attribute can
    hold, naming ``what``, before the bindings reject it with a bare
    "incompatible function arguments"."""
    if isinstance(value, (list, tuple)):
        for v in value:
            check_int64(v, what)
    elif isinstance(value, numbers.Integral) and not -2**63 <= int(value) < 2**63:
        raise error(f"{what} holds {int(value)}, which does not fit in 64 bits")


def build(op_class: type[ir.OpView], *args: Any, **kwargs: Any) -> Tensor:
    """Creates and verifies one op at the user's line; Tensors in args are unwrapped.

    Shape inference failures and verifier errors become a CompileError with
    MLIR's diagnostics, so a bad operand is reported where the user wrote it
    rather than when the whole module is verified.
    """
    for name, value in kwargs.items():
        check_int64(value, f"{op_class.OPERATION_NAME} {name}")
    for value in args:
        check_int64(value, f"an attribute of {op_class.OPERATION_NAME}")
    try:
        op = op_class(*map(_value, args), **{k: _value(v) for k, v in kwargs.items()}, loc=location())
        op.verify()
    except ir.MLIRError as e:
        raise compile_error(f"tracing failed at {op_class.OPERATION_NAME}", e) from None
    return Tensor(op.result)


def enum_attr(case: int) -> ir.IntegerAttr:
    """An I32EnumAttr value (the attribute is stored as a 32-bit integer)."""
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), case)


def element_type(dtype: Any) -> ir.Type:
    """The MLIR element type of a numpy dtype-like; UnsupportedError if graph has none."""
    dtype = np.dtype(dtype)
    if dtype not in _ELEMENT_TYPES:
        names = ", ".join(d.name for d in ELEMENT_DTYPES.values())
        raise error(f"dtype {dtype.name} is not supported; tessel takes {names}", UnsupportedError)
    return ir.Type.parse(_ELEMENT_TYPES[dtype])


def _constant(array: np.ndarray) -> Tensor:
    etype = element_type(array.dtype)
    array = np.asarray(array, order="C")  # not np.ascontiguousarray: it makes 0-d arrays 1-d
    if isinstance(etype, ir.BF16Type):  # the buffer protocol has no bfloat16: pass the words
        attr = ir.DenseElementsAttr.get(words(array), type=etype)
    else:
        attr = ir.DenseElementsAttr.get(array)
    return build(graph.ConstantOp, attr)


TensorLike = Union["Tensor", np.ndarray, float, int, bool]
Axes = Union[None, int, Sequence[int]]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (numbers.Number, np.generic))


def tensors(*values: Optional[TensorLike]) -> tuple[Tensor, ...]:
    """Converts the operands of one op to Tensors of one dtype; None stays None.

    Arrays (and lists) become ``graph.constant`` with their own dtype. Python
    and numpy scalars take the dtype of the first Tensor, else of the first
    array, like torch's rule for Python scalars; a float scalar with an
    integer or bool operand is an error rather than a silent truncation.
    Operands of different dtypes are an error: tessel does not promote.
    """
    reference = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    if reference is None:
        reference = next((np.asarray(v).dtype for v in values if v is not None and not _is_scalar(v)), None)
    result = []
    for v in values:
        if v is None or isinstance(v, Tensor):
            result.append(v)
        elif _is_scalar(v):
            dtype = reference if reference is not None else (
                np.dtype(np.float32) if isinstance(v, float) else np.asarray(v).dtype
            )
            if isinstance(v, (float, np.floating)) and dtype.kind != "f" and dtype.name != "bfloat16":
                raise error(f"float scalar {v} with a {dtype.name} operand; cast one of them first")
            result.append(_constant(np.asarray(v, dtype)))
        else:
            result.append(_constant(np.asarray(v)))
    dtypes = list(dict.fromkeys(t.dtype for t in result if t is not None))
    if len(dtypes) > 1:
        raise error(
            f"operands have different dtypes {dtypes[0].name} and {dtypes[1].name}; "
            "tessel does not promote types, convert one with astype()"
        )
    return tuple(result)


def as_tensor(value: TensorLike) -> Tensor:
    """One operand as a Tensor (see :func:`tensors`)."""
    return tensors(value)[0]


def _dims(args: tuple) -> Optional[tuple[int, ...]]:
    """numpy's spellings of a dimension list: ``f(2, 3)``, ``f((2, 3))``, ``f(None)``."""
    if len(args) == 1 and not isinstance(args[0], (numbers.Integral, str)):
        return None if args[0] is None else tuple(args[0])
    return args


class Tensor:
    """A symbolic tensor inside :func:`trace`: an SSA value of a graph module.

    It supports numpy-style arithmetic (``+ - * / @ **``, unary ``-``,
    ``abs``), comparisons (giving bool tensors), indexing and the methods
    below; :mod:`tessel.ops` has the rest. Integer ``/`` truncates toward zero
    (``graph.div``). Tensors have no value while tracing, so Python control
    flow on them (``if x > 0:``) is an error; use :func:`tessel.ops.where`.
    """

    __slots__ = ("value",)
    # Make numpy defer to Tensor's reflected operators (array + tensor).
    __array_ufunc__ = None

    def __init__(self, value: ir.Value) -> None:
        self.value = value

    @property
    def shape(self) -> tuple[Union[int, str], ...]:
        """The dims: ints, and for size symbols the text of their size (``"seq"``, ``"2 * seq"``)."""
        return symbolic_shape(self.value.type)

    @property
    def dtype(self) -> np.dtype:
        return ELEMENT_DTYPES[str(self.value.type.element_type)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def T(self) -> Tensor:
        """The dimensions reversed, like numpy's ``.T``."""
        return self.transpose()

    def __repr__(self) -> str:
        return f"Tensor({self.dtype.name}[{', '.join(map(str, self.shape))}])"

    def __bool__(self) -> bool:
        raise TypeError("a traced Tensor has no value; use tessel.ops.where instead of Python control flow")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))

    # Arithmetic: operands go through tensors(), so scalars and arrays mix in.
    def __add__(self, other: TensorLike) -> Tensor:
        return build(graph.AddOp, *tensors(self, other))

    def __radd__(self, other: TensorLike) -> Tensor:
        return build(graph.AddOp, *tensors(other, self))

    def __sub__(self, other: TensorLike) -> Tensor:
        return build(graph.SubOp, *tensors(self, other))

    def __rsub__(self, other: TensorLike) -> Tensor:
        return build(graph.SubOp, *tensors(other, self))

    def __mul__(self, other: TensorLike) -> Tensor:
        return build(graph.MulOp, *tensors(self, other))

    def __rmul__(self, other: TensorLike) -> Tensor:
        return build(graph.MulOp, *tensors(other, self))

    def __truediv__(self, other: TensorLike) -> Tensor:
        return build(graph.DivOp, *tensors(self, other))

    def __rtruediv__(self, other: TensorLike) -> Tensor:
        return build(graph.DivOp, *tensors(other, self))

    def __matmul__(self, other: TensorLike) -> Tensor:
        return build(graph.MatmulOp, *tensors(self, other))

    def __rmatmul__(self, other: TensorLike) -> Tensor:
        return build(graph.MatmulOp, *tensors(other, self))

    def __pow__(self, other: TensorLike) -> Tensor:
        return build(graph.PowOp, *tensors(self, other))

    def __rpow__(self, other: TensorLike) -> Tensor:
        return build(graph.PowOp, *tensors(other, self))

    def __neg__(self) -> Tensor:
        return build(graph.NegOp, self)

    def __abs__(self) -> Tensor:
        return build(graph.AbsOp, self)

    def _compare(self, predicate: str, other: TensorLike) -> Tensor:
        return build(graph.CompareOp, enum_attr(_COMPARE_PREDICATES[predicate]), *tensors(self, other))

    # Python reflects comparisons itself (a < b falls back to b > a).
    def __lt__(self, other: TensorLike) -> Tensor:
        return self._compare("lt", other)

    def __le__(self, other: TensorLike) -> Tensor:
        return self._compare("le", other)

    def __gt__(self, other: TensorLike) -> Tensor:
        return self._compare("gt", other)

    def __ge__(self, other: TensorLike) -> Tensor:
        return self._compare("ge", other)

    def __eq__(self, other: TensorLike) -> Tensor:  # type: ignore[override]
        return self._compare("eq", other)

    def __ne__(self, other: TensorLike) -> Tensor:  # type: ignore[override]
        return self._compare("ne", other)

    def _type(self, shape: Sequence[Union[int, str]]) -> ir.RankedTensorType:
        """A tensor type of this element type and ``shape`` (see :func:`tensor_type`)."""
        return tensor_type(shape, self.value.type.element_type)

    def reshape(self, *shape: Any) -> Tensor:
        """Same elements, new shape (``x.reshape(2, -1)`` or ``x.reshape((2, -1))``).

        One dimension may be -1: it is inferred from the element count (with
        size symbols, when the other dims name the same ones: a ``[batch,
        seq, 256]`` tensor reshapes to ``(batch, seq, 4, -1)``). Dims may be
        size symbols, as :attr:`shape` gives them.
        """
        dims = list(_dims(shape))
        if dims.count(-1) > 1:
            raise error(f"cannot reshape to {tuple(dims)}: only one dimension can be -1")
        if -1 in dims:
            given = [d for d in dims if d != -1]
            symbols = sorted(d for d in self.shape if isinstance(d, str))
            if symbols != sorted(d for d in given if isinstance(d, str)):
                raise error(f"cannot infer the -1 of {tuple(dims)} from {self.shape}: the other dims must name "
                            "the same size symbols")
            size = math.prod(d for d in self.shape if not isinstance(d, str))
            known = math.prod(d for d in given if not isinstance(d, str))
            if known == 0 or size % known:
                raise error(f"cannot reshape {self.shape} ({size} elements) into {tuple(dims)}")
            dims[dims.index(-1)] = size // known
        return build(graph.ReshapeOp, self._type(dims), self)

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        """Broadcasts to ``shape`` with numpy's rules (graph.broadcast_to)."""
        return build(graph.BroadcastToOp, self._type(shape), self)

    def transpose(self, *axes: Any) -> Tensor:
        """Permutes dimensions: result dim i is input dim ``axes[i]`` (negative allowed).

        Without axes (or with None), reverses them, like numpy.
        """
        perm = _dims(axes) or tuple(range(self.ndim - 1, -1, -1))
        return build(graph.TransposeOp, self, [a + self.ndim if a < 0 else a for a in perm])

    def _reduce(self, kind: str, axis: Axes, keepdims: bool) -> Tensor:
        axes = range(self.ndim) if axis is None else [axis] if isinstance(axis, numbers.Integral) else axis
        kind_attr = enum_attr(_REDUCE_KINDS[kind])
        return build(graph.ReduceOp, kind_attr, self, [int(a) for a in axes], keepdims=keepdims)

    def sum(self, axis: Axes = None, keepdims: bool = False) -> Tensor:
        """Sum over ``axis`` (all dimensions when None); f16/bf16 accumulate in f32."""
        return self._reduce("sum", axis, keepdims)

    def mean(self, axis: Axes = None, keepdims: bool = False) -> Tensor:
        """Mean over ``axis`` (all dimensions when None); float tensors only."""
        return self._reduce("mean", axis, keepdims)

    def max(self, axis: Axes = None, keepdims: bool = False) -> Tensor:
        """Maximum over ``axis`` (all dimensions when None)."""
        return self._reduce("max", axis, keepdims)

    def min(self, axis: Axes = None, keepdims: bool = False) -> Tensor:
        """Minimum over ``axis`` (all dimensions when None)."""
        return self._reduce("min", axis, keepdims)

    def astype(self, dtype: Any) -> Tensor:
        """Element type conversion with numpy's astype semantics (graph.cast)."""
        return build(graph.CastOp, self, ir.TypeAttr.get(element_type(dtype)))

    def take(self, indices: TensorLike, axis: int = 0) -> Tensor:
        """``numpy.take(self, indices, axis)`` (graph.gather); unlike numpy, axis defaults to 0.

        Negative indices count from the end; out-of-range indices are clamped.
        """
        (indices,) = tensors(indices)
        if indices.dtype == np.bool_:
            raise error("boolean mask indexing has a data-dependent shape", UnsupportedError)
        return build(graph.GatherOp, self, indices, axis)

    def __getitem__(self, key: Any) -> Tensor:
        """numpy basic indexing plus one integer-array (or Tensor) index.

        Ints, slices with positive steps, None (np.newaxis) and Ellipsis
        become one graph.slice and, if the rank changes, one graph.reshape;
        an array index then becomes graph.gather on its axis. Negative steps,
        boolean masks and several array indices are unsupported.
        """
        entries = list(key) if isinstance(key, tuple) else [key]
        # Identity tests only: == on a Tensor or array entry would build ops.
        ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
        if len(ellipses) > 1:
            raise error("an index can only have a single ellipsis ('...')")
        consumed = sum(e is not None and e is not Ellipsis for e in entries)
        if consumed > self.ndim:
            raise error(f"too many indices for a tensor of rank {self.ndim}: {consumed}")
        at = ellipses[0] if ellipses else len(entries)
        entries[at : at + 1] = [slice(None)] * (self.ndim - consumed)

        ranges: list[tuple[int, int, int]] = []  # (start, limit, step) per input dim
        kept: list[Optional[int]] = []  # per result dim: the sliced input dim, or None for a new axis
        array: Optional[tuple[int, int, Any]] = None  # (entry position, result axis, indices)
        int_positions: list[int] = []
        for position, entry in enumerate(entries):
            if entry is None:
                kept.append(None)
                continue
            dim = len(ranges)
            size = self.shape[dim]
            if isinstance(size, str):
                # A size symbol's dim is taken whole (graph.slice's 0:end:1),
                # by ':' or by an array index (a gather along it).
                if isinstance(entry, slice) and entry in (slice(None), slice(None, None, 1), slice(0, None, 1)):
                    ranges.append((0, _SLICE_TO_END, 1))
                    kept.append(dim)
                    continue
                if not isinstance(entry, (Tensor, np.ndarray, list)):
                    raise error(f"index {entry!r} of dim {dim}, whose size is the size symbol {size}: such a dim is "
                                "only indexed whole (':') or by an array so far", UnsupportedError)
            if isinstance(entry, slice):
                if entry.step is not None and entry.step < 0:
                    raise error(f"slice step {entry.step} is negative; only positive steps are supported",
                                UnsupportedError)
                start, stop, step = entry.indices(size)
                ranges.append((start, max(start, stop), step))
                kept.append(dim)
            elif isinstance(entry, (Tensor, np.ndarray, list)):
                if array is not None:
                    raise error("only one integer-array index is supported", UnsupportedError)
                array = (position, len(kept), entry)
                ranges.append((0, _SLICE_TO_END if isinstance(size, str) else size, 1))
                kept.append(dim)
            else:
                try:
                    index = operator.index(entry)
                except TypeError:
                    raise TypeError(f"invalid index {entry!r}: use ints, slices, None, ... or int arrays") from None
                if not -size <= index < size:
                    raise error(f"index {index} is out of bounds for axis {dim} with size {size}")
                ranges.append((index % size, index % size + 1, 1))
                int_positions.append(position)
        if array is not None and int_positions:
            # numpy moves the indexed dims to the front unless the int and
            # array indices are adjacent; only the adjacent case is supported.
            positions = sorted(int_positions + [array[0]])
            if positions[-1] - positions[0] + 1 != len(positions):
                raise error("int and array indices separated by a slice are unsupported", UnsupportedError)

        result = self
        if ranges != [(0, _SLICE_TO_END if isinstance(size, str) else size, 1) for size in self.shape]:
            result = build(graph.SliceOp, self, *(list(column) for column in zip(*ranges)))
        shape = [1 if d is None else result.shape[d] for d in kept]
        if tuple(shape) != result.shape:
            result = result.reshape(shape)
        if array is not None:
            result = result.take(array[2], array[1])
        return result


def _tensor_type(example: Any, index: int, dims: dict[str, tuple[int, int]]) -> ir.RankedTensorType:
    if not isinstance(example, (np.ndarray, np.generic, TensorSpec)):
        kind = type(example).__name__
        raise TypeError(f"example {index} must be a numpy array or tessel.TensorSpec, got {kind}")
    shape = list(example.shape)
    symbols = [d for d in shape if isinstance(d, str)]
    if not symbols:
        return ir.RankedTensorType.get(shape, element_type(example.dtype))
    for symbol in symbols:
        if symbol not in dims:
            raise error(f"example {index} has dim {symbol!r}, which dims= does not give a range "
                        f"(dims={{{symbol!r}: (min, max)}})")
    encoding = ir.Attribute.parse(f"#graph.shape<[{', '.join(map(str, shape))}]>")
    return ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if isinstance(d, str) else d for d in shape],
                                   element_type(example.dtype), encoding)


def _dims_attribute(dims: dict[str, Any]) -> ir.Attribute:
    """``graph.dims``: each symbol's ``(min, max)`` or ``(min, max, multiple_of)``."""
    entries = []
    for symbol, limits in dims.items():
        if not isinstance(symbol, str) or not symbol.isidentifier():
            raise error(f"dims: {symbol!r} is not a symbol name (an identifier)")
        if not isinstance(limits, (tuple, list)) or len(limits) not in (2, 3) or not all(
                isinstance(v, numbers.Integral) for v in limits):
            raise error(f"dims[{symbol!r}] is {limits!r}; give (min, max) or (min, max, multiple_of)")
        step = f", multiple_of {int(limits[2])}" if len(limits) == 3 else ""
        entries.append(f"{symbol} = #graph.dim<{int(limits[0])}, {int(limits[1])}{step}>")
    try:
        return ir.Attribute.parse("{" + ", ".join(entries) + "}")
    except ir.MLIRError as e:
        raise compile_error("tracing failed: dims", e) from None


def trace(fn: Callable[..., Any], *examples: Union[np.ndarray, TensorSpec], name: str = "main",
          dims: Optional[dict[str, Any]] = None) -> ir.Module:
    """Builds a graph module by calling ``fn`` on symbolic tensors.

    Each example (a numpy array, whose values are not used, or a
    :class:`tessel.TensorSpec`) gives the shape and dtype of one argument of
    the public ``func.func @name``; ``fn`` gets one :class:`Tensor` per
    example and returns a Tensor or a tuple/list of Tensors, the function's
    results. Arrays and scalars ``fn`` uses become constants. Raises
    :class:`tessel.CompileError`, located at the offending line of ``fn``,
    when an op gets operands of the wrong shape or dtype.

    A string in a TensorSpec's shape is a size symbol, known only at each
    call: ``TensorSpec(("batch", "seq", 256), np.float32)`` with
    ``dims={"batch": (1, 64), "seq": (1, 2048)}`` (each symbol's range,
    ``(min, max)`` or ``(min, max, multiple_of)``). Specs that name the same
    symbol have the same size there; one compile serves every size in the
    ranges (docs/dynamic-shapes.md).
    """
    dims = dict(dims or {})
    with context(), location():
        types = [_tensor_type(e, i, dims) for i, e in enumerate(examples)]
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp(name, ir.FunctionType.get(types, []))
        if dims:
            function.attributes["graph.dims"] = _dims_attribute(dims)
        with ir.InsertionPoint(function.add_entry_block()):
            outputs = fn(*(Tensor(arg) for arg in function.arguments))
            results = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
            if not results or not all(isinstance(r, Tensor) for r in results):
                raise TypeError(
                    f"{getattr(fn, '__name__', 'fn')} must return a Tensor or a tuple/list of Tensors, "
                    f"got {outputs!r}"
                )
            func.ReturnOp([r.value for r in results])
        function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(types, [r.value.type for r in results])
        )
    verify(module)
    return module
