"""Checks and times tessel's CUDA artifacts against torch on a GPU machine.

    python3 run.py [--artifacts artifacts] [--budget 2] [--only NAME...] [--dry]

Needs python3 with numpy, torch (cuBLAS; torch.compile brings Triton) and
cuda-bindings, plus what build.py wrote, workloads.py, and the `tessel`
package (only tessel.runtime is imported: no MLIR). For every artifact:
inputs from the workload's seed, tessel's result checked against torch's in
float32, then CUDA-event timings (warm-up, then the median of at least 20
calls, fewer only for a call longer than budget/20) of tessel, torch eager
and torch.compile, and for plain GEMMs of a Triton matmul (autotuned over
three Hopper tile shapes). One failure does not stop the others. Prints a table of
ratios (peer time / tessel time: above 1, tessel is faster) and writes JSON
to $OUT/gpu.json when OUT is set (or --json). ``--dry`` runs everything but
the GPU: artifacts load and their launch sequences execute on the runtime's
dry driver (CI runs this).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The tessel package: beside this script on the GPU machine, python/ in the repository.
for candidate in (HERE, HERE.parents[1] / "python"):
    if (candidate / "tessel" / "runtime").is_dir():
        sys.path.insert(0, str(candidate))
        break


import tessel.runtime as runtime  # noqa: E402
from tessel.dtypes import BFLOAT16, words  # noqa: E402
from workloads import Workload, workloads  # noqa: E402


def _median_ms(torch, fn, budget: float) -> tuple[float, int]:
    """Median milliseconds of ``fn`` by CUDA events, and the number of calls timed."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once = time.perf_counter() - start
    reps = max(20, min(200, int(budget / max(once, 1e-6)))) if once * 20 <= budget else max(3, int(budget / once))
    times = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    return statistics.median(times), reps


def _triton_kernel():
    """A Triton matmul kernel, the tutorial's (on sm_90 tl.dot becomes wgmma
    fed by a multi-stage ring) with grouped tile order, autotuned over a
    few Hopper tile shapes: the peer a hand-written GPU kernel meets."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": 64, "GROUP": 8}, num_warps=warps, num_stages=stages)
               for bm, bn, warps, stages in ((128, 256, 8, 3), (128, 128, 4, 4), (64, 128, 4, 4))]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (GROUP * tiles_n)
        first = group * GROUP
        rows = min(tiles_m - first, GROUP)
        pm = first + (pid % (GROUP * tiles_n)) % rows
        pn = (pid % (GROUP * tiles_n)) // rows
        om = (pm * BM + tl.arange(0, BM)) % M
        on = (pn * BN + tl.arange(0, BN)) % N
        ok = tl.arange(0, BK)
        pa = a + om[:, None] * sam + ok[None, :] * sak
        pb = b + ok[:, None] * sbk + on[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(pa, mask=ok[None, :] < K - k * BK, other=0.0)
            y = tl.load(pb, mask=ok[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            pa += BK * sak
            pb += BK * sbk
        rm, rn = pm * BM + tl.arange(0, BM), pn * BN + tl.arange(0, BN)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    return matmul


def _triton_matmul(torch):
    """``a @ b`` of 2-D row-major tensors by :func:`_triton_kernel`, f16/bf16
    into the inputs' dtype (f32 accumulation)."""
    import triton

    matmul = _triton_kernel()

    def run(x, y):
        (m, k), (_, n) = x.shape, y.shape
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)  # noqa: E731
        matmul[grid](x, y, out, m, n, k, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                     out.stride(0), out.stride(1))
        return out

    return run


def _check_dry(workload: Workload, path: Path) -> dict:
    executable = runtime.load(path, dry=True)
    results = executable(*workload.arrays())
    results = results if isinstance(results, tuple) else (results,)
    expected = executable.artifact.outputs
    if [(r.shape, r.dtype) for r in results] != [(tuple(s), d) for s, d in expected]:
        raise AssertionError(f"results {[(r.shape, r.dtype) for r in results]} do not match {expected}")
    return {"kernels": len(executable.artifact.kernels), "launches": len(executable.driver.launches)}


def _check_and_time(torch, workload: Workload, path: Path, budget: float) -> dict:
    executable = runtime.load(path)
    # torch.from_numpy has no bfloat16: move the 16-bit words.
    inputs = [torch.from_numpy(words(a)).view(torch.bfloat16).cuda() if a.dtype == BFLOAT16
              else torch.from_numpy(a).cuda() for a in workload.arrays()]
    torch.cuda.synchronize()

    def tessel_call():
        return executable(*inputs, device_outputs=True)

    got = torch.from_dlpack(tessel_call()).float()
    reference = workload.torch_fn(torch, *[t.float() for t in inputs]).float()
    error = float((got - reference).abs().max() / reference.abs().max().clamp_min(1e-30))
    row = {"device": executable.driver.device_name, "error": error, "ok": error <= workload.tolerance,
           "kernels": len(executable.artifact.kernels)}
    peers = {"tessel": tessel_call, "torch eager": lambda: workload.torch_fn(torch, *inputs)}
    try:
        compiled = torch.compile(lambda *a: workload.torch_fn(torch, *a))
        compiled(*inputs)
        peers["torch.compile"] = lambda: compiled(*inputs)
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        row["torch.compile"] = f"failed: {type(e).__name__}: {e}"[:200]
    if workload.matmul:
        try:
            triton_matmul = _triton_matmul(torch)
            triton_matmul(*inputs)
            peers["triton"] = lambda: triton_matmul(*inputs)
        except Exception as e:  # noqa: BLE001 - as above
            row["triton"] = f"failed: {type(e).__name__}: {e}"[:200]
    for name, fn in peers.items():
        row[f"{name} ms"], row[f"{name} calls"] = _median_ms(torch, fn, budget)
    return row


def _table(rows: dict[str, dict]) -> str:
    lines = [f"{'workload':<40} {'ok':>4} {'tessel ms':>10} {'eager ms':>10} {'compile ms':>11} "
             f"{'eager/ts':>9} {'compile/ts':>10} {'triton/ts':>10} {'TFLOP/s':>8} {'GB/s':>7}"]
    for name, row in rows.items():
        if "failure" in row:
            lines.append(f"{name:<40} FAIL {row['failure'].splitlines()[-1][:90]}")
            continue
        t = row.get("tessel ms")
        if t is None:
            lines.append(f"{name:<40} {'dry':>4} {row['kernels']} kernels, {row['launches']} launches checked")
            continue
        eager, comp, tri = row.get("torch eager ms"), row.get("torch.compile ms"), row.get("triton ms")
        lines.append(
            f"{name:<40} {'yes' if row['ok'] else 'NO':>4} {t:10.3f} {eager:10.3f} "
            f"{comp if comp is not None else float('nan'):11.3f} {eager / t:9.2f} "
            f"{(comp / t) if comp else float('nan'):10.2f} {(tri / t) if tri else float('nan'):10.2f} "
            f"{row.get('flops', 0) / t / 1e9:8.1f} {row.get('bytes', 0) / t / 1e6:7.0f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timed calls per implementation")
    parser.add_argument("--only", nargs="*", default=None, help="workloads whose name starts so")
    parser.add_argument("--dry", action="store_true", help="no GPU: load and dry-run every artifact")
    parser.add_argument("--json", type=Path, default=None, help="write results here (default $OUT/gpu.json)")
    args = parser.parse_args()

    index = json.loads((args.artifacts / "index.json").read_text())
    torch = None
    if not args.dry:
        import torch  # noqa: F811 - only the GPU run needs it

        if not torch.cuda.is_available():
            print("no GPU visible to torch; use --dry to check the artifacts without one", file=sys.stderr)
            return 2
    started = time.perf_counter()
    rows: dict[str, dict] = {}
    for workload in workloads(index["small"]):
        if workload.name not in index["workloads"] or (
                args.only and not any(workload.name.startswith(o) for o in args.only)):
            continue
        path = args.artifacts / workload.name
        try:
            row = _check_dry(workload, path) if args.dry else _check_and_time(torch, workload, path, args.budget)
            row.update(flops=workload.flops, bytes=workload.bytes, tolerance=workload.tolerance)
        except Exception:  # noqa: BLE001 - one failure must not stop the run
            row = {"failure": traceback.format_exc()}
        rows[workload.name] = row
        print(_table({workload.name: row}).splitlines()[1], flush=True)
    print()
    print(_table(rows))
    seconds = time.perf_counter() - started
    print(f"{len(rows)} workloads in {seconds:.1f} s; failures: "
          f"{sum('failure' in r or r.get('ok') is False for r in rows.values())}")
    out = args.json or (Path(os.environ["OUT"]) / "gpu.json" if os.environ.get("OUT") else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(), "dry": args.dry,
            "torch": getattr(torch, "__version__", None), "artifacts": index, "seconds": seconds,
            "results": rows}, indent=1, default=str) + "\n")
    return 1 if any("failure" in r or r.get("ok") is False for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
