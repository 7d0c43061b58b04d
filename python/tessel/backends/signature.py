"""The signature of a compiled function: shapes and dtypes of its tensors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from mlir import ir
from mlir.dialects import func

from .. import shapes
from ..dtypes import ELEMENT_DTYPES
from ..errors import UnsupportedError
from ..ir import format_location

__all__ = ["TensorSpec", "entry_function", "signature", "size_ranges", "symbolic_shape"]

@dataclass(frozen=True)
class TensorSpec:
    """Shape and numpy dtype of one argument or result. A dim of the shape
    is an int, or a string: a size symbol (``"batch"``) or an expression
    over symbols (``"2 * seq"``), whose value each call binds
    (docs/dynamic-shapes.md)."""

    shape: tuple[Union[int, str], ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def sizes(self) -> tuple[shapes.Size, ...]:
        """The shape with each symbolic dim as a :mod:`tessel.shapes` tree."""
        return tuple(d if isinstance(d, int) else shapes.parse_size(d) for d in self.shape)


_SHAPE_ENCODING = re.compile(r"#graph\.shape<\[(.*)\]>")
_DIM_RANGE = re.compile(r"#graph\.dim<\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*multiple_of\s+(\d+)\s*)?>")


def symbolic_shape(t: ir.RankedTensorType, what: str = "a tensor",
                   shape: Any = None) -> tuple[Union[int, str], ...]:
    """The shape of ``t``, each dynamic dim the text of its size expression
    in the type's ``#graph.shape`` encoding, or in ``shape`` where given (the
    ``graph.shape`` attribute of a plain type's argument); UnsupportedError,
    naming ``what``, for a dynamic dim that has none."""
    if t.has_static_shape:
        return tuple(t.shape)
    encoding = t.encoding if shape is None else shape
    match = _SHAPE_ENCODING.fullmatch(str(encoding)) if encoding is not None else None
    if match is None:
        raise UnsupportedError(f"{what} has dynamic shape {t} without size symbols (#graph.shape) naming its "
                               "`?` dims")
    # Entries are integers or affine expressions, which have no commas.
    entries = [e.strip() for e in match.group(1).split(",")]
    return tuple(int(e) if re.fullmatch(r"-?\d+", e) else e for e in entries)


def size_ranges(func: Any) -> dict[str, shapes.DimRange]:
    """The range of each size symbol of ``func`` (its ``graph.dims``)."""
    if "graph.dims" not in func.attributes:
        return {}
    ranges = {}
    for named in ir.DictAttr(func.attributes["graph.dims"]):
        match = _DIM_RANGE.fullmatch(str(named.attr))
        if match is None:
            raise UnsupportedError(f"graph.dims entry {named.name} = {named.attr} is not a #graph.dim range")
        ranges[named.name] = shapes.DimRange(int(match.group(1)), int(match.group(2)), int(match.group(3) or 1))
    return ranges


def _spec(t: ir.Type, what: str, backend: str, symbolic: bool, shape: Any = None) -> TensorSpec:
    """``t``'s spec; ``shape`` is the ``graph.shape`` argument attribute that
    names the dims of a plain type (of a scheduled module's function)."""
    if not isinstance(t, ir.RankedTensorType):
        raise UnsupportedError(f"{what} has type {t}; {backend} takes ranked tensors only")
    tensor = t
    if not tensor.has_static_shape and not symbolic:
        raise UnsupportedError(f"{what} has dynamic shape {t}; {backend} needs static shapes (size symbols run "
                               "on the CPU backend so far)")
    element = str(tensor.element_type)
    if element not in ELEMENT_DTYPES:
        raise UnsupportedError(
            f"{what} has element type {element}; {backend} runs {', '.join(ELEMENT_DTYPES)}"
        )
    return TensorSpec(symbolic_shape(tensor, what, shape), ELEMENT_DTYPES[element])


def _name(func: Any) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value


def entry_function(module: ir.Module, entry: str | None) -> Any:
    """The ``func.func`` named ``entry``, else the module's only public one.
    What it calls must be functions of the module, without recursion."""
    funcs = [op for op in module.body.operations if isinstance(op, func.FuncOp)]
    public = [f for f in funcs if "sym_visibility" not in f.attributes]
    if entry is not None:
        match = [f for f in funcs if _name(f) == entry]
        if not match:
            raise UnsupportedError(f"no function named {entry!r} in the module")
        _check_calls(match[0], {_name(f): f for f in funcs})
        return match[0]
    if len(public) != 1:
        raise UnsupportedError(f"the module has public functions {[_name(f) for f in public]}; "
                               "pass entry= to choose one")
    _check_calls(public[0], {_name(f): f for f in funcs})
    return public[0]


# Dialects of tensor programs: what a backend compiles. Ops of others
# (llvm.store, memref.alloc, gpu.barrier, vector.print, ...) would run
# unchecked in the host program.
TENSOR_DIALECTS = ("builtin", "func", "graph", "loop", "arith", "math", "tensor", "linalg", "scf", "affine")
# Ops of scheduled modules (destination-passing style) from other dialects.
_DESTINATION_OPS = frozenset({"bufferization.materialize_in_destination"})


def _check_calls(entry: Any, funcs: dict[str, Any]) -> None:
    """Refuses what no backend can compile in the functions ``entry``
    reaches: a call to a declaration (no body), recursion (it would run
    forever or overflow the stack), indirect calls, ops outside
    TENSOR_DIALECTS, a NUL in a name (LLVM rejects it)."""
    def callees(func: Any) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = []
        refused: list[str] = []  # the walk's callback cannot raise: the bindings wrap the error

        def visit(op: ir.Operation) -> ir.WalkResult:
            # Locations are formatted only for what is kept: this runs on every op.
            if op.name == "func.call":
                found.append((ir.FlatSymbolRefAttr(op.attributes["callee"]).value, format_location(op.location)))
            elif op.name in ("func.call_indirect", "func.constant"):
                refused.append(f"{format_location(op.location)}: @{_name(func)} uses {op.name}; "
                               "tessel compiles direct calls only")
            elif op.name.split(".", 1)[0] not in TENSOR_DIALECTS and op.name not in _DESTINATION_OPS:
                refused.append(f"{format_location(op.location)}: @{_name(func)} uses {op.name}; tessel compiles "
                               f"tensor programs, of the dialects {', '.join(TENSOR_DIALECTS)}")
            return ir.WalkResult.INTERRUPT if refused else ir.WalkResult.ADVANCE

        func.operation.walk(visit)
        if refused:
            raise UnsupportedError(refused[0])
        return found

    done: set[str] = set()

    def visit_func(func: Any, path: tuple[str, ...]) -> None:
        name = _name(func)
        if "\0" in name:
            raise UnsupportedError(f"function name {name!r} contains a NUL character")
        if len(func.regions[0].blocks) == 0:
            raise UnsupportedError(f"@{path[-1] if path else name} calls @{name}, which is a declaration "
                                   "without a body; tessel compiles only functions defined in the module")
        for callee, location in callees(func):
            if callee in path + (name,):
                raise UnsupportedError(f"{location}: @{name} calls @{callee} recursively "
                                       f"({' -> '.join('@' + n for n in path + (name, callee))}); "
                                       "tessel does not compile recursion")
            if callee not in funcs:
                raise UnsupportedError(f"{location}: @{name} calls @{callee}, which the module does not define")
            if callee not in done:
                visit_func(funcs[callee], path + (name,))
        done.add(name)

    visit_func(entry, ())


def signature(func: Any, backend: str, symbolic: bool = False) -> tuple[str, list[TensorSpec], list[TensorSpec]]:
    """Name, argument specs and result specs of a ``func.func`` on tensors;
    with ``symbolic``, dims may be size symbols, each of which the arguments
    must have as a dim of its own (the call reads it there)."""
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    # A scheduled module's function has plain types, its dims named by
    # graph.shape argument attributes, and takes its results' destinations
    # as its last arguments (graph-to-linalg's destination-passing style).
    arg_shapes = [ir.DictAttr(a)["graph.shape"] if "graph.shape" in ir.DictAttr(a) else None
                  for a in func.arg_attrs] if "arg_attrs" in func.attributes else [None] * len(ftype.inputs)
    destinations = ir.IntegerAttr(func.attributes["tessel.destinations"]).value \
        if "tessel.destinations" in func.attributes else 0
    count = len(ftype.inputs) - destinations
    inputs = [_spec(t, f"argument {i} of @{name}", backend, symbolic, arg_shapes[i])
              for i, t in enumerate(ftype.inputs[:count])]
    outputs = [_spec(t, f"result {i} of @{name}", backend, symbolic,
                     arg_shapes[count + i] if destinations else None) for i, t in enumerate(ftype.results)]
    bound = {d for spec in inputs for d in spec.sizes() if isinstance(d, str)}
    for i, spec in enumerate(inputs + outputs):
        for d, size in enumerate(spec.sizes()):
            unbound = shapes.symbols_of(size) - bound
            if unbound:
                what = f"argument {i}" if i < len(inputs) else f"result {i - len(inputs)}"
                raise UnsupportedError(f"{what} of @{name} has dim {d} = {spec.shape[d]}, but no argument has a "
                                       f"dim that is {sorted(unbound)[0]} alone, which a call could read it from")
    return name, inputs, outputs
