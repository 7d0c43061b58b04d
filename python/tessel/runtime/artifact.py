"""Reading a CUDA artifact directory: its manifest, PTX and constants.

Only the standard library and numpy: this runs on GPU machines that have no
compiler. The format is written by :meth:`tessel.CudaArtifact.save` and
described in docs/architecture.md ("The CUDA artifact").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import dtype_named
from ..errors import RuntimeError

__all__ = ["FORMAT", "VERSION", "Artifact", "BufferInfo", "KernelInfo", "read"]

FORMAT = "tessel-cuda-artifact"
VERSION = 1

BUFFER_KINDS = ("input", "output", "constant", "temporary", "view")
STEP_OPS = ("alloc", "free", "launch", "copy")


@dataclass(frozen=True)
class BufferInfo:
    """A device buffer of the host program (see the manifest's ``buffers``)."""

    id: int
    kind: str
    shape: tuple[int, ...]
    dtype: np.dtype
    index: int | None
    view_of: int | None
    file: str | None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class KernelInfo:
    """One kernel: its PTX entry and launch configuration."""

    name: str
    ptx: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    # From `ptxas -v` when the compiler had ptxas: registers, spill_stores,
    # spill_loads, shared_bytes, stack_bytes.
    ptxas: dict[str, int] = field(default_factory=dict)


class Artifact:
    """A loaded artifact: signature, buffers, kernels and the launch steps."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        self.target: str = manifest["target"]
        self.entry: str = manifest["entry"]
        self.inputs = tuple((tuple(s["shape"]), dtype_named(s["dtype"])) for s in manifest["inputs"])
        self.outputs = tuple((tuple(s["shape"]), dtype_named(s["dtype"])) for s in manifest["outputs"])
        self.buffers = tuple(
            BufferInfo(b["id"], b["kind"], tuple(b["shape"]), dtype_named(b["dtype"]), b.get("index"),
                       b.get("view_of"), b.get("file"))
            for b in manifest["buffers"])
        self.kernels = tuple(
            KernelInfo(k["name"], (path / k["file"]).read_text(), tuple(k["grid"]), tuple(k["block"]),
                       k["dynamic_shared_bytes"], dict(k.get("ptxas", {})))
            for k in manifest["kernels"])
        self.steps: tuple[dict[str, Any], ...] = tuple(manifest["steps"])
        self._check()

    def constant(self, buffer: BufferInfo) -> np.ndarray:
        """The value of a constant buffer, from its ``.npy`` file."""
        value = np.load(self.path / buffer.file)
        if value.shape != buffer.shape or value.dtype != buffer.dtype:
            raise RuntimeError(f"{self.path}: constant {buffer.id} holds {value.dtype}{list(value.shape)}, "
                               f"the manifest says {buffer.dtype}{list(buffer.shape)}")
        return value

    def _check(self) -> None:
        """Every reference in the manifest resolves; buffers are used only while live."""
        def fail(message: str) -> None:
            raise RuntimeError(f"{self.path / 'manifest.json'}: {message}")

        ids = {b.id: b for b in self.buffers}
        if sorted(ids) != list(range(len(self.buffers))):
            fail("buffer ids must be 0..n-1")
        for b in self.buffers:
            if b.kind not in BUFFER_KINDS:
                fail(f"buffer {b.id} has unknown kind {b.kind!r}")
            if b.kind == "view" and (b.view_of not in ids or ids[b.view_of].kind == "view"
                                     or ids[b.view_of].nbytes != b.nbytes):
                fail(f"view {b.id} must alias a buffer of the same size")
            if b.kind == "constant" and not (self.path / str(b.file)).is_file():
                fail(f"constant {b.id} has no file {b.file!r}")
        for kind, specs in (("input", self.inputs), ("output", self.outputs)):
            given = sorted((b.index, b.shape, b.dtype.str) for b in self.buffers if b.kind == kind)
            if given != [(i, s, d.str) for i, (s, d) in enumerate(specs)]:
                fail(f"the {kind} buffers do not match the signature")
        for k in self.kernels:
            if f".entry {k.name}(" not in k.ptx:
                fail(f"kernel {k.name}'s PTX has no entry of that name")
            if min(k.grid + k.block) < 1 or int(np.prod(k.block)) > 1024:
                fail(f"kernel {k.name} has an invalid launch shape {k.grid} x {k.block}")

        def base(buffer_id: int) -> int:
            return ids[buffer_id].view_of if ids[buffer_id].kind == "view" else buffer_id

        live = {b.id for b in self.buffers if b.kind in ("input", "output", "constant")}
        for n, step in enumerate(self.steps):
            op = step.get("op")
            if op not in STEP_OPS:
                fail(f"step {n} has unknown op {op!r}")
            used = ([step["buffer"]] if op in ("alloc", "free") else
                    step["args"] if op == "launch" else [step["source"], step["target"]])
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
                live.remove(step["buffer"])
            elif op == "launch" and not 0 <= step["kernel"] < len(self.kernels):
                fail(f"step {n} launches unknown kernel {step['kernel']}")
            elif op == "copy" and ids[step["source"]].nbytes != ids[step["target"]].nbytes:
                fail(f"step {n} copies between buffers of different sizes")


def read(path: str | Path) -> Artifact:
    """Reads and checks the artifact in directory ``path``; a missing,
    malformed or foreign manifest is a tessel.RuntimeError."""
    root = Path(path)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"{root}: not a tessel artifact ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RuntimeError(f"{root}: not a tessel artifact (format {manifest.get('format')!r})"
                           if isinstance(manifest, dict) else f"{root}: not a tessel artifact")
    if manifest.get("version") != VERSION:
        raise RuntimeError(f"{root}: artifact version {manifest.get('version')}, this runtime reads {VERSION}")
    try:
        return Artifact(root, manifest)
    except (KeyError, TypeError, OSError) as e:
        raise RuntimeError(f"{root}: malformed manifest ({type(e).__name__}: {e})") from None
