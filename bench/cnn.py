"""CNNs on the CPU: tessel against torch eager and onnxruntime, in the same run.

    python bench/cnn.py [--quick] [--json PATH] [--only NAME ...] [--budget S]
    python bench/cnn.py --windows S [--only NAME ...] [--json PATH]

ResNet-18 and MobileNetV2 (bench/models.py: torchvision's architectures,
random weights, eval mode) at batch 1 and 8, 224x224. tessel compiles each
from ``tessel.from_torch`` (cold, without the compile cache: the compile
time is reported); onnxruntime runs the model exported with
``torch.onnx.export`` (opset 17) on its default CPU provider and threads.
Every result is checked against torch eager before anything is timed, and
everything is timed as ``bench/cpu.py`` times it (``time_interleaved``).
Ratios are peer time / tessel time (> 1: tessel is faster); the last
column is the core-to-core round trip before and after the timing
(``core_to_core_ns``: on a VM, where the host has put the vCPUs). Exits 1
only when a result is wrong. ``--windows`` times batch 1 against
onnxruntime alone, in short alternating windows each after a round trip,
and gives the medians apart for near and far placements.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

import tessel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import core_to_core_ns, machine, time_interleaved, timed  # noqa: E402
from models import mobilenet_v2, resnet18  # noqa: E402

MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2}


def _onnxruntime(model: torch.nn.Module, x: torch.Tensor) -> Any:
    """An onnxruntime session of ``model`` exported at opset 17, or None without onnxruntime."""
    try:
        import onnxruntime
    except ImportError:
        return None
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation: onnxscript is not a dependency
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (x,), buffer, opset_version=17, dynamo=False, input_names=["x"])
    return onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])


def _checked(model: torch.nn.Module, x: torch.Tensor, exe: Any, session: Any) -> tuple[dict, dict, dict]:
    """The implementations' calls, their first outputs and seconds, and
    their errors against torch eager (max |difference| / max |output|)."""
    calls = {"tessel": lambda: np.asarray(exe(x.numpy())), "torch": lambda: model(x).numpy()}
    if session is not None:
        calls["onnxruntime"] = lambda: session.run(None, {"x": x.numpy()})[0]
    firsts = {peer: timed(call) for peer, call in calls.items()}  # (output, seconds)
    expected = firsts["torch"][0]
    scale = float(np.abs(expected).max())
    errors = {peer: float(np.abs(out - expected).max()) / scale for peer, (out, _) in firsts.items()}
    return calls, firsts, errors


def _wrong(errors: dict[str, float]) -> dict[str, float]:
    """The errors of ``_checked`` above the tolerance, 1e-4."""
    return {peer: e for peer, e in errors.items() if e > 1e-4}


def run(name: str, batch: int, side: int, budget_s: float, max_runs: int) -> dict[str, Any]:
    """Compiles, checks and times one model at one batch size."""
    model = MODELS[name]()
    x = torch.randn(batch, 3, side, side, generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    exe = tessel.compile(tessel.from_torch(model, (x,)), target="cpu", cache=False)
    compile_s = time.perf_counter() - start
    session = _onnxruntime(model, x)
    with torch.inference_mode():
        calls, firsts, errors = _checked(model, x, exe, session)
        result: dict[str, Any] = {"name": f"{name} batch {batch}", "compile_s": compile_s, "errors": errors}
        wrong = _wrong(errors)
        if wrong:
            result["error"] = f"max error / max |output| above 1e-4: {wrong}"
            return result
        # Where the host has the vCPUs, before and after (core_to_core_ns).
        placement = [core_to_core_ns()]
        timings = time_interleaved({peer: (call, firsts[peer][1]) for peer, call in calls.items()}, budget_s,
                                   max_runs)
        placement.append(core_to_core_ns())
    result["core_to_core_ns"] = placement
    result["ms"] = {peer: t.median_ms for peer, t in timings.items()}
    result["runs"] = timings["tessel"].runs
    result["ratios"] = {peer: t.median_ms / timings["tessel"].median_ms for peer, t in timings.items()
                        if peer != "tessel"}
    return result


# Round trips at least this long count as vCPUs far apart (the 2-core VM:
# ~100 ns near, ~500 ns far).
FAR_NS = 250.0


def windows(name: str, seconds: float) -> dict[str, Any]:
    """tessel and onnxruntime at batch 1 in alternating windows of calls for
    ``seconds``, each pair after a core-to-core round trip: how the ratio
    moves with where the host has the vCPUs. Medians by placement."""
    model = MODELS[name]()
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    exe = tessel.compile(tessel.from_torch(model, (x,)), target="cpu")
    session = _onnxruntime(model, x)
    if session is None:
        raise SystemExit("--windows needs onnxruntime")
    with torch.inference_mode():
        calls, firsts, errors = _checked(model, x, exe, session)
        wrong = _wrong(errors)
        if wrong:
            raise SystemExit(f"{name}: max error / max |output| above 1e-4: {wrong}")
        # About 0.25 s per window.
        count = max(3, int(0.25 / max(firsts["tessel"][1], 1e-3)))

        def median_ms(call: Any) -> float:
            for _ in range(2):
                call()
            return float(np.median([timed(call)[1] for _ in range(count)])) * 1e3

        rows = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ns = core_to_core_ns()
            row = {"core_to_core_ns": ns, "tessel_ms": median_ms(calls["tessel"]),
                   "onnxruntime_ms": median_ms(calls["onnxruntime"])}
            rows.append(row)
            print(f"  {'n/a' if ns is None else f'{ns:.0f}':>5} ns  tessel {row['tessel_ms']:7.2f} ms  onnxruntime "
                  f"{row['onnxruntime_ms']:7.2f} ms  {row['onnxruntime_ms'] / row['tessel_ms']:.3f}x", flush=True)
    summary = {}
    for placement in ("near", "far"):
        chosen = [r for r in rows if r["core_to_core_ns"] is not None
                  and (r["core_to_core_ns"] >= FAR_NS) == (placement == "far")]
        if chosen:
            summary[placement] = {
                "windows": len(chosen),
                "tessel_ms": float(np.median([r["tessel_ms"] for r in chosen])),
                "onnxruntime_ms": float(np.median([r["onnxruntime_ms"] for r in chosen])),
                "ratio": float(np.median([r["onnxruntime_ms"] / r["tessel_ms"] for r in chosen]))}
    print(f"{name} batch 1, medians by placement (far: a round trip of {FAR_NS:.0f} ns or more):")
    for placement, m in summary.items():
        print(f"  {placement:4s} {m['windows']:4d} windows  tessel {m['tessel_ms']:.2f} ms  onnxruntime "
              f"{m['onnxruntime_ms']:.2f} ms  {m['ratio']:.3f}x")
    return {"name": f"{name} batch 1", "window_calls": count, "rows": rows, "by_placement": summary}


def report(results: list[dict[str, Any]]) -> None:
    peers = ["torch", "onnxruntime"]
    width = max(len(r["name"]) for r in results) + 2
    print(f"{'model':<{width}}{'tessel ms':>11}" + "".join(f"{p + ' ms':>16}{'vs ' + p:>16}" for p in peers)
          + f"{'runs':>6}{'compile s':>11}{'core-to-core ns':>17}")
    for r in results:
        if "error" in r:
            print(f"{r['name']:<{width}}WRONG: {r['error']}")
            continue
        cells = "".join(f"{r['ms'][p]:>16.2f}{r['ratios'][p]:>15.3g}x" if p in r["ms"] else f"{'n/a':>16}{'n/a':>16}"
                        for p in peers)
        placement = "/".join("n/a" if ns is None else f"{ns:.0f}" for ns in r["core_to_core_ns"])
        print(f"{r['name']:<{width}}{r['ms']['tessel']:>11.2f}{cells}{r['runs']:>6}{r['compile_s']:>11.1f}"
              f"{placement:>17}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch 1 at 64x64, short timing: a smoke run")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write machine info and results here")
    parser.add_argument("--only", nargs="+", choices=sorted(MODELS), help="these models only")
    parser.add_argument("--budget", type=float, help="seconds of timed calls per implementation (default 2)")
    parser.add_argument("--windows", type=float, metavar="S",
                        help="instead: batch 1 against onnxruntime in alternating windows for S seconds per model, "
                        "each after a core-to-core round trip, with medians by placement")
    args = parser.parse_args()
    budget_s = args.budget if args.budget is not None else 0.25 if args.quick else 2.0
    info = machine()
    print(f"tessel {info['tessel_commit'] or '?'} on {info['cpu']}, {info['cores']} cores, "
          f"load average {info['load_average'][0]:.2f}; torch {info['torch']}")
    if args.windows is not None:
        found = [windows(name, args.windows) for name in args.only or sorted(MODELS, reverse=True)]
        if args.json:
            args.json.write_text(json.dumps({"machine": info, "windows": found}, indent=2) + "\n")
        return 0
    results = []
    for name in args.only or sorted(MODELS, reverse=True):
        for batch in (1,) if args.quick else (1, 8):
            print(f"  {name} batch {batch} ...", file=sys.stderr, flush=True)
            results.append(run(name, batch, 64 if args.quick else 224, budget_s, 5 if args.quick else 50))
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "quick": args.quick, "budget_s": budget_s,
                                         "results": results}, indent=2) + "\n")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
