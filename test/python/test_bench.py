"""bench/cpu.py --quick and bench/tune.py with a few trials run, check their
results against numpy and print their tables."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cpu.py"
TUNE = BENCH.with_name("tune.py")


def test_quick_benchmark_runs_and_reports(tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--budget", "0.02", "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tessel ms" in proc.stdout and "numpy ms" in proc.stdout and "vs numpy" in proc.stdout
    assert "compile time (ms)" in proc.stdout
    results = json.loads(out.read_text())["results"]
    assert len(results) == 11
    assert all(r["error"] is None and r["tessel"]["median_ms"] > 0 for r in results)


def test_tuning_benchmark_runs_and_reports(tmp_path):
    out = tmp_path / "tuning.json"
    proc = subprocess.run([sys.executable, str(TUNE), "--trials", "2", "--only", "softmax", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tuned/default" in proc.stdout and "trials to best" in proc.stdout
    [result] = json.loads(out.read_text())["results"]
    assert result["default_ms"] > 0 and result["tuned_ms"] > 0
    assert "tuned/peer" in proc.stdout and result["peers"]["copy (x + 1)"] > 0
    assert set(result["searches"]) == {"model", "random"}
