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

__all__ = ["Artifact", "DeviceArray", "DryDriver", "Executable", "RuntimeError", "cuda_target", "load", "read"]


def load(path: str | Path, *, device: int = 0, dry: bool = False) -> Executable:
    """The artifact in directory ``path``, ready to call on CUDA device
    ``device``; with ``dry``, on a :class:`DryDriver` that checks every step
    and launches nothing (for machines without a GPU)."""
    artifact = read(path)
    if dry:
        return Executable(artifact, DryDriver())
    from .cuda_driver import CudaDriver

    return Executable(artifact, CudaDriver(device))


def cuda_target(device: int = 0) -> str:
    """The compile target for CUDA device ``device``: ``"cuda:sm_90"`` for
    Hopper and newer, ``"cuda:sm_80"`` for Ampere and Ada (the driver
    compiles the PTX for the exact chip). tessel.RuntimeError when there is
    no usable GPU, naming why, or when it is older than sm_80."""
    from .cuda_driver import CudaDriver

    driver = CudaDriver(device)
    major, minor = driver.capability
    if major < 8:
        raise RuntimeError(f"{driver.device_name} is sm_{major}{minor}; tessel's kernels need sm_80 or newer")
    return "cuda:sm_90" if major >= 9 else "cuda:sm_80"
