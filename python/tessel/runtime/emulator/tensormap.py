"""Tensor maps for ``cp.async.bulk.tensor`` (TMA), tile mode.

On a GPU a tensor map is the opaque 128-byte CUtensorMap that the driver's
``cuTensorMapEncodeTiled`` writes, or that a kernel edits field by field
with ``tensormap.replace``; the emulator cannot read that encoding, so it
has its own 128 bytes (little endian), one field per ``tensormap.replace``
field, each holding that instruction's value for it:

====== ===== ====================== ====================================
offset bytes tensormap.replace      field
====== ===== ====================== ====================================
0      4                            magic ``b"TTM2"`` (version: last byte)
4      1     .rank                  rank - 1 (0..4)
5      1     .elemtype              PTX's element type (``tensormaps.ELEMENT_TYPES``)
6      1     .swizzle_mode          0 none, 1 32B, 2 64B, 3 128B
7      1     .fill_mode             0 zeros, 1 NaN
8      1     .interleave_layout     0 none
9      1     .swizzle_atomicity     0 16 bytes
16     8     .global_address        global address
24     40    .global_dim            dims 0..4, 5 x u64, innermost first
64     32    .global_stride         strides of dims 1..4 in bytes, 4 x u64
96     10    .box_dim               box dims 0..4, 5 x u16
106    5     .element_stride        element strides 0..4, 5 x u8
====== ===== ====================== ====================================

The rest is zero. :func:`encode_tensor_map` (the host's
``cuTensorMapEncodeTiled``) writes a whole map; ``tensormap.replace``
(:func:`replace_field`) writes one field and the magic, so a kernel that
builds a map from zeroed bytes field by field, as Triton's device-side
descriptors do, has one once it has set every field its rank needs; a
field never written reads as zero (rank 1, ``.u8``, no swizzle, zero
fill), and a zero dim, stride, box dim or element stride is refused when
the map is used (:func:`decode_tensor_map` checks a map as the CUDA
driver checks its arguments, by the rules of :mod:`tessel.runtime.tensormaps`
that the artifact reader checks a manifest's maps with). A kernel gets a
map as a ``.param .align 64 .b8 name[128]`` (a grid constant) or at a
global address.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from ..tensormaps import ELEMENT_TYPES, FILLS, MAX_RANK, SIZE, SWIZZLES, TensorMapInfo, check
from .ptx import EmulationError

__all__ = ["FIELDS", "SIZE", "TensorMap", "decode_tensor_map", "encode_tensor_map", "replace_field", "swizzled"]

MAGIC = b"TTM2"
_BY_PTX = {t.ptx: t for t in ELEMENT_TYPES.values()}  # PTX's .elemtype -> the element type
_SWIZZLE_NAMES = tuple(SWIZZLES)  # by .swizzle_mode
_FILL_NAMES = tuple(FILLS)  # by .fill_mode
# Field -> (byte offset, struct format of one value, values (ord 0..count-1), bits of its tensormap.replace
# operand). Scalar fields have one value and no ord.
FIELDS: dict[str, tuple[int, str, int, int]] = {
    "rank": (4, "B", 1, 32), "elemtype": (5, "B", 1, 32), "swizzle_mode": (6, "B", 1, 32),
    "fill_mode": (7, "B", 1, 32), "interleave_layout": (8, "B", 1, 32), "swizzle_atomicity": (9, "B", 1, 32),
    "global_address": (16, "Q", 1, 64), "global_dim": (24, "Q", 5, 32), "global_stride": (64, "Q", 4, 64),
    "box_dim": (96, "H", 5, 32), "element_stride": (106, "B", 5, 32),
}
# How errors of the shared rules (tensormaps.check) call the fields: by the map's fields, as a kernel
# that sets them with tensormap.replace knows them; strides by the dim they step (1..rank-1).
_NAMES = {"dims": "global dim", "strides": "global stride", "box": "box dim", "element_strides": "element stride",
          "dtype": "element type", "swizzle": "swizzle mode", "fill": "fill mode", "interleave": "interleave layout",
          "l2_promotion": "L2 promotion", "address": "the global address"}


def _named(key: str, index: int | None = None) -> str:
    if index is None:
        return _NAMES[key] + ("s" if key in ("dims", "strides", "box", "element_strides") else "")
    return f"{_NAMES[key]} {index + 1 if key == 'strides' else index}"


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


def _element_type(dtype) -> str:
    """The tensor-map element type (a key of ``tensormaps.ELEMENT_TYPES``:
    "bfloat16", "tfloat32", ...) of a numpy dtype or such a name: floats by
    name, integers by size (their bits copied)."""
    if isinstance(dtype, str) and dtype in ELEMENT_TYPES:
        return dtype
    kind = np.dtype(dtype)
    if kind.name in ELEMENT_TYPES:
        return kind.name
    if kind.kind not in "iu" or kind.itemsize not in (1, 2, 4, 8):
        raise EmulationError(f"encode_tensor_map: dtype {kind} is not an integer or floating-point type of 1, 2, 4 "
                             "or 8 bytes")
    return f"uint{8 * kind.itemsize}"


def encode_tensor_map(device_address: int, dtype, dims, strides_bytes, box, element_strides=None,
                      swizzle: str = "none", fill: str = "zero", interleave: str = "none",
                      l2_promotion: str = "none") -> bytes:
    """The emulator's 128-byte tensor map, for ``cuTensorMapEncodeTiled``'s
    arguments (dims, box and element strides innermost first; strides of
    dims 1..rank-1 in bytes; ``dtype`` a numpy dtype or a name of
    ``tensormaps.ELEMENT_TYPES``; swizzle, fill, interleave and L2
    promotion by their names there), checked as the CUDA driver documents
    (``tensormaps.check``). The L2 promotion is checked and dropped: a
    hint of the fetch size, it changes no result and the map has no field
    for it."""
    dims = tuple(int(v) for v in dims)
    info = TensorMapInfo(_element_type(dtype), dims, tuple(int(v) for v in strides_bytes),
                         tuple(int(v) for v in box),
                         (1,) * len(dims) if element_strides is None else tuple(int(v) for v in element_strides),
                         swizzle, fill, interleave, l2_promotion)
    try:
        check(info, int(device_address), _named)
        fields = {"rank": [info.rank - 1], "elemtype": [info.element.ptx],
                  "swizzle_mode": [_SWIZZLE_NAMES.index(swizzle)], "fill_mode": [_FILL_NAMES.index(fill)],
                  "global_address": [device_address], "global_dim": info.dims, "global_stride": info.strides,
                  "box_dim": info.box, "element_stride": info.element_strides}
        raw = bytes(SIZE)
        for field, values in fields.items():
            for ord_, value in enumerate(values):
                raw = replace_field(raw, field, ord_, int(value))
        decode_tensor_map(raw)  # the emulator's own limits (no .ftz copies)
    except ValueError as error:
        raise EmulationError(f"encode_tensor_map: {error}") from None
    return raw


def replace_field(raw: bytes, field: str, ord_: int, value: int) -> bytes:
    """``raw`` with ``field`` (a key of :data:`FIELDS`; ``ord_`` its dim, 0
    for a scalar field) set to ``value`` and the magic written, as
    ``tensormap.replace`` does; ValueError if the value does not fit."""
    offset, code, count, _ = FIELDS[field]
    if not 0 <= ord_ < count:
        raise ValueError(f".{field} has {'no ord' if count == 1 else f'ord 0..{count - 1}'}, got {ord_}")
    limit = 1 << 8 * struct.calcsize(code)
    if not 0 <= value < limit:
        raise ValueError(f".{field} of {value} does not fit the map's field (0..{limit - 1})")
    out = bytearray(raw)
    out[:4] = MAGIC
    struct.pack_into("<" + code, out, offset + ord_ * struct.calcsize(code), value)
    return bytes(out)


def _values(raw: bytes, field: str) -> tuple[int, ...]:
    offset, code, count, _ = FIELDS[field]
    return struct.unpack_from(f"<{count}{code}", raw, offset)


def decode_tensor_map(raw: bytes) -> TensorMap:
    """The map in 128 bytes, checked as the CUDA driver checks
    ``cuTensorMapEncodeTiled``'s arguments (``tensormaps.check``);
    ValueError naming what is wrong (a driver's CUtensorMap, whose
    encoding is opaque, is never one)."""
    if len(raw) != SIZE or raw[:4] != MAGIC:
        raise ValueError("the 128 bytes are not a tensor map of the emulator (encode_tensor_map or "
                         "tensormap.replace writes one; a driver's CUtensorMap is opaque to the emulator)")
    (rank,), (kind,), (mode,), (fill,) = (_values(raw, f) for f in ("rank", "elemtype", "swizzle_mode",
                                                                       "fill_mode"))
    (interleave,), (atomicity,), (address,) = (_values(raw, f) for f in ("interleave_layout", "swizzle_atomicity",
                                                                         "global_address"))
    # Values the fields can hold but that name nothing the emulator copies; the rest are the driver's rules.
    rank += 1
    if rank > MAX_RANK:
        raise ValueError(f"rank {rank}: a tensor map has 1 to {MAX_RANK} dims")
    if kind not in _BY_PTX:
        raise ValueError(f"element type {kind} (a packed sub-byte type) is not supported by the emulator")
    element = _BY_PTX[kind]
    if element.name.endswith("_ftz"):
        raise ValueError(f"element type .{element.ptx_type} (subnormals flushed in the copy) is not supported by the "
                         "emulator")
    if mode >= len(_SWIZZLE_NAMES):
        raise ValueError(f"swizzle mode {mode} is not supported by the emulator (0 none, 1 32B, 2 64B, 3 128B)")
    if interleave or atomicity:
        raise ValueError("interleaved layouts and swizzle atomicities other than 16 bytes are not supported by "
                         "the emulator")
    if fill >= len(_FILL_NAMES):
        raise ValueError(f"fill mode {fill}: 0 fills with zeros, 1 with NaN")
    info = TensorMapInfo(element.name, _values(raw, "global_dim")[:rank], _values(raw, "global_stride")[:rank - 1],
                         _values(raw, "box_dim")[:rank], _values(raw, "element_stride")[:rank],
                         _SWIZZLE_NAMES[mode], _FILL_NAMES[fill])
    check(info, address, _named)
    return TensorMap(address, element.bytes, info.dims, (element.bytes, *info.strides), info.box,
                     info.element_strides, SWIZZLES[info.swizzle], info.fill == "nan")


def swizzled(offsets: np.ndarray, span: int, base: int = 0) -> np.ndarray:
    """Shared byte addresses under a swizzle of ``span`` bytes: CUTLASS's
    Swizzle<3,4,3>, <2,4,3>, <1,4,3> for 128B, 64B, 32B, the 16-byte chunk
    index XORed with the 128-byte row index mod 8, 4, 2. The pattern repeats
    every 8, 4, 2 rows from address ``base`` x 128 (a wgmma descriptor's
    base offset; TMA's patterns start at 0, so a box at an address off the
    repeat starts mid-pattern, as on hardware)."""
    if not span:
        return offsets
    mask = span // 16 - 1
    return offsets ^ ((((offsets >> 7) - base) & mask) << 4)
