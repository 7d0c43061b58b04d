"""The search: tunes each kernel's schedule knobs and keeps what it measured.

:func:`tune` takes a graph module and a target, splits the scheduled module
into one :class:`Task` per schedule (a kernel with its schedules and an
entry that calls it, compiled and timed alone), and for each spends
``trials`` measurements: first the default schedule, then rounds of
candidates. A candidate is a point of the knob space that the schedule
validator accepts; rounds mix random points with mutations and crossovers of
the best ones measured so far (an evolutionary step) and, with the cost
model, rank a larger pool by predicted time and measure the most promising.
Every measurement, failures included, goes into the tuning database, so a
later run or a compile with ``tuning_db=`` reuses it; records already there
for the kernel seed the search and are never measured again.
"""

from __future__ import annotations

import math
import numbers
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, get_args

import numpy as np
from mlir import ir
from mlir.dialects import bufferization, func

from .. import __version__, targets
from .. import ir as tir
from ..dialects import loop
from ..backends.signature import signature, size_ranges
from ..errors import CompileError, RuntimeError, UnsupportedError, require_extra
from ..runtime.batch import measured_sizes
from ..schedules import Knob, _schedules, default_schedules, is_legal, knobs, with_knobs
from ..shapes import symbols_of
from .cost_model import CostModel
from .features import CandidateFeatures, Features
from .database import Record, TuningDatabase
from .keys import device_key, kernel_keys
from .runners import LocalCpuRunner, LocalCudaRunner, Measurement, Runner

__all__ = ["STRATEGIES", "KernelSummary", "Task", "plot_curves", "ProgressBar", "tasks", "tune"]

Strategy = Literal["model", "evolution", "random"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)

# The public function each task module calls its kernel from.
ENTRY = "tessel_tune_entry"

# Candidates measured per round; the model ranks POOL_FACTOR times as many.
ROUND = 8
POOL_FACTOR = 8
# Share of a round drawn at random even with a model (exploration), and
# share of proposals bred from the best points (evolution).
EXPLORE = 0.25
BREED = 0.7
# The best points that parents are drawn from.
ELITE = 5
# Outputs of a candidate must match the default schedule's within this.
RTOL = 2e-2
# After the search, the default and this many best points are measured
# again, interleaved this many times, on equal terms.
CONFIRM = 3
CONFIRM_ROUNDS = 2
# Points the database would prefer to the confirmed winner measured again.
RECHECKS = 16


@dataclass(frozen=True)
class Task:
    """One schedule to tune: kernel ``kernel``'s root ``result``.

    ``module`` holds the kernel, all its schedules (the others at their
    defaults) and a public entry ``ENTRY`` calling it, so that it compiles
    and runs alone; ``knobs`` are this schedule's, at their default values.
    """

    kernel: str
    result: Optional[int]
    key: str
    knobs: tuple[Knob, ...]
    module: ir.Module

    @property
    def name(self) -> str:
        return self.kernel if self.result is None else f"{self.kernel}#{self.result}"

    @property
    def default(self) -> tuple[int, ...]:
        return tuple(k.value for k in self.knobs)

    def candidate(self, values: Sequence[int]) -> ir.Module:
        """The task module with this schedule's knobs at ``values``."""
        return with_knobs(self.module, {k.key: v for k, v in zip(self.knobs, values)})

    def is_legal(self, values: Sequence[int]) -> bool:
        """Whether the schedule validator accepts ``values``."""
        return is_legal(self.candidate(values))

    @property
    def sizes(self) -> dict[str, int]:
        """The size of each symbol the kernel's arguments name, as its
        candidates are measured (:func:`tessel.runtime.batch.measured_sizes`:
        the largest of its range); empty for a kernel of static shapes."""
        kernel = ir.SymbolTable(self.module.operation)[self.kernel]
        _, inputs, _ = signature(kernel, "tuning", symbolic=True)
        named = {s for spec in inputs for d in spec.sizes() for s in symbols_of(d)}
        return {name: size for name, size in measured_sizes(size_ranges(kernel)).items() if name in named}

    def schedule_text(self, module: ir.Module) -> str:
        """This task's ``loop.schedule`` op in ``module``, printed."""
        for op, kernel, result in _schedules(module):
            if (kernel, result) == (self.kernel, self.result):
                return str(op)
        raise ValueError(f"no schedule of {self.name} in the module")


def tasks(scheduled: ir.Module) -> list[Task]:
    """One :class:`Task` per schedule with knobs in ``scheduled`` (a module
    as :func:`tessel.schedules.default_schedules` returns it)."""
    symbols = ir.SymbolTable(scheduled.operation)
    keys = kernel_keys(scheduled)
    by_schedule: dict[tuple[str, Optional[int]], list[Knob]] = {}
    for knob in knobs(scheduled):
        by_schedule.setdefault((knob.kernel, knob.result), []).append(knob)
    found = []
    for (kernel, result), schedule_knobs in by_schedule.items():
        schedules = [op for op, k, _ in _schedules(scheduled) if k == kernel]
        module = _task_module(symbols[kernel], schedules)
        found.append(Task(kernel, result, keys[(kernel, result)], tuple(schedule_knobs), module))
    return found


def _task_module(function: ir.OpView, schedules: Sequence[ir.OpView]) -> ir.Module:
    """A module of clones of ``function`` and its ``schedules``, and a public
    function ``ENTRY`` that passes its arguments to ``function`` and returns
    its results. A kernel over size symbols takes its results' destinations
    (graph-to-linalg's destination-passing style); the entry does too, as
    a scheduled module's entry function does, with its symbols' ranges."""
    with function.context, function.location:
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            for op in (function, *schedules):
                op.operation.clone()
            ftype = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
            entry = func.FuncOp(ENTRY, ftype)
            for name in _ENTRY_ATTRIBUTES:
                if name in function.attributes:
                    entry.attributes[name] = function.attributes[name]
            with ir.InsertionPoint(entry.add_entry_block()):
                call = func.CallOp(ftype.results, ir.StringAttr(function.attributes["sym_name"]).value,
                                   list(entry.arguments))
                results = list(call.results)
                if "tessel.destinations" in function.attributes:
                    first = len(ftype.inputs) - len(results)
                    results = [bufferization.materialize_in_destination(r.type, r, entry.arguments[first + i])
                               for i, r in enumerate(results)]
                func.ReturnOp(results)
    return module


# What a kernel function's entry copies: its arguments' size symbols
# (graph.shape), their ranges and its destinations.
_ENTRY_ATTRIBUTES = ("arg_attrs", "graph.dims", "tessel.destinations")


@dataclass
class KernelSummary:
    """What tuning one schedule found. ``default_seconds`` and
    ``best_seconds`` come from measuring the default and the best points
    again, interleaved, after the search; ``curve`` is the search's own
    best-so-far times (its first point is the default's first time)."""

    kernel: str
    result: Optional[int]
    default_seconds: float
    best_seconds: float
    best_schedule: str
    trials: int  # measured in this run
    failures: int  # of those, candidates that failed to compile, run or match
    reused: int  # records of earlier runs that seeded the search
    curve: list[float] = field(default_factory=list)  # best-so-far seconds after each trial (search)
    error: Optional[str] = None  # why the kernel could not be tuned at all
    sizes: dict[str, int] = field(default_factory=dict)  # of its size symbols, where measured (Task.sizes)
    exhausted: bool = False  # stopped before ``trials``: every legal point of the space was measured

    @property
    def name(self) -> str:
        return self.kernel if self.result is None else f"{self.kernel}#{self.result}"

    @property
    def speedup(self) -> float:
        """The best schedule's speed-up over the default schedule."""
        return self.default_seconds / self.best_seconds if self.best_seconds > 0 else math.nan


# (kernel, kernels done, kernels, trials done, trials, best speed-up, kernel finished)
Progress = Callable[[str, int, int, int, int, float, bool], None]


def tune(module: ir.Module, *, target: str = "cpu", trials: int = 64, db: str | os.PathLike[str],
         plot: Optional[str] = None, search: Strategy = "model", runner: Optional[Runner] = None, seed: int = 0,
         progress: Optional[Progress] = None) -> list[KernelSummary]:
    """Tunes every kernel schedule of graph module ``module`` for ``target``
    (``"cpu"`` or a GPU chip such as ``"sm_90"``, measured on this
    machine's GPU).

    Each schedule gets ``trials`` measurements (the default schedule's
    first), recorded in the tuning database at path ``db`` (created if
    missing); ``tessel.compile(module, target, tuning_db=db)`` then uses
    the best of them. ``search`` is ``"model"`` (random and evolutionary
    proposals ranked by the learned cost model), ``"evolution"`` (the same
    without the model) or ``"random"`` (legal random points only).
    ``runner`` measures candidates (by default a :class:`LocalCpuRunner`,
    or a :class:`LocalCudaRunner` for a GPU target);
    ``progress(kernel, done_kernels, kernels, trial, trials, best_speedup,
    finished)`` is called after each round (:class:`ProgressBar` draws a
    progress bar); ``plot`` writes best-so-far curves (PNG).
    Returns one :class:`KernelSummary` per schedule. Every option is
    checked, and the database opened, before any work: a bad one is a
    ValueError (or, for ``target``, an UnsupportedError) naming it.
    """
    _check_counts(trials=trials, seed=seed)
    if search not in STRATEGIES:
        raise ValueError(f"unknown search {search!r}; the strategies are {', '.join(map(repr, STRATEGIES))}")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a callable or None, got {progress!r}")
    if plot is not None:
        _check_plot(plot)
    device_key(target)  # an unknown target is an UnsupportedError naming the known ones
    if runner is not None and runner.target != target:
        raise UnsupportedError(f"the runner measures for {runner.target!r}, not {target!r}")
    with TuningDatabase(db) as database:
        # One model for all the kernels (its features tell them apart); it
        # fails early, with the install hint, when LightGBM is missing.
        model = CostModel(seed) if search == "model" else None
        all_tasks = tasks(default_schedules(module, target))
        owned = runner is None
        if runner is None:
            try:
                runner = LocalCpuRunner() if target == "cpu" else LocalCudaRunner(target)
            except RuntimeError as e:
                raise RuntimeError(f"{e}; to tune for {target} on a GPU machine without the compiler, "
                                   "use tessel.tuning.export_batch (tessel tune --export)") from None
        device = runner.device
        rng = random.Random(seed)
        summaries = []
        history: list[tuple[Features, float]] = []  # finished kernels' measurements, for the model
        try:
            for done, task in enumerate(all_tasks):
                report = None if progress is None else (
                    lambda trial, best, finished, t=task, d=done:
                    progress(t.name, d, len(all_tasks), trial, trials, best, finished))
                summaries.append(_tune_task(task, trials, runner, database, device, rng, search, report, model,
                                            history))
        finally:
            if owned:
                runner.close()
    if plot is not None:
        plot_curves({s.name: [s.curve[0] / b for b in s.curve] for s in summaries if s.curve}, plot,
                    title=f"tessel tune: best speed-up over the default schedule ({target})")
    return summaries


def _check_counts(**counts: Any) -> None:
    """Rejects a ``trials`` below 1, or a count or seed that is not an
    integer, with a ValueError naming it (tune and export_batch take them)."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if counts.get("trials", 1) < 1:
        raise ValueError(f"trials must be at least 1, got {counts['trials']}")


def _check_plot(path: Any) -> None:
    """Fails before tuning, not after it, where ``plot_curves`` could not write ``path``."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"plot must be a file path, got {path!r}")
    folder = Path(path).absolute().parent
    if not folder.is_dir():
        raise ValueError(f"plot {os.fspath(path)!r}: the folder {folder} does not exist")
    _pyplot()


def _tune_task(task: Task, trials: int, runner: Runner, db: TuningDatabase, device: str, rng: random.Random,
               search: Strategy, report: Optional[Callable[[int, float, bool], None]],
               model: Optional[CostModel], history: list[tuple[Features, float]]) -> KernelSummary:
    """Tunes one task; appends its measurements, as features and times
    relative to its default, to ``history`` for the next tasks' model."""
    names = [k.name for k in task.knobs]
    featurize = CandidateFeatures(task, targets.get("cpu").cores if runner.target == "cpu" else None)
    seen: dict[tuple[int, ...], float] = {}  # every point measured, inf for failures
    for record in db.records(task.key, device):
        values = _knob_values(record.schedule, names, task.module.context)
        if record.tessel_version == __version__ and values is not None:
            seen.setdefault(values, record.median)
    reused = len(seen)
    summary = KernelSummary(task.kernel, task.result, math.inf, math.inf, "", 0, 0, reused, sizes=task.sizes)
    reference: Optional[tuple[tuple[float, ...], ...]] = None
    best = math.inf
    pending = [task.default]
    while summary.trials < trials:
        batch = pending or _propose(task, seen, min(ROUND, trials - summary.trials), rng, model, featurize,
                                    search)
        pending = []
        if not batch:
            summary.exhausted = True
            break
        modules = [task.candidate(values) for values in batch]
        measurements = runner.measure([m.operation.get_asm() for m in modules], ENTRY)
        for values, candidate, m in zip(batch, modules, measurements):
            is_default = values == task.default and reference is None
            if is_default and m.error is not None:
                summary.error = f"the default schedule failed: {m.error}"
                return summary
            error = m.error if m.error is not None else _mismatch(m, reference)
            if is_default:
                reference = m.sample
            db.add(Record(task.key, device, task.kernel, task.schedule_text(candidate),
                          m.seconds if error is None else (), error))
            median = float(np.median(m.seconds)) if error is None else math.inf
            seen[values] = median
            if is_default:
                summary.default_seconds = median
            if median < best:
                best, summary.best_schedule = median, task.schedule_text(candidate)
            summary.trials += 1
            summary.failures += error is not None
            summary.curve.append(best)
        if model is not None:
            rows = history + featurize.relative(seen)
            model.fit([f for f, _ in rows], [r for _, r in rows])
        if report is not None and summary.trials < trials:
            report(summary.trials, summary.default_seconds / best, False)
    _confirm(task, summary, seen, runner, db, device, reference)
    history.extend(featurize.relative(seen))
    if report is not None:
        report(summary.trials, summary.speedup, True)
    return summary


def _confirm(task: Task, summary: KernelSummary, seen: Mapping[tuple[int, ...], float], runner: Runner,
             db: TuningDatabase, device: str, reference: Optional[tuple[tuple[float, ...], ...]]) -> None:
    """Measures the default and the CONFIRM best points again, interleaved
    ROUNDS times, and sets the summary's times and best schedule from these
    runs alone. The best of many noisy measurements is biased low (and the
    default, measured first, high), so the comparison the summary reports
    is made again on equal terms; the runs go into the database too, which
    judges a schedule by all its records.

    A compile takes the database's best, which may still be a point that
    one lucky measurement while searching puts ahead of this comparison's
    winner (one outside the CONFIRM best, or one of them whose re-runs
    did not outweigh its first); such a point is measured again against the
    winner, up to RECHECKS times, so that the two agree; if they still
    differ, the database's choice is reported."""
    best = sorted((s, v) for v, s in seen.items() if math.isfinite(s) and v != task.default)[:CONFIRM]
    times: dict[tuple[int, ...], list[float]] = {}
    _measure_again(task, [task.default] + [v for _, v in best], times, runner, db, device, reference)
    if not times.get(task.default):
        summary.error = "the default schedule failed when measured again"
        return
    names = [k.name for k in task.knobs]
    for recheck in range(RECHECKS + 1):
        winner = _fastest(times)
        record = db.best(task.key, device)
        chosen = None if record is None else _knob_values(record.schedule, names, task.module.context)
        if chosen is None or chosen == winner:
            break
        if recheck == RECHECKS:
            # Still apart after as many runs of both: they are within noise
            # of each other, and the summary names what a compile takes.
            if times.get(chosen):
                winner = chosen
            break
        _measure_again(task, [winner, chosen], times, runner, db, device, reference)
    summary.default_seconds = float(np.median(times[task.default]))
    summary.best_seconds = float(np.median(times[winner]))
    summary.best_schedule = task.schedule_text(task.candidate(winner))


def _fastest(times: Mapping[tuple[int, ...], Sequence[float]]) -> tuple[int, ...]:
    """The point with the lowest median of its runs' medians ``times``, as
    the database judges (the earliest of equals)."""
    return min((v for v, t in times.items() if t), key=lambda v: float(np.median(times[v])))


def _measure_again(task: Task, points: Sequence[tuple[int, ...]], times: dict[tuple[int, ...], list[float]],
                   runner: Runner, db: TuningDatabase, device: str,
                   reference: Optional[tuple[tuple[float, ...], ...]]) -> None:
    """Measures ``points`` CONFIRM_ROUNDS times, interleaved, recording each
    run and adding its median to ``times``."""
    modules = [task.candidate(v) for v in points]
    for _ in range(CONFIRM_ROUNDS):
        for values, candidate, m in zip(points, modules,
                                        runner.measure([c.operation.get_asm() for c in modules], ENTRY)):
            error = m.error if m.error is not None else _mismatch(m, reference)
            db.add(Record(task.key, device, task.kernel, task.schedule_text(candidate),
                          m.seconds if error is None else (), error))
            times.setdefault(values, [])
            if error is None:
                times[values].append(float(np.median(m.seconds)))


def _mismatch(m: Measurement, reference: Optional[tuple[tuple[float, ...], ...]]) -> Optional[str]:
    """Why ``m``'s outputs differ from the default schedule's, or None."""
    if reference is None:
        return None
    for i, (got, want) in enumerate(zip(m.sample, reference)):
        got_a, want_a = np.array(got), np.array(want)
        scale = max(1.0, float(np.max(np.abs(want_a), initial=0.0)))
        if got_a.shape != want_a.shape or not np.allclose(got_a, want_a, rtol=RTOL, atol=RTOL * scale,
                                                          equal_nan=True):
            return f"wrong result: output {i} differs from the default schedule's"
    return None


def _propose(task: Task, seen: Mapping[tuple[int, ...], float], count: int, rng: random.Random,
             model: Optional[CostModel], featurize: Callable[[tuple[int, ...]], Features],
             search: Strategy) -> list[tuple[int, ...]]:
    """Up to ``count`` new legal points."""
    ranked = model is not None and model.trained
    wanted = count * POOL_FACTOR if ranked else count
    elite = sorted((s, v) for v, s in seen.items() if math.isfinite(s))[:ELITE]
    pool: dict[tuple[int, ...], None] = {}
    # Legal points can be sparse (tensor-core tiles must fit the problem
    # and the hardware), so each is drawn many times before giving up.
    for _ in range(50 * wanted + 200):
        if len(pool) >= wanted:
            break
        if search != "random" and elite and rng.random() < BREED:
            point = _breed(task, [v for _, v in elite], rng)
        else:
            point = tuple(rng.choice(k.domain) for k in task.knobs)
        if point not in seen and point not in pool and task.is_legal(point):
            pool[point] = None
    points = list(pool)
    if not ranked or len(points) <= count:
        return points[:count]
    explore = int(count * EXPLORE)
    order = np.argsort(model.predict([featurize(p) for p in points]))
    chosen = [points[i] for i in order[:count - explore]]
    rest = [p for p in points if p not in set(chosen)]
    return chosen + rng.sample(rest, min(explore, len(rest)))


def _breed(task: Task, parents: Sequence[tuple[int, ...]], rng: random.Random) -> tuple[int, ...]:
    """A mutation of one parent (one or two knobs moved to a neighbouring
    or random value of their domain), or a crossover of two."""
    child = list(rng.choice(parents))
    if len(parents) > 1 and rng.random() < 0.3:
        other = rng.choice(parents)
        child = [a if rng.random() < 0.5 else b for a, b in zip(child, other)]
    for _ in range(rng.choice((1, 1, 2))):
        i = rng.randrange(len(child))
        domain = list(task.knobs[i].domain)
        at = domain.index(child[i]) if child[i] in domain else 0
        if rng.random() < 0.6:
            at = min(max(at + rng.choice((-1, 1)), 0), len(domain) - 1)
        else:
            at = rng.randrange(len(domain))
        child[i] = domain[at]
    return tuple(child)


def _knob_values(schedule: str, names: Sequence[str], context: ir.Context) -> Optional[tuple[int, ...]]:
    """The values of knobs ``names`` in a printed schedule (a record's), or
    None when it does not parse or its knobs are not exactly those."""
    try:
        op = tir.parse_schedule(schedule, ctx=context, source_name="<tuning record>")
    except CompileError:
        return None
    values = {k.name.value: k.value.value for k in op.regions[0].blocks[0].operations
              if isinstance(k, loop.KnobOp)}
    op.erase()
    if sorted(values) != sorted(names):
        return None
    return tuple(values[n] for n in names)


def plot_curves(curves: Mapping[str, Sequence[float]], path: str, *, title: str = "",
                ylabel: str = "best speed-up over the default schedule") -> None:
    """Draws each curve (a value per trial) against trials into PNG ``path``."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 5))
    for label, values in curves.items():
        axes.plot(range(1, len(values) + 1), values, label=label)
    axes.set_xlabel("trials")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing to files (MissingExtraError without it)."""
    matplotlib = require_extra("matplotlib", "tune", "plotting tuning curves (plot=...)")
    matplotlib.use("Agg")  # files only; no display needed
    from matplotlib import pyplot

    return pyplot


class ProgressBar:
    """A progress bar on stderr (``tune(progress=ProgressBar())``): one line
    per kernel, redrawn on a terminal, else printed when it finishes. With
    several kernels it estimates the time left for all of them from the
    time taken so far; a kernel whose space ran out before its trials says
    so."""

    width = 24

    def __init__(self) -> None:
        self._start: Optional[float] = None

    def __call__(self, kernel: str, done: int, kernels: int, trial: int, trials: int, speedup: float,
                 finished: bool) -> None:
        now = time.monotonic()
        if self._start is None:
            self._start = now
        filled = int(self.width * trial / trials)
        line = (f"[{done + 1}/{kernels}] {kernel:<24.24} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{trial}/{trials} trials, best {speedup:.2f}x over the default")
        if finished and trial < trials:
            line += " (space exhausted: every legal point measured)"
        # Kernels' trials cost about the same: the fraction of trials done times
        # the time so far gives the rest.
        fraction = (done + (1.0 if finished else trial / trials)) / kernels
        if kernels > 1 and 0 < fraction < 1:
            line += f", about {_duration((now - self._start) * (1 - fraction) / fraction)} left"
        if sys.stderr.isatty():
            print("\r\033[K" + line, end="\n" if finished else "", file=sys.stderr, flush=True)
        elif finished:
            print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    """``seconds`` as ``1 h 02 min``, ``3 min 05 s`` or ``12 s``."""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"
