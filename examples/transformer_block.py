"""Compiles a pre-LayerNorm transformer encoder block, traced from Python, for this
machine's GPU (or, without one, for an sm_90 GPU run on the PTX emulator, or for
the CPU), checks it against numpy, and prints the compile time of each stage and
the run time.

    python examples/transformer_block.py [--target auto] [--emulate] [--batch 4] [--seq 64]
                                         [--d-model 256] [--heads 4] [--d-ff 1024]

``--target auto`` (the default) uses the first CUDA GPU when there is a usable
one (through tessel.runtime: the artifact is saved, loaded and run by the CUDA
driver); without one it compiles for sm_90 and runs the saved artifact on the
PTX emulator (``tessel.load(..., emulate=True)``), and says which it used and
why. ``--target cuda:sm_80`` or ``cuda:sm_90`` with ``--emulate`` runs on the
emulator whatever the machine has; ``--target cpu`` compiles for the CPU.

The block is ``h = x + attention(layer_norm(x))``, ``y = h + mlp(layer_norm(h))``
with causal softmax attention and a GELU MLP; the weights are numpy arrays
that become constants of the traced module. A second run finds what the first
compiled in the compile cache (``tessel.cache``) and runs none of the stages.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

import tessel
from tessel import ops

Params = dict[str, np.ndarray]


def init_params(d_model: int, d_ff: int, rng: np.random.Generator) -> Params:
    """Random weights (``[in, out]``, scaled by 1/sqrt(in)), biases and LayerNorm parameters."""

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    shapes = {"q": (d_model, d_model), "k": (d_model, d_model), "v": (d_model, d_model),
              "o": (d_model, d_model), "up": (d_model, d_ff), "down": (d_ff, d_model)}
    params = {}
    for name, (n_in, n_out) in shapes.items():
        params[f"w_{name}"] = normal(n_in, n_out, scale=n_in**-0.5)
        params[f"b_{name}"] = normal(n_out, scale=0.1)
    for ln in ("ln1", "ln2"):
        params[f"{ln}_w"] = 1 + normal(d_model, scale=0.1)
        params[f"{ln}_b"] = normal(d_model, scale=0.1)
    return params


def block(x: tessel.Tensor, p: Params, heads: int) -> tessel.Tensor:
    """The encoder block on a traced ``[batch, seq, d_model]`` tensor; ``p`` become constants."""
    batch, seq, d_model = x.shape
    d_head = d_model // heads

    def split_heads(t: tessel.Tensor) -> tessel.Tensor:  # [b, s, d] -> [b, heads, s, d_head]
        return t.reshape(batch, seq, heads, d_head).transpose(0, 2, 1, 3)

    a = ops.layer_norm(x, p["ln1_w"], p["ln1_b"])
    q, k, v = (split_heads(a @ p[f"w_{n}"] + p[f"b_{n}"]) for n in "qkv")
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1 / math.sqrt(d_head))
    # Query i sees keys 0..i; seq may be a size symbol, so indices, not a constant.
    causal = ops.iota((seq, 1), 0) >= ops.iota((1, seq), 1)
    attn = ops.softmax(ops.where(causal, scores, float("-inf")), axis=-1) @ v
    h = x + attn.transpose(0, 2, 1, 3).reshape(batch, seq, d_model) @ p["w_o"] + p["b_o"]

    m = ops.layer_norm(h, p["ln2_w"], p["ln2_b"])
    return h + ops.gelu(m @ p["w_up"] + p["b_up"]) @ p["w_down"] + p["b_down"]


def reference(x: np.ndarray, p: Params, heads: int) -> np.ndarray:
    """The same block in numpy (float64, exact erf GELU)."""
    x = x.astype(np.float64)
    batch, seq, d_model = x.shape
    d_head = d_model // heads

    def layer_norm(t: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5) * w + b

    def split_heads(t: np.ndarray) -> np.ndarray:
        return t.reshape(batch, seq, heads, d_head).transpose(0, 2, 1, 3)

    a = layer_norm(x, p["ln1_w"], p["ln1_b"])
    q, k, v = (split_heads(a @ p[f"w_{n}"] + p[f"b_{n}"]) for n in "qkv")
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d_head)
    scores = np.where(np.tril(np.ones((seq, seq), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    attn = e / e.sum(-1, keepdims=True) @ v
    h = x + attn.transpose(0, 2, 1, 3).reshape(batch, seq, d_model) @ p["w_o"] + p["b_o"]

    u = layer_norm(h, p["ln2_w"], p["ln2_b"]) @ p["w_up"] + p["b_up"]
    gelu = 0.5 * u * (1 + np.vectorize(math.erf)(u / math.sqrt(2)))
    return h + gelu @ p["w_down"] + p["b_down"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="auto",
                        help="auto (a usable CUDA GPU, else sm_90 on the emulator), cpu, cuda:sm_80 or cuda:sm_90")
    parser.add_argument("--emulate", action="store_true",
                        help="run a cuda target's artifact on the PTX emulator (no GPU needed; slow, no timing)")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=1024)
    args = parser.parse_args()
    if args.d_model % args.heads:
        parser.error("--d-model must be a multiple of --heads")
    target, why, emulate = args.target, "", args.emulate
    if target == "cpu" and emulate:
        parser.error("--emulate runs GPU artifacts; give a cuda target")
    if target == "auto" and not emulate:
        try:
            target = tessel.runtime.cuda_target()
            why = " (the first CUDA GPU; --target cpu for the CPU)"
        except tessel.RuntimeError as e:
            target, emulate, why = "cuda:sm_90", True, f" on the PTX emulator (no GPU: {e})"
    elif target == "auto":
        target, why = "cuda:sm_90", " on the PTX emulator"
    elif target.startswith("cuda:") and not emulate:
        try:
            tessel.runtime.cuda_target()
        except tessel.RuntimeError as e:
            raise SystemExit(f"{target} needs a GPU to run on, and this machine has none ({e}); "
                             "--emulate runs the artifact on the PTX emulator instead, --target cpu on the CPU")
    elif emulate:
        why = " on the PTX emulator"

    rng = np.random.default_rng(0)
    params = init_params(args.d_model, args.d_ff, rng)
    x = rng.standard_normal((args.batch, args.seq, args.d_model)).astype(np.float32)

    start = time.perf_counter()
    module = tessel.trace(lambda t: block(t, params, args.heads), x, name="encoder_block")
    trace_s = time.perf_counter() - start
    compiled = tessel.compile(module, target=target)
    if target == "cpu":
        exe = compiled
    else:  # what a GPU machine without the compiler does: load the saved artifact
        with tempfile.TemporaryDirectory() as folder:
            exe = tessel.load(compiled.save(Path(folder) / "encoder_block"), emulate=emulate)

    start = time.perf_counter()
    out = exe(x)
    first_ms = (time.perf_counter() - start) * 1e3
    expected = reference(x, params, args.heads)
    err = float(np.abs(out - expected).max() / np.abs(expected).max())
    runs = 5
    if not emulate:  # an emulated run's time says nothing about a GPU's: it runs once
        start = time.perf_counter()
        for _ in range(runs):
            exe(x)
        run_ms = (time.perf_counter() - start) / runs * 1e3

    print(f"Transformer encoder block: batch {args.batch}, seq {args.seq}, d_model {args.d_model}, "
          f"{args.heads} heads, MLP {args.d_ff}, f32, target {target}{why}")
    print(f"  {'trace':<16}{trace_s * 1e3:9.2f} ms")
    cache_notes = {"hit": "  (hit: the code an earlier run made; `tessel cache clear` empties the cache)",
                   "miss": "  (miss: compiled by the stages below, then stored)"}
    for stage, seconds in compiled.stage_seconds.items():
        note = cache_notes.get(compiled.cache, "") if stage == "cache" else ""
        print(f"  {stage:<16}{seconds * 1e3:9.2f} ms{note}")
    if emulate:
        steps = exe.driver.device.steps
        print(f"  {'emulated run':<16}{first_ms:9.2f} ms  ({len(compiled.kernels)} kernels, {steps} instruction "
              f"steps; checked: bounds, races, cp.async waits, warp collectives)")
    else:
        print(f"  {f'run (mean of {runs})':<16}{run_ms:9.2f} ms")
    print(f"  max relative error vs numpy: {err:.2e}")
    if not err <= 1e-4:  # also fails on NaN
        raise SystemExit("FAILED: result differs from numpy")
    print("OK: matches numpy")


if __name__ == "__main__":
    main()
