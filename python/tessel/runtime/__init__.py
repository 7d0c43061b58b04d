"""Loads and runs tessel's CUDA artifacts: numpy and NVIDIA's cuda-bindings
only, no MLIR and no compiler, so it runs on GPU machines that cannot build.

>>> exe = tessel.runtime.load("block.artifact")           # a CudaArtifact.save() directory
>>> y = exe(x)                                              # numpy in and out
>>> tessel.runtime.load("block.artifact", dry=True)(x)      # every check, no GPU
>>> tessel.runtime.load("block.artifact", emulate=True)(x)  # runs every kernel on the PTX emulator
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RuntimeError
from .artifact import Artifact, read
from .executor import DeviceArray, DryDriver, Executable
from .tensormaps import TensorMapInfo

__all__ = ["Artifact", "DeviceArray", "DryDriver", "Executable", "RuntimeError", "TensorMapInfo", "cuda_target", "load",
           "read"]


def load(path: str | Path, *, device: int = 0, dry: bool = False, emulate: bool = False) -> Executable:
    """The artifact in directory ``path``, ready to call on CUDA device
    ``device``. Without a GPU: ``dry`` runs it on a :class:`DryDriver`,
    which checks every step and launches nothing; ``emulate`` on the PTX
    emulator (:mod:`tessel.runtime.emulator`, an emulated chip of the
    artifact's target), which runs every kernel with numpy and returns real
    results, checking memory accesses, shared-memory races, cp.async waits
    and warp collectives as it goes (slow: for tests and small shapes)."""
    artifact = read(path)
    if dry and emulate:
        raise ValueError("dry and emulate exclude each other")
    if dry:
        return Executable(artifact, DryDriver(artifact.target_description))
    if emulate:
        from .emulator import EmulatorDriver

        return Executable(artifact, EmulatorDriver(artifact.target_description))
    from .cuda_driver import CudaDriver

    return Executable(artifact, CudaDriver(device, artifact.target_description))


def cuda_target(device: int = 0) -> str:
    """The compile target for CUDA device ``device``: ``"cuda:sm_90a"`` for
    Hopper (sm 9.0: wgmma, whose arch-specific PTX runs on that chip only),
    ``"cuda:sm_90"`` for newer chips, ``"cuda:sm_80"`` for Ampere and Ada
    (the driver compiles the PTX for the exact chip). tessel.RuntimeError
    when there is no usable GPU, naming why, or when it is older than
    sm_80."""
    from .cuda_driver import CudaDriver

    driver = CudaDriver(device)
    major, minor = driver.capability
    if major < 8:
        raise RuntimeError(f"{driver.device_name} is sm_{major}{minor}; tessel's kernels need sm_80 or newer")
    if (major, minor) == (9, 0):
        return "cuda:sm_90a"
    return "cuda:sm_90" if major >= 9 else "cuda:sm_80"
