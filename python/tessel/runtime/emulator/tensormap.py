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
5      1     .elemtype              PTX's element type (:data:`ELEMENT_TYPES`)
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
driver checks its arguments). A kernel gets a map as a ``.param .align 64
.b8 name[128]`` (a grid constant) or at a global address.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from .ptx import EmulationError

__all__ = ["ELEMENT_TYPES", "FIELDS", "SIZE", "TensorMap", "decode_tensor_map", "encode_tensor_map",
           "replace_field", "swizzled"]

MAGIC = b"TTM2"
SIZE = 128
# PTX's .elemtype values (tensormap.replace): name, bytes; 6 and up are floating point.
ELEMENT_TYPES = {0: ("u8", 1), 1: ("u16", 2), 2: ("u32", 4), 3: ("s32", 4), 4: ("u64", 8), 5: ("s64", 8),
                 6: ("f16", 2), 7: ("f32", 4), 8: ("f32.ftz", 4), 9: ("f64", 8), 10: ("bf16", 2),
                 11: ("tf32", 4), 12: ("tf32.ftz", 4)}
_FLOAT = 6
_SPANS = (0, 32, 64, 128)  # by .swizzle_mode
_SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
# Field -> (byte offset, struct format of one value, values (ord 0..count-1), bits of its tensormap.replace
# operand). Scalar fields have one value and no ord.
FIELDS: dict[str, tuple[int, str, int, int]] = {
    "rank": (4, "B", 1, 32), "elemtype": (5, "B", 1, 32), "swizzle_mode": (6, "B", 1, 32),
    "fill_mode": (7, "B", 1, 32), "interleave_layout": (8, "B", 1, 32), "swizzle_atomicity": (9, "B", 1, 32),
    "global_address": (16, "Q", 1, 64), "global_dim": (24, "Q", 5, 32), "global_stride": (64, "Q", 4, 64),
    "box_dim": (96, "H", 5, 32), "element_stride": (106, "B", 5, 32),
}


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


def _element_type(dtype) -> int:
    """PTX's .elemtype for a numpy dtype (or "bfloat16"/"tfloat32"): integers by size, their bits copied."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    named = {"float16": 6, "float32": 7, "float64": 9, "bfloat16": 10, "tfloat32": 11, "int32": 3, "int64": 5}
    if name in named:
        return named[name]
    kind = np.dtype(dtype)
    if kind.kind not in "iu" or kind.itemsize not in (1, 2, 4, 8):
        raise EmulationError(f"encode_tensor_map: dtype {kind} is not an integer or floating-point type of 1, 2, 4 "
                             "or 8 bytes")
    return {1: 0, 2: 1, 4: 2, 8: 4}[kind.itemsize]


def encode_tensor_map(device_address: int, dtype, dims, strides_bytes, box, element_strides=None,
                      swizzle: str = "none", fill: str = "zero", interleave: str = "none") -> bytes:
    """The emulator's 128-byte tensor map, for ``cuTensorMapEncodeTiled``'s
    arguments (dims, box and element strides innermost first; strides of
    dims 1..rank-1 in bytes), checked as the CUDA driver documents."""
    if interleave != "none":
        raise EmulationError(f"encode_tensor_map: interleave {interleave!r} is not supported by the emulator "
                             "(only 'none')")
    if swizzle not in _SWIZZLES:
        raise EmulationError(f"encode_tensor_map: swizzle {swizzle!r} is not one of "
                             f"{', '.join(map(repr, _SWIZZLES))}")
    if fill not in ("zero", "nan"):
        raise EmulationError(f"encode_tensor_map: fill {fill!r} is not 'zero' or 'nan'")
    dims, strides, box = [int(v) for v in dims], [int(v) for v in strides_bytes], [int(v) for v in box]
    rank = len(dims)
    element_strides = [1] * rank if element_strides is None else [int(v) for v in element_strides]
    if not 1 <= rank <= 5:
        raise EmulationError(f"encode_tensor_map: rank {rank}: a tensor map has 1 to 5 dims")
    if len(strides) != rank - 1 or len(box) != rank or len(element_strides) != rank:
        raise EmulationError(f"encode_tensor_map: a rank-{rank} map takes {rank - 1} strides and {rank} box dims "
                             f"and element strides, got {len(strides)}, {len(box)} and {len(element_strides)}")
    fields = {"rank": [rank - 1], "elemtype": [_element_type(dtype)], "swizzle_mode": [_SWIZZLES[swizzle]],
              "fill_mode": [fill == "nan"], "global_address": [device_address], "global_dim": dims,
              "global_stride": strides, "box_dim": box, "element_stride": element_strides}
    raw = bytes(SIZE)
    try:
        for field, values in fields.items():
            for ord_, value in enumerate(values):
                raw = replace_field(raw, field, ord_, int(value))
        decode_tensor_map(raw)
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
    ``cuTensorMapEncodeTiled``'s arguments; ValueError naming what is wrong
    (a driver's CUtensorMap, whose encoding is opaque, is never one)."""
    if len(raw) != SIZE or raw[:4] != MAGIC:
        raise ValueError("the 128 bytes are not a tensor map of the emulator (encode_tensor_map or "
                         "tensormap.replace writes one; a driver's CUtensorMap is opaque to the emulator)")
    (rank,), (kind,), (mode,), (fill,) = (_values(raw, f) for f in ("rank", "elemtype", "swizzle_mode",
                                                                       "fill_mode"))
    (interleave,), (atomicity,), (address,) = (_values(raw, f) for f in ("interleave_layout", "swizzle_atomicity",
                                                                         "global_address"))
    rank += 1
    if rank > 5:
        raise ValueError(f"rank {rank}: a tensor map has 1 to 5 dims")
    if kind not in ELEMENT_TYPES:
        raise ValueError(f"element type {kind} (a packed sub-byte type) is not supported by the emulator")
    name, element = ELEMENT_TYPES[kind]
    if name.endswith(".ftz"):
        raise ValueError(f"element type .{name} (subnormals flushed in the copy) is not supported by the emulator")
    if mode >= len(_SPANS):
        raise ValueError(f"swizzle mode {mode} is not supported by the emulator (0 none, 1 32B, 2 64B, 3 128B)")
    if interleave or atomicity:
        raise ValueError("interleaved layouts and swizzle atomicities other than 16 bytes are not supported by "
                         "the emulator")
    if fill > 1 or fill and kind < _FLOAT:
        raise ValueError(f"fill mode {fill}: 0 fills with zeros, 1 with NaN (floating-point elements only)")
    dims, box = _values(raw, "global_dim")[:rank], _values(raw, "box_dim")[:rank]
    strides, element_strides = _values(raw, "global_stride")[:rank - 1], _values(raw, "element_stride")[:rank]
    if address % 16:
        raise ValueError(f"the global address {address:#x} is not 16-byte aligned")
    for i, d in enumerate(dims):
        if not 0 < d <= 1 << 32:
            raise ValueError(f"global dim {i} is {d}, outside 1..2^32")
    for i, s in enumerate(strides):
        if s % 16 or not 0 < s < 1 << 40:
            raise ValueError(f"global stride {i + 1} is {s} bytes: it must be a positive multiple of 16 below 2^40")
    for i, b in enumerate(box):
        if not 0 < b <= 256:
            raise ValueError(f"box dim {i} is {b}, outside 1..256")
    for i, e in enumerate(element_strides):
        if not 0 < e <= 8:
            raise ValueError(f"element stride {i} is {e}, outside 1..8")
    span = _SPANS[mode]
    if box[0] * element % 16:
        raise ValueError(f"the box's inner dim is {box[0] * element} bytes, not a multiple of 16")
    if span and box[0] * element > span:
        raise ValueError(f"the box's inner dim is {box[0] * element} bytes, more than the {span}B swizzle's span")
    return TensorMap(address, element, tuple(dims), (element, *strides), tuple(box), tuple(element_strides), span,
                     bool(fill))


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
