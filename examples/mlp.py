"""Compiles a 3-layer MLP written in the graph dialect for the CPU, checks it
against numpy, and prints the compile time of each stage and the run time.

    python examples/mlp.py [--batch 64] [--width 256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tessel


def mlp_source(batch: int, width: int, layers: int) -> str:
    """graph-dialect text of relu(x @ W_i + b_i) repeated, with the last layer linear."""
    act = f"tensor<{batch}x{width}xf32>"
    weight = f"tensor<{width}x{width}xf32>"
    bias = f"tensor<{width}xf32>"
    params = ", ".join(f"%w{i}: {weight}, %b{i}: {bias}" for i in range(layers))
    body, x = [], "%x"
    for i in range(layers):
        body.append(f"  %mm{i} = graph.matmul {x}, %w{i} : ({act}, {weight}) -> {act}")
        body.append(f"  %add{i} = graph.add %mm{i}, %b{i} : ({act}, {bias}) -> {act}")
        x = f"%add{i}"
        if i < layers - 1:
            body.append(f"  %relu{i} = graph.relu {x} : {act}")
            x = f"%relu{i}"
    lines = [f"func.func @mlp(%x: {act}, {params}) -> {act} {{", *body, f"  return {x} : {act}", "}"]
    return "\n".join(lines)


def reference(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i < len(params) - 2:
            x = np.maximum(x, 0)
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    module = tessel.parse(mlp_source(args.batch, args.width, args.layers), source_name="mlp.mlir")
    parse_s = time.perf_counter() - start
    exe = tessel.compile(module, target="cpu")

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, args.width)).astype(np.float32)
    params = []
    for _ in range(args.layers):
        params.append((rng.standard_normal((args.width, args.width)) / np.sqrt(args.width)).astype(np.float32))
        params.append(rng.standard_normal(args.width).astype(np.float32))

    out = exe(x, *params)
    expected = reference(x, params)
    err = float(np.abs(out - expected).max() / np.abs(expected).max())
    runs = 5
    start = time.perf_counter()
    for _ in range(runs):
        exe(x, *params)
    run_ms = (time.perf_counter() - start) / runs * 1e3

    print(f"MLP {args.layers} layers, batch {args.batch}, width {args.width}, f32, target cpu")
    print(f"  {'parse':<16}{parse_s * 1e3:9.2f} ms")
    for stage, seconds in exe.stage_seconds.items():
        print(f"  {stage:<16}{seconds * 1e3:9.2f} ms")
    print(f"  {'run (mean of 5)':<16}{run_ms:9.2f} ms")
    print(f"  max relative error vs numpy: {err:.2e}")
    if err > 1e-4:
        raise SystemExit("FAILED: result differs from numpy")
    print("OK: matches numpy")


if __name__ == "__main__":
    main()
