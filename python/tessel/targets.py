"""The targets tessel compiles for, as data.

Every hardware fact a pass, the validator, the tuner or the runtime needs
(SM count, threads and shared memory per block, grid limits, registers,
which tensor-core and copy instructions exist, vector widths) is defined
once, in the C++ table of ``dialects/loop/Target.cpp``, and reaches
schedules as the typed ``#loop.target`` attribute. This module reads that
table through the C API; the CPU entry describes this machine, found when
first asked for. Artifacts record their target's description in the
manifest, so the runtime (which imports no MLIR) reads that copy.

A new target is one :func:`register` call (limits plus instruction set);
where its instructions are new, their lowering is the rest of the work.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Optional

from . import _tessel

__all__ = ["INSTRUCTIONS", "TargetDescription", "get", "names", "register", "vector_bits_of"]

# Instructions a description may list (``TargetDescription.instructions``).
INSTRUCTIONS = tuple(_tessel.target_instructions())


@dataclass(frozen=True)
class TargetDescription:
    """One target's facts. CUDA fields are zero for the CPU and CPU fields
    zero for GPUs. Sizes are bytes."""

    name: str
    kind: Literal["cpu", "cuda"]
    # CUDA: compute capability (90 for sm_90) and the PTX ISA features.
    sm: int = 0
    ptx_features: str = ""
    # CUDA: the reference chip's SMs (A100: 108, H100/H200: 132).
    multiprocessors: int = 0
    warp_size: int = 0
    max_threads_per_block: int = 0
    max_block: tuple[int, int, int] = (0, 0, 0)
    max_grid: tuple[int, int, int] = (0, 0, 0)
    # Without opting in (48 KiB), and opted in (dynamic shared memory).
    static_shared_per_block: int = 0
    shared_per_block: int = 0
    shared_per_multiprocessor: int = 0
    registers_per_multiprocessor: int = 0
    registers_per_thread: int = 0
    # The widest vector one thread loads or stores (GPU: every buffer a
    # kernel gets is aligned to it) or one register holds (CPU).
    vector_bytes: int = 0
    instructions: tuple[str, ...] = ()
    # CPU: cores the async runtime's workers run on, vector register bits,
    # L1 data, L2 and L3 cache bytes (0: unknown).
    cores: int = 0
    vector_bits: int = 0
    cache_bytes: tuple[int, int, int] = (0, 0, 0)
    # CUDA: the chip LLVM and ptxas compile for, which the table derives
    # (``sm_<sm>``, ``a`` with wgmma or setmaxnreg); register ignores it.
    chip: str = field(default="", compare=False)

    def has(self, instruction: str) -> bool:
        """Whether the target has ``instruction`` (one of :data:`INSTRUCTIONS`)."""
        if instruction not in INSTRUCTIONS:
            raise ValueError(f"unknown instruction {instruction!r}; known: {', '.join(INSTRUCTIONS)}")
        return instruction in self.instructions

    def to_json(self) -> dict[str, Any]:
        """The description as JSON-ready data (what an artifact's manifest records)."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TargetDescription":
        """The description ``to_json`` gave (unknown keys are an error)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, dict) or set(data) - fields:
            raise ValueError(f"not a target description: unknown keys {sorted(set(data) - fields)}"
                             if isinstance(data, dict) else "not a target description: not an object")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def names(kind: Optional[Literal["cpu", "cuda"]] = None) -> tuple[str, ...]:
    """The registered targets' names (of one ``kind`` if given), in
    registration order: ``cpu`` first, then the GPU chips."""
    return tuple(n for n in _tessel.target_names() if kind is None or get(n).kind == kind)


def get(name: str) -> TargetDescription:
    """The description of target ``name``; ``UnsupportedError`` naming the
    registered ones if there is none."""
    text = _tessel.target_json(name)
    if text is None:
        from .errors import UnsupportedError
        raise UnsupportedError(f"unknown target {name!r}; available: {', '.join(_tessel.target_names())}")
    return TargetDescription.from_json(json.loads(text))


def register(description: TargetDescription) -> None:
    """Adds a target to this process's table, under its name; schedules,
    pipelines and the runtime then accept it like a built-in one.
    Registering the same description again does nothing; a different one
    under a taken name, or facts that cannot hold (no threads, a warp that
    does not divide a block, an unknown instruction), is a ``ValueError``."""
    error = _tessel.register_target_json(json.dumps(description.to_json()))
    if error:
        raise ValueError(f"cannot register target {description.name!r}: {error}")


def vector_bits_of(features: Iterable[str], arch: str) -> int:
    """Bits of the vector registers LLVM uses on a CPU with ``features``
    (LLVM's names, as /proc/cpuinfo spells the x86 ones) of architecture
    ``arch``: 512 with AVX-512, 256 with AVX, 128 otherwise (SSE, NEON);
    an x86 CPU whose features are unknown is taken to have AVX2. The
    ``cpu`` target's ``vector_bits`` is this of the host."""
    return _tessel.vector_bits_of(sorted(features), arch)
