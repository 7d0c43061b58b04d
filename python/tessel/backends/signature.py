"""The signature of a compiled function: shapes and dtypes of its tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir

from ..dtypes import ELEMENT_DTYPES
from ..errors import UnsupportedError

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


def entry_function(module: ir.Module, entry: str | None) -> Any:
    """The ``func.func`` named ``entry``, else the module's only public one."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    public = [f for f in funcs if "sym_visibility" not in f.attributes]
    if entry is not None:
        match = [f for f in funcs if ir.StringAttr(f.attributes["sym_name"]).value == entry]
        if not match:
            raise UnsupportedError(f"no function named {entry!r} in the module")
        return match[0]
    if len(public) != 1:
        names = [ir.StringAttr(f.attributes["sym_name"]).value for f in public]
        raise UnsupportedError(f"the module has public functions {names}; pass entry= to choose one")
    return public[0]


def signature(func: Any, backend: str) -> tuple[str, list[TensorSpec], list[TensorSpec]]:
    """Name, argument specs and result specs of a ``func.func`` on tensors."""
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [_spec(t, f"argument {i} of @{name}", backend) for i, t in enumerate(ftype.inputs)]
    outputs = [_spec(t, f"result {i} of @{name}", backend) for i, t in enumerate(ftype.results)]
    return name, inputs, outputs
