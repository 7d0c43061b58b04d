"""Loads and runs tessel's CUDA artifacts: numpy and NVIDIA's cuda-bindings
only, no MLIR and no compiler, so it runs on GPU machines that cannot build.

>>> exe = tessel.runtime.load("block.artifact")           # a CudaArtifact.save() directory
>>> y = exe(x)                                              # numpy in and out
>>> tessel.runtime.load("block.artifact", dry=True)(x)      # every check, no GPU
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RuntimeError
from .artifact import Artifact, read
from .executor import DeviceArray, DryDriver, Executable

__all__ = ["Artifact", "DeviceArray", "DryDriver", "Executable", "RuntimeError", "load", "read"]


def load(path: str | Path, *, device: int = 0, dry: bool = False) -> Executable:
    """The artifact in directory ``path``, ready to call on CUDA device
    ``device``; with ``dry``, on a :class:`DryDriver` that checks every step
    and launches nothing (for machines without a GPU)."""
    artifact = read(path)
    if dry:
        return Executable(artifact, DryDriver())
    from .cuda_driver import CudaDriver

    return Executable(artifact, CudaDriver(device))
