"""CPU benchmark: tessel against numpy (and torch eager when installed), in the same run.

    python bench/cpu.py [--quick] [--torch-compile] [--json PATH] [--only NAME ...]

Each workload is built with ``tessel.trace`` and ``tessel.ops``, compiled with
``tessel.compile(module, target="cpu")`` and checked against numpy before
anything is timed. Every implementation is then timed the same way: warm-up
calls, then the median of N calls, N chosen so that the timed calls take
about ``--budget`` seconds, the implementations taking turns in rounds (see
``time_interleaved``). Ratios are peer time / tessel
time, so > 1 means tessel is faster. ``--torch-compile`` adds torch.compile
(Inductor, CPU) as a peer, compiled before it is timed (its compile takes
seconds per workload). Exits 1 only when a result is wrong; missed goals are
reported, not failed. The goals are issue 32's, against torch eager (oneDNN)
in the same run: matmul >= 0.95x, conv2d (ResNet-50's shapes) >= 0.9x, the
attention, the MLP and the example transformer block end to end >= 1x,
memory-bound kernels >= 1.5x, a tiny kernel's call no slower.

Dynamic shapes (issue 30, docs/dynamic-shapes.md): matmul, softmax,
layer_norm and the MLP also have a dynamic variant, their function traced
with the leading dim of the first input a size symbol over a range that
covers the static sizes, compiled once per family and timed in the same
turns as the static compile at each row's size (goal: at least 0.9x as
fast). Each of these families also has rows at small sizes (1 and a prime),
where the same dynamic compile is measured against a static compile at that
size, for the record.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime
import functools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

import tessel
from tessel import ops
from tessel.testing.fuzz import conv2d_reference

try:
    import torch
except ImportError:
    torch = None

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))
import transformer_block  # noqa: E402  (examples/transformer_block.py: the block and its numpy reference)

EPS = 1e-5


@dataclass(frozen=True)
class Goal:
    """tessel should be at least ``ratio`` times as fast as ``peer``."""

    peer: str
    ratio: float

    def __str__(self) -> str:
        return f">= {self.ratio:g}x {self.peer}"


# The dynamic variant should be at least this times as fast as the static compile at the static sizes.
DYNAMIC_GOAL = 0.9


@dataclass
class Symbolic:
    """The dynamic variant of a workload family: its function traced with the
    leading dim of the first input a size symbol ``symbol`` in [1, ``max``],
    compiled once (cold) for every row of the family, each run at its own size."""

    symbol: str
    max: int
    compiled: Optional[tuple[Any, float]] = field(default=None, repr=False)  # (executable, trace seconds)

    def __str__(self) -> str:
        return f"{self.symbol} in [1, {self.max}]"

    def executable(self, workload: Workload) -> tuple[Any, float]:
        """The compiled variant of ``workload``'s function and its trace time in seconds; compiled at the first call."""
        if self.compiled is None:
            first, *rest = workload.inputs
            spec = tessel.TensorSpec((self.symbol, *first.shape[1:]), first.dtype)
            module, trace_s = timed(lambda: tessel.trace(workload.traced, spec, *rest,
                                                         dims={self.symbol: (1, self.max)}))
            self.compiled = (tessel.compile(module, target="cpu", cache=False), trace_s)
        return self.compiled


@dataclass(frozen=True)
class Workload:
    """One computation written three times: traced for tessel, in numpy and in torch."""

    name: str
    inputs: tuple[np.ndarray, ...]
    traced: Callable[..., tessel.Tensor]
    numpy: Callable[..., np.ndarray]
    torch: Callable[..., Any]
    goal: Optional[Goal]  # None: measured for the record, no goal set
    rtol: float
    dynamic: Optional[Symbolic] = None  # the family's dynamic variant, also timed at this row's size
    dynamic_goal: Optional[float] = None  # dynamic at least this times as fast as static; None: recorded


@dataclass
class Timing:
    """Times of one implementation, in milliseconds."""

    first_ms: float
    median_ms: float
    runs: int


@dataclass
class DynamicResult:
    """The dynamic variant's measurements at one row's size; times in milliseconds."""

    symbols: str
    goal: str
    timing: Timing
    ratio: float  # static time / dynamic time: above 1, the dynamic compile runs faster
    goal_met: Optional[bool]
    trace_ms: float  # its one compile, shared by the family's rows
    stage_ms: dict[str, float]


@dataclass
class Result:
    """Everything measured for one workload; times in milliseconds."""

    name: str
    goal: str
    max_error: float
    trace_ms: float
    stage_ms: dict[str, float]
    tessel: Optional[Timing] = None
    numpy: Optional[Timing] = None
    torch: Optional[Timing] = None
    torch_compile: Optional[Timing] = None
    torch_compile_s: Optional[float] = None  # its compile: the first call
    error: Optional[str] = None
    ratios: dict[str, float] = field(default_factory=dict)
    goal_met: Optional[bool] = None
    dynamic: Optional[DynamicResult] = None


def _mlp_numpy(x: np.ndarray, *params: np.ndarray) -> np.ndarray:
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i < len(params) - 2:
            x = np.maximum(x, 0)
    return x


def _mlp_traced(x: tessel.Tensor, *params: tessel.Tensor) -> tessel.Tensor:
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i < len(params) - 2:
            x = ops.relu(x)
    return x


def _mlp_torch(x: Any, *params: Any) -> Any:
    for i in range(0, len(params), 2):
        x = torch.addmm(params[i + 1], x, params[i])  # what nn.Linear runs
        if i < len(params) - 2:
            x = torch.relu(x)
    return x


def _layer_norm_numpy(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def _softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _causal_attention_traced(q: tessel.Tensor, k: tessel.Tensor, v: tessel.Tensor) -> tessel.Tensor:
    tokens, dim = q.shape[-2:]
    scores = (q @ k.transpose(0, 2, 1)) * (1 / dim**0.5)
    causal = ops.iota((tokens, 1), 0) >= ops.iota((1, tokens), 1)
    return ops.softmax(ops.where(causal, scores, float("-inf")), axis=-1) @ v


def _causal_attention_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    tokens, dim = q.shape[-2:]
    scores = q @ k.transpose(0, 2, 1) / np.float32(dim**0.5)
    scores = np.where(np.tril(np.ones((tokens, tokens), dtype=bool)), scores, -np.inf)
    return _softmax_numpy(scores) @ v


def _transformer_block_torch(x: Any, p: dict[str, Any], heads: int) -> Any:
    """examples/transformer_block.py's block in torch eager: what nn.MultiheadAttention and nn.Linear run."""
    batch, seq, d_model = x.shape
    norm = torch.nn.functional.layer_norm
    a = norm(x, (d_model,), p["ln1_w"], p["ln1_b"])
    q, k, v = (torch.addmm(p[f"b_{n}"], a.reshape(-1, d_model), p[f"w_{n}"])
               .reshape(batch, seq, heads, -1).transpose(1, 2) for n in "qkv")
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    h = x + torch.addmm(p["b_o"], attn.transpose(1, 2).reshape(-1, d_model), p["w_o"]).reshape(x.shape)
    m = norm(h, (d_model,), p["ln2_w"], p["ln2_b"]).reshape(-1, d_model)
    up = torch.nn.functional.gelu(torch.addmm(p["b_up"], m, p["w_up"]))
    return h + torch.addmm(p["b_down"], up, p["w_down"]).reshape(x.shape)


def with_dynamic(make: Callable[[int, bool], Workload], size: int, dynamic: Symbolic,
                 small: Sequence[int] = ()) -> list[Workload]:
    """The row ``make(size, True)`` (with its goal) and its dynamic variant
    beside it, with DYNAMIC_GOAL; then the rows ``make(n, False)`` at the
    ``small`` sizes of the symbol, the same dynamic compile beside each, for
    the record. ``make(n, goal)`` is the static workload with the symbol's
    dim at ``n``."""
    rows = [replace(make(size, True), dynamic=dynamic, dynamic_goal=DYNAMIC_GOAL)]
    return rows + [replace(make(n, False), dynamic=dynamic) for n in small]


def workloads(quick: bool) -> list[Workload]:
    """The issue's workloads (matmuls, row kernels, an elementwise chain,
    ResNet-50's convolutions, causal attention, the MLP and the example
    transformer block), plus a matmul that no register block divides, a sum
    to a single value and a batched matmul (attention scores); ``quick``
    shrinks every shape for a smoke run. Matmul,
    softmax, layer_norm and the MLP have dynamic variants (:func:`with_dynamic`)."""
    rng = np.random.default_rng(0)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    scale, shift = 0.5, 0.25  # constants of the elementwise chain
    chain_n = 1 << (16 if quick else 24)
    rows, cols = (512, 256) if quick else (4096, 4096)
    ln_rows, ln_cols = (512, 256) if quick else (8192, 1024)
    batch, width, layers = (32, 128, 3) if quick else (256, 1024, 3)
    heads, tokens, head_dim = (4, 37, 16) if quick else (12, 197, 64)  # ViT-B/16 attention
    images, channels, side = (1, 16, 14) if quick else (8, 64, 56)  # a ResNet-50 stage-1 3x3 conv
    mlp_params = []
    for _ in range(layers):
        mlp_params += [normal(width, width, scale=width**-0.5), normal(width)]
    # Rows of the dynamic families at small sizes: a single row (batch * seq = 1) and a prime.
    small = (1, 7) if quick else (1, 61)

    def matmul(n: int) -> Callable[[int, bool], Workload]:
        """The matmuls of an n x n weight, by their rows M."""
        a, b = normal(n, n), normal(n, n)

        def make(m: int, goal: bool) -> Workload:
            return Workload(
                f"matmul {m}x{n}x{n}", (a[:m], b),
                traced=lambda x, y: x @ y, numpy=lambda x, y: x @ y, torch=lambda x, y: x @ y,
                goal=Goal("torch", 0.95) if goal else None, rtol=1e-4,
            )

        return make

    # 1000 is divided by no register block: the tiles are padded. Each
    # dynamic variant takes M over a range that covers all three sizes;
    # the middle one gets the small rows.
    matmul_sizes = (128, 200, 256) if quick else (1000, 1024, 2048)
    result = [row for i, n in enumerate(matmul_sizes)
              for row in with_dynamic(matmul(n), n, Symbolic("m", max(matmul_sizes)), small if i == 1 else ())]
    softmax_x = normal(rows, cols)

    def softmax(n: int, goal: bool) -> Workload:
        return Workload(
            f"softmax {n}x{cols}", (softmax_x[:n],),
            traced=lambda x: ops.softmax(x, -1), numpy=_softmax_numpy,
            torch=lambda x: torch.softmax(x, -1), goal=Goal("torch", 1.5) if goal else None, rtol=1e-4,
        )

    result += with_dynamic(softmax, rows, Symbolic("rows", rows), small)
    ln_inputs = (normal(ln_rows, ln_cols), normal(ln_cols), normal(ln_cols))

    def layer_norm(n: int, goal: bool) -> Workload:
        return Workload(
            f"layer_norm {n}x{ln_cols}", (ln_inputs[0][:n], *ln_inputs[1:]),
            traced=lambda x, w, b: ops.layer_norm(x, w, b, eps=EPS), numpy=_layer_norm_numpy,
            torch=lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS),
            goal=Goal("torch", 1.5) if goal else None, rtol=1e-4,
        )

    result += with_dynamic(layer_norm, ln_rows, Symbolic("rows", ln_rows), small)
    # A reduction to a single value, in parts on all cores (loop.grid_reduce):
    # memory-bound, but not a fused kernel, so no goal.
    result.append(
        Workload(
            f"sum {rows}x{cols}", (normal(rows, cols),),
            traced=lambda x: ops.sum(x), numpy=lambda x: x.sum(), torch=lambda x: x.sum(), goal=None, rtol=1e-4,
        )
    )
    # The small chain measures what a call costs beyond its kernel (argument
    # checks, result buffers, task dispatch): no goal.
    result += [
        Workload(
            f"elementwise 2^{n.bit_length() - 1} relu(tanh(x*a+b))*x", (normal(n),),
            traced=lambda x: ops.relu(ops.tanh(x * scale + shift)) * x,
            numpy=lambda x: np.maximum(np.tanh(x * scale + shift), 0) * x,
            torch=lambda x: torch.relu(torch.tanh(x * scale + shift)) * x,
            goal=Goal("torch", 1.5) if n == chain_n else None, rtol=1e-5,
        )
        for n in (1 << 10, chain_n)
    ]
    # A kernel that does next to nothing: the call is all (issue 32's goal: no
    # more than torch's).
    result.append(
        Workload(
            "call overhead x+1 on 16", (normal(16),), traced=lambda x: x + np.float32(1),
            numpy=lambda x: x + np.float32(1), torch=lambda x: x + 1, goal=Goal("torch", 1.0), rtol=0,
        )
    )
    result += [
        Workload(
            f"attention scores {heads}x{tokens}x{head_dim}",
            (normal(heads, tokens, head_dim), normal(heads, head_dim, tokens)),
            traced=lambda q, k: q @ k, numpy=lambda q, k: q @ k, torch=lambda q, k: q @ k,
            goal=Goal("torch", 1.0), rtol=1e-4,
        ),
    ]

    def conv2d(images: int, channels: int, side: int, filters: int, kernel: int) -> Workload:
        """A convolution that keeps the image's size (stride 1, zero padding), as ResNet-50's stages have."""
        pad = kernel // 2
        return Workload(
            f"conv2d {images}x{channels}x{side}x{side} {kernel}x{kernel}",
            (normal(images, channels, side, side), normal(filters, channels, kernel, kernel,
                                                          scale=(kernel * kernel * channels) ** -0.5)),
            traced=lambda x, w: ops.conv2d(x, w, padding=pad),
            numpy=lambda x, w: conv2d_reference(x, w, stride=1, padding=pad, dilation=1, groups=1, layout="NCHW"),
            torch=lambda x, w: torch.nn.functional.conv2d(x, w, padding=pad), goal=Goal("torch", 0.9), rtol=1e-4,
        )

    # ResNet-50's: a stage-1 3x3 at batch 8 and 1, a stage-3 3x3, a stage-2 1x1 at batch 8.
    convs = ([(1, 16, 14, 16, 3), (1, 32, 7, 32, 3), (2, 32, 14, 32, 1)] if quick else
             [(8, 64, 56, 64, 3), (1, 64, 56, 64, 3), (1, 256, 14, 256, 3), (8, 128, 28, 128, 1)])
    result += [conv2d(*shape) for shape in convs]
    # A causal attention block of 8 heads, against torch's fused scaled_dot_product_attention.
    att_heads, att_tokens, att_dim = (2, 16, 16) if quick else (8, 128, 64)
    result.append(
        Workload(
            f"causal attention {att_heads}x{att_tokens}x{att_dim}",
            tuple(normal(att_heads, att_tokens, att_dim) for _ in range(3)),
            traced=_causal_attention_traced, numpy=_causal_attention_numpy,
            torch=lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
            goal=Goal("torch", 1.0), rtol=1e-4,
        )
    )
    # The example transformer block (examples/transformer_block.py) end to end, its weights constants.
    block_batch, block_seq, block_model, block_heads, block_ff = (2, 8, 32, 2, 64) if quick else (4, 64, 256, 4, 1024)
    block_params = transformer_block.init_params(block_model, block_ff, np.random.default_rng(1))
    torch_params = {name: torch.from_numpy(value) for name, value in block_params.items()} if torch else {}
    result.append(
        Workload(
            f"transformer block {block_batch}x{block_seq}x{block_model}", (normal(block_batch, block_seq, block_model),),
            traced=lambda x: transformer_block.block(x, block_params, block_heads),
            numpy=lambda x: transformer_block.reference(x, block_params, block_heads).astype(np.float32),
            torch=lambda x: _transformer_block_torch(x, torch_params, block_heads),
            goal=Goal("torch", 1.0), rtol=2e-4,
        )
    )
    mlp_x = normal(batch, width)

    def mlp(n: int, goal: bool) -> Workload:
        return Workload(
            f"mlp {layers}x{width} batch {n}", (mlp_x[:n], *mlp_params),
            traced=_mlp_traced, numpy=_mlp_numpy, torch=_mlp_torch, goal=Goal("torch", 1.0) if goal else None,
            rtol=1e-4,
        )

    return result + with_dynamic(mlp, batch, Symbolic("batch", batch), small)


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """The result of ``call()`` and its wall time in seconds."""
    start = time.perf_counter()
    value = call()
    return value, time.perf_counter() - start


# Seconds of untimed calls that begin each turn of time_interleaved (at most the budget).
SETTLE_S = 0.2
# Seconds of timed calls a turn of time_interleaved aims at, and its most rounds.
TURN_S = 0.15
MAX_ROUNDS = 20


def time_interleaved(calls: dict[str, tuple[Callable[[], Any], float]], budget_s: float,
                     max_runs: int) -> dict[str, Timing]:
    """Median time of each of ``calls`` (name: the call and the seconds its
    first call took) after warm-up.

    The first calls pay one-time costs (lazy JIT, thread pools, page faults),
    so at least two more warm up, then more until a quarter of the budget is
    spent; a call longer than the budget and 1 s ends the warm-up. The timed
    calls then take turns in rounds, each running every implementation for
    at most about ``TURN_S`` (at least five rounds, at most ``MAX_ROUNDS``),
    so that a slow spell of a shared machine falls on all of them alike
    rather than on the one timed during it: on the 2-core VM such spells
    last a second or more (ResNet-18 at batch 1 at 20 ms, then 25-27 ms for
    40 calls, then 20 again), longer than the turns of five rounds. Each
    turn begins with untimed calls for at least ``SETTLE_S``: the previous
    implementation's thread pool (OpenMP, OpenBLAS) keeps spinning for a
    while after its last call and would slow the first calls of the next;
    never for longer than the budget, so that a smoke run (``--budget
    0.02``) does not spend most of its time settling.
    """
    settle_s = min(SETTLE_S, budget_s)
    runs: dict[str, int] = {}
    warm_s: dict[str, float] = {}
    for name, (call, first_s) in calls.items():
        warm = [first_s]
        long_s = max(budget_s, 1.0)
        while warm[-1] < long_s and len(warm) < max_runs and (len(warm) < 3 or sum(warm[1:]) < budget_s / 4):
            warm.append(timed(call)[1])
        runs[name] = max(1, min(max_runs, int(budget_s / warm[-1])))
        warm_s[name] = warm[-1]
    rounds = min(MAX_ROUNDS, max(5, math.ceil(max(runs[name] * warm_s[name] for name in calls) / TURN_S)))
    times: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds):
        for name, (call, _) in calls.items():
            share = runs[name] * (r + 1) // rounds - runs[name] * r // rounds
            if not share:
                continue
            settled = 0.0
            while settled < settle_s:
                settled += timed(call)[1]
            times[name] += [timed(call)[1] for _ in range(share)]
    return {name: Timing(first_s * 1e3, statistics.median(times[name]) * 1e3, runs[name])
            for name, (_, first_s) in calls.items()}


def max_error(out: np.ndarray, expected: np.ndarray) -> float:
    """Largest absolute difference, relative to the largest magnitude of ``expected``."""
    return float(np.abs(out - expected).max() / max(np.abs(expected).max(), np.finfo(np.float32).tiny))


def check(what: str, out: np.ndarray, expected: np.ndarray, rtol: float) -> None:
    """assert_allclose with an absolute tolerance scaled to the result's magnitude."""
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol * float(np.abs(expected).max()),
                               err_msg=what)


PEERS = ("numpy", "torch", "torch.compile")


def run(workload: Workload, budget_s: float, max_runs: int, torch_compile: bool = False) -> Result:
    """Compiles, checks and times one workload."""
    module, trace_s = timed(lambda: tessel.trace(workload.traced, *workload.inputs))
    # Cold: the stage times are the compile's cost (bench/compile_time.py measures the cache).
    exe = tessel.compile(module, target="cpu", cache=False)
    out, tessel_first = timed(lambda: exe(*workload.inputs))
    expected, numpy_first = timed(lambda: workload.numpy(*workload.inputs))
    result = Result(workload.name, str(workload.goal or "none"), max_error(out, expected), trace_s * 1e3,
                    {stage: s * 1e3 for stage, s in exe.stage_seconds.items()})
    try:
        check(f"tessel vs numpy: {workload.name}", out, expected, workload.rtol)
    except AssertionError as e:
        result.error = str(e)
        return result
    calls = {"tessel": (lambda: exe(*workload.inputs), tessel_first)}
    if workload.dynamic:
        # Right after the static compile, so that the two take adjacent turns.
        dynamic, dynamic_trace_s = workload.dynamic.executable(workload)
        out, dynamic_first = timed(lambda: dynamic(*workload.inputs))
        try:
            check(f"tessel dynamic ({workload.dynamic}) vs numpy: {workload.name}", out, expected, workload.rtol)
        except AssertionError as e:
            result.error = str(e)
            return result
        calls["tessel dynamic"] = (lambda: dynamic(*workload.inputs), dynamic_first)
    calls["numpy"] = (lambda: workload.numpy(*workload.inputs), numpy_first)
    # inference_mode only changes what torch records; numpy and tessel calls run alike inside it.
    with torch.inference_mode() if torch is not None else contextlib.nullcontext():
        if torch is not None:
            args = [torch.from_numpy(x) for x in workload.inputs]
            out, torch_first = timed(lambda: workload.torch(*args))
            check(f"torch vs numpy: {workload.name}", out.numpy(), expected, workload.rtol)
            calls["torch"] = (lambda: workload.torch(*args), torch_first)
            if torch_compile:
                compiled = torch.compile(workload.torch)
                out, result.torch_compile_s = timed(lambda: compiled(*args))
                check(f"torch.compile vs numpy: {workload.name}", out.numpy(), expected, workload.rtol)
                calls["torch.compile"] = (lambda: compiled(*args), timed(lambda: compiled(*args))[1])
        timings = time_interleaved(calls, budget_s, max_runs)
    result.tessel, result.numpy, result.torch = timings["tessel"], timings["numpy"], timings.get("torch")
    result.torch_compile = timings.get("torch.compile")
    for peer in PEERS:
        if peer in timings:
            result.ratios[peer] = timings[peer].median_ms / result.tessel.median_ms
    if workload.goal and workload.goal.peer in result.ratios:
        result.goal_met = result.ratios[workload.goal.peer] >= workload.goal.ratio
    if workload.dynamic:
        timing, goal = timings["tessel dynamic"], workload.dynamic_goal
        ratio = result.tessel.median_ms / timing.median_ms
        result.dynamic = DynamicResult(
            str(workload.dynamic), str(Goal("static", goal)) if goal else "none", timing, ratio,
            None if goal is None else ratio >= goal, dynamic_trace_s * 1e3,
            {stage: s * 1e3 for stage, s in dynamic.stage_seconds.items()})
    return result


# Two threads pinned to two CPUs pass a counter back and forth through one
# cache line; prints the mean round trip in ns.
_CORE_TO_CORE_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Atomic long flag;
static const long rounds = 200000;
static void pin(int cpu) {
  cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
static void *answer(void *cpu) {
  pin((int)(long)cpu);
  for (long i = 0; i < rounds; ++i) {
    while (atomic_load(&flag) != 2 * i + 1) {}
    atomic_store(&flag, 2 * i + 2);
  }
  return 0;
}
int main(int argc, char **argv) {
  pthread_t other; struct timespec start, end;
  pin(atoi(argv[1]));
  pthread_create(&other, 0, answer, (void *)atol(argv[2]));
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < rounds; ++i) {
    atomic_store(&flag, 2 * i + 1);
    while (atomic_load(&flag) != 2 * i + 2) {}
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  pthread_join(other, 0);
  printf("%.0f\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / rounds);
}
"""


@functools.cache
def _core_to_core_probe() -> Optional[str]:
    """The probe built with the system's C compiler, or None without one."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or not hasattr(os, "sched_getaffinity"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="tessel-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "probe.c").write_text(_CORE_TO_CORE_C)
    built = subprocess.run([compiler, "-O2", "-pthread", "-o", str(folder / "probe"), str(folder / "probe.c")],
                           capture_output=True)
    return str(folder / "probe") if built.returncode == 0 else None


def core_to_core_ns() -> Optional[float]:
    """The round trip of a cache line between the first two CPUs this
    process may run on, in ns (None on one CPU or without a C compiler).

    On a VM it says where the host put the vCPUs, which moves while a
    benchmark runs: on the 2-core AMD EPYC VM, 95-140 ns (near) or 490-590
    ns (far) for a minute or more at a time. Two-thread kernels pass data
    and tasks between the cores in every kernel, and far apart they are
    slower:
    ResNet-18 at batch 1 in tessel 19-21 ms near, 22-25 ms far,
    onnxruntime 17-19 and 18-20 ms."""
    probe = _core_to_core_probe()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if probe is None or len(cpus) < 2:
        return None
    try:
        done = subprocess.run([probe, str(cpus[0]), str(cpus[1])], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:  # a CPU that never ran the other thread
        return None
    return float(done.stdout) if done.returncode == 0 else None


def machine() -> dict[str, Any]:
    """What the numbers depend on: CPU, load, library versions, tessel's commit."""
    cpuinfo = Path("/proc/cpuinfo")
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
              if line.startswith("model name")] if cpuinfo.exists() else []

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": models[0] if models else platform.processor(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "tessel_commit": commit + ("+dirty" if commit and git("status", "--porcelain") else ""),
        "numpy": np.__version__,
        "blas": f"{blas.get('name', '?')} {blas.get('version', '?')}",
        "torch": f"{torch.__version__} ({torch.get_num_threads()} threads)" if torch is not None else None,
        "core_to_core_ns": core_to_core_ns(),
    }


def _ns(ns: Optional[float]) -> str:
    """A core-to-core round trip, or n/a."""
    return "n/a" if ns is None else f"{ns:.0f} ns"


def _ms(timing: Optional[Timing]) -> str:
    """Milliseconds to 0.01 ms, or 3 significant digits below 1 ms."""
    if not timing:
        return "n/a"
    return f"{timing.median_ms:.2f}" if timing.median_ms >= 1 else f"{timing.median_ms:.3g}"


def _ratio(result: Result, peer: str) -> str:
    return f"{result.ratios[peer]:.3g}x" if peer in result.ratios else "n/a"


def report(results: list[Result]) -> None:
    """Prints the run-time table and the compile-time table."""
    name_w = max(len(r.name) for r in results) + 2
    compiled = any(r.torch_compile for r in results)
    peers = PEERS if compiled else PEERS[:2]
    print(f"{'workload':<{name_w}}{'tessel ms':>11}" + "".join(f"{p + ' ms':>17}{'vs ' + p:>17}" for p in peers)
          + f"{'runs':>6}  {'goal':<15}met")
    for r in results:
        met = "WRONG" if r.error else {None: "n/a", True: "yes", False: "no"}[r.goal_met]
        timings = {"numpy": r.numpy, "torch": r.torch, "torch.compile": r.torch_compile}
        print(f"{r.name:<{name_w}}{_ms(r.tessel):>11}"
              + "".join(f"{_ms(timings[p]):>17}{_ratio(r, p):>17}" for p in peers)
              + f"{r.tessel.runs if r.tessel else 0:>6}  {r.goal:<15}{met}")
    if compiled:
        print("torch.compile's compiles (its first calls, s): " + ", ".join(
            f"{r.name} {r.torch_compile_s:.1f}" for r in results if r.torch_compile_s is not None))
    dynamic = [r for r in results if r.dynamic]
    if dynamic:
        print("\ndynamic shapes: one compile per family over its symbol's range, timed in the same turns as the "
              "static compile at each row's size\n(dynamic/static above 1: the dynamic compile is faster; compile: "
              "trace and stages, ms, the dynamic one shared by its family's rows)")
        symbols_w = max(len(r.dynamic.symbols) for r in dynamic) + 2
        print(f"{'workload':<{name_w}}{'symbols':<{symbols_w}}{'static ms':>10}{'dynamic ms':>12}"
              f"{'dynamic/static':>16}  {'goal':<16}{'met':<5}{'compile static':>16}{'dynamic':>10}")
        for r in dynamic:
            d = r.dynamic
            met = {None: "n/a", True: "yes", False: "no"}[d.goal_met]
            print(f"{r.name:<{name_w}}{d.symbols:<{symbols_w}}{_ms(r.tessel):>10}{_ms(d.timing):>12}"
                  f"{d.ratio:>15.3g}x  {d.goal:<16}{met:<5}{r.trace_ms + sum(r.stage_ms.values()):>16.1f}"
                  f"{d.trace_ms + sum(d.stage_ms.values()):>10.1f}")
    stages = list(dict.fromkeys(s for r in results for s in r.stage_ms))
    columns = ["trace", *stages, "total", "1st call"]
    widths = [max(len(c), 8) + 2 for c in columns]
    print("\ncompile time (ms, without the compile cache); '1st call' is tessel's first run")
    print(f"{'workload':<{name_w}}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
    for r in results:
        stage_ms = [r.stage_ms.get(s, 0.0) for s in stages]
        values = [r.trace_ms, *stage_ms, r.trace_ms + sum(stage_ms)]
        first = f"{r.tessel.first_ms:.1f}" if r.tessel else "n/a"
        cells = "".join(f"{v:>{w}.1f}" for v, w in zip(values, widths)) + f"{first:>{widths[-1]}}"
        print(f"{r.name:<{name_w}}{cells}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, short timing: a smoke run")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write machine info and results here")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run the workloads whose name starts so")
    parser.add_argument("--torch-compile", action="store_true",
                        help="also time torch.compile (Inductor, CPU); compiling it takes seconds per workload")
    parser.add_argument("--budget", type=float, help="seconds of timed calls per implementation "
                        "(default 2, 0.25 with --quick); a call longer than this runs once after warm-up")
    args = parser.parse_args()
    budget_s = args.budget if args.budget is not None else 0.25 if args.quick else 2.0
    max_runs = 5 if args.quick else 100

    info = machine()
    print(f"tessel {info['tessel_commit'] or '?'} on {info['cpu']}, {info['cores']} cores, "
          f"load average {info['load_average'][0]:.2f}; numpy {info['numpy']} ({info['blas']}), "
          f"torch {info['torch'] or 'not installed'}; core-to-core round trip {_ns(info['core_to_core_ns'])}")
    selected = [w for w in workloads(args.quick)
                if not args.only or any(w.name.startswith(o) for o in args.only)]
    if not selected:
        parser.error(f"no workload name starts with any of {args.only}")
    results = []
    for workload in selected:
        print(f"  {workload.name} ...", file=sys.stderr, flush=True)
        results.append(run(workload, budget_s, max_runs, args.torch_compile and torch is not None))
    print()
    report(results)
    for r in results:
        if r.error:
            print(f"\nWRONG RESULT ({r.name}, max relative error {r.max_error:.2e}):\n{r.error}")
    info["load_average_end"] = os.getloadavg()
    info["core_to_core_ns_end"] = core_to_core_ns()
    print(f"core-to-core round trip at the end: {_ns(info['core_to_core_ns_end'])}")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "quick": args.quick, "budget_s": budget_s,
                                         "results": [asdict(r) for r in results]}, indent=2) + "\n")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
