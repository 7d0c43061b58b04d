"""DLPack through ctypes: reading what any producer exports, and exporting
device memory so that ``torch.from_dlpack`` (or cupy, jax) takes it.

numpy's own DLPack support stops at CPU memory and has no bfloat16; tessel
needs CUDA memory in and out (the runtime) and bf16 on both devices. Only
the stable, unversioned ``"dltensor"`` capsule is used: every producer
still gives it to a consumer that asks for no ``max_version``. Imports no
MLIR (the runtime uses it).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import BFLOAT16, words
from .errors import UnsupportedError

__all__ = ["CPU", "CUDA", "DLTensorView", "export", "read", "row_major_strides"]

CPU, CUDA = 1, 2  # DLDeviceType codes
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6  # DLDataTypeCode
_NAME = b"dltensor"


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
# A capsule's destructor gets the dying capsule as a bare pointer: as a
# py_object, ctypes would take a new reference to an object being freed.
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _Destructor]
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))


def _dtype_of(code: int, bits: int, lanes: int) -> np.dtype:
    known = {(_FLOAT, 32): np.float32, (_FLOAT, 16): np.float16, (_FLOAT, 64): np.float64,
             (_INT, 32): np.int32, (_INT, 64): np.int64, (_INT, 16): np.int16, (_INT, 8): np.int8,
             (_UINT, 8): np.uint8, (_UINT, 16): np.uint16, (_BOOL, 8): np.bool_}
    if lanes == 1 and (code, bits) in known:
        return np.dtype(known[code, bits])
    if lanes == 1 and (code, bits) == (_BFLOAT, 16):
        if BFLOAT16 is None:
            raise UnsupportedError("bfloat16 tensors need the ml_dtypes package (pip install ml-dtypes)")
        return BFLOAT16
    raise UnsupportedError(f"DLPack data type (code {code}, {bits} bits, {lanes} lanes) is not supported")


def _code_of(dtype: np.dtype) -> tuple[int, int]:
    if dtype == BFLOAT16 and BFLOAT16 is not None:
        return _BFLOAT, 16
    codes = {"f": _FLOAT, "i": _INT, "u": _UINT, "b": _BOOL}
    if dtype.kind not in codes:
        raise UnsupportedError(f"dtype {dtype.name} has no DLPack data type")
    return codes[dtype.kind], dtype.itemsize * 8


@dataclass(frozen=True)
class DLTensorView:
    """A tensor some producer exported: where it is and how it is laid out.
    ``owner`` keeps the producer's capsule, and so the memory, alive."""

    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: np.dtype
    device: tuple[int, int]  # (DLDeviceType, device id)
    owner: Any

    @property
    def contiguous(self) -> bool:
        """Row-major without gaps (strides of size-1 dims do not matter)."""
        expected = 1
        for size, stride in reversed(tuple(zip(self.shape, self.strides))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def numpy(self) -> np.ndarray:
        """The CPU tensor as a numpy array over the same memory."""
        if self.device[0] != CPU:
            raise UnsupportedError(f"DLPack device {self.device} is not CPU memory")
        storage = words(np.empty(0, self.dtype)).dtype
        holder = _ArrayInterface(self, storage)
        return np.asarray(holder).view(self.dtype)


class _ArrayInterface:
    """The view's memory as numpy sees it; the array's base, so it keeps the
    view (and its capsule) alive."""

    def __init__(self, view: DLTensorView, storage: np.dtype) -> None:
        self.view = view
        self.__array_interface__ = {
            "shape": view.shape, "typestr": storage.str, "version": 3,
            "data": (view.pointer or 0, False),
            "strides": tuple(s * storage.itemsize for s in view.strides),
        }


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a row-major tensor of ``shape``."""
    return tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))


def read(value: Any, stream: int | None = None) -> DLTensorView:
    """What ``value.__dlpack__()`` exports. ``stream`` (a CUDA stream
    handle) is passed to producers of CUDA memory, which then order their
    pending work before that stream's."""
    device = tuple(value.__dlpack_device__())
    capsule = value.__dlpack__(stream=stream) if stream is not None and device[0] == CUDA else value.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        raise UnsupportedError("the object's __dlpack__ did not return a 'dltensor' capsule")
    managed = _Managed.from_address(_api.PyCapsule_GetPointer(capsule, _NAME))
    t = managed.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else row_major_strides(shape)
    return DLTensorView((t.data or 0) + t.byte_offset, shape, strides,
                        _dtype_of(t.dtype.code, t.dtype.bits, t.dtype.lanes),
                        (t.device.device_type, t.device.device_id), capsule)


class _Export:
    """The C structures of one exported tensor and the Python object that
    owns its memory, kept alive until the consumer calls the deleter (or the
    capsule goes unconsumed)."""

    live: dict[int, "_Export"] = {}

    def __init__(self, pointer: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int],
                 owner: Any) -> None:
        code, bits = _code_of(dtype)
        self.owner = owner
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.managed = _Managed()
        t = self.managed.dl_tensor
        t.data, t.ndim, t.shape, t.strides, t.byte_offset = pointer, len(shape), self.shape, None, 0
        t.device = _Device(*device)
        t.dtype = _DataType(code, bits, 1)
        self.managed.deleter = _delete
        self.address = ctypes.addressof(self.managed)
        _Export.live[self.address] = self


@_Deleter
def _delete(managed: Any) -> None:
    _Export.live.pop(ctypes.addressof(managed.contents), None)


@_Destructor
def _destroy_capsule(capsule: int) -> None:
    # A consumer renames the capsule ("used_dltensor") and calls the deleter
    # itself; a capsule nobody consumed still holds its tensor.
    if _raw_is_valid(capsule, _NAME):
        _Export.live.pop(_raw_get_pointer(capsule, _NAME), None)


def export(pointer: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int], owner: Any) -> Any:
    """A ``"dltensor"`` capsule for row-major memory at ``pointer``; ``owner``
    stays alive until the consumer is done with it."""
    record = _Export(pointer, tuple(shape), np.dtype(dtype), device, owner)
    return _api.PyCapsule_New(record.address, _NAME, _destroy_capsule)
