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
import random
from pathlib import Path
from typing import Optional

import numpy as np
from mlir import ir

from .. import __version__
from ..backends.cuda import compile_cuda
from ..backends.pipelines import GPU_TARGETS
from ..errors import TesselError, UnsupportedError
from ..runtime.batch import BATCH_FORMAT
from ..schedules import default_schedules
from .cost_model import CostModel
from .features import CandidateFeatures, Features
from .database import Record, TuningDatabase
from .keys import device_key
from .runners import Measurement
from .search import ENTRY, KernelSummary, _knob_values, _mismatch, _propose, tasks

__all__ = ["export_batch", "import_batch"]


def export_batch(module: ir.Module, directory: str | Path, *, target: str = "sm_90", trials: int = 32,
                 db: Optional[str | Path] = None, seed: int = 0) -> int:
    """Writes a batch of ``trials`` candidates per kernel schedule of graph
    module ``module`` for GPU chip ``target`` into ``directory``; the number
    of candidates. With ``db``, points it already holds for these kernels on
    any GPU of the chip are not proposed again and guide the proposals."""
    if target not in GPU_TARGETS:
        raise UnsupportedError(f"batches are for GPU targets; {target!r} is not one of {', '.join(GPU_TARGETS)}")
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
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
                    values = _knob_values(record.schedule, names)
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
    database ``db``; one summary per kernel schedule of the batch."""
    directory = Path(directory)
    batch = json.loads((directory / "batch.json").read_text())
    measured = json.loads(Path(results or directory / "results.json").read_text())
    if batch.get("format") != BATCH_FORMAT or measured.get("format") != BATCH_FORMAT + "-results":
        raise TesselError(f"{directory} does not hold a tessel tuning batch and its results")
    if batch.get("tessel_version") != __version__:
        raise TesselError(f"the batch in {directory} was written by tessel {batch.get('tessel_version')}, "
                          f"this is {__version__}")
    device = device_key(batch["target"], gpu_name=measured["device"])
    by_kernel: dict[tuple[str, Optional[int]], list[dict]] = {}
    for candidate in batch["candidates"]:
        by_kernel.setdefault((candidate["kernel"], candidate["result"]), []).append(candidate)
    summaries = []
    with TuningDatabase(db) as database:
        for (kernel, result), group in by_kernel.items():
            summary = KernelSummary(kernel, result, math.inf, math.inf, "", 0, 0, 0)
            reference = None
            for candidate in group:
                got = measured["results"].get(candidate["id"])
                m = (Measurement(error=candidate["error"]) if candidate["error"] is not None
                     else Measurement(error="not measured (missing from the results)") if got is None
                     else Measurement(error=got["error"]) if "error" in got
                     else Measurement(tuple(got["seconds"]), tuple(map(tuple, got["sample"]))))
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
