"""tessel: an MLIR-based, multi-dialect deep-learning compiler driven from Python.

The public API lives here; the layers are subpackages:

* :mod:`tessel.ir` - contexts with tessel's dialects, parsing, pass pipelines
* :func:`tessel.trace` - a graph module from a Python function run on symbolic :class:`tessel.Tensor` values
* :mod:`tessel.ops` - numpy/torch-style op functions to use while tracing
* :mod:`tessel.dialects` - op classes of the ``graph`` and ``loop`` dialects
* :mod:`tessel.backends` - targets (the CPU now)
* :mod:`tessel.tools` - the ``tessel-opt``, FileCheck and mlir-opt binaries
"""

from .backends.cpu import CPUExecutable
from .backends.signature import TensorSpec
from .compiler import compile
from .errors import CompileError, Diagnostic, TesselError, UnsupportedError
from .ir import context, parse, run_passes, verify
from .trace import Tensor, trace
from . import ops

__version__ = "0.1.0"

__all__ = [
    "CPUExecutable",
    "Tensor",
    "TensorSpec",
    "compile",
    "CompileError",
    "Diagnostic",
    "TesselError",
    "UnsupportedError",
    "context",
    "ops",
    "parse",
    "run_passes",
    "trace",
    "verify",
]
