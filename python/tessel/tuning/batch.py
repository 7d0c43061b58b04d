"""Tuning on a remote GPU machine that has no compiler, in batches.

:func:`export_batch` (here, with the compiler) proposes ``trials`` legal
points per kernel schedule, the default first, and compiles each into a
CUDA artifact under one directory with ``batch.json``. On the GPU machine,
``python3 -m tessel.runtime.batch DIR`` (numpy and cuda-bindings only)
measures them into ``DIR/results.json``. :func:`import_batch` (here again)
checks each candidate's outputs against its kernel's default schedule and
records every measurement, failures included, in the tuning database under
the GPU's name; ``tessel.compile(module, "cuda:sm_90", tuning_db=...)``
then uses the best record of any GPU of that chip. Proposals of a later
batch start from the database's records for the same kernels (evolution
and, with enough of them, the cost model), so batches continue a search.
"""

from __future__ import annotations

import json
import math
import functools
import random
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import numpy as np
from mlir import ir

from .. import __version__
from ..backends.cuda import compile_cuda
from .. import targets
from ..errors import TesselError, UnsupportedError
from ..runtime.batch import BATCH_FORMAT
from ..runtime.fields import FieldError, field, load_object, numbers
from ..schedules import default_schedules
from .cost_model import CostModel
from .features import CandidateFeatures, Features
from .database import Record, TuningDatabase
from .keys import device_key
from .runners import Measurement
from .search import ENTRY, KernelSummary, _check_counts, _knob_values, _mismatch, _propose, tasks

__all__ = ["export_batch", "import_batch"]

_T = TypeVar("_T")


def export_batch(module: ir.Module, directory: str | Path, *, target: str = "sm_90", trials: int = 32,
                 db: Optional[str | Path] = None, seed: int = 0) -> int:
    """Writes a batch of ``trials`` candidates per kernel schedule of graph
    module ``module`` for GPU chip ``target`` into ``directory``; the number
    of candidates. With ``db``, points it already holds for these kernels on
    any GPU of the chip are not proposed again and guide the proposals."""
    if target not in (chips := targets.names("cuda")):
        raise UnsupportedError(f"batches are for GPU targets; {target!r} is not one of {', '.join(chips)}")
    _check_counts(trials=trials, seed=seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    candidates = []
    try:
        model: Optional[CostModel] = CostModel(seed)
    except UnsupportedError:
        model = None  # no LightGBM: evolution and random points only
    history: list[tuple[Features, float]] = []  # earlier kernels' records, for the model
    for task in tasks(default_schedules(module, target)):
        names = [k.name for k in task.knobs]
        featurize = CandidateFeatures(task)
        seen: dict[tuple[int, ...], float] = {}
        if db is not None:
            with TuningDatabase(db, readonly=True) as database:
                for record in database.records(task.key, device_key(target, gpu_name="*")):
                    values = _knob_values(record.schedule, names, task.module.context)
                    if values is not None and record.tessel_version == __version__:
                        seen.setdefault(values, record.median)
        own = featurize.relative(seen)
        rows = history + own
        ranked = model is not None and model.fit([f for f, _ in rows], [r for _, r in rows])
        history += own
        points = [task.default] + _propose(task, {**seen, task.default: math.inf}, trials - 1, rng,
                                           model if ranked else None, featurize,
                                           "model" if ranked else "evolution")
        for values in points:
            entry = {"id": f"c{len(candidates):04d}", "kernel": task.kernel, "result": task.result,
                     "key": task.key, "default": values == task.default}
            candidate = task.candidate(values)
            entry["schedule"] = task.schedule_text(candidate)
            try:
                compile_cuda(candidate, target, entry=ENTRY).save(directory / entry["id"])
                entry["error"] = None
            except TesselError as e:
                entry["error"] = f"{type(e).__name__}: {e}"
            candidates.append(entry)
    (directory / "batch.json").write_text(json.dumps(
        {"format": BATCH_FORMAT, "target": target, "tessel_version": __version__, "candidates": candidates},
        indent=1))
    return len(candidates)


def import_batch(directory: str | Path, db: str | Path, *,
                 results: Optional[str | Path] = None) -> list[KernelSummary]:
    """Records the measurements of the batch in ``directory`` (its
    ``results.json`` unless ``results`` names another file) in tuning
    database ``db``; one summary per kernel schedule of the batch.

    Both files are checked before anything is recorded: another program's
    file or another tessel's batch is a TesselError, a malformed one (not
    JSON, a field missing or of the wrong type) a ValueError naming the
    file and the field."""
    directory = Path(directory)
    target, candidates = _read_batch(directory / "batch.json")
    device_name, measured = _read_results(Path(results or directory / "results.json"), target)
    device = device_key(target, gpu_name=device_name)
    by_kernel: dict[tuple[str, Optional[int]], list[dict]] = {}
    for candidate in candidates:
        by_kernel.setdefault((candidate["kernel"], candidate["result"]), []).append(candidate)
    summaries = []
    with TuningDatabase(db) as database:
        for (kernel, result), group in by_kernel.items():
            summary = KernelSummary(kernel, result, math.inf, math.inf, "", 0, 0, 0)
            reference = None
            for candidate in group:
                m = (Measurement(error=candidate["error"]) if candidate["error"] is not None
                     else measured.get(candidate["id"], Measurement(error="not measured (missing from the results)")))
                error = m.error if m.error is not None else _mismatch(m, reference)
                if candidate["default"] and error is None:
                    reference, summary.default_seconds = m.sample, float(np.median(m.seconds))
                database.add(Record(candidate["key"], device, kernel, candidate["schedule"],
                                    m.seconds if error is None else (), error))
                seconds = float(np.median(m.seconds)) if error is None else math.inf
                if seconds < summary.best_seconds:
                    summary.best_seconds, summary.best_schedule = seconds, candidate["schedule"]
                summary.trials += 1
                summary.failures += error is not None
                summary.curve.append(summary.best_seconds)
            if reference is None:
                summary.error = "the default schedule failed or was not measured"
            summaries.append(summary)
    return summaries


def _naming_the_file(read: Callable[..., _T]) -> Callable[..., _T]:
    """``read(path, ...)`` with a field of JSON file ``path`` missing or
    mistyped a ValueError naming the file (a batch comes back from another
    machine: it is input, not tessel's own state)."""
    @functools.wraps(read)
    def checked(path: Path, *args: Any) -> _T:
        try:
            return read(path, *args)
        except FieldError as e:
            raise ValueError(f"{path}: {e}") from None
    return checked


_CANDIDATE_FIELDS: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("id", (str,), "a string"), ("kernel", (str,), "a string"), ("result", (int, type(None)), "an integer or null"),
    ("key", (str,), "a string"), ("default", (bool,), "true or false"), ("schedule", (str,), "a string"),
    ("error", (str, type(None)), "a string or null"))


@_naming_the_file
def _read_batch(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """The target and candidates of ``batch.json`` file ``path``, every
    field :func:`import_batch` reads checked."""
    batch = load_object(path, "a tessel tuning batch")
    if batch.get("format") != BATCH_FORMAT:
        raise TesselError(f"{path} is not a tessel tuning batch")
    if batch.get("tessel_version") != __version__:
        raise TesselError(f"the batch {path} was written by tessel {batch.get('tessel_version')!r:.60}, "
                          f"this is {__version__}")
    target = field(batch, "target", "", (str,), "a string")
    if target not in (chips := targets.names("cuda")):
        raise ValueError(f"{path}: target must be one of {', '.join(chips)}, not {target!r:.60}")
    candidates = field(batch, "candidates", "", (list,), "a list")
    ids: dict[str, int] = {}
    for n, candidate in enumerate(candidates):
        where = f"candidates[{n}]"
        for key, kinds, what in _CANDIDATE_FIELDS:
            field(candidate, key, where, kinds, what)
        if candidate["error"] == "":
            raise ValueError(f"{path}: {where}.error must be null or a message, not ''")
        if ids.setdefault(candidate["id"], n) != n:
            raise ValueError(f"{path}: {where}.id {candidate['id']!r:.60} is candidates[{ids[candidate['id']]}]'s")
    return target, candidates


@_naming_the_file
def _read_results(path: Path, target: str) -> tuple[str, dict[str, Measurement]]:
    """The GPU's name and the measurement of each candidate id in
    ``results.json`` file ``path``, measured for ``target``."""
    measured = load_object(path, "the results of a tessel tuning batch")
    if measured.get("format") != BATCH_FORMAT + "-results":
        raise TesselError(f"{path} does not hold the results of a tessel tuning batch")
    if field(measured, "target", "", (str,), "a string") != target:
        raise ValueError(f"{path}: results for target {measured['target']!r:.60}, the batch is for {target}")
    device = field(measured, "device", "", (str,), "a string")
    results = {}
    for candidate, got in field(measured, "results", "", (dict,), "an object").items():
        where = f"results[{candidate!r:.60}]"
        if isinstance(got, dict) and "error" in got:
            error = field(got, "error", where, (str,), "a string")
            if not error:
                raise ValueError(f"{path}: {where}.error must be a message, not ''")
            results[candidate] = Measurement(error=error)
            continue
        seconds = numbers(field(got, "seconds", where, (list,), "a list"), f"{where}.seconds")
        if not seconds or not all(0 < s < math.inf for s in seconds):
            raise ValueError(f"{path}: {where}.seconds must be positive, finite times, not {list(seconds)!r:.60}")
        sample = field(got, "sample", where, (list,), "a list")
        results[candidate] = Measurement(seconds, tuple(numbers(values, f"{where}.sample[{i}]")
                                                        for i, values in enumerate(sample)))
    return device, results
