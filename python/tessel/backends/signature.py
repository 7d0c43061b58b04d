"""The signature of a compiled function: shapes and dtypes of its tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..dtypes import ELEMENT_DTYPES
from ..errors import UnsupportedError
from ..ir import format_location

__all__ = ["TensorSpec", "entry_function", "signature"]

@dataclass(frozen=True)
class TensorSpec:
    """Shape and numpy dtype of one argument or result."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"


def _spec(t: ir.Type, what: str, backend: str) -> TensorSpec:
    if not isinstance(t, ir.RankedTensorType):
        raise UnsupportedError(f"{what} has type {t}; {backend} takes ranked tensors only")
    tensor = t
    if not tensor.has_static_shape:
        raise UnsupportedError(f"{what} has dynamic shape {t}; {backend} needs static shapes")
    element = str(tensor.element_type)
    if element not in ELEMENT_DTYPES:
        raise UnsupportedError(
            f"{what} has element type {element}; {backend} runs {', '.join(ELEMENT_DTYPES)}"
        )
    return TensorSpec(tuple(tensor.shape), ELEMENT_DTYPES[element])


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
            elif op.name.split(".", 1)[0] not in TENSOR_DIALECTS:
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


def signature(func: Any, backend: str) -> tuple[str, list[TensorSpec], list[TensorSpec]]:
    """Name, argument specs and result specs of a ``func.func`` on tensors."""
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [_spec(t, f"argument {i} of @{name}", backend) for i, t in enumerate(ftype.inputs)]
    outputs = [_spec(t, f"result {i} of @{name}", backend) for i, t in enumerate(ftype.results)]
    return name, inputs, outputs
