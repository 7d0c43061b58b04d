"""tessel.compile: from a graph module to something callable."""

from __future__ import annotations

from mlir import ir

from .backends.cpu import CPUExecutable, compile_cpu
from .backends.cuda import CudaArtifact, compile_cuda
from .backends.pipelines import GPU_TARGETS
from .errors import UnsupportedError

__all__ = ["compile"]

TARGETS = ("cpu",) + tuple(f"cuda:{chip}" for chip in GPU_TARGETS)


def compile(module: ir.Module, target: str = "cpu", *, entry: str | None = None,
            print_ir_after_all: bool = False, timing: bool = False) -> CPUExecutable | CudaArtifact:
    """Compiles ``module``'s entry function for ``target``.

    ``"cpu"`` gives an executable to call here; ``"cuda:sm_90"`` (or another
    chip in ``TARGETS``) a :class:`CudaArtifact` of PTX and a manifest, which
    ``save()`` writes for the CUDA runtime. ``print_ir_after_all`` prints the
    IR after every pass and ``timing`` the time of every pass, to stderr, for
    debugging a compile.
    """
    if target == "cpu":
        return compile_cpu(module, entry=entry, print_ir_after_all=print_ir_after_all, timing=timing)
    if target in TARGETS:
        return compile_cuda(module, target.split(":", 1)[1], entry=entry,
                            print_ir_after_all=print_ir_after_all, timing=timing)
    raise UnsupportedError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
