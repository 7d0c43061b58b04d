"""Tensor maps (TMA, ``cp.async.bulk.tensor``) as data, and the rules they obey.

A tensor map describes a tiled view of a tensor in global memory for the
Hopper tensor memory accelerator: its element type, dims and strides
(innermost first, strides in bytes), the box one copy moves, the element
strides inside the box, the shared-memory swizzle, the fill of elements
outside the tensor, and hints that change no result (L2 promotion). The
host encodes one with the driver's ``cuTensorMapEncodeTiled``, whose
arguments these fields are; on a GPU the result is an opaque 128-byte
``CUtensorMap``.

The rules of ``cuTensorMapEncodeTiled``'s documentation live here, once
(:func:`check`): the artifact reader checks a manifest's maps with them,
the dry driver the maps of a run (with their addresses), and the PTX
emulator its own encoding of a map (``emulator.tensormap``), whether the
host or a kernel (``tensormap.replace``) wrote it. Each caller names the
fields its way (a manifest field path, the emulator's map fields), so the
rule and its message are written once.

Standard library only, like the rest of the runtime's readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .fields import shown

__all__ = ["ADDRESS_ALIGNMENT", "ELEMENT_TYPES", "FILLS", "INTERLEAVES", "L2_PROMOTIONS", "MAX_RANK", "SIZE",
           "SWIZZLES", "ElementType", "TensorMapError", "TensorMapInfo", "check", "field_path"]

MAX_RANK = 5
SIZE = 128  # bytes of an encoded map: a CUtensorMap, and the emulator's own encoding
ADDRESS_ALIGNMENT = 16  # of a map's global address (without interleave)


@dataclass(frozen=True)
class ElementType:
    """An element type of a tensor map: its bytes, whether it is floating
    point (only those may be filled with NaN), its value and spelling of
    PTX's ``.elemtype`` (``tensormap.replace``) and its
    ``CUtensorMapDataType`` member (after ``CU_TENSOR_MAP_DATA_TYPE_``).
    The two enums order the types differently, so each is written out."""

    name: str
    bytes: int
    floating: bool
    ptx: int
    ptx_type: str
    driver: str


# Every type cuTensorMapEncodeTiled takes but the packed sub-byte ones (16U4, 16U6), which tessel never moves.
ELEMENT_TYPES: dict[str, ElementType] = {t.name: t for t in (
    ElementType("uint8", 1, False, 0, "u8", "UINT8"), ElementType("uint16", 2, False, 1, "u16", "UINT16"),
    ElementType("uint32", 4, False, 2, "u32", "UINT32"), ElementType("int32", 4, False, 3, "s32", "INT32"),
    ElementType("uint64", 8, False, 4, "u64", "UINT64"), ElementType("int64", 8, False, 5, "s64", "INT64"),
    ElementType("float16", 2, True, 6, "f16", "FLOAT16"), ElementType("float32", 4, True, 7, "f32", "FLOAT32"),
    ElementType("float32_ftz", 4, True, 8, "f32.ftz", "FLOAT32_FTZ"),
    ElementType("float64", 8, True, 9, "f64", "FLOAT64"), ElementType("bfloat16", 2, True, 10, "bf16", "BFLOAT16"),
    ElementType("tfloat32", 4, True, 11, "tf32", "TFLOAT32"),
    ElementType("tfloat32_ftz", 4, True, 12, "tf32.ftz", "TFLOAT32_FTZ"),
)}
# Name -> span in bytes (0: none), in the order of PTX's .swizzle_mode values (0..3). The driver's
# CUtensorMapSwizzle member is CU_TENSOR_MAP_SWIZZLE_<name upper-cased>.
SWIZZLES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
# Name -> CUtensorMapFloatOOBfill member (after CU_TENSOR_MAP_FLOAT_OOB_FILL_), in the order of
# PTX's .fill_mode values: elements outside the tensor read as zeros, or as NaN.
FILLS = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}
# Name -> CUtensorMapInterleave member (after CU_TENSOR_MAP_INTERLEAVE_). Interleaved layouts (NC/8HWC8)
# are not tessel's: only "none".
INTERLEAVES = {"none": "NONE"}
# Name -> CUtensorMapL2promotion member (after CU_TENSOR_MAP_L2_PROMOTION_): the L2 fetch granularity, a
# hint that changes no result.
L2_PROMOTIONS = {"none": "NONE", "64B": "L2_64B", "128B": "L2_128B", "256B": "L2_256B"}


class TensorMapError(ValueError):
    """A tensor map that breaks a rule of ``cuTensorMapEncodeTiled``; the message names the field."""


@dataclass(frozen=True)
class TensorMapInfo:
    """A tiled tensor map, as ``cuTensorMapEncodeTiled``'s arguments but the
    global address: ``dims``, ``box`` and ``element_strides`` innermost
    first; ``strides`` in bytes, of dims 1..rank-1 (dim 0's is the element
    size). ``buffer`` is the artifact buffer whose device address the map
    starts at (None for a map built by hand, e.g. the emulator's
    ``encode_tensor_map``). In an artifact with size symbols, ``dims`` and
    ``strides`` may be size expressions (:mod:`tessel.runtime.sizes`): the
    executor evaluates them at each call's sizes before anything here
    (``extent``, :func:`check`) sees the map."""

    dtype: str  # a key of ELEMENT_TYPES
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: str = "none"  # a key of SWIZZLES
    fill: str = "zero"  # a key of FILLS
    interleave: str = "none"  # a key of INTERLEAVES
    l2_promotion: str = "none"  # a key of L2_PROMOTIONS
    buffer: int | None = None

    @property
    def element(self) -> ElementType:
        return ELEMENT_TYPES[self.dtype]

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def extent(self) -> int:
        """The bytes from the map's global address to the end of its last
        element: a copy through the map touches nothing past them (elements
        outside the dims are filled or clipped, never accessed)."""
        strides = (self.element.bytes, *self.strides)
        return self.element.bytes + sum((d - 1) * s for d, s in zip(self.dims, strides))

    def to_json(self) -> dict:
        """The manifest's record of the map (``tensor_maps[i]``)."""
        return {"buffer": self.buffer, "dtype": self.dtype, "dims": list(self.dims), "strides": list(self.strides),
                "box": list(self.box), "element_strides": list(self.element_strides), "swizzle": self.swizzle,
                "fill": self.fill, "interleave": self.interleave, "l2_promotion": self.l2_promotion}


Namer = Callable[..., str]


def field_path(where: str) -> Namer:
    """Names fields as a manifest's paths under ``where`` (``tensor_maps[0].box[1]``)."""
    def name(key: str, index: int | None = None) -> str:
        if key == "address":
            return f"the global address of {where}" if where else "the global address"
        path = f"{where}.{key}" if where else key
        return path if index is None else f"{path}[{index}]"
    return name


def _one_of(value: object, table: dict, what: str) -> None:
    if not isinstance(value, str) or value not in table:
        raise TensorMapError(f"{what} must be one of {', '.join(table)}, not {shown(value)}")


def check(tensor_map: TensorMapInfo, address: int | None = None, name: Namer = field_path("")) -> None:
    """Checks ``tensor_map`` (and its global ``address``, when known) as
    the driver documents ``cuTensorMapEncodeTiled``'s arguments; a
    :class:`TensorMapError` names the first field that breaks a rule, as
    ``name(key, index)`` calls it (key: a field of :class:`TensorMapInfo`,
    or "address").

    The rules: rank 1..5 with as many dims, box dims and element strides
    and one stride fewer; the address 16-byte aligned; dims 1..2^32;
    strides positive multiples of 16 below 2^40; box dims 1..256; element
    strides 1..8; the box's inner dim a multiple of 16 bytes and, swizzled,
    within the swizzle's span; NaN fill only for floating-point elements.
    One stricter than the driver: element stride 0 must be 1, as the driver
    ignores it (TMA has no stride in the innermost dim), so another value
    would say what no copy does."""
    m = tensor_map
    _one_of(m.dtype, ELEMENT_TYPES, name("dtype"))
    _one_of(m.swizzle, SWIZZLES, name("swizzle"))
    _one_of(m.fill, FILLS, name("fill"))
    _one_of(m.l2_promotion, L2_PROMOTIONS, name("l2_promotion"))
    if m.interleave != "none":
        raise TensorMapError(f"{name('interleave')} must be 'none', not {shown(m.interleave)} (interleaved layouts are "
                             "not supported)")
    rank, element = m.rank, m.element
    if not 1 <= rank <= MAX_RANK:
        raise TensorMapError(f"{name('dims')} has {rank} values; a tensor map has 1 to {MAX_RANK} dims")
    for key, values, count in (("strides", m.strides, rank - 1), ("box", m.box, rank),
                               ("element_strides", m.element_strides, rank)):
        if len(values) != count:
            raise TensorMapError(f"{name(key)} has {len(values)} values; a rank-{rank} tensor map has {count}")
    if address is not None and address % ADDRESS_ALIGNMENT:
        raise TensorMapError(f"{name('address')} ({address:#x}) is not {ADDRESS_ALIGNMENT}-byte aligned")
    for i, d in enumerate(m.dims):
        if not 0 < d <= 1 << 32:
            raise TensorMapError(f"{name('dims', i)} is {d}, outside 1..2^32")
    for i, s in enumerate(m.strides):
        if s % 16 or not 0 < s < 1 << 40:
            raise TensorMapError(f"{name('strides', i)} is {s} bytes: it must be a positive multiple of 16 "
                                 "below 2^40")
    for i, b in enumerate(m.box):
        if not 0 < b <= 256:
            raise TensorMapError(f"{name('box', i)} is {b}, outside 1..256")
    for i, e in enumerate(m.element_strides):
        if not 0 < e <= 8:
            raise TensorMapError(f"{name('element_strides', i)} is {e}, outside 1..8")
    if m.element_strides[0] != 1:
        raise TensorMapError(f"{name('element_strides', 0)} is {m.element_strides[0]}: TMA has no stride in the "
                             "innermost dim (the driver ignores it), so it must be 1")
    inner, span = m.box[0] * element.bytes, SWIZZLES[m.swizzle]
    described = f"the box's inner dim ({name('box', 0)}: {m.box[0]} elements of {element.bytes} bytes)"
    if inner % 16:
        raise TensorMapError(f"{described} is {inner} bytes, not a multiple of 16")
    if span and inner > span:
        raise TensorMapError(f"{described} is {inner} bytes, more than the {m.swizzle} swizzle's span")
    if m.fill == "nan" and not element.floating:
        raise TensorMapError(f"{name('fill')} 'nan' is for floating-point elements only, not {m.dtype}")

