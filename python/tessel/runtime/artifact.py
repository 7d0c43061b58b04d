"""Reading a CUDA artifact directory: its manifest, PTX and constants.

Only the standard library and numpy: this runs on GPU machines that have no
compiler. The format is written by :meth:`tessel.CudaArtifact.save` and
described in docs/architecture.md ("The CUDA artifact").

An artifact is untrusted input: every field of the manifest is checked for
its type and range before use, every file it names must be a regular file
inside the artifact's folder (no ``..``, absolute path or symlink out, no
device or pipe) and of bounded size, and ``.npy`` constants are loaded
without pickles. Whatever is wrong is a tessel.RuntimeError naming the file
and the field.

The manifest carries its target's description (the compiler's
``tessel.targets`` entry, as JSON): launch shapes and shared memory are
checked against that copy, and the drivers configure launches by it, so the
runtime needs neither the compiler nor a table of its own.

Size symbols (docs/dynamic-shapes.md): the manifest's ``dims`` declares
them, and shapes, launch shapes, size arguments and tensor-map dims may be
size expressions over them (:mod:`tessel.runtime.sizes`). The reader checks
what must hold at every size over the declared ranges (buffers within
``MAX_BUFFER_BYTES``, launch shapes within the target's limits, size
arguments within their parameters' types) and the rest at the least and the
largest sizes; :meth:`Artifact.sized` evaluates everything at one call's
sizes and checks it all again there.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Mapping, Sequence

import numpy as np

from .. import shapes
from ..dtypes import dtype_named
from ..errors import RuntimeError
from ..shapes import DimRange, Size, size_text
from .fields import FieldError, field, integer, integers, shown, typed
from .sizes import bounds, corners, is_static, read_dims, read_size, read_sizes, sizes_text, values_text
from .tensormaps import ELEMENT_TYPES, FILLS, INTERLEAVES, L2_PROMOTIONS, SWIZZLES, TensorMapError, TensorMapInfo, \
    check, field_path

__all__ = ["FORMAT", "VERSION", "Artifact", "BufferInfo", "KernelInfo", "MapArgument", "Sized", "SizeArgument",
           "SizeValue", "TargetInfo", "TensorMapInfo", "read", "saved_manifest", "tensor_map_info"]

FORMAT = "tessel-cuda-artifact"
# 2: the manifest carries its target's description. 3: tensor maps (TMA), which launches may pass.
# 4: size symbols (dims), size expressions in shapes, launch shapes and tensor maps, size arguments.
VERSION = 4

BUFFER_KINDS = ("input", "output", "constant", "temporary", "view")
_MANIFEST = "the manifest"  # what errors call its top-level object
STEP_OPS = ("alloc", "free", "launch", "copy")
# The element types a buffer may have: those of tessel's tensors
# (dtypes.ELEMENT_DTYPES, bfloat16 named even without ml_dtypes).
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "bool")
# Bounds of what a manifest may ask for, far above any real artifact's, so
# that a corrupted one fails here rather than exhausting memory or
# overflowing the drivers' integer arguments.
MAX_MANIFEST_BYTES = 64 << 20
MAX_PTX_BYTES = 64 << 20
MAX_NPY_HEADER_BYTES = 1 << 16  # np.save writes format 1.0: a header of at most 64 KiB
MAX_BUFFER_BYTES = 1 << 40  # more than any GPU has
MAX_RANK = 32  # numpy's (1.x) limit of dimensions
MAX_LAUNCH_VALUE = 2**32 - 1  # cuLaunchKernel's unsigned int arguments: grid, block, shared bytes
# What a size argument's 64-bit parameter holds, by its PTX type.
SIZE_PARAMETERS = {".u64": (0, 2**64 - 1), ".s64": (-2**63, 2**63 - 1)}


@dataclass(frozen=True)
class BufferInfo:
    """A device buffer of the host program (see the manifest's ``buffers``).
    Its ``shape`` holds ints and, in an artifact with size symbols, size
    expressions (:mod:`tessel.shapes` trees) over them."""

    id: int
    kind: str
    shape: tuple[Size, ...]
    dtype: np.dtype
    index: int | None
    view_of: int | None
    file: str | None

    @property
    def static(self) -> bool:
        """Whether the shape is all ints."""
        return is_static(self.shape)

    @property
    def nbytes(self) -> int:
        """The bytes of a buffer of static shape (:meth:`nbytes_at` gives any buffer's)."""
        if not self.static:
            raise TypeError(f"buffer {self.id} has shape {sizes_text(self.shape)}: its bytes are those at a "
                            "call's sizes, nbytes_at(values)")
        return math.prod(self.shape) * self.dtype.itemsize

    def shape_at(self, values: Mapping[str, int]) -> tuple[int, ...]:
        """The shape with the symbols at ``values``."""
        return tuple(shapes.evaluate(d, values) for d in self.shape)

    def nbytes_at(self, values: Mapping[str, int]) -> int:
        """The bytes with the symbols at ``values``."""
        return math.prod(self.shape_at(values)) * self.dtype.itemsize


@dataclass(frozen=True)
class KernelInfo:
    """One kernel: its PTX entry and launch configuration (grid and block
    sizes: ints, or size expressions in an artifact with size symbols)."""

    name: str
    ptx: str
    grid: tuple[Size, Size, Size]
    block: tuple[Size, Size, Size]
    dynamic_shared_bytes: int
    # From `ptxas -v`: registers, spill_stores, spill_loads, shared_bytes,
    # stack_bytes; None when the compiler did not assemble the kernel.
    ptxas: dict[str, int] | None = None

    def at(self, values: Mapping[str, int]) -> "KernelInfo":
        """This kernel with its grid and block sizes at ``values`` (itself when they are ints)."""
        if is_static(self.grid + self.block):
            return self
        return replace(self, grid=tuple(shapes.evaluate(g, values) for g in self.grid),
                       block=tuple(shapes.evaluate(b, values) for b in self.block))


@dataclass(frozen=True)
class MapArgument:
    """A launch argument that is the manifest's tensor map ``index``: the
    kernel gets the device address of its 128 encoded bytes."""

    index: int


@dataclass(frozen=True)
class SizeArgument:
    """A launch argument that is a size (``{"size": expression}``): the
    kernel gets the expression's value in the call as a 64-bit integer
    parameter (``.u64`` or ``.s64``)."""

    size: Size


@dataclass(frozen=True)
class SizeValue:
    """A size argument's value in one call, for a parameter of PTX type
    ``.s64`` when ``signed``, else ``.u64``: what the drivers pass."""

    value: int
    signed: bool


@dataclass(frozen=True)
class Sized:
    """The artifact at one call's sizes (:meth:`Artifact.sized`): the
    symbols' ``values`` and, with them, each buffer's shape and bytes, each
    kernel's launch shape, each tensor map's dims and strides, and each
    launch step's arguments (sizes as :class:`SizeValue`; None for the
    other steps). An artifact without symbols has one, at ``{}``."""

    values: Mapping[str, int]
    shapes: tuple[tuple[int, ...], ...]
    nbytes: tuple[int, ...]
    kernels: tuple[KernelInfo, ...]
    tensor_maps: tuple[TensorMapInfo, ...]
    arguments: tuple[tuple[int | MapArgument | SizeValue, ...] | None, ...]


@dataclass(frozen=True)
class TargetInfo:
    """The facts of an artifact's target that the runtime uses, from the
    manifest's copy of its ``tessel.targets`` description (the fields
    mean what ``tessel.targets.TargetDescription``'s do; the runtime
    ignores the others). Sizes are bytes."""

    name: str
    sm: int  # compute capability: 90 for sm_90
    max_threads_per_block: int
    max_block: tuple[int, int, int]
    max_grid: tuple[int, int, int]
    static_shared_per_block: int  # without opting in
    shared_per_block: int  # opted in: the most dynamic shared memory a launch may ask
    vector_bytes: int  # the widest vector a kernel moves: every buffer it gets is aligned to it

    @classmethod
    def from_json(cls, data: Any) -> "TargetInfo":
        """The facts of a description as ``TargetDescription.to_json()``
        gives it; tessel.RuntimeError naming the field when one is missing,
        mistyped or out of range, or the target is no CUDA chip."""
        try:
            return _target_info(data, "target_description")
        except FieldError as e:
            raise RuntimeError(f"malformed target description: {e}") from None


def _optional_int(record: dict[str, Any], key: str, where: str) -> int | None:
    value = record.get(key)
    return None if value is None else integer(value, f"{where}.{key}")


def _records(manifest: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    """The list ``manifest[key]`` of JSON objects, each with its field path."""
    items = field(manifest, key, kinds=list, what="a list", whole=_MANIFEST)
    return [(f"{key}[{i}]", typed(item, dict, f"{key}[{i}]", "an object")) for i, item in enumerate(items)]


def _target_info(value: Any, where: str) -> TargetInfo:
    """The :class:`TargetInfo` of description ``value`` (JSON data), whose
    field path is ``where``; its limits bounded by what cuLaunchKernel takes."""
    record = typed(value, dict, where, "an object")
    kind = field(record, "kind", where)
    if kind != "cuda":
        raise FieldError(f"{where}.kind must be 'cuda', not {shown(kind)}")

    def dims(key: str) -> tuple[int, int, int]:
        return integers(field(record, key, where), f"{where}.{key}", length=3, low=1,
                     high=MAX_LAUNCH_VALUE)

    def number(key: str, low: int = 0) -> int:
        return integer(field(record, key, where), f"{where}.{key}", low, MAX_LAUNCH_VALUE)

    vector_bytes = number("vector_bytes", 1)
    if vector_bytes & (vector_bytes - 1):
        raise FieldError(f"{where}.vector_bytes must be a power of two, not {vector_bytes}")
    return TargetInfo(field(record, "name", where, str, "a string"), number("sm", 1),
                      number("max_threads_per_block", 1), dims("max_block"), dims("max_grid"),
                      number("static_shared_per_block"), number("shared_per_block"), vector_bytes)


def _tensor(record: dict[str, Any], where: str, ranges: Mapping[str, DimRange]) -> tuple[tuple[Size, ...], np.dtype]:
    """The (shape, dtype) of a signature entry or buffer: each dim an int
    or a size expression over ``ranges`` (the manifest's dims), never
    negative, and the size bounded at the largest sizes."""
    where_shape = f"{where}.shape"
    shape = read_sizes(field(record, "shape", where), where_shape, ranges, max_length=MAX_RANK)
    name = field(record, "dtype", where)
    if name not in DTYPE_NAMES:
        raise FieldError(f"{where}.dtype must be one of {', '.join(DTYPE_NAMES)}, not {shown(name)}")
    dtype = dtype_named(name)
    for d, size in enumerate(shape):
        low, high = bounds(size, ranges)
        if low < 0:
            raise FieldError(f"{where_shape}[{d}] must be >= 0, not {shown(size)}" if type(size) is int else
                             f"{where_shape}[{d}] ({size_text(size)}) ranges over {low}..{high}: a dim cannot be "
                             "negative")
    if _largest_nbytes(shape, dtype, ranges) > MAX_BUFFER_BYTES:
        largest = [bounds(d, ranges)[1] for d in shape]
        raise FieldError(f"{where} of shape {sizes_text(shape)} is over {MAX_BUFFER_BYTES} bytes" +
                         ("" if is_static(shape) else f" at the largest sizes ({largest})"))
    return shape, dtype


def _largest_nbytes(shape: tuple[Size, ...], dtype: np.dtype, ranges: Mapping[str, DimRange]) -> int:
    """The most bytes a tensor of ``shape`` and ``dtype`` has over ``ranges`` (its bytes when static)."""
    return math.prod(bounds(d, ranges)[1] for d in shape) * dtype.itemsize


def _map_at(tensor_map: TensorMapInfo, values: Mapping[str, int]) -> TensorMapInfo:
    """``tensor_map`` with its dims and strides at ``values`` (itself when they are ints)."""
    if is_static(tensor_map.dims + tensor_map.strides):
        return tensor_map
    return replace(tensor_map, dims=tuple(shapes.evaluate(d, values) for d in tensor_map.dims),
                   strides=tuple(shapes.evaluate(s, values) for s in tensor_map.strides))


def _map_fits(tensor_map: TensorMapInfo, where: str, nbytes: int) -> None:
    """Checks ``tensor_map`` (of ints) by the driver's rules and that it
    reaches no byte past its buffer's ``nbytes``; FieldError naming ``where``."""
    try:
        check(tensor_map, name=field_path(where))
    except TensorMapError as e:
        raise FieldError(str(e)) from None
    if tensor_map.extent > nbytes:
        raise FieldError(f"{where} reaches {tensor_map.extent} bytes from the start of buffer {tensor_map.buffer}, "
                         f"which has {nbytes}: its dims and strides describe memory past the buffer")


def tensor_map_info(value: Any, where: str, buffers: dict[int, BufferInfo],
                    ranges: Mapping[str, DimRange] | None = None) -> TensorMapInfo:
    """The tensor map of record ``value`` (JSON data, field path ``where``)
    over one of ``buffers`` (by id): every field typed, the map checked by
    the driver's rules (:func:`tessel.runtime.tensormaps.check`), and its
    dims and strides reaching no byte past its buffer. Its ``dims`` and
    ``strides`` may be size expressions over ``ranges`` (the manifest's
    dims, those ``buffers`` were read with): then each within the driver's
    bounds over the ranges, and the rest checked at the least and the
    largest sizes (and at each call's, :meth:`Artifact.sized`)."""
    record = typed(value, dict, where, "an object")
    ranges = ranges or {}

    def dims(key: str) -> tuple[int, ...]:  # bounded here, their count checked with the rest (check)
        return integers(field(record, key, where), f"{where}.{key}", max_length=MAX_RANK)

    def sizes(key: str) -> tuple[Size, ...]:
        return read_sizes(field(record, key, where), f"{where}.{key}", ranges, max_length=MAX_RANK)

    names = {}
    for key, table in (("dtype", ELEMENT_TYPES), ("swizzle", SWIZZLES), ("fill", FILLS),
                       ("interleave", INTERLEAVES), ("l2_promotion", L2_PROMOTIONS)):
        names[key] = field(record, key, where)
        if not isinstance(names[key], str) or names[key] not in table:
            raise FieldError(f"{where}.{key} must be one of {', '.join(table)}, not {shown(names[key])}")
    buffer = integer(field(record, "buffer", where), f"{where}.buffer")
    if buffer not in buffers:
        raise FieldError(f"{where}.buffer is {buffer}, which is no buffer of the manifest")
    info = TensorMapInfo(names["dtype"], sizes("dims"), sizes("strides"), dims("box"), dims("element_strides"),
                         names["swizzle"], names["fill"], names["interleave"], names["l2_promotion"], buffer)
    # What the driver bounds a dim and a stride by must hold at every size; the rest (a stride's multiple
    # of 16, the extent within the buffer) is checked at the corners here and at each call's sizes.
    for key, values, low, high in (("dims", info.dims, 1, 1 << 32), ("strides", info.strides, 16, (1 << 40) - 1)):
        for i, size in enumerate(values):
            least, largest = bounds(size, ranges)
            if type(size) is not int and (least < low or largest > high):
                raise FieldError(f"{where}.{key}[{i}] ({size_text(size)}) ranges over {least}..{largest}, "
                                 f"outside {low}..{high}")
    static = is_static(info.dims + info.strides) and buffers[buffer].static
    for values in corners(ranges if not static else {}):
        try:
            _map_fits(_map_at(info, values), where, buffers[buffer].nbytes_at(values))
        except FieldError as e:
            raise FieldError(f"with {values_text(values)}: {e}" if values else str(e)) from None
    return info


def _launch_arguments(value: Any, where: str, maps: int,
                      ranges: Mapping[str, DimRange]) -> list[int | MapArgument | SizeArgument]:
    """A launch's ``args``: buffer ids, ``{"tensor_map": index}`` for a
    tensor map (of ``maps``) and ``{"size": expression}`` for a size (over ``ranges``)."""
    arguments: list[int | MapArgument | SizeArgument] = []
    for k, item in enumerate(typed(value, list, where, "a list")):
        at = f"{where}[{k}]"
        if isinstance(item, dict) and "size" in item:
            if len(item) != 1:
                raise FieldError(f"{at} must be {{\"size\": expression}} and nothing more, not {shown(item)}")
            arguments.append(SizeArgument(read_size(item["size"], f"{at}.size", ranges)))
        elif isinstance(item, dict):
            index = integer(field(item, "tensor_map", at), f"{at}.tensor_map")
            if len(item) != 1:
                raise FieldError(f"{at} must be {{\"tensor_map\": index}} and nothing more, not {shown(item)}")
            if index >= maps:
                raise FieldError(f"{at}.tensor_map is {index}, but the manifest has {maps} tensor maps")
            arguments.append(MapArgument(index))
        elif type(item) is int:
            arguments.append(integer(item, at))
        else:
            raise FieldError(f"{at} must be a buffer id, {{\"tensor_map\": index}} or {{\"size\": expression}}, "
                             f"not {shown(item)}")
    return arguments


def _entry_parameters(ptx: str, name: str) -> list[str] | None:
    """The parameter declarations of PTX entry ``name`` (``.param .u64 x``);
    None if the PTX has no entry of that name."""
    match = re.search(rf"\.entry\s+{re.escape(name)}\s*\(([^)]*)\)", ptx)
    return None if match is None else [p.strip() for p in match.group(1).split(",") if p.strip()]


def _is_pointer(parameter: str) -> bool:
    """Whether a parameter declaration is a 64-bit scalar: what a device pointer is passed as."""
    return "[" not in parameter and any(t in (".u64", ".b64", ".s64") for t in parameter.split())


def _size_type(parameter: str) -> str | None:
    """The type of a parameter declaration that takes a size: ``.u64`` or
    ``.s64``, a scalar that is no pointer (``.ptr``); None for any other."""
    words = parameter.split()
    if "[" in parameter or ".ptr" in words:
        return None
    return next((w for w in words if w in SIZE_PARAMETERS), None)


def _open(root: Path, relative: Any, max_bytes: int) -> BinaryIO:
    """File ``relative`` (a manifest's string) of the artifact in folder
    ``root``, open for reading: a regular file inside ``root`` once symlinks
    are resolved, of at most ``max_bytes``; else FieldError."""
    if not isinstance(relative, str) or not relative or "\0" in relative:
        raise FieldError(f"{shown(relative)} is not a file name")
    # os.path.realpath, not Path.resolve: that raises (builtins') RuntimeError on a symlink loop.
    top = Path(os.path.realpath(root))
    path = Path(os.path.realpath(top / relative))
    if not path.is_relative_to(top) or path == top:
        raise FieldError(f"{relative!r} is outside the artifact's folder")
    try:
        # Neither blocking on a FIFO nor following a symlink swapped in since resolving.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise FieldError(f"cannot open {relative!r}: {e.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        raise FieldError(f"{relative!r} is not a regular file" if not stat.S_ISREG(info.st_mode) else
                         f"{relative!r} has {info.st_size} bytes, over the {max_bytes} it may have")
    return open(fd, "rb")


def _text(root: Path, relative: Any, max_bytes: int) -> str:
    """File ``relative`` of the artifact (see :func:`_open`) as UTF-8 text."""
    with _open(root, relative, max_bytes) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew since it was opened
        raise FieldError(f"{relative!r} is over the {max_bytes} bytes it may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FieldError(f"{relative!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None


class Artifact:
    """A loaded artifact: signature, size symbols, buffers, kernels and the launch steps."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        try:
            self._parse(manifest)
        except FieldError as e:
            raise RuntimeError(f"{path / 'manifest.json'}: malformed manifest: {e}") from None
        self._check()
        # What intervals cannot bound (a view and its buffer of one size, tensor maps' rules, copies) is
        # checked at the least and the largest sizes now, and at each call's when it binds them.
        for values in corners(self.dims):
            self.sized(values)

    def _parse(self, manifest: dict[str, Any]) -> None:
        """Every field, typed and in range; the kernels' PTX read."""
        self.target: str = field(manifest, "target", kinds=str, what="a string", whole=_MANIFEST)
        self.target_description: TargetInfo = _target_info(
            field(manifest, "target_description", whole=_MANIFEST), "target_description")
        if self.target_description.name != self.target:
            raise FieldError(f"target_description.name must be the target {shown(self.target)}, "
                             f"not {shown(self.target_description.name)}")
        self.entry: str = field(manifest, "entry", kinds=str, what="a string", whole=_MANIFEST)
        # The size symbols: every size expression below names only these.
        self.dims: dict[str, DimRange] = read_dims(field(manifest, "dims", whole=_MANIFEST))
        ranges = self.dims
        self.inputs = tuple(_tensor(s, where, ranges) for where, s in _records(manifest, "inputs"))
        self.outputs = tuple(_tensor(s, where, ranges) for where, s in _records(manifest, "outputs"))
        # A call binds each symbol from an input dim that is the symbol alone (tessel.shapes.bind).
        alone = {d for shape, _ in self.inputs for d in shape if isinstance(d, str)}
        for name in self.dims:
            if name not in alone:
                raise FieldError(f"dims.{name}: no input has a dim that is {name} alone, so no call can bind it")
        buffers = []
        for where, b in _records(manifest, "buffers"):
            kind = field(b, "kind", where)
            if kind not in BUFFER_KINDS:
                raise FieldError(f"{where}.kind must be one of {', '.join(BUFFER_KINDS)}, not {shown(kind)}")
            file = b.get("file")
            if kind == "constant":
                typed(file, str, f"{where}.file", "a file name")
            buffers.append(BufferInfo(integer(field(b, "id", where), f"{where}.id"), kind, *_tensor(b, where, ranges),
                                      _optional_int(b, "index", where), _optional_int(b, "view_of", where),
                                      file if kind == "constant" else None))
            if kind == "constant" and not buffers[-1].static:
                raise FieldError(f"{where}.shape must be static for a constant (its .npy has one shape), not "
                                 f"{sizes_text(buffers[-1].shape)}")
        self.buffers = tuple(buffers)
        # Per buffer, its bytes at the largest sizes: what an executable pools memory by.
        self.largest_nbytes: tuple[int, ...] = tuple(_largest_nbytes(b.shape, b.dtype, ranges) for b in self.buffers)
        for b in self.buffers:
            if b.kind == "constant":
                self._constant_file(b).close()  # there, and not too large; read when uploaded
        kernels = []
        for where, k in _records(manifest, "kernels"):
            ptxas = k.get("ptxas")
            if ptxas is not None:
                ptxas = typed(ptxas, dict, f"{where}.ptxas", "an object or null")
            kernels.append(KernelInfo(
                field(k, "name", where, str, "a string"),
                _text(self.path, field(k, "file", where), MAX_PTX_BYTES),
                read_sizes(field(k, "grid", where), f"{where}.grid", ranges, length=3),
                read_sizes(field(k, "block", where), f"{where}.block", ranges, length=3),
                integer(field(k, "dynamic_shared_bytes", where), f"{where}.dynamic_shared_bytes",
                     high=MAX_LAUNCH_VALUE),
                None if ptxas is None else
                {key: integer(v, f"{where}.ptxas.{key}") for key, v in ptxas.items()}))
        self.kernels = tuple(kernels)
        by_id = {b.id: b for b in self.buffers}
        self.tensor_maps: tuple[TensorMapInfo, ...] = tuple(
            tensor_map_info(m, where, by_id, ranges) for where, m in _records(manifest, "tensor_maps"))
        steps: list[dict[str, Any]] = []
        for where, s in _records(manifest, "steps"):
            op = field(s, "op", where)
            if op not in STEP_OPS:
                raise FieldError(f"{where}.op must be one of {', '.join(STEP_OPS)}, not {shown(op)}")
            fields = {"alloc": ("buffer",), "free": ("buffer",), "launch": ("kernel",),
                      "copy": ("source", "target")}[op]
            step: dict[str, Any] = {"op": op, **{f: integer(field(s, f, where), f"{where}.{f}") for f in fields}}
            if op == "launch":
                step["args"] = _launch_arguments(field(s, "args", where), f"{where}.args", len(self.tensor_maps),
                                                 ranges)
            steps.append(step)
        self.steps: tuple[dict[str, Any], ...] = tuple(steps)

    def constant(self, buffer: BufferInfo) -> np.ndarray:
        """The value of a constant buffer, from its ``.npy`` file (no
        pickles; the file no larger than the buffer and a header)."""
        try:
            with self._constant_file(buffer) as f:
                value = np.load(f, allow_pickle=False)
        except FieldError as e:
            raise RuntimeError(f"{self.path}: constant {buffer.id}: {e}") from None
        except Exception as e:  # noqa: BLE001 - numpy's header parser also raises tokenize's and ast's errors
            raise RuntimeError(f"{self.path}: constant {buffer.id}: {buffer.file!r} is not a .npy array "
                               f"({type(e).__name__}: {e})") from None
        if value.dtype.kind == buffer.dtype.kind == "V" and value.dtype.itemsize == buffer.dtype.itemsize:
            # .npy has no bfloat16: np.save writes its words as raw bytes (V2).
            value = value.view(buffer.dtype)
        if value.shape != buffer.shape or value.dtype != buffer.dtype:
            raise RuntimeError(f"{self.path}: constant {buffer.id} holds {value.dtype}{list(value.shape)}, "
                               f"the manifest says {buffer.dtype}{list(buffer.shape)}")
        return value

    def _constant_file(self, buffer: BufferInfo) -> BinaryIO:
        return _open(self.path, buffer.file, buffer.nbytes + MAX_NPY_HEADER_BYTES)

    def _over_limits(self, grid: Sequence[int], block: Sequence[int]) -> str | None:
        """What of launch shape ``grid`` x ``block`` is outside the target's limits; None if nothing."""
        target = self.target_description
        if min(*grid, *block) < 1:
            return "every dimension must be at least 1"
        if math.prod(block) > target.max_threads_per_block:
            return (f"{math.prod(block)} threads, over {target.name}'s max_threads_per_block "
                    f"{target.max_threads_per_block}")
        for what, shape, limit in (("block", block, target.max_block), ("grid", grid, target.max_grid)):
            if any(n > m for n, m in zip(shape, limit)):
                return f"the {what} is over {target.name}'s max_{what} {limit}"
        return None

    def _launch_shape_error(self, index: int) -> str | None:
        """Why kernel ``index``'s launch shape may be outside the target's
        limits at some sizes of the ranges (its least and its largest
        dims, each bounded over the ranges); None if it never is."""
        k = self.kernels[index]
        named = f"kernel {k.name} (kernels[{index}]) has an invalid launch shape"
        if is_static(k.grid + k.block):
            over = self._over_limits(k.grid, k.block)
            return over and f"{named} {tuple(k.grid)} x {tuple(k.block)}: {over}"
        shape = " x ".join("(" + ", ".join(size_text(d) for d in dims) + ")" for dims in (k.grid, k.block))
        for extreme, which in ((0, "least"), (1, "largest")):
            grid = tuple(bounds(g, self.dims)[extreme] for g in k.grid)
            block = tuple(bounds(b, self.dims)[extreme] for b in k.block)
            over = self._over_limits(grid, block)
            if over:
                return f"{named} {shape}, {grid} x {block} at the {which} sizes: {over}"
        return None

    def _check(self) -> None:
        """Every reference in the manifest resolves; buffers are used only
        while live; launch shapes and size arguments fit their limits at
        every size of the ranges."""
        def fail(message: str) -> None:
            raise RuntimeError(f"{self.path / 'manifest.json'}: {message}")

        # Steps index buffers by position.
        if [b.id for b in self.buffers] != list(range(len(self.buffers))):
            fail("buffer ids must be 0..n-1, in order")
        ids = {b.id: b for b in self.buffers}
        for b in self.buffers:
            if b.kind == "view" and (b.view_of not in ids or ids[b.view_of].kind == "view"):
                fail(f"view {b.id} must alias a buffer that is no view")
        for kind, specs in (("input", self.inputs), ("output", self.outputs)):
            # Sorted by index alone: shapes of trees and ints do not order.
            given = sorted(((b.index if b.index is not None else -1, b.shape, b.dtype.str)
                            for b in self.buffers if b.kind == kind), key=lambda entry: entry[0])
            if given != [(i, s, d.str) for i, (s, d) in enumerate(specs)]:
                fail(f"the {kind} buffers do not match the signature")
        parameters = []
        target = self.target_description
        for i, k in enumerate(self.kernels):
            parameters.append(_entry_parameters(k.ptx, k.name))
            if parameters[-1] is None:
                fail(f"kernel {k.name}'s PTX has no entry of that name")
            error = self._launch_shape_error(i)
            if error:
                fail(error)
            if k.dynamic_shared_bytes > target.shared_per_block:
                fail(f"kernel {k.name} asks {k.dynamic_shared_bytes} bytes of dynamic shared memory; "
                     f"{target.name}'s shared_per_block is {target.shared_per_block}")
        # Per kernel, the PTX type of each parameter that takes a size (None for the others).
        self.size_types: tuple[tuple[str | None, ...], ...] = tuple(
            tuple(_size_type(p) for p in declared) for declared in parameters)

        def base(buffer_id: int) -> int:
            return ids[buffer_id].view_of if ids[buffer_id].kind == "view" else buffer_id

        live = {b.id for b in self.buffers if b.kind in ("input", "output", "constant")}
        for n, step in enumerate(self.steps):
            op = step["op"]
            # A tensor map argument uses its buffer: the map is encoded with the buffer's address.
            used = ([step["buffer"]] if op in ("alloc", "free") else
                    [a if isinstance(a, int) else self.tensor_maps[a.index].buffer for a in step["args"]
                     if not isinstance(a, SizeArgument)]
                    if op == "launch" else [step["source"], step["target"]])
            if any(u not in ids for u in used):
                fail(f"step {n} refers to an unknown buffer")
            if op == "alloc":
                if ids[step["buffer"]].kind != "temporary" or step["buffer"] in live:
                    fail(f"step {n} allocates buffer {step['buffer']} twice or not a temporary")
                live.add(step["buffer"])
                continue
            if any(base(u) not in live for u in used):
                fail(f"step {n} uses a buffer that is not allocated")
            if op == "free":
                if ids[step["buffer"]].kind != "temporary":
                    fail(f"step {n} frees buffer {step['buffer']}, which is not a temporary")
                live.remove(step["buffer"])
            elif op == "launch":
                if not step["kernel"] < len(self.kernels):
                    fail(f"step {n} launches unknown kernel {step['kernel']}")
                kernel, declared = self.kernels[step["kernel"]].name, parameters[step["kernel"]]
                if len(step["args"]) != len(declared):
                    fail(f"step {n} passes {len(step['args'])} arguments to kernel {kernel}, whose PTX takes "
                         f"{len(declared)}")
                for k, (argument, parameter) in enumerate(zip(step["args"], declared)):
                    if isinstance(argument, SizeArgument):
                        error = self._size_argument_error(argument.size, parameter, f"steps[{n}].args[{k}]",
                                                          kernel)
                        if error:
                            fail(error)
                    # Buffers and tensor maps alike reach a kernel as a device address (bare-pointer ABI; a
                    # map's 128 bytes are in device memory, not a grid-constant .param .b8 map[128]).
                    elif not _is_pointer(parameter):
                        what = f"buffer {argument}" if isinstance(argument, int) else f"tensor map {argument.index}"
                        fail(f"step {n} passes {what} as argument {k} of kernel {kernel}, whose PTX declares "
                             f"{shown(parameter)}, not a 64-bit device pointer (.u64)")

    def _size_argument_error(self, size: Size, parameter: str, where: str, kernel: str) -> str | None:
        """Why size argument ``size`` (field ``where``) cannot go to
        ``kernel``'s parameter declared ``parameter``: not a 64-bit integer,
        or a value over the ranges that its type cannot hold; None if it can."""
        kind = _size_type(parameter)
        if kind is None:
            pointer = ", a pointer" if ".ptr" in parameter.split() else ""
            return (f"{where} passes size {size_text(size)} to kernel {kernel}, whose PTX declares "
                    f"{shown(parameter)}{pointer}, not a 64-bit integer (.u64 or .s64)")
        (low, high), (least, largest) = SIZE_PARAMETERS[kind], bounds(size, self.dims)
        if least < low or largest > high:
            return (f"{where} ({size_text(size)}) ranges over {least}..{largest}, which kernel {kernel}'s {kind} "
                    f"parameter cannot hold")
        return None

    def bind(self, shapes_: Sequence[Sequence[int]]) -> dict[str, int]:
        """The symbols' values in a call whose inputs have ``shapes_``
        (:func:`tessel.shapes.bind`): ValueError naming the argument, the
        dim, the value and the range when a size is outside its symbol's
        range or two dims that must agree do not."""
        if not self.dims:
            return {}
        return shapes.bind(self.entry, [shape for shape, _ in self.inputs], shapes_, self.dims)

    def sized(self, values: Mapping[str, int]) -> Sized:
        """The artifact at the sizes ``values`` (every symbol's, as
        :meth:`bind` gives them): every expression evaluated, and what
        depends on the sizes checked at them (views as large as their
        buffers, copies between buffers of one size, launch shapes within
        the target's limits, tensor maps by the driver's rules and within
        their buffers, size arguments within their types); a
        tessel.RuntimeError naming the file, the sizes and the field."""
        try:
            return self._sized(values)
        except FieldError as e:
            at = f"with {values_text(values)}: " if values else ""
            raise RuntimeError(f"{self.path / 'manifest.json'}: {at}{e}") from None

    def _sized(self, values: Mapping[str, int]) -> Sized:
        shapes_ = tuple(b.shape_at(values) for b in self.buffers)
        nbytes = tuple(math.prod(shape) * b.dtype.itemsize for shape, b in zip(shapes_, self.buffers))
        for b in self.buffers:
            if b.kind == "view" and nbytes[b.id] != nbytes[b.view_of]:
                raise FieldError(f"view {b.id} of shape {list(shapes_[b.id])} has {nbytes[b.id]} bytes, buffer "
                                 f"{b.view_of} of shape {list(shapes_[b.view_of])} {nbytes[b.view_of]}: a view "
                                 "must alias a buffer of the same size")
        kernels = tuple(k.at(values) for k in self.kernels)
        for i, k in enumerate(kernels):
            over = self._over_limits(k.grid, k.block)
            if over:
                raise FieldError(f"kernel {k.name} (kernels[{i}]) has an invalid launch shape {k.grid} x {k.block}: "
                                 f"{over}")
        tensor_maps = tuple(_map_at(m, values) for m in self.tensor_maps)
        for i, m in enumerate(tensor_maps):
            _map_fits(m, f"tensor_maps[{i}]", nbytes[m.buffer])
        arguments: list[tuple[int | MapArgument | SizeValue, ...] | None] = []
        for n, step in enumerate(self.steps):
            if step["op"] == "copy" and nbytes[step["source"]] != nbytes[step["target"]]:
                raise FieldError(f"step {n} copies buffer {step['source']} ({nbytes[step['source']]} bytes) to buffer "
                                 f"{step['target']} ({nbytes[step['target']]} bytes): a copy is between buffers of "
                                 "one size")
            if step["op"] != "launch":
                arguments.append(None)
                continue
            passed: list[int | MapArgument | SizeValue] = []
            for k, (argument, kind) in enumerate(zip(step["args"], self.size_types[step["kernel"]])):
                if isinstance(argument, SizeArgument):
                    value = shapes.evaluate(argument.size, values)
                    low, high = SIZE_PARAMETERS[kind]
                    if not low <= value <= high:  # bounds() says never; a guard before the drivers' ctypes
                        raise FieldError(f"steps[{n}].args[{k}] ({size_text(argument.size)}) is {value}, which "
                                         f"a {kind} parameter cannot hold")
                    argument = SizeValue(value, kind == ".s64")
                passed.append(argument)
            arguments.append(tuple(passed))
        return Sized(dict(values), shapes_, nbytes, kernels, tensor_maps, tuple(arguments))


def _load_manifest(root: Path) -> Any:
    """The JSON data of ``root``'s ``manifest.json``; tessel.RuntimeError
    when there is none, or it is not JSON."""
    if not root.is_dir():
        raise RuntimeError(f"{root}: not a tessel artifact (no such directory)")
    try:
        return json.loads(_text(root, "manifest.json", MAX_MANIFEST_BYTES))
    except FieldError as e:
        raise RuntimeError(f"{root}: not a tessel artifact ({e})") from None
    except ValueError as e:
        raise RuntimeError(f"{root / 'manifest.json'}: not a tessel artifact (not JSON: {e})") from None
    except RecursionError:
        raise RuntimeError(f"{root / 'manifest.json'}: not a tessel artifact (JSON nested too deeply)") from None


def saved_manifest(root: Path) -> dict[str, Any] | None:
    """The manifest of the tessel artifact (of any version, complete or
    not) in folder ``root``, as JSON data unchecked beyond its format; None
    when ``root`` holds none."""
    try:
        manifest = _load_manifest(root)
    except RuntimeError:
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def read(path: str | Path) -> Artifact:
    """Reads and checks the artifact in directory ``path``; a missing,
    malformed or foreign manifest, or a file it names that is missing,
    outside the folder or malformed, is a tessel.RuntimeError."""
    root = Path(path)
    manifest = _load_manifest(root)
    if not isinstance(manifest, dict):
        raise RuntimeError(f"{root}: not a tessel artifact (its manifest is a {type(manifest).__name__}, "
                           "not an object)")
    if manifest.get("format") != FORMAT:
        raise RuntimeError(f"{root}: not a tessel artifact (format {shown(manifest.get('format'))})")
    if manifest.get("incomplete"):
        raise RuntimeError(f"{root}: an incomplete artifact: saving it did not finish; save it again")
    version = manifest.get("version")
    if type(version) is not int or version != VERSION:
        raise RuntimeError(f"{root}: artifact version {shown(version)}, this runtime reads {VERSION!r}")
    return Artifact(root, manifest)
