"""The prepared GPU check runs on CI in its dry mode: build.py compiles the
small workload set, run.py --dry loads every artifact through tessel.runtime
and executes its launch sequence on the dry driver."""

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu"


def test_gpu_check_builds_and_dry_runs(tmp_path):
    artifacts = tmp_path / "artifacts"
    build = subprocess.run([sys.executable, str(BENCH / "build.py"), "--small", "--out", str(artifacts)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    index = json.loads((artifacts / "index.json").read_text())
    assert index["small"] and len(index["workloads"]) == 11
    for kernels in (w["kernels"] for w in index["workloads"].values()):
        assert all(info["spill_stores"] == 0 for info in kernels)

    # The GPU machine has no MLIR: run.py must not need it.
    env = dict(os.environ, OUT=str(tmp_path / "out"))
    run = subprocess.run([sys.executable, "-c",
                          "import sys, runpy; sys.modules['mlir'] = None; "
                          f"sys.argv = ['run.py', '--dry', '--artifacts', {str(artifacts)!r}]; "
                          f"runpy.run_path({str(BENCH / 'run.py')!r}, run_name='__main__')"],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "11 workloads" in run.stdout and "failures: 0" in run.stdout
    results = json.loads((tmp_path / "out" / "gpu.json").read_text())
    assert results["dry"] and set(results["results"]) == set(index["workloads"])


def test_the_triton_peer_matmul_compiles_to_wgmma_and_matches_numpy_on_the_emulator():
    # run.py's Triton peer, which only a GPU times: here compiled for sm_90
    # (wgmma fed by a cp.async ring) and run on the PTX emulator, one of its
    # autotuned tile shapes, at a shape with a partial K step.
    import math

    import numpy as np
    from test_emulator_triton import _compile, _launch, peer_matmul_kernel

    m, n, k = 128, 256, 96
    signature = {name: "*fp16" for name in "abc"} | {name: "i32" for name in
                                                      ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")}
    compiled = _compile(peer_matmul_kernel(), signature, {"BM": 64, "BN": 128, "BK": 64, "GROUP": 8},
                        capability=90, aligned=("a", "b", "c", "sam", "sbk", "scm"), num_warps=4, num_stages=4)
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    gpu, buffers = _launch(compiled, (math.ceil(m / 64) * math.ceil(n / 128), 1, 1),
                           [a, b, np.zeros((m, n), np.float16), m, n, k, k, 1, n, 1, n, 1])
    np.testing.assert_allclose(gpu.download(buffers[2], np.float16, (m, n)).astype(np.float32),
                               a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=5e-2)
