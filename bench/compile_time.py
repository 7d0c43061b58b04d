"""How compile time grows with op count and rank, on the CPU and for sm_90.

    python bench/compile_time.py [--quick] [--json PATH]

Two families, each compiled in a fresh process (no warm caches) for each
target: an elementwise chain of n ops (tanh and relu steps that nothing
folds away) on a 4x8 tensor, and a relu + exp of a rank-r tensor (unit
dims but the last two). The table gives seconds per compile and, per
family, the growth exponent between consecutive sizes
(log(t2/t1) / log(n2/n1)): 1 is linear. The peer is the same compile at
the family's smallest size. Goal (issue 34): a 5,000-op chain and a rank-64
tensor compile in seconds, and growth stays near linear.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import subprocess
import sys
from pathlib import Path

CHAIN = """
import numpy as np, tessel, time
from tessel import ops
def chain(x):
    for i in range({n}):
        x = ops.relu(x) - np.float32(0.5) if i % 2 else ops.tanh(x) * np.float32(1.5)
    return x
module = tessel.trace(chain, np.zeros((4, 8), np.float32))
start = time.perf_counter()
tessel.compile(module, target={target!r})
print(time.perf_counter() - start)
"""

RANK = """
import numpy as np, tessel, time
from tessel import ops
module = tessel.trace(lambda x: ops.exp(ops.relu(x)), np.zeros((1,) * ({n} - 2) + (2, 3), np.float32))
start = time.perf_counter()
tessel.compile(module, target={target!r})
print(time.perf_counter() - start)
"""

FAMILIES = {"chain": (CHAIN, (250, 500, 1000, 2000, 5000)), "rank": (RANK, (8, 16, 32, 64))}
QUICK = {"chain": (250, 1000), "rank": (8, 64)}
TARGETS = ("cpu", "cuda:sm_90")


def seconds(code: str, n: int, target: str) -> float:
    """One compile's wall time, measured inside a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", code.format(n=n, target=target)], capture_output=True,
                          text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes per family")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    print(f"{'family':8} {'size':>6} {'target':12} {'seconds':>8} {'vs smallest':>11} {'growth':>7}")
    for family, (code, sizes) in FAMILIES.items():
        for target in TARGETS:
            first = previous = None
            for n in QUICK[family] if args.quick else sizes:
                t = seconds(code, n, target)
                first = first or t
                growth = math.log(t / previous[1]) / math.log(n / previous[0]) if previous else float("nan")
                rows.append({"family": family, "size": n, "target": target, "seconds": t, "growth": growth})
                print(f"{family:8} {n:>6} {target:12} {t:8.2f} {t / first:10.1f}x {growth:7.2f}")
                previous = (n, t)
    if args.json:
        args.json.write_text(json.dumps({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                                         "python": platform.python_version(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
