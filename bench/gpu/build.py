"""Compiles the GPU check's workloads to CUDA artifacts (runs anywhere tessel is installed).

    python bench/gpu/build.py [--small] [--target sm_90a] [--out bench/gpu/artifacts]

Writes one artifact directory per workload (see tessel.CudaArtifact.save)
and ``index.json`` (workload names, target, tessel commit, compile times,
ptxas figures). Inputs are not stored: run.py makes them from the same seed
and checks tessel's results against torch there. Copy the output folder,
bench/gpu/{run,workloads}.py and python/tessel (only tessel.runtime is used)
to the GPU machine.

What is known without a GPU is printed per kernel after the workloads (and
recorded in index.json): threads, registers, shared memory, the blocks an
SM holds by those and the target description's limits, and for
tensor-core kernels their main loop's instructions per K step (read from
the PTX: tensor-core instructions, copies, waits, everything).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tessel  # noqa: E402
from tessel import targets  # noqa: E402
from workloads import workloads  # noqa: E402


THREADS_PER_SM, BLOCKS_PER_SM = 2048, 32  # sm_80 and sm_90: 64 warps, 32 blocks
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256 (8 per thread)


def _occupancy(kernel, target) -> dict:
    """Blocks of ``kernel`` one SM of ``target`` holds, and what limits them."""
    threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
    warps = -(-threads // 32)
    registers = (kernel.ptxas or {}).get("registers", 0)
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    shared = kernel.dynamic_shared_bytes + (kernel.ptxas or {}).get("shared_bytes", 0)
    limits = {"blocks": BLOCKS_PER_SM, "threads": THREADS_PER_SM // threads,
              "registers": target.registers_per_multiprocessor // (per_warp * warps) if per_warp else BLOCKS_PER_SM,
              "shared memory": target.shared_per_multiprocessor // shared if shared else BLOCKS_PER_SM}
    blocks = min(limits.values())
    return {"threads": threads, "registers": registers, "shared_bytes": shared, "blocks_per_sm": blocks,
            "limited_by": min(limits, key=limits.get)}


_MAIN_LOOP_MARKERS = ("wgmma.mma_async", "mma.sync")
_KINDS = {"tensor core": ("wgmma.mma_async", "mma.sync"), "copies": ("cp.async", "ldmatrix", "ld.", "st."),
          "synchronization": ("mbarrier", "bar.sync", "wgmma.fence", "wgmma.commit", "wgmma.wait", "fence.")}


def _main_loop(ptx: str) -> dict | None:
    """Instructions in the body of the smallest loop (LLVM's $L__BB labels)
    holding tensor-core instructions, by kind: one K step, unless LLVM
    unrolled several into it (its tensor-core count then says so)."""
    lines = [line.strip() for line in ptx.splitlines()]
    best = None
    for start, line in enumerate(lines):
        if not (line.startswith("$L__BB") and line.endswith(":")):
            continue
        label = line[:-1]
        for end in range(start + 1, len(lines)):
            if re.search(rf"bra(\.uni)?\s+{re.escape(label)};$", lines[end]):
                body = [x for x in lines[start + 1:end + 1]
                        if x and not x.startswith(("//", "$", "{", "}", ".reg")) and not x.endswith(":")]
                if any(m in x for x in body for m in _MAIN_LOOP_MARKERS) and (best is None or len(body) < len(best)):
                    best = body
                break
    if best is None:
        return None
    counts = {kind: sum(any(x.startswith(p) or x.startswith("@") and p in x for p in prefixes) for x in best)
              for kind, prefixes in _KINDS.items()}
    counts["all"] = len(best)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small shapes (CI and dry runs)")
    parser.add_argument("--target", default="sm_90a",
                        help="CUDA chip (default sm_90a: the H100/H200's wgmma; sm_90 for portable sm_90 code)")
    parser.add_argument("--out", type=Path, default=HERE / "artifacts", help="output folder")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip() or "unknown"
    index = {"target": args.target, "small": args.small, "tessel_commit": commit, "workloads": {}}
    target = targets.get(args.target)
    for workload in workloads(args.small):
        start = time.perf_counter()
        specs = [tessel.TensorSpec(shape, dtype) for shape, dtype in workload.inputs]
        module = tessel.trace(workload.tessel_fn, *specs, name=workload.name)
        artifact = tessel.compile(module, target=f"cuda:{args.target}")
        artifact.save(args.out / workload.name)
        seconds = time.perf_counter() - start
        index["workloads"][workload.name] = {
            "compile_seconds": round(seconds, 3),
            "kernels": [{"name": k.name, **(k.ptxas or {})} for k in artifact.kernels],
        }
        for kernel, record in zip(artifact.kernels, index["workloads"][workload.name]["kernels"]):
            record.update(_occupancy(kernel, target))
            loop = _main_loop(kernel.ptx)
            if loop:
                record["main_loop"] = loop
        spills = sum((k.ptxas or {}).get("spill_stores", 0) for k in artifact.kernels)
        print(f"{workload.name:<44} {len(artifact.kernels):3d} kernels  {seconds:6.2f} s"
              f"{'  SPILLS ' + str(spills) + ' bytes' if spills else ''}")
    (args.out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"wrote {len(index['workloads'])} artifacts to {args.out}")
    print(f"\nknown without a GPU ({target.name}: {target.multiprocessors} SMs, "
          f"{target.registers_per_multiprocessor} registers and {target.shared_per_multiprocessor // 1024} KiB "
          "shared memory per SM); main loop: the innermost loop with tensor-core instructions, by kind")
    print(f"{'workload':<44} {'kernel':<28} {'threads':>7} {'regs':>5} {'smem KiB':>8} {'blocks/SM':>9} "
          f"{'limit':<14} {'loop: mma':>9} {'copies':>6} {'sync':>5} {'all':>5}")
    for name, data in index["workloads"].items():
        for k in data["kernels"]:
            loop = k.get("main_loop") or {}
            print(f"{name:<44} {k['name'][-28:]:<28} {k['threads']:>7} {k['registers']:>5} "
                  f"{k['shared_bytes'] / 1024:>8.1f} {k['blocks_per_sm']:>9} {k['limited_by']:<14} "
                  f"{loop.get('tensor core', ''):>9} {loop.get('copies', ''):>6} {loop.get('synchronization', ''):>5} "
                  f"{loop.get('all', ''):>5}")


if __name__ == "__main__":
    main()
