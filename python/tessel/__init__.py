"""tessel: an MLIR-based, multi-dialect deep-learning compiler driven from Python.

The public API lives here; the layers are subpackages:

* :mod:`tessel.ir` - contexts with tessel's dialects, parsing, pass pipelines
* :mod:`tessel.dialects` - op classes of the ``graph`` and ``loop`` dialects
* :mod:`tessel.backends` - targets (the CPU now)
* :mod:`tessel.tools` - the ``tessel-opt``, FileCheck and mlir-opt binaries
"""

from .backends.cpu import CPUExecutable, TensorSpec
from .compiler import compile
from .errors import CompileError, Diagnostic, TesselError, UnsupportedError
from .ir import context, parse, run_passes, verify

__version__ = "0.1.0"

__all__ = [
    "CPUExecutable",
    "TensorSpec",
    "compile",
    "CompileError",
    "Diagnostic",
    "TesselError",
    "UnsupportedError",
    "context",
    "parse",
    "run_passes",
    "verify",
]
