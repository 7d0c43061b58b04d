"""What the tuning database is keyed by, and applying its records to a module.

A kernel's key is a hash of its compute alone, so a schedule measured for a
kernel of one model is reused for the same kernel in another: the kernel
function printed without locations and under a fixed name, plus the root
(``result``) its schedule is for. A device key names what it ran on.
"""

from __future__ import annotations

import hashlib
import os

from mlir import ir

from .. import ir as tir
from ..backends.host import cpu_model
from ..backends.pipelines import GPU_TARGETS
from ..errors import CompileError, UnsupportedError
from ..schedules import _copy, _schedules
from .database import Record, TuningDatabase

__all__ = ["ScheduleKey", "apply_records", "device_key", "kernel_keys"]

# (kernel symbol, result index or None): a schedule's address in a module.
ScheduleKey = tuple[str, int | None]

# The name every kernel is printed under for its key.
_CANONICAL_NAME = "kernel"


def device_key(target: str, *, gpu_name: str | None = None) -> str:
    """The device part of a record's key for ``target``: ``"cpu"`` gives
    ``cpu/<model>/<n> cores`` for this machine's CPU; a chip in
    ``GPU_TARGETS`` gives ``cuda/<chip>/<gpu_name or 'any'>``
    (``gpu_name`` is ignored for the CPU)."""
    if target == "cpu":
        return f"cpu/{cpu_model()}/{os.cpu_count() or 'unknown'} cores"
    if target in GPU_TARGETS:
        return f"cuda/{target}/{gpu_name or 'any'}"
    raise UnsupportedError(f"unknown tuning target {target!r}; available: cpu, {', '.join(GPU_TARGETS)}")


def kernel_keys(module: ir.Module) -> dict[ScheduleKey, str]:
    """The key (a sha256 hex digest) of every schedule's kernel compute in
    scheduled ``module`` (as :func:`tessel.schedules.default_schedules`
    returns it), by (kernel, result). ``module`` is not modified."""
    symbols = ir.SymbolTable(module.operation)
    texts: dict[str, str] = {}
    keys = {}
    for _, kernel, result in _schedules(module):
        if kernel not in texts:
            texts[kernel] = _canonical_text(symbols[kernel])
        keys[(kernel, result)] = hashlib.sha256(f"{texts[kernel]}\nresult {result}".encode()).hexdigest()
    return keys


def _canonical_text(kernel: ir.OpView) -> str:
    # A detached clone is renamed, so the caller's module stays as it was.
    clone = kernel.operation.clone(ip=False)
    with kernel.context:
        clone.attributes["sym_name"] = ir.StringAttr.get(_CANONICAL_NAME)
    text = clone.get_asm(enable_debug_info=False, use_local_scope=True)
    clone.erase()
    return text


def apply_records(module: ir.Module, db: TuningDatabase,
                  device: str) -> tuple[ir.Module, dict[ScheduleKey, Record | None]]:
    """A copy of scheduled ``module`` in which every schedule that has a
    :meth:`TuningDatabase.best` record for its kernel on ``device`` is that
    record's schedule, and which record each (kernel, result) got: None
    where the schedule is kept, because there is no record, or its text
    does not parse (another tessel's loop dialect), or it is for another
    target than the schedule it would replace. ``module`` is not modified.
    """
    work = _copy(module)
    used: dict[ScheduleKey, Record | None] = {}
    keys = kernel_keys(work)
    for old, kernel, result in _schedules(work):
        record = db.best(keys[(kernel, result)], device)
        new = _parse_schedule(record, work.context) if record is not None else None
        if new is None or new.attributes["target"] != old.attributes["target"]:
            used[(kernel, result)] = None
            continue
        with work.context:
            new.attributes["kernel"] = ir.FlatSymbolRefAttr.get(kernel)
        ir.InsertionPoint(old).insert(new)
        old.erase()
        used[(kernel, result)] = record
    tir.verify(work)
    return work, used


def _parse_schedule(record: Record, context: ir.Context) -> ir.Operation | None:
    """The record's ``loop.schedule`` op, parsed in ``context`` and
    detached; None if the text does not parse as one."""
    # The schedule's verifier needs its kernel to exist: a declaration of
    # the symbol it was measured for stands in for it.
    with context:
        kernel = ir.FlatSymbolRefAttr.get(record.kernel)
    try:
        scratch = tir.parse(f"func.func private {kernel}()\n{record.schedule}", ctx=context,
                            source_name="<tuning record>")
    except CompileError:
        return None
    ops = list(scratch.body.operations)
    if len(ops) != 2 or ops[1].operation.name != "loop.schedule":
        return None
    # A clone: the op must outlive the scratch module.
    return ops[1].operation.clone(ip=False)
