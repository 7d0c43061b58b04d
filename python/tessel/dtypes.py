"""Element types: MLIR's names and their numpy dtypes.

Shared by the compiler and by :mod:`tessel.runtime`, so it imports no MLIR.
numpy has no bfloat16; ``ml_dtypes`` (a dependency of tessel, and of JAX and
ONNX) provides it. Where it is missing, bf16 tensors are a clear error and
everything else works.
"""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedError

__all__ = ["BFLOAT16", "ELEMENT_DTYPES", "described", "dtype_named", "host_array", "is_float", "words"]

try:
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BFLOAT16 = None

# MLIR element type -> numpy dtype, for every element type a tensor at a
# function boundary may have.
ELEMENT_DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    **({"bf16": BFLOAT16} if BFLOAT16 is not None else {}),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}


def is_float(dtype: object) -> bool:
    """Whether ``dtype`` is a floating-point type, bfloat16 included (whose
    numpy kind is "V")."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (BFLOAT16 is not None and dtype == BFLOAT16)


def dtype_named(name: str) -> np.dtype:
    """The numpy dtype of ``name`` (``dtype.name``, as manifests store it)."""
    if name == "bfloat16" and BFLOAT16 is None:
        raise UnsupportedError("bfloat16 tensors need the ml_dtypes package (pip install ml-dtypes)")
    return np.dtype(name)


def words(array: np.ndarray) -> np.ndarray:
    """``array`` itself, or for bfloat16 a view of its raw 16-bit words: the
    buffer protocol, ctypes and torch.from_numpy have no bfloat16."""
    return array.view(np.uint16) if array.dtype == BFLOAT16 and BFLOAT16 is not None else array


def host_array(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Host argument ``array`` (``dtype`` in either byte order) as the bytes
    kernels read: C-contiguous, native byte order, booleans 0 or 1 (numpy
    takes any nonzero byte for True; kernels read the low bit, or the whole
    byte as an i8). ``array`` itself when it is all that already."""
    if dtype == np.bool_:
        return np.ascontiguousarray(array.view(np.uint8) != 0)  # != keeps a Fortran array's order
    return np.ascontiguousarray(array, dtype)


def described(dtype: np.dtype) -> str:
    """``dtype``'s name, with its byte order when that is not the machine's:
    a big-endian float32 is not the float32 an error message asks for."""
    if dtype.isnative:
        return dtype.name
    return f"{'big' if dtype.byteorder == '>' else 'little'}-endian {dtype.name}"
