"""CUDA backend: graph -> scheduled linalg -> GPU kernels -> PTX + manifest.

Compiling and running are separate steps: :func:`compile_cuda` produces a
:class:`CudaArtifact` (the PTX of every kernel plus a manifest of launch
shapes, argument ABI, constants and the host's launch sequence, as data),
which :meth:`CudaArtifact.save` writes to a directory that
:func:`tessel.runtime.load` runs on a machine with a GPU and no compiler.

``pipelines.cuda_stages(target)`` is the whole pipeline. Each kernel gets its
``loop.schedule`` (a default one unless the module brings its own), the
schedule is validated and applied on tensors, everything is bufferized with
the same host program as on the CPU, each kernel's mapped loops become a
``gpu.launch`` that is outlined and lowered through NVVM to PTX.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import os
import re
import subprocess
import tempfile
import time
import warnings
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, gpu, memref

from .. import cache as caching
from .. import ir as tir
from .. import shapes
from .. import targets
from ..errors import CompileError, UnsupportedError
from ..runtime.artifact import FORMAT, VERSION, BufferInfo, KernelInfo, TensorMapInfo, read, saved_manifest, \
    tensor_map_info
from ..runtime.fields import FieldError
from ..runtime.sizes import read_dims
from ..runtime.executor import Executable
from ..tools import ptxas
from .pipelines import cuda_stages, run_stages, scheduled_for
from ..dtypes import BFLOAT16, ELEMENT_DTYPES, dtype_named
from .signature import TensorSpec, entry_function, signature, size_ranges

__all__ = ["BufferInfo", "CudaArtifact", "KernelInfo", "compile_cuda"]


class CudaArtifact:
    """PTX of each kernel plus the manifest that says how to run them.

    ``stage_seconds`` is the time of each compile stage; ``cache`` says
    whether the artifact came from the compile cache (``"hit"``: then the
    one stage is ``"cache"``), was made and stored there (``"miss"``), or
    the cache was not used (``"off"``); ``cache_key`` is its key.
    """

    def __init__(self, target: str, name: str, inputs: Sequence[TensorSpec],
                 outputs: Sequence[TensorSpec], kernels: Sequence[KernelInfo],
                 buffers: Sequence[BufferInfo], constants: dict[int, np.ndarray],
                 steps: Sequence[dict[str, Any]], stage_seconds: dict[str, float],
                 tensor_maps: Sequence[TensorMapInfo] = (),
                 dims: dict[str, shapes.DimRange] | None = None) -> None:
        self.target = target
        # The ranges of the size symbols that shapes and launch shapes name.
        self.dims = dict(dims or {})
        self.name = name
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.kernels = tuple(kernels)
        self.buffers = tuple(buffers)
        self.constants = dict(constants)
        self.steps = tuple(steps)  # JSON data: a launch's args are buffer ids and {"tensor_map": index}
        self.tensor_maps = tuple(tensor_maps)
        self.stage_seconds = dict(stage_seconds)
        # Where each schedule came from when compiled with a tuning database.
        self.tuning: dict[str, str] = {}
        self.cache = "off"
        self.cache_key: str | None = None

    def packed(self) -> bytes:
        """The artifact as one compile-cache payload (:func:`tessel.cache.pack`):
        the manifest, then each kernel's PTX and each constant's bytes."""
        constants = [b for b in self.buffers if b.kind == "constant"]
        return caching.pack({"manifest": self.manifest(), "constants": [b.id for b in constants]},
                            [k.ptx.encode() for k in self.kernels]
                            + [np.ascontiguousarray(self.constants[b.id]).tobytes() for b in constants])

    @classmethod
    def unpacked(cls, payload: bytes, stage_seconds: dict[str, float]) -> CudaArtifact:
        """The artifact :meth:`packed` gave ``payload``; ValueError if it is not one."""
        metadata, blobs = caching.unpack(payload)
        try:
            m = metadata["manifest"]
            kernels = [KernelInfo(k["name"], blob.decode(), tuple(k["grid"]), tuple(k["block"]),
                                  k["dynamic_shared_bytes"], k["ptxas"])
                       for k, blob in zip(m["kernels"], blobs[:len(m["kernels"])], strict=True)]
            buffers = [BufferInfo(b["id"], b["kind"], tuple(b["shape"]), dtype_named(b["dtype"]), b["index"],
                                  b["view_of"], b.get("file")) for b in m["buffers"]]
            by_id = {b.id: b for b in buffers}
            constants = {i: np.frombuffer(blob, by_id[i].dtype).reshape(by_id[i].shape)
                         for i, blob in zip(metadata["constants"], blobs[len(kernels):], strict=True)}

            def spec(s: dict[str, Any]) -> TensorSpec:
                return TensorSpec(tuple(d if isinstance(d, int) else shapes.size_text(d) for d in s["shape"]),
                                  dtype_named(s["dtype"]))

            dims = read_dims(m["dims"])
            tensor_maps = [tensor_map_info(t, f"tensor_maps[{i}]", by_id, ranges=dims)
                           for i, t in enumerate(m.get("tensor_maps", []))]
            return cls(m["target"], m["entry"], [spec(s) for s in m["inputs"]], [spec(s) for s in m["outputs"]],
                       kernels, buffers, constants, m["steps"], stage_seconds, tensor_maps, dims)
        except (KeyError, TypeError, ValueError, UnicodeDecodeError, FieldError) as e:
            raise ValueError(f"not a packed artifact: {e!r}") from None

    def manifest(self) -> dict[str, Any]:
        """The manifest as JSON-ready data (file names relative to the artifact)."""
        def spec(s: TensorSpec) -> dict[str, Any]:
            return {"shape": list(s.sizes()), "dtype": s.dtype.name}

        return {
            "format": FORMAT,
            "version": VERSION,
            "target": self.target,
            # The runtime checks and configures launches by this copy (it imports no compiler).
            "target_description": targets.get(self.target).to_json(),
            "entry": self.name,
            # Each size symbol's range; shapes and launch shapes below are ints or expressions over them.
            "dims": {name: {"min": r.min, "max": r.max, "multiple_of": r.multiple_of} for name, r in self.dims.items()},
            "inputs": [spec(s) for s in self.inputs],
            "outputs": [spec(s) for s in self.outputs],
            "buffers": [
                {"id": b.id, "kind": b.kind, "shape": list(b.shape), "dtype": b.dtype.name, "index": b.index,
                 "view_of": b.view_of, **({"file": b.file} if b.file else {})}
                for b in self.buffers
            ],
            "kernels": [
                {"name": k.name, "file": _kernel_file(i, k), "grid": list(k.grid),
                 "block": list(k.block), "dynamic_shared_bytes": k.dynamic_shared_bytes,
                 "ptxas": k.ptxas}
                for i, k in enumerate(self.kernels)
            ],
            "tensor_maps": [m.to_json() for m in self.tensor_maps],
            "steps": list(self.steps),
        }

    def save(self, path: str | Path) -> Path:
        """Writes ``manifest.json``, ``kernels/*.ptx`` and ``constants/*.npy``
        under directory ``path`` (created if missing); returns the path.

        ``path`` must be empty or hold a tessel artifact, whose files (those
        its manifest lists) this one replaces; nothing else there is
        deleted, and nothing is written through a symlink. Else
        FileExistsError, before anything is written. Until the new manifest
        is in place (written last), the folder's manifest marks the artifact
        incomplete, so that a failing save leaves no mix of old and new
        files that loads, and saving again cleans up.
        """
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        old = _owned_files(root)
        for folder in ("kernels", "constants"):
            if (root / folder).is_symlink() or ((root / folder).exists() and not (root / folder).is_dir()):
                raise FileExistsError(f"{root / folder} is a symlink or a file, not this artifact's folder; "
                                      "tessel writes nothing through it")
            (root / folder).mkdir(exist_ok=True)
        manifest = self.manifest()
        files: dict[str, Callable[[BinaryIO], None]] = {
            k["file"]: functools.partial(_write_text, text=kernel.ptx)
            for k, kernel in zip(manifest["kernels"], self.kernels)}
        files.update({b.file: functools.partial(np.save, arr=self.constants[b.id], allow_pickle=False)
                      for b in self.buffers if b.kind == "constant"})
        _write_json(root / "manifest.json", {"format": FORMAT, "version": VERSION, "incomplete": True,
                                             "files": sorted(old | set(files))})
        for relative, write in files.items():
            _write_atomically(root / relative, write)
        _write_json(root / "manifest.json", manifest)
        for stale in sorted(old - set(files)):
            (root / stale).unlink(missing_ok=True)
        return root

    def emulate(self, **options: Any) -> Executable:
        """This artifact ready to call on the PTX emulator (an emulated chip
        of its target, :mod:`tessel.runtime.emulator`): every kernel runs
        with numpy, checked as it goes; no GPU needed. ``options`` go to
        :class:`~tessel.runtime.emulator.Device` (``max_steps``)."""
        from ..runtime.emulator import EmulatorDriver

        with tempfile.TemporaryDirectory() as tmp:
            # The executable reads the PTX and uploads the constants now.
            artifact = read(self.save(Path(tmp) / "artifact"))
            return Executable(artifact, EmulatorDriver(artifact.target_description, **options))


def _owned_files(root: Path) -> set[str]:
    """The files of the artifact saved in folder ``root`` before, which a
    new save may replace or delete: those its manifest lists that are
    regular files directly in its ``kernels/`` or ``constants/`` folders
    (not symlinks, not through one). FileExistsError when ``root`` is
    neither empty nor a tessel artifact."""
    manifest = saved_manifest(root)
    if manifest is None:
        if any(root.iterdir()):
            raise FileExistsError(f"{root} is not empty and holds no tessel artifact; save into an empty "
                                  "folder or over an artifact (tessel deletes nothing it did not write)")
        return set()
    # Unchecked JSON: a list of names in a placeholder, "file" fields in a manifest.
    listed = list(manifest["files"]) if isinstance(manifest.get("files"), list) else []
    for key in ("kernels", "buffers"):
        if isinstance(manifest.get(key), list):
            listed += [entry.get("file") for entry in manifest[key] if isinstance(entry, dict)]
    owned = set()
    for relative in listed:
        parts = PurePosixPath(relative).parts if isinstance(relative, str) else ()
        if (len(parts) == 2 and parts[0] in ("kernels", "constants") and parts[1] != ".."
                and not (root / parts[0]).is_symlink() and not (root / relative).is_symlink()
                and (root / relative).is_file()):
            owned.add(relative)
    return owned


def _write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Writes ``path`` with ``write`` through a new temporary file renamed
    over it: a failure leaves the old file, never part of the new, and what
    was at ``path`` (even a symlink) is replaced, never written through."""
    temporary = path.with_name(f".{path.name}.saving")
    temporary.unlink(missing_ok=True)  # a leftover of a failed save, or a link: not to be written through
    try:
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as f:
            write(f)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_text(f: BinaryIO, text: str) -> None:
    f.write(text.encode("utf-8"))


def _write_json(path: Path, data: Any) -> None:
    _write_atomically(path, functools.partial(_write_text, text=json.dumps(data, indent=1) + "\n"))


def _kernel_file(index: int, kernel: KernelInfo) -> str:
    """Where the artifact keeps a kernel's PTX. Names repeat: the launches
    of one kernel function (a split K's partial products and their sum) are
    outlined into functions of the same name in different GPU modules."""
    return f"kernels/{index}-{kernel.name}.ptx"


_PTXAS_FIELDS = {
    "registers": r"Used (\d+) registers",
    "shared_bytes": r"(\d+) bytes smem",
    "stack_bytes": r"(\d+) bytes stack frame",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
}


def assemble(ptx: str, target: str, name: str) -> dict[str, int]:
    """Assembles ``ptx`` with ``ptxas -v`` and returns its resource usage;
    raises CompileError with ptxas's log if it rejects the PTX."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / f"{name}.ptx"
        source.write_text(ptx)
        run = subprocess.run(
            [str(ptxas()), f"-arch={targets.get(target).chip}", "-v", str(source), "-o", str(Path(tmp) / "k.cubin")],
            capture_output=True, text=True,
        )
    if run.returncode != 0:
        raise CompileError(f"ptxas rejected the PTX of kernel {name}:\n{run.stderr}")
    info = {}
    for key, pattern in _PTXAS_FIELDS.items():
        match = re.search(pattern, run.stderr)
        info[key] = int(match.group(1)) if match else 0
    return info


def _constant_index(value: ir.Value) -> int:
    op = value.owner
    if not isinstance(op, arith.ConstantOp):
        raise UnsupportedError(f"a launch dimension is not a constant: {value}")
    return ir.IntegerAttr(op.attributes["value"]).value


def _memref_spec(t: ir.Type) -> tuple[tuple[int, ...], np.dtype]:
    memref = ir.MemRefType(t)
    element = str(memref.element_type)
    # Booleans are stored as one byte (i8) in buffers.
    dtype = np.dtype(np.int8) if element == "i8" else ELEMENT_DTYPES.get(element)
    if dtype is None:
        raise UnsupportedError(f"buffers of {element} are not supported by the CUDA backend")
    return tuple(memref.shape), dtype


# Index arithmetic of the host program -> size expression ops (shapes.Size trees).
_SIZE_OPS = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "floordiv",
             "arith.divui": "floordiv", "arith.floordivsi": "floordiv", "arith.ceildivsi": "ceildiv",
             "arith.ceildivui": "ceildiv", "arith.remsi": "mod", "arith.remui": "mod", "arith.maxsi": "max",
             "arith.maxui": "max", "arith.minsi": "min", "arith.minui": "min"}


def _folded(op: str, a: shapes.Size, b: shapes.Size) -> shapes.Size:
    """``{op: [a, b]}``, computed when both are ints, without its identities."""
    if isinstance(a, int) and isinstance(b, int):
        return shapes.evaluate({op: [a, b]}, {})
    if (op in ("add", "sub") and b == 0) or (op in ("mul", "floordiv", "ceildiv") and b == 1):
        return a
    if (op == "add" and a == 0) or (op == "mul" and a == 1):
        return b
    return {op: [a, b]}


def _affine_size(expr: Any, dims: Sequence[shapes.Size], symbols: Sequence[shapes.Size]) -> shapes.Size:
    """An affine expression of the host program as a size expression."""
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    for kind, op in ((ir.AffineAddExpr, "add"), (ir.AffineMulExpr, "mul"), (ir.AffineModExpr, "mod"),
                     (ir.AffineFloorDivExpr, "floordiv"), (ir.AffineCeilDivExpr, "ceildiv")):
        if isinstance(expr, kind):
            return _folded(op, _affine_size(expr.lhs, dims, symbols), _affine_size(expr.rhs, dims, symbols))
    raise UnsupportedError(f"the host program computes a size by {expr}, which the manifest cannot express")


class _MlirAttribute(ctypes.Structure):
    """MLIR's C API ``MlirAttribute``: one pointer, passed by value."""

    _fields_ = [("ptr", ctypes.c_void_p)]


_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@functools.cache
def _raw_data_function() -> Callable[[_MlirAttribute], int]:
    """MLIR's ``mlirDenseElementsAttrGetRawData``, from the C API library
    that the Python bindings load (loading it again gives the same copy)."""
    import mlir._mlir_libs

    library = ctypes.CDLL(str(Path(mlir._mlir_libs.__file__).parent / "libMLIRPythonCAPI.so"))
    function = library.mlirDenseElementsAttrGetRawData
    function.argtypes, function.restype = [_MlirAttribute], ctypes.c_void_p
    return function


def _raw_words(attr: ir.DenseElementsAttr, count: int) -> np.ndarray:
    """The first ``count`` 16-bit words of ``attr``'s storage, copied."""
    capsule = attr._CAPIPtr
    pointer = _raw_data_function()(_MlirAttribute(_capsule_pointer(capsule, _capsule_name(capsule))))
    return np.frombuffer(ctypes.string_at(pointer, 2 * count), np.uint16)


def _constant_value(global_: Any, buffer: BufferInfo) -> np.ndarray:
    """The value of constant ``buffer``, the initial value of ``memref.global``
    op ``global_``. numpy reads a dense attribute through the buffer protocol
    (a splat expanded, i1 bits unpacked), except bf16, for which the
    protocol has no format: the attribute's raw words are read instead
    (through MLIR's C API; the Python bindings cannot give them)."""
    symbol = ir.StringAttr(global_.attributes["sym_name"]).value
    initial = global_.attributes["initial_value"] if "initial_value" in global_.attributes else None
    if not isinstance(initial, ir.DenseElementsAttr):
        raise UnsupportedError(f"constant @{symbol} has initial value {str(initial)[:80]}; the CUDA backend "
                               "saves dense constants only")
    if buffer.dtype != BFLOAT16:
        return np.array(initial)
    if initial.is_splat:
        return np.full(buffer.shape, _raw_words(initial, 1).view(BFLOAT16)[0])
    return _raw_words(initial, math.prod(buffer.shape)).view(BFLOAT16).reshape(buffer.shape)


def _ptx_objects(module: ir.Module) -> dict[str, str]:
    """PTX text per gpu.module name, from the gpu.binary ops."""
    objects = {}
    for op in module.body.operations:
        if isinstance(op, gpu.BinaryOp):
            name = ir.StringAttr(op.attributes["sym_name"]).value
            obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
            objects[name] = obj.object.decode()
    return objects


def _launch(launch: Any, ptx: dict[str, str], target: str, run_ptxas: bool,
            size: Callable[[ir.Value], shapes.Size]) -> KernelInfo:
    """The KernelInfo of one gpu.launch_func (operands filled in by the
    caller); ``size`` gives its launch shape, maybe over size symbols."""
    symbol = str(ir.SymbolRefAttr(launch.attributes["kernel"]))  # @module::@func
    module_name, func_name = (part.lstrip("@") for part in symbol.split("::"))
    dims = [size(v) for v in (
        launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ,
        launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ)]
    shared = launch.dynamicSharedMemorySize
    text = ptx[module_name]
    return KernelInfo(
        name=func_name, ptx=text, grid=tuple(dims[:3]), block=tuple(dims[3:]),
        dynamic_shared_bytes=_constant_index(shared) if shared is not None else 0,
        ptxas=assemble(text, target, func_name) if run_ptxas else None,
    )


_VIEWS = ("memref.collapse_shape", "memref.expand_shape")


def _is_flat_alias(op: Any) -> bool:
    """A reinterpret_cast to a static 1-D buffer at offset 0 with unit stride."""
    result = ir.MemRefType(op.result.type)
    return (result.rank == 1 and result.has_static_shape and list(op.attributes["static_offsets"]) == [0]
            and list(op.attributes["static_strides"]) == [1])


def _host_program(module: ir.Module, entry: str, inputs: Sequence[TensorSpec],
                  outputs: Sequence[TensorSpec], target: str, run_ptxas: bool):
    """Reads the bufferized, outlined module into kernels, buffers and steps.

    The entry function and the kernel functions it calls are walked as one
    straight-line program (calls inlined): allocations, frees, copies,
    reshaped views and constants become buffers and steps, each
    gpu.launch_func a kernel launch.
    """
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op
             for op in module.body.operations if isinstance(op, func.FuncOp)}
    globals_ = {ir.StringAttr(op.attributes["sym_name"]).value: op
                for op in module.body.operations if isinstance(op, memref.GlobalOp)}
    ptx = _ptx_objects(module)
    buffers: list[BufferInfo] = []
    constants: dict[int, np.ndarray] = {}
    kernels: list[KernelInfo] = []
    kernel_index: dict[str, int] = {}
    steps: list[dict[str, Any]] = []
    tensor_maps: list[TensorMapInfo] = []
    map_ids: dict[Any, int] = {}  # loop.tensor_map results -> their index in tensor_maps

    sizes: dict[Any, shapes.Size] = {}  # index values of the host program, as size expressions

    def size(value: ir.Value) -> shapes.Size:
        if value in sizes:
            return sizes[value]
        if isinstance(value.owner, arith.ConstantOp):
            return _constant_index(value)
        raise UnsupportedError(f"a size the host program computes ({value}) is not one the manifest can "
                               "express")

    def dynamic_shape(value: ir.Value, dynamic: Sequence[shapes.Size]) -> tuple[shapes.Size, ...]:
        """``value``'s memref shape with its dynamic dims, in order, ``dynamic``."""
        rest = iter(dynamic)
        return tuple(next(rest) if d == ir.ShapedType.get_dynamic_size() else d
                     for d in ir.MemRefType(value.type).shape)

    shape_of: dict[Any, tuple[shapes.Size, ...]] = {}  # every memref value's shape, buffers' and parts'

    def add(value: ir.Value, kind: str, index: int | None = None, view_of: int | None = None,
            dtype: np.dtype | None = None, shape: tuple[shapes.Size, ...] | None = None) -> int:
        static, stored = _memref_spec(value.type)
        shape = static if shape is None else shape
        shape_of[value] = shape
        dtype = stored if dtype is None else dtype
        memref = ir.MemRefType(value.type)
        if view_of is not None and memref.affine_map != ir.AffineMap.get_identity(memref.rank):
            raise UnsupportedError(f"a view with a strided layout ({value.type}) between kernels "
                                   "is not supported by the CUDA backend")
        file = f"constants/{len(buffers)}.npy" if kind == "constant" else None
        buffers.append(BufferInfo(len(buffers), kind, shape, dtype, index, view_of, file))
        return buffers[-1].id

    def buffer(value: ir.Value, ids: dict[Any, int]) -> int:
        if value not in ids:
            raise UnsupportedError(f"a kernel takes part of a buffer ({value.type}) from the host program; the "
                                   "CUDA backend's launch sequence passes whole buffers only")
        return ids[value]

    def walk(func: Any, ids: dict[Any, int]) -> None:
        name = ir.StringAttr(func.attributes["sym_name"]).value
        for op in func.regions[0].blocks[0].operations:
            kind = op.operation.name
            if kind == "memref.get_global":
                symbol = ir.FlatSymbolRefAttr(op.attributes["name"]).value
                ids[op.result] = add(op.result, "constant")
                constants[ids[op.result]] = _constant_value(globals_[symbol], buffers[ids[op.result]])
            elif kind == "memref.alloc":
                ids[op.result] = add(op.result, "temporary",
                                     shape=dynamic_shape(op.result, [size(v) for v in op.operands]))
                steps.append({"op": "alloc", "buffer": ids[op.result]})
            elif kind == "memref.dealloc":
                steps.append({"op": "free", "buffer": ids[op.operands[0]]})
            elif kind in _VIEWS:
                source = shape_of[op.operands[0]]
                groups = [[int(d) for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
                if kind == "memref.collapse_shape":
                    shape = tuple(functools.reduce(lambda a, d: _folded("mul", a, source[d]), g, 1) for g in groups)
                else:
                    shape = dynamic_shape(op.result, [size(v) for v in op.operands[1:]])
                shape_of[op.result] = shape
                if op.operands[0] in ids:  # a view of a whole buffer, not of part of one (a subview)
                    base = ids[op.operands[0]]
                    ids[op.result] = add(op.result, "view", view_of=buffers[base].view_of
                                         if buffers[base].view_of is not None else base, shape=shape)
            elif kind == "memref.subview":
                # Part of a buffer, which no step can pass: only its sizes are read.
                shape_of[op.result] = dynamic_shape(op.result, [size(v) for v in op.opview.sizes])
            elif kind == "memref.reinterpret_cast" and _is_flat_alias(op) and op.operands[0] in ids:
                # A buffer over size symbols passed to a kernel as its static
                # largest extent (gpu-pass-dynamic-buffers): the same pointer.
                ids[op.result] = ids[op.operands[0]]
                shape_of[op.result] = tuple(ir.MemRefType(op.result.type).shape)
            elif kind == "memref.dim":
                sizes[op.result] = shape_of[op.operands[0]][size(op.operands[1])]
            elif kind == "affine.apply":
                affine_map = ir.AffineMapAttr(op.attributes["map"]).value
                operands = [size(v) for v in op.operands]
                sizes[op.result] = _affine_size(affine_map.results[0], operands[:affine_map.n_dims],
                                                operands[affine_map.n_dims:])
            elif kind in _SIZE_OPS:
                sizes[op.result] = _folded(_SIZE_OPS[kind], size(op.operands[0]), size(op.operands[1]))
            elif kind == "arith.index_cast":
                sizes[op.result] = size(op.operands[0])
            elif kind == "loop.tensor_map":
                map_ids[op.result] = len(tensor_maps)
                tensor_maps.append(_tensor_map(op, buffer(op.operands[0], ids), shape_of[op.operands[0]],
                                               buffers[ids[op.operands[0]]].dtype))
            elif kind == "memref.copy":
                steps.append({"op": "copy", "source": ids[op.operands[0]],
                              "target": ids[op.operands[1]]})
            elif kind == "func.call":
                callee = funcs[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
                args = callee.regions[0].blocks[0].arguments
                for arg, v in zip(args, op.operands):
                    shape_of[arg] = shape_of[v]
                walk(callee, {arg: ids[v] for arg, v in zip(args, op.operands)})
            elif kind == "gpu.launch_func":
                symbol = str(ir.SymbolRefAttr(op.attributes["kernel"]))
                if symbol not in kernel_index:
                    kernel_index[symbol] = len(kernels)
                    kernels.append(_launch(op, ptx, target, run_ptxas, size))
                # Buffers by id; sizes (index operands) as 64-bit parameters.
                steps.append({"op": "launch", "kernel": kernel_index[symbol],
                              "args": [{"size": size(v)} if isinstance(v.type, ir.IndexType)
                                       else {"tensor_map": map_ids[v]} if v in map_ids else buffer(v, ids)
                                       for v in op.kernelOperands]})
            elif kind == "func.return":
                return
            elif kind != "arith.constant":
                raise UnsupportedError(f"@{name} keeps a {kind} on the host; the CUDA "
                                       "backend's launch sequence cannot express it")

    host = funcs[entry]
    args = list(host.regions[0].blocks[0].arguments)
    if len(args) != len(inputs) + len(outputs):
        raise UnsupportedError(f"@{entry} lost its signature during bufferization")
    ids: dict[Any, int] = {}
    for i, arg in enumerate(args):
        is_input = i < len(inputs)
        # Arguments carry the signature's dtype: a bool tensor is stored as
        # i8, byte for byte numpy's bool.
        spec = inputs[i] if is_input else outputs[i - len(inputs)]
        ids[arg] = add(arg, "input" if is_input else "output", i if is_input else i - len(inputs),
                       dtype=spec.dtype, shape=spec.sizes())
    walk(host, ids)
    return kernels, buffers, constants, steps, tensor_maps


def _tensor_map(op: Any, buffer: int, shape: Sequence[shapes.Size], dtype: np.dtype) -> TensorMapInfo:
    """The manifest's tensor map of a loop.tensor_map over buffer ``buffer``
    (row-major, of ``shape`` and ``dtype``): dims, box and element strides
    innermost first, the strides of dims 1.. in bytes (size expressions
    over size symbols), zeros outside the buffer."""
    dims = tuple(reversed(shape))
    strides, stride = [], dtype.itemsize
    for d in dims[:-1]:
        stride = _folded("mul", stride, d)
        strides.append(stride)
    box = tuple(reversed([int(b) for b in ir.DenseI64ArrayAttr(op.attributes["box"])]))
    swizzle = ir.StringAttr(op.attributes["swizzle"]).value
    return TensorMapInfo(dtype.name, dims, tuple(strides), box, (1,) * len(dims), swizzle, buffer=buffer)


def _ptx_identifiers(module: ir.Module) -> dict[str, str]:
    """Renames every function whose name PTX cannot spell (a model named
    ``linear+relu``: NVPTX aborts the process on such a symbol) to an
    identifier of letters, digits and ``_``, updating its uses (calls,
    schedules); returns old name -> new name for every function."""
    funcs = [op for op in module.body.operations if isinstance(op, func.FuncOp)]
    names = {ir.StringAttr(op.attributes["sym_name"]).value for op in funcs}
    mapping = {}
    with module.context:
        for op in funcs:
            old = ir.StringAttr(op.attributes["sym_name"]).value
            new = re.sub(r"[^A-Za-z0-9_]", "_", old)
            new = new if re.match(r"[A-Za-z_]", new) else "_" + new
            if new != old:
                while new in names:
                    new += "_"
                names.add(new)
                ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
                op.attributes["sym_name"] = ir.StringAttr.get(new)
            mapping[old] = new
    return mapping


def _cache_key(module: ir.Module, name: str, target: str, allow_tf32: bool, run_ptxas: bool) -> str:
    """The compile cache's key of compiling ``module``'s ``name`` for ``target``:
    the module as given, the target's description, the options, pipelines
    and compiler build, and the ptxas that assembles the kernels."""
    assembler = "no ptxas"
    if run_ptxas:
        path = ptxas()
        assembler = f"{path} {path.stat().st_size} {path.stat().st_mtime_ns}"
    return caching.key(
        "cuda", caching.build_identity(), name, target, str(allow_tf32), assembler,
        json.dumps(targets.get(target).to_json(), sort_keys=True),
        repr(cuda_stages(target, allow_tf32=allow_tf32)),
        repr(cuda_stages(target, scheduled=True, allow_tf32=allow_tf32)),
        caching.module_bytes(module))


def compile_cuda(module: ir.Module, target: str = "sm_90", *, entry: str | None = None,
                 run_ptxas: bool | None = None, allow_tf32: bool = False,
                 cache: caching.CompileCache | None = None, print_ir_after_all: bool = False,
                 timing: bool = False) -> CudaArtifact:
    """Compiles the entry function of a graph module for an NVIDIA GPU.

    ``target`` is a GPU of :mod:`tessel.targets`. ``allow_tf32`` lets f32 matmuls
    run on tensor cores as tf32 (as torch's ``allow_tf32``: inputs rounded to
    10-bit mantissas, f32 accumulation); without it they stay exact f32
    (and slow). ``run_ptxas`` assembles every
    kernel with ``ptxas -v`` and records its registers, spills and shared
    memory in the manifest (default: when ptxas is installed, with a
    warning when it is not; unassembled kernels have ``ptxas`` None); a kernel
    that ptxas rejects is a CompileError. With a ``cache``, an artifact it
    holds for the same compile is returned instead of made, and one made is
    stored there; ``print_ir_after_all`` and ``timing``, which are about
    the passes, compile without it. ``module`` is not modified.
    """
    if target not in (chips := targets.names("cuda")):
        raise UnsupportedError(f"unknown CUDA target {target!r}; available: {', '.join(chips)}")
    work = tir.clone(module)
    func = entry_function(work, entry)
    name, inputs, outputs = signature(func, "the CUDA backend", symbolic=True)
    ranges = size_ranges(func)
    if run_ptxas is None:
        try:
            ptxas()
            run_ptxas = True
        except FileNotFoundError as missing:
            warnings.warn(f"{missing}: the kernels are compiled to PTX but not assembled, so ptxas does not "
                          "check them (kernel.ptxas is None)", stacklevel=2)
            run_ptxas = False
    if print_ir_after_all or timing:
        cache = None
    seconds: dict[str, float] = {}
    if cache is not None:
        start = time.perf_counter()
        key = _cache_key(work, name, target, allow_tf32, run_ptxas)
        artifact = cache.load("cuda", key, lambda payload: CudaArtifact.unpacked(payload, {}))
        seconds["cache"] = time.perf_counter() - start
        if artifact is not None:
            artifact.stage_seconds = seconds
            artifact.cache, artifact.cache_key = "hit", key
            return artifact
    symbol = _ptx_identifiers(work)[name]
    seconds.update(run_stages(work, cuda_stages(target, scheduled=scheduled_for(work, target),
                                                allow_tf32=allow_tf32),
                              print_ir_after_all=print_ir_after_all, timing=timing))
    start = time.perf_counter()
    with work.context:
        kernels, buffers, constants, steps, tensor_maps = _host_program(
            work, symbol, inputs, outputs, target, run_ptxas)
    seconds["manifest"] = time.perf_counter() - start
    artifact = CudaArtifact(target, name, inputs, outputs, kernels, buffers, constants, steps, seconds,
                            tensor_maps, dims=ranges)
    if cache is not None:
        start = time.perf_counter()
        cache.put("cuda", key, artifact.packed())
        artifact.stage_seconds["cache"] += time.perf_counter() - start
        artifact.cache, artifact.cache_key = "miss", key
    return artifact
