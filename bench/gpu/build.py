"""Compiles the GPU check's workloads to CUDA artifacts (runs anywhere tessel is installed).

    python bench/gpu/build.py [--small] [--target sm_90] [--out bench/gpu/artifacts]

Writes one artifact directory per workload (see tessel.CudaArtifact.save)
and ``index.json`` (workload names, target, tessel commit, compile times,
ptxas figures). Inputs are not stored: run.py makes them from the same seed
and checks tessel's results against torch there. Copy the output folder,
bench/gpu/{run,workloads}.py and python/tessel (only tessel.runtime is used)
to the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tessel  # noqa: E402
from workloads import workloads  # noqa: E402


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
        spills = sum((k.ptxas or {}).get("spill_stores", 0) for k in artifact.kernels)
        print(f"{workload.name:<44} {len(artifact.kernels):3d} kernels  {seconds:6.2f} s"
              f"{'  SPILLS ' + str(spills) + ' bytes' if spills else ''}")
    (args.out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"wrote {len(index['workloads'])} artifacts to {args.out}")


if __name__ == "__main__":
    main()
