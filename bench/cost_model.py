"""Cost model benchmark: how well the model ranks a matmul's schedules.

    python bench/cost_model.py [--trials 60] [--db PATH] [--seeds 4]

Measures ``--trials`` random legal schedules of each of four f32 matmul
shapes on this CPU into a tuning database (``--db``: kept and reused when
given), then, for each shape, fits the cost model as a search would after
measuring ``n`` of that shape's schedules and predicts the rest: with the
other shapes' measurements too (one model for all the kernels of a run, as
``tune`` fits it) and with the shape's own alone (one model per kernel),
and with all features or the knob values alone (value, log2 and products
of pairs). Printed per setting, over shapes and ``--seeds`` splits: the
rank correlation (Spearman) of predicted and measured times, and the
regret, the measured time of the schedule the model ranks first over the
best measured one (1.00x: it picked the best).
"""

from __future__ import annotations

import argparse
import math
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from mlir import ir

import tessel
from tessel import schedules
from tessel.tuning import LocalCpuRunner, Task, TuningDatabase, tasks, tune
from tessel.tuning.cost_model import CostModel
from tessel.tuning.features import CandidateFeatures, Features
from tessel.tuning.search import _knob_values

SHAPES = ((256, 1024, 1024), (512, 768, 768), (1000, 1000, 1000), (128, 3072, 768))
OWN = (8, 16, 32)  # schedules of the held-out shape the model has seen
# The knob values alone: each knob, its log2, and products of pairs.
_KNOB_ONLY = re.compile(r"^[a-z_0-9]+(\.log2)?$|^[a-z_0-9]+\*[a-z_0-9]+\.log2$")


def _module(m: int, k: int, n: int) -> ir.Module:
    a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    return tessel.trace(lambda a, b: a @ b, a, b, name=f"mm{m}x{k}x{n}")


def _task(m: int, k: int, n: int) -> Task:
    [task] = tasks(schedules.default_schedules(_module(m, k, n), "cpu"))
    return task


def measure(db: str, trials: int) -> None:
    """Random schedules of every shape into ``db``, unless already there."""
    with LocalCpuRunner() as runner:
        for shape in SHAPES:
            with TuningDatabase(db) as d:
                if len(d.records(_task(*shape).key)) >= trials:
                    continue
            print(f"measuring {'x'.join(map(str, shape))} ...", file=sys.stderr)
            tune(_module(*shape), trials=trials, db=db, search="random", runner=runner, seed=1)


def rows(db: str) -> dict[tuple[int, int, int], list[tuple[Features, float]]]:
    """Each shape's measured schedules: features and time relative to the default."""
    found = {}
    with TuningDatabase(db, readonly=True) as d:
        for shape in SHAPES:
            task = _task(*shape)
            names = [knob.name for knob in task.knobs]
            times: dict[tuple[int, ...], list[float]] = {}
            for record in d.records(task.key):
                values = _knob_values(record.schedule, names, task.module.context)
                if values is not None and record.error is None:
                    times.setdefault(values, []).append(record.median)
            seen = {v: statistics.mean(t) for v, t in times.items()}
            found[shape] = CandidateFeatures(task, workers=None).relative(seen)
    return found


def evaluate(data: dict, seeds: int) -> None:
    print(f"{'model':<22} {'features':<12} {'own':>4} {'spearman':>9} {'regret mean':>12} {'regret max':>11}")
    for shared in (True, False):
        for only in (False, True):
            for own in OWN:
                rho: list[float] = []
                regret: list[float] = []
                for seed in range(seeds):
                    rng = random.Random(seed)
                    for held in SHAPES:
                        points = list(data[held])
                        if len(points) < own + 2:
                            continue  # too few measured to hold some out
                        rng.shuffle(points)
                        train = points[:own] + ([r for s in SHAPES if s != held for r in data[s]] if shared else [])
                        test = points[own:]
                        keep = (lambda f: {k: v for k, v in f.items() if _KNOB_ONLY.match(k)
                                           and not k.startswith(("kernel", "tile"))}) if only else (lambda f: f)
                        model = CostModel(seed)
                        model.fit([keep(f) for f, _ in train], [r for _, r in train])
                        predicted = model.predict([keep(f) for f, _ in test])
                        measured = np.log([r for _, r in test])
                        rho.append(_spearman(predicted, measured))
                        regret.append(math.exp(measured[np.argmin(predicted)] - measured.min()))
                if not rho:
                    continue
                print(f"{'all kernels' if shared else 'this kernel alone':<22} {'knobs' if only else 'all':<12} "
                      f"{own:>4} {statistics.mean(rho):>9.2f} {statistics.mean(regret):>11.2f}x "
                      f"{max(regret):>10.2f}x")


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ranks = [np.argsort(np.argsort(x)) for x in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--db", help="the measurements' tuning database (kept; default: a temporary one)")
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "cost_model.db")
        measure(db, args.trials)
        evaluate(rows(db), args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
