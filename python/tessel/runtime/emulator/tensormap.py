"""Tensor maps for ``cp.async.bulk.tensor`` (TMA), tile mode.

On a GPU a tensor map is the opaque 128-byte CUtensorMap that the driver's
``cuTensorMapEncodeTiled`` writes; the emulator cannot read that, so
:func:`encode_tensor_map` takes the same arguments and writes the
emulator's own 128 bytes (little endian):

====== ===== ===========================================================
offset bytes field
====== ===== ===========================================================
0      4     magic ``b"TTM1"`` (the encoding's version is its last byte)
4      1     rank (1..5)
5      1     element size in bytes
6      1     swizzle span in bytes (0: none, 32, 64, 128)
7      1     fill: 0 zeros, 1 NaN
8      8     global address
16     40    global dims, 5 x u64, innermost first (unused: 1)
56     32    global strides in bytes of dims 1..4, 4 x u64 (dim 0: the element)
88     5     box dims, u8 (unused: 1)
93     5     element strides, u8 (unused: 1)
98     1     1 if the element is floating point (NaN fill allowed)
====== ===== ===========================================================

The kernel gets it as a ``.param .align 64 .b8 name[128]`` (a grid
constant) or at a global address.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from .ptx import EmulationError

__all__ = ["TensorMap", "encode_tensor_map", "decode_tensor_map", "swizzled"]

MAGIC = b"TTM1"
SIZE = 128
_SWIZZLES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
_FLOAT_NAMES = ("bfloat16", "tfloat32")


@dataclass(frozen=True)
class TensorMap:
    address: int
    element: int  # bytes
    dims: tuple[int, ...]  # innermost first
    strides: tuple[int, ...]  # bytes, dims 0..rank-1 (dim 0: the element size)
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int  # span in bytes, 0: none
    nan: bool

    @property
    def shape(self) -> tuple[int, ...]:
        """The box in shared memory, innermost first: elements a dim."""
        return tuple(-(-b // e) for b, e in zip(self.box, self.element_strides))

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * self.element

    def elements(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The global addresses of the box at ``coords`` (innermost first),
        in its shared-memory order (row-major, innermost dim contiguous),
        and which of them are inside the tensor."""
        address = np.full(math.prod(self.shape), self.address, np.int64)
        inside = np.ones(len(address), bool)
        for i in range(len(self.dims)):
            index = int(coords[i]) + np.arange(self.shape[i], dtype=np.int64) * self.element_strides[i]
            # Axis i of the row-major box, innermost last.
            view = (1,) * (len(self.dims) - 1 - i) + (-1,) + (1,) * i
            address = (address.reshape(self.shape[::-1]) + (index * self.strides[i]).reshape(view)).reshape(-1)
            inside = (inside.reshape(self.shape[::-1]) & ((index >= 0) & (index < self.dims[i])).reshape(view)
                      ).reshape(-1)
        return address, inside


def encode_tensor_map(device_address: int, dtype, dims, strides_bytes, box, element_strides=None,
                      swizzle: str = "none", fill: str = "zero", interleave: str = "none") -> bytes:
    """The emulator's 128-byte tensor map, for ``cuTensorMapEncodeTiled``'s
    arguments (dims, box and element strides innermost first; strides of
    dims 1..rank-1 in bytes), checked as the CUDA driver documents."""
    def bad(message: str) -> EmulationError:
        return EmulationError(f"encode_tensor_map: {message}")

    if interleave != "none":
        raise bad(f"interleave {interleave!r} is not supported by the emulator (only 'none')")
    if swizzle not in _SWIZZLES:
        raise bad(f"swizzle {swizzle!r} is not one of {', '.join(map(repr, _SWIZZLES))}")
    if fill not in ("zero", "nan"):
        raise bad(f"fill {fill!r} is not 'zero' or 'nan'")
    if isinstance(dtype, str) and dtype in _FLOAT_NAMES:
        element, is_float = {"bfloat16": 2, "tfloat32": 4}[dtype], True
    else:
        kind = np.dtype(dtype)
        if kind.kind not in "iuf" or kind.itemsize not in (1, 2, 4, 8):
            raise bad(f"dtype {kind} is not an integer or floating-point type of 1, 2, 4 or 8 bytes")
        element, is_float = kind.itemsize, kind.kind == "f"
    dims, box = [int(v) for v in dims], [int(v) for v in box]
    rank = len(dims)
    strides = [int(v) for v in strides_bytes]
    element_strides = [1] * rank if element_strides is None else [int(v) for v in element_strides]
    if not 1 <= rank <= 5:
        raise bad(f"rank {rank}: a tensor map has 1 to 5 dims")
    if len(strides) != rank - 1 or len(box) != rank or len(element_strides) != rank:
        raise bad(f"a rank-{rank} map takes {rank - 1} strides and {rank} box dims and element strides, got "
                  f"{len(strides)}, {len(box)} and {len(element_strides)}")
    if device_address % 16:
        raise bad(f"the global address {device_address:#x} is not 16-byte aligned")
    for i, d in enumerate(dims):
        if not 0 < d <= 1 << 32:
            raise bad(f"global dim {i} is {d}, outside 1..2^32")
    for i, s in enumerate(strides):
        if s % 16 or not 0 < s < 1 << 40:
            raise bad(f"global stride {i + 1} is {s} bytes: it must be a positive multiple of 16 below 2^40")
    for i, b in enumerate(box):
        if not 0 < b <= 256:
            raise bad(f"box dim {i} is {b}, outside 1..256")
    for i, e in enumerate(element_strides):
        if not 0 < e <= 8:
            raise bad(f"element stride {i} is {e}, outside 1..8")
    if box[0] * element % 16:
        raise bad(f"the box's inner dim is {box[0] * element} bytes, not a multiple of 16")
    span = _SWIZZLES[swizzle]
    if span and box[0] * element > span:
        raise bad(f"the box's inner dim is {box[0] * element} bytes, more than the {swizzle} swizzle's span")
    if fill == "nan" and not is_float:
        raise bad("a NaN fill needs a floating-point dtype")
    pad = 5 - rank
    raw = MAGIC + struct.pack("<BBBBQ5Q4Q5B5BB", rank, element, span, fill == "nan", device_address,
                              *dims, *[1] * pad, *strides, *[0] * (4 - len(strides)), *box, *[1] * pad,
                              *element_strides, *[1] * pad, is_float)
    return raw.ljust(SIZE, b"\0")


def decode_tensor_map(raw: bytes) -> TensorMap:
    """The map in 128 bytes; ValueError if they are not one :func:`encode_tensor_map` wrote."""
    if len(raw) != SIZE or raw[:4] != MAGIC:
        raise ValueError("the 128 bytes are not a tensor map of emulator.encode_tensor_map (a driver's "
                         "CUtensorMap is opaque to the emulator)")
    fields = struct.unpack_from("<BBBBQ5Q4Q5B5BB", raw, 4)
    rank, element, span, nan, address = fields[:5]
    dims, strides = fields[5:10][:rank], fields[10:14][:rank - 1]
    box, element_strides = fields[14:19][:rank], fields[19:24][:rank]
    return TensorMap(address, element, tuple(dims), (element, *strides), tuple(box), tuple(element_strides), span,
                     bool(nan))


def swizzled(offsets: np.ndarray, span: int) -> np.ndarray:
    """Shared byte offsets (from a 1024-byte aligned base) under a swizzle of
    ``span`` bytes: CUTLASS's Swizzle<3,4,3>, <2,4,3>, <1,4,3> for 128B, 64B,
    32B, the 16-byte chunk index XORed with the 128-byte row index mod 8, 4, 2."""
    if not span:
        return offsets
    mask = span // 16 - 1
    return offsets ^ (((offsets >> 7) & mask) << 4)
