"""The PTX emulator's speed per kernel class, against numpy computing the same result.

    python bench/emulator.py [--quick] [--json PATH] [--only NAME ...]

Each workload is compiled for sm_90 (not timed), its artifact run once on
the emulator (``CudaArtifact.emulate()``) and checked against numpy. The
table gives the emulated time, the instruction steps (one step runs one
instruction for every lane at it), steps per second, blocks and threads
launched, numpy's time for the same result and the slowdown emulator /
numpy. The issue's sizing goal is the f16 GEMM 256³ in at most 1.5 s on
one core. Exits 1 when a result is wrong.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import tessel
from tessel import ops
from tessel.dtypes import BFLOAT16
from tessel.testing.fuzz import conv2d_reference

REPO = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 1.5  # the f16 GEMM 256^3


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # the kernel class
    traced: Callable
    inputs: tuple
    numpy: Callable
    tolerance: float
    options: tuple = ()


@dataclass
class Result:
    name: str
    kind: str
    kernels: int
    blocks: int
    threads: int
    steps: int
    emulated_s: float
    numpy_ms: float
    max_error: float
    ok: bool


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, w, b):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b


def workloads(quick: bool) -> list[Workload]:
    rng = np.random.default_rng(0)

    def normal(*shape, dtype=np.float32, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    g = 128 if quick else 256
    f16 = np.float16
    gemm = lambda a, b: a @ b  # noqa: E731
    x_conv, w_conv = normal(2, 16, 16, 16, dtype=f16), normal(32, 16, 3, 3, dtype=f16, scale=0.1)
    table, ids = normal(1000, 256), rng.integers(0, 1000, (64, 16)).astype(np.int64)
    rows = 16 if quick else 64
    return [
        Workload(f"gemm f16 {g}^3", "tensor cores f16 (cp.async, ldmatrix, mma)", gemm,
                 (normal(g, g, dtype=f16), normal(g, g, dtype=f16, scale=0.1)), np.matmul, 2e-2),
        Workload(f"gemm bf16 {g}^3", "tensor cores bf16", gemm,
                 (normal(g, g, dtype=BFLOAT16), normal(g, g, dtype=BFLOAT16, scale=0.1)), np.matmul, 5e-2),
        Workload(f"gemm tf32 {g}^3", "tensor cores tf32", gemm, (normal(g, g), normal(g, g, scale=0.1)), np.matmul,
                 2e-2, (("allow_tf32", True),)),
        Workload("gemm f16 64x64x4096", "split K", gemm, (normal(64, 4096, dtype=f16),
                                                          normal(4096, 64, dtype=f16, scale=0.05)), np.matmul, 2e-2),
        Workload("bmm f16 8x128x64x128", "batched tensor cores", gemm,
                 (normal(8, 128, 64, dtype=f16), normal(8, 64, 128, dtype=f16, scale=0.1)), np.matmul, 2e-2),
        Workload("conv f16 2x16x16x16 3x3", "convolution (im2col)",
                 lambda x, w: ops.conv2d(x, w, padding=1), (x_conv, w_conv),
                 lambda x, w: conv2d_reference(x, w, stride=1, padding=1, dilation=1, groups=1, layout="NCHW"), 2e-2),
        Workload(f"softmax f32 {rows}x1024", "row reduction", lambda x: ops.softmax(x, axis=-1),
                 (normal(rows, 1024),), _softmax, 1e-5),
        Workload(f"layer_norm f16 {rows}x1024", "row reduction f16", lambda x, w, b: ops.layer_norm(x, w, b, eps=1e-5),
                 (normal(rows, 1024, dtype=f16), normal(1024, dtype=f16), normal(1024, dtype=f16)), _layer_norm, 2e-2),
        Workload("sum 512x1024", "grid reduction", lambda x: ops.sum(x), (normal(512, 1024),), np.sum, 1e-5),
        Workload("elementwise 2^20", "elementwise", lambda x, y: ops.relu(ops.tanh(x * 0.5 + y) * x),
                 (normal(1 << 20), normal(1 << 20)), lambda x, y: np.maximum(np.tanh(x * 0.5 + y) * x, 0), 1e-5),
        Workload("embedding 64x16 of 1000x256", "gather", lambda t, i: ops.take(t, i, axis=0), (table, ids),
                 lambda t, i: t[i], 0.0),
        Workload("heads f16 64x4x32", "transpose", lambda k: k.transpose(1, 2, 0), (normal(64, 4, 32, dtype=f16),),
                 lambda k: k.transpose(1, 2, 0), 0.0),
    ]


def run(w: Workload) -> Result:
    module = tessel.trace(w.traced, *w.inputs, name=w.name.split()[0])
    artifact = tessel.compile(module, target="cuda:sm_90", **dict(w.options))
    executable = artifact.emulate()
    start = time.perf_counter()
    got = executable(*w.inputs)
    emulated = time.perf_counter() - start
    wide = [a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == BFLOAT16 else a for a in w.inputs]
    start = time.perf_counter()
    want = w.numpy(*wide)
    numpy_ms = (time.perf_counter() - start) * 1e3
    error = float(np.abs(np.asarray(got, np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
    return Result(w.name, w.kind, len(artifact.kernels), sum(math.prod(k.grid) for k in artifact.kernels),
                  sum(math.prod(k.grid) * math.prod(k.block) for k in artifact.kernels),
                  executable.driver.device.steps, emulated, numpy_ms, error, error <= w.tolerance + 1e-12)


def _machine() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "unknown"
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else \
        platform.processor()
    return {"date": datetime.date.today().isoformat(), "cpu": cpu, "cores": os.cpu_count(), "commit": commit,
            "numpy": np.__version__, "python": platform.python_version(), "load": os.getloadavg()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes (test/python/test_bench.py)")
    parser.add_argument("--json", help="also write the machine and results here")
    parser.add_argument("--only", nargs="*", help="workloads whose name starts so")
    args = parser.parse_args()
    chosen = [w for w in workloads(args.quick) if not args.only or any(w.name.startswith(o) for o in args.only)]
    results = [run(w) for w in chosen]
    print(f"{'workload':30s} {'kernel class':44s} {'blocks':>7s} {'threads':>9s} {'steps':>7s} "
          f"{'emulated s':>10s} {'steps/s':>8s} {'numpy ms':>9s} {'vs numpy':>9s}  ok")
    for r in results:
        print(f"{r.name:30s} {r.kind:44s} {r.blocks:7d} {r.threads:9d} {r.steps:7d} {r.emulated_s:10.3f} "
              f"{r.steps / r.emulated_s:8.0f} {r.numpy_ms:9.2f} {r.emulated_s * 1e3 / max(r.numpy_ms, 1e-3):8.0f}x  "
              f"{'yes' if r.ok else 'NO (error %.2e)' % r.max_error}")
    goal = next((r for r in results if r.name == "gemm f16 256^3"), None)
    if goal is not None:
        print(f"goal: gemm f16 256^3 emulated in <= {GOAL_SECONDS} s: {goal.emulated_s:.2f} s, "
              f"{'met' if goal.emulated_s <= GOAL_SECONDS else 'missed'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": _machine(), "results": [asdict(r) for r in results]},
                                              indent=1) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
