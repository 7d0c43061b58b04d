"""tessel.compile: from a graph module to something callable."""

from __future__ import annotations

import os

from mlir import ir

from .backends.cpu import CPUExecutable, compile_cpu
from .backends.cuda import CudaArtifact, compile_cuda
from . import targets
from .cache import CompileCache, default_cache
from .errors import UnsupportedError

__all__ = ["compile"]



def available_targets() -> tuple[str, ...]:
    """The targets :func:`compile` takes: ``"cpu"`` and ``"cuda:<chip>"``
    for each GPU in :mod:`tessel.targets` (registered ones included)."""
    return ("cpu",) + tuple(f"cuda:{chip}" for chip in targets.names("cuda"))


def compile(module: ir.Module, target: str = "cpu", *, entry: str | None = None,
            tuning_db: str | os.PathLike[str] | None = None, allow_tf32: bool = False,
            cache: CompileCache | bool = True, print_ir_after_all: bool = False,
            timing: bool = False) -> CPUExecutable | CudaArtifact:
    """Compiles ``module``'s entry function for ``target``.

    ``"cpu"`` gives an executable to call here; ``"cuda:sm_90"`` (or another
    chip in :func:`available_targets`) a :class:`CudaArtifact` of PTX and a manifest, which
    ``save()`` writes for the CUDA runtime. With ``tuning_db`` (a database
    that ``tessel.tuning.tune`` or ``import_batch`` wrote), each kernel runs
    the best schedule measured for it on this CPU (or on any GPU of the
    chip), and its default schedule where there is none; the result's ``tuning`` maps each schedule (``kernel`` or
    ``kernel#result``) to ``"database"`` or ``"default"``.
    ``allow_tf32`` lets a GPU target run f32 matmuls on tensor cores as tf32
    (as torch's ``allow_tf32``; the CPU always computes f32 exactly).
    ``cache``: the persistent compile cache (:mod:`tessel.cache`; True: the
    one in ``$TESSEL_CACHE_DIR`` or ``~/.cache/tessel``, False: none), which
    gives back what an earlier compile of the same module, target and
    options made, in this process or another; the result's ``cache`` says
    ``"hit"``, ``"miss"`` or ``"off"``.
    ``print_ir_after_all`` prints the IR after every pass and ``timing`` the
    time of every pass, to stderr, for debugging a compile.
    """
    if target not in (known := available_targets()):
        raise UnsupportedError(f"unknown target {target!r}; available: {', '.join(known)}")
    chip = target.split(":", 1)[-1]
    tuning: dict[str, str] = {}
    if tuning_db is not None:
        module, tuning = _tuned(module, chip, tuning_db, allow_tf32)
    store = default_cache() if cache is True else cache or None
    options = dict(entry=entry, cache=store, print_ir_after_all=print_ir_after_all, timing=timing)
    compiled = (compile_cpu(module, **options) if target == "cpu"
                else compile_cuda(module, chip, allow_tf32=allow_tf32, **options))
    compiled.tuning = tuning
    return compiled


def _tuned(module: ir.Module, chip: str, path: str | os.PathLike[str],
           allow_tf32: bool) -> tuple[ir.Module, dict[str, str]]:
    """``module`` scheduled for ``chip``, with the database's best schedules."""
    from .schedules import default_schedules
    from .tuning import TuningDatabase, apply_records, device_key

    scheduled = default_schedules(module, chip, allow_tf32=allow_tf32)
    # A CUDA artifact runs on whichever GPU of its chip loads it: records of
    # any of them serve.
    device = device_key(chip) if chip == "cpu" else device_key(chip, gpu_name="*")
    with TuningDatabase(path, readonly=True) as db:
        tuned, used = apply_records(scheduled, db, device)
    return tuned, {kernel if result is None else f"{kernel}#{result}": "default" if record is None else "database"
                   for (kernel, result), record in used.items()}
