"""What the tuning database is keyed by, and applying its records to a module.

A kernel's key is a hash of its compute alone, so a schedule measured for a
kernel of one model is reused for the same kernel in another: the kernel
function printed without locations and under a fixed name, plus the root
(``result``) its schedule is for. A device key names what it ran on.
"""

from __future__ import annotations

import hashlib
import warnings

from mlir import ir

from .. import ir as tir
from ..backends.host import cpu_model
from ..backends.pipelines import VALIDATE, run_stages
from .. import _tessel, targets
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
    ``cpu/<model>/<n> cores`` for this machine's CPU; a GPU chip of
    :mod:`tessel.targets` gives ``cuda/<chip>/<gpu_name or 'any'>``
    (``gpu_name`` is ignored for the CPU)."""
    if target == "cpu":
        return f"cpu/{cpu_model()}/{targets.get('cpu').cores} cores"
    if target in targets.names("cuda"):
        return f"cuda/{target}/{gpu_name or 'any'}"
    raise UnsupportedError(f"unknown tuning target {target!r}; available: {', '.join(targets.names())}")


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
    where the schedule is kept because there is no record, or because the
    record cannot be applied: its text does not parse (another tessel's
    loop dialect), it is for another target, or the schedule validator
    rejects it for this kernel (a tile of another rank, ...). A record that
    cannot be applied is skipped with a warning naming the database and the
    kernel, so that one bad record never fails a compile. ``module`` is not
    modified.
    """
    work = _copy(module)
    used: dict[ScheduleKey, Record | None] = {}
    keys = kernel_keys(work)
    for old, kernel, result in _schedules(work):
        record = db.best(keys[(kernel, result)], device)
        reason = None if record is None else _replace(work, old, kernel, record)
        if reason is not None:
            name = kernel if result is None else f"{kernel}#{result}"
            warnings.warn(f"tuning database {db.path}: the best record for kernel {name} on {device} cannot be "
                          f"applied ({reason}); it keeps its default schedule", stacklevel=2)
        used[(kernel, result)] = record if record is not None and reason is None else None
    tir.verify(work)
    return work, used


def _replace(work: ir.Module, old: ir.OpView, kernel: str, record: Record) -> str | None:
    """Replaces schedule ``old`` of ``kernel`` in ``work`` by ``record``'s;
    why it cannot (``old`` is kept), or None."""
    try:
        new = _parse_schedule(record, work.context)
    except CompileError as e:
        return f"its schedule does not parse: {_first_message(e)}"
    target, old_target = new.attributes["target"], old.attributes["target"]
    if target != old_target:
        return f"its schedule is for target {_tessel.target_name(target)}, not {_tessel.target_name(old_target)}"
    with work.context:
        new.attributes["kernel"] = ir.FlatSymbolRefAttr.get(kernel)
    ir.InsertionPoint(old).insert(new)
    old.operation.detach_from_parent()
    try:
        # What every compile runs first; the other schedules already pass.
        run_stages(work, (VALIDATE,))
    except CompileError as e:
        ir.InsertionPoint(new).insert(old.operation)
        new.erase()
        return _first_message(e)
    old.operation.erase()
    return None


def _first_message(error: CompileError) -> str:
    return error.diagnostics[0].message if error.diagnostics else error.summary


def _parse_schedule(record: Record, context: ir.Context) -> ir.Operation:
    """The record's ``loop.schedule`` op, parsed in ``context`` and
    detached; CompileError if the text is not one."""
    return tir.parse_schedule(record.schedule, ctx=context, source_name="<tuning record>")
