"""Tuning benchmark: tuned schedules against the default ones, in the same run.

    python bench/tune.py [--trials 200] [--json PATH] [--plot PATH] [--only NAME ...]

For each workload (matmul 1024^3 and softmax 4096x4096, the issue's, and
three small kernels where the default heuristics leave time; f32, on this
CPU) its kernel is tuned twice from scratch, ``--trials`` measurements each:
with the cost model (``search="model"``) and by random search alone. Then,
in the same process, the model's database is used as a compile would use
it: the whole program is compiled with the default schedules and with
``tuning_db=``, both are checked against numpy and timed the same way
(``bench/cpu.py``'s ``time_interleaved``), and the ratio is default / tuned.
Timed in the same turns: torch eager (oneDNN's GEMM; torch's softmax) and,
for softmax, a copy (``x + 1`` compiled by tessel: the least memory traffic
a softmax has), which show how far from its limit the default already is. The
trials each search needed to come within 3% of the best time either found
while searching compare the two searches (each search's summary times are
its default and best schedules measured again, interleaved, at the end); ``--plot`` draws their best-so-far curves. The
cost of a warm database is the time ``tuning_db=`` adds to a compile
(default schedules plus records applied), per kernel. Goals: tuned >= 1.3x
the default (the issue's two workloads); the model reaching the best in fewer trials than random; a
warm database adding < 50 ms per kernel.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

import tessel
from tessel import ops
from tessel.compiler import _tuned
from tessel.tuning import KernelSummary, LocalCpuRunner, ProgressBar, plot_curves, tune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import (  # noqa: E402 - cpu.py's timing and references
    EPS, _layer_norm_numpy, _softmax_numpy, check, machine, time_interleaved, timed, torch)

SEARCHES = ("model", "random")
# A search has found "the best" when within this of the best either found.
NEAR_BEST = 1.03


@dataclass(frozen=True)
class Workload:
    name: str
    inputs: tuple[np.ndarray, ...]
    traced: Callable[..., tessel.Tensor]
    numpy: Callable[..., np.ndarray]
    rtol: float
    torch: Callable[..., object]  # the same in torch eager, a peer timed in the same run
    # What bounds any schedule: (what it is, a computation traced for tessel on the same inputs).
    bound: Optional[tuple[str, Callable[..., tessel.Tensor]]] = None
    goal: bool = True  # the goals apply (else: shown for what tuning finds where defaults are off)


def workloads() -> list[Workload]:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((1024, 1024), dtype=np.float32) for _ in range(2))
    x = rng.standard_normal((4096, 4096), dtype=np.float32)
    small = rng.standard_normal((256, 128), dtype=np.float32)
    h, w = rng.standard_normal((256, 768), dtype=np.float32), rng.standard_normal(768, dtype=np.float32)
    x64, w768 = rng.standard_normal((64, 768), dtype=np.float32), rng.standard_normal((768, 768), dtype=np.float32)
    return [
        Workload("matmul 1024x1024x1024", (a, b), lambda a, b: a @ b, lambda a, b: a @ b, 1e-4,
                 lambda a, b: a @ b),
        # A softmax reads and writes its input once at least, as x + 1 does.
        Workload("softmax 4096x4096", (x,), lambda x: ops.softmax(x, axis=-1), _softmax_numpy, 1e-5,
                 lambda x: torch.softmax(x, -1), ("copy (x + 1)", lambda x: x + 1.0)),
        # Small kernels, where the default heuristics (tiles of ~16K points, 32 lanes, the largest
        # column blocks) leave time: task overhead, short rows, 3 tiles on 2 cores.
        Workload("softmax 256x128", (small,), lambda x: ops.softmax(x, axis=-1), _softmax_numpy, 1e-5,
                 lambda x: torch.softmax(x, -1), goal=False),
        Workload("layer_norm 256x768", (h, w, w), lambda x, w, b: ops.layer_norm(x, w, b, axis=-1),
                 _layer_norm_numpy, 1e-4, lambda x, w, b: torch.nn.functional.layer_norm(x, (768,), w, b, EPS),
                 goal=False),
        Workload("linear+relu 64x768x768", (x64, w768), lambda x, w: ops.relu(x @ w),
                 lambda x, w: np.maximum(x @ w, 0), 1e-4, lambda x, w: torch.relu(x @ w), goal=False),
    ]


@dataclass
class Result:
    name: str
    default_ms: float  # whole program, default schedules
    tuned_ms: float  # whole program, tuning_db=
    speedup: float
    goal: bool
    peers: dict[str, float]  # ms of torch eager and of the bound, timed with the two above
    searches: dict[str, dict]  # search -> its kernel summaries and trials to the best
    lookup_ms_per_kernel: float


def trials_to_best(summary: KernelSummary, best_s: float) -> int | None:
    """The first trial after which ``summary`` was within NEAR_BEST of ``best_s``."""
    for trial, seconds in enumerate(summary.curve, 1):
        if seconds <= best_s * NEAR_BEST:
            return trial
    return None


def run(workload: Workload, trials: int, runner: LocalCpuRunner, workdir: Path) -> tuple[Result, dict]:
    module = tessel.trace(workload.traced, *workload.inputs, name=workload.name.split()[0])
    summaries: dict[str, list[KernelSummary]] = {}
    for search in SEARCHES:
        db = workdir / f"{workload.name.replace(' ', '-')}-{search}.db"
        print(f"  {search} search, {trials} trials per kernel", file=sys.stderr)
        summaries[search] = tune(module, trials=trials, db=str(db), search=search, runner=runner, seed=0,
                                 progress=ProgressBar())
    db = str(workdir / f"{workload.name.replace(' ', '-')}-model.db")
    kernels = len(summaries["model"])
    lookup = statistics.median(timed(lambda: _tuned(module, "cpu", db, allow_tf32=False))[1] for _ in range(5))

    expected = workload.numpy(*workload.inputs)
    calls = {}
    for label, options in (("default", {}), ("tuned", {"tuning_db": db})):
        exe = tessel.compile(module, **options)
        out, first = timed(lambda: exe(*workload.inputs))
        check(f"{workload.name} ({label})", out, expected, workload.rtol)
        calls[label] = (lambda exe=exe: exe(*workload.inputs), first)
    if workload.bound is not None:
        exe = tessel.compile(tessel.trace(workload.bound[1], *workload.inputs, name="bound"))
        calls[workload.bound[0]] = (lambda exe=exe: exe(*workload.inputs), timed(lambda: exe(*workload.inputs))[1])
    if torch is not None:
        args = [torch.from_numpy(x) for x in workload.inputs]
        check(f"{workload.name} (torch)", workload.torch(*args).numpy(), expected, workload.rtol)
        calls["torch"] = (lambda: workload.torch(*args), timed(lambda: workload.torch(*args))[1])
    with torch.inference_mode() if torch is not None else contextlib.nullcontext():
        timings = {label: t.median_ms for label, t in time_interleaved(calls, 2.0, 200).items()}
    # The best time either search found while searching, per kernel.
    best: dict[str, float] = {}
    for search in SEARCHES:
        for s in summaries[search]:
            best[s.name] = min(best.get(s.name, float("inf")), *s.curve)
    searches = {
        search: {s.name: {"default_ms": s.default_seconds * 1e3, "best_ms": s.best_seconds * 1e3,
                          "speedup": s.speedup, "trials": s.trials, "failures": s.failures,
                          "trials_to_best": trials_to_best(s, best[s.name]), "best_schedule": s.best_schedule,
                          "search_best_ms": [c * 1e3 for c in s.curve]}
                 for s in summaries[search]}
        for search in SEARCHES}
    curves = {f"{workload.name}: {s.name} ({search})": [s.curve[0] / c for c in s.curve]
              for search in SEARCHES for s in summaries[search]}
    peers = {label: ms for label, ms in timings.items() if label not in ("default", "tuned")}
    return Result(workload.name, timings["default"], timings["tuned"], timings["default"] / timings["tuned"],
                  workload.goal, peers, searches, lookup * 1e3 / max(kernels, 1)), curves


def report(results: list[Result]) -> None:
    print(f"\n{'workload':<24} {'default ms':>10} {'tuned ms':>9} {'tuned/default':>13} {'goal':>7} {'met':>4}"
          f"   {'lookup ms/kernel':>16} {'met':>4}")
    for r in results:
        goal, met = (">=1.3x", "yes" if r.speedup >= 1.3 else "no") if r.goal else ("-", "-")
        print(f"{r.name:<24} {r.default_ms:>10.3f} {r.tuned_ms:>9.3f} {r.speedup:>12.2f}x {goal:>7} {met:>4}   "
              f"{r.lookup_ms_per_kernel:>16.1f} {'yes' if r.lookup_ms_per_kernel < 50 else 'no':>4}")
    print(f"\n{'workload':<24} {'peer':<14} {'peer ms':>8} {'tuned/peer':>10}")
    for r in results:
        for peer, ms in r.peers.items():
            print(f"{r.name:<24} {peer:<14} {ms:>8.3f} {ms / r.tuned_ms:>9.2f}x")
    print(f"\n{'workload: kernel':<48} {'search':<7} {'trials':>6} {'failed':>6} {'best ms':>8} "
          f"{'speed-up':>8} {'trials to best':>14}")
    for r in results:
        for search, kernels in r.searches.items():
            for name, k in kernels.items():
                to_best = "not reached" if k["trials_to_best"] is None else str(k["trials_to_best"])
                print(f"{r.name + ': ' + name:<48} {search:<7} {k['trials']:>6} {k['failures']:>6} "
                      f"{k['best_ms']:>8.3f} {k['speedup']:>7.2f}x {to_best:>14}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="write both searches' best-so-far curves here (PNG)")
    parser.add_argument("--only", nargs="*", help="workloads whose name starts with one of these")
    args = parser.parse_args()
    info = machine()
    print(f"tessel {info['tessel_commit'][:12]} on {info['cpu']}, {info['cores']} cores; {args.trials} trials "
          f"per kernel and search; {datetime.date.today()}", file=sys.stderr)
    results, curves = [], {}
    with tempfile.TemporaryDirectory() as tmp, LocalCpuRunner() as runner:
        for workload in workloads():
            if args.only and not any(workload.name.startswith(o) for o in args.only):
                continue
            print(f"{workload.name} ...", file=sys.stderr)
            start = time.perf_counter()
            result, workload_curves = run(workload, args.trials, runner, Path(tmp))
            print(f"  done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
            results.append(result)
            curves.update(workload_curves)
    report(results)
    if args.plot:
        plot_curves(curves, args.plot, title="best speed-up over the default schedule: cost model vs random")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "trials": args.trials,
                                               "results": [asdict(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
