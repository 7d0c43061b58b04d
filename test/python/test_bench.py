"""bench/cpu.py --quick runs, checks every workload against numpy and prints its tables."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cpu.py"


def test_quick_benchmark_runs_and_reports(tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--budget", "0.02", "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tessel ms" in proc.stdout and "numpy ms" in proc.stdout and "vs numpy" in proc.stdout
    assert "compile time (ms)" in proc.stdout
    results = json.loads(out.read_text())["results"]
    assert len(results) == 9
    assert all(r["error"] is None and r["tessel"]["median_ms"] > 0 for r in results)
