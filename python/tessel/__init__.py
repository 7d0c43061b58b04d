"""tessel: an MLIR-based, multi-dialect deep-learning compiler driven from Python.

The public API lives here; the layers are subpackages:

* :mod:`tessel.ir` - contexts with tessel's dialects, parsing, pass pipelines
* :func:`tessel.trace` - a graph module from a Python function run on symbolic :class:`tessel.Tensor` values
* :mod:`tessel.ops` - numpy/torch-style op functions to use while tracing
* :func:`tessel.from_onnx`, :func:`tessel.from_torch` - ONNX and PyTorch models into a graph module
* :mod:`tessel.dialects` - op classes of the ``graph`` and ``loop`` dialects
* :mod:`tessel.backends` - targets: the CPU (an executable) and CUDA (PTX artifacts)
* :mod:`tessel.targets` - every target's facts (limits, instructions), one table, and registering new ones
* :mod:`tessel.schedules` - every kernel's ``loop.schedule``, its knobs and their domains
* :func:`tessel.tune`, :mod:`tessel.tuning` - tuning schedules by measurement, and the database compiles reuse
* :mod:`tessel.runtime` - loads and runs CUDA artifacts; needs only numpy and cuda-bindings
* :mod:`tessel.cache` - the persistent compile cache that ``tessel.compile`` uses
* :mod:`tessel.tools` - the ``tessel-opt``, FileCheck and mlir-opt binaries
"""

import importlib
from typing import Any

from .errors import (CompileError, Diagnostic, MissingExtraError, RuntimeError, TesselError, TuningDatabaseError,
                     UnsupportedError)

__version__ = "0.1.0"

# Public names and the submodule each comes from. They load on first use
# (PEP 562), so that `import tessel.runtime` (which runs artifacts on a GPU
# machine) needs neither MLIR nor the compiler.
_LAZY = {
    "CPUExecutable": "backends.cpu",
    "CompileCache": "cache",
    "CudaArtifact": "backends.cuda",
    "TensorSpec": "backends.signature",
    "compile": "compiler",
    "from_onnx": "frontends.onnx",
    "from_torch": "frontends.torch",
    "context": "ir",
    "parse": "ir",
    "run_passes": "ir",
    "to_linalg": "ir",
    "verify": "ir",
    "Tensor": "tracing",
    "trace": "tracing",
    "tune": "tuning.search",
}

__all__ = [
    "CPUExecutable",
    "CompileCache",
    "CudaArtifact",
    "Tensor",
    "TensorSpec",
    "compile",
    "CompileError",
    "Diagnostic",
    "RuntimeError",
    "TesselError",
    "TuningDatabaseError",
    "UnsupportedError",
    "context",
    "from_onnx",
    "from_torch",
    "load",
    "ops",
    "parse",
    "run_passes",
    "runtime",
    "schedules",
    "to_linalg",
    "trace",
    "tune",
    "tuning",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in ("ops", "runtime", "schedules", "tuning"):
        value = importlib.import_module(f".{name}", __name__)
    elif name == "load":
        value = importlib.import_module(".runtime", __name__).load
    else:
        raise AttributeError(f"module 'tessel' has no attribute {name!r}")
    globals()[name] = value
    return value
