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
