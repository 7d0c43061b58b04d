"""tessel.compile: from a graph module to something callable."""

from __future__ import annotations

from mlir import ir

from .backends.cpu import CPUExecutable, compile_cpu
from .errors import UnsupportedError

__all__ = ["compile"]

TARGETS = ("cpu",)


def compile(module: ir.Module, target: str = "cpu", *, entry: str | None = None,
            print_ir_after_all: bool = False, timing: bool = False) -> CPUExecutable:
    """Compiles ``module``'s entry function for ``target``.

    ``print_ir_after_all`` prints the IR after every pass and ``timing`` the
    time of every pass, to stderr, for debugging a compile.
    """
    if target != "cpu":
        raise UnsupportedError(f"target {target!r} is not supported yet; available: {', '.join(TARGETS)}")
    return compile_cpu(module, entry=entry, print_ir_after_all=print_ir_after_all, timing=timing)
