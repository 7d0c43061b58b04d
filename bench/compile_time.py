"""Compile times: against the goals and torch.compile, and how they grow.

    python bench/compile_time.py [--quick] [--goals | --scaling] [--only NAME ...] [--repeat N] [--json PATH]

**Goals** (issue 32), each compile in a fresh process, timed inside it
(trace and imports apart): the example transformer block
(examples/transformer_block.py: batch 4, seq 64, d_model 256) cold (an
empty compile cache) and warm (the cache the cold run filled) for the CPU
and for sm_90, and ResNet-18 (bench/models.py, batch 1, 224x224, through
``tessel.from_torch``) cold on the CPU. The peer is torch.compile
(Inductor, CPU) on the same block in torch, cold (an empty Inductor cache;
its first call, which compiles). Goals: the block cold <= 2.0 s and <= 0.5x
torch.compile's cold compile; warm <= 0.25 s (CPU and sm_90); ResNet-18
cold <= 8 s. The same block traced over size symbols (batch in [1, 64],
seq in [1, 2048]; docs/dynamic-shapes.md), compiled once for every size,
cold for the CPU: goal <= 1.5x the static block's cold compile (issue 30).
``--only`` measures the goal rows whose name starts so, and the rows they
are measured against; ``--repeat N`` measures them N rounds and reports
the medians (one compile on a shared VM varies by 10%).

**Scaling**: two families, each compiled in a fresh process (no cache) for each
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
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

CHAIN = """
import json, numpy as np, tessel, time
from tessel import ops
def chain(x):
    for i in range({n}):
        x = ops.relu(x) - np.float32(0.5) if i % 2 else ops.tanh(x) * np.float32(1.5)
    return x
module = tessel.trace(chain, np.zeros((4, 8), np.float32))
start = time.perf_counter()
tessel.compile(module, target={target!r}, cache=False)
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""

RANK = """
import json, numpy as np, tessel, time
from tessel import ops
module = tessel.trace(lambda x: ops.exp(ops.relu(x)), np.zeros((1,) * ({n} - 2) + (2, 3), np.float32))
start = time.perf_counter()
tessel.compile(module, target={target!r}, cache=False)
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""

BLOCK = """
import json, sys, time
sys.path.insert(0, {examples!r})
import numpy as np, tessel
import transformer_block as tb
rng = np.random.default_rng(0)
params = tb.init_params(256, 1024, rng)
x = {example}
module = tessel.trace(lambda t: tb.block(t, params, 4), x, name="encoder_block", dims={dims})
start = time.perf_counter()
compiled = tessel.compile(module, target={target!r})
print(json.dumps({{"seconds": time.perf_counter() - start, "cache": compiled.cache}}))
"""

TORCH_BLOCK = """
import json, math, sys, time
sys.path.insert(0, {examples!r})
import numpy as np, torch
import torch.nn.functional as F
import transformer_block as tb
rng = np.random.default_rng(0)
p = {{k: torch.from_numpy(v) for k, v in tb.init_params(256, 1024, rng).items()}}
x = torch.from_numpy(rng.standard_normal((4, 64, 256)).astype(np.float32))

def block(x):  # examples/transformer_block.py's block, in torch
    b, s, d = x.shape
    heads, dh = 4, d // 4
    def split(t):
        return t.reshape(b, s, heads, dh).transpose(1, 2)
    a = F.layer_norm(x, (d,), p["ln1_w"], p["ln1_b"])
    q, k, v = (split(a @ p[f"w_{{n}}"] + p[f"b_{{n}}"]) for n in "qkv")
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    causal = torch.tril(torch.ones(s, s, dtype=torch.bool))
    attn = torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v
    h = x + attn.transpose(1, 2).reshape(b, s, d) @ p["w_o"] + p["b_o"]
    m = F.layer_norm(h, (d,), p["ln2_w"], p["ln2_b"])
    return h + F.gelu(m @ p["w_up"] + p["b_up"]) @ p["w_down"] + p["b_down"]

with torch.no_grad():
    expected = block(x)
    compiled = torch.compile(block)
    start = time.perf_counter()
    out = compiled(x)
    seconds = time.perf_counter() - start
assert torch.allclose(out, expected, rtol=1e-4, atol=1e-4)
print(json.dumps({{"seconds": seconds}}))
"""

RESNET = """
import json, sys, time
sys.path.insert(0, {bench!r})
import torch, tessel
import models
model = models.resnet18()
x = torch.randn(1, 3, 224, 224)
start = time.perf_counter()
module = tessel.from_torch(model, (x,))
imported = time.perf_counter()
exe = tessel.compile(module, target="cpu")
done = time.perf_counter()
with torch.no_grad():
    error = float((torch.from_dlpack(exe(x)) - model(x)).abs().max())
assert error < 1e-3, error
print(json.dumps({{"seconds": done - imported, "import": imported - start, "cache": exe.cache,
                   "stages": exe.stage_seconds}}))
"""

# How BLOCK traces the block: at batch 4, seq 64, or over size symbols, one compile for every size in their ranges.
STATIC = {"example": "rng.standard_normal((4, 64, 256)).astype(np.float32)", "dims": "None"}
DYNAMIC = {"example": 'tessel.TensorSpec(("batch", "seq", 256), np.float32)',
           "dims": '{"batch": (1, 64), "seq": (1, 2048)}'}

# (name, program, target, the program's other fields, what it is measured
# against: a goal in seconds, or the name of an earlier row and the ratio to it).
GOALS = (
    ("block cpu cold", BLOCK, "cpu", STATIC, (2.0, "torch.compile cold", 0.5)),
    ("block cpu warm", BLOCK, "cpu", STATIC, (0.25, None, None)),
    # A miss in the cache the rows above filled: another module.
    ("block cpu dynamic cold", BLOCK, "cpu", DYNAMIC, (None, "block cpu cold", 1.5)),
    ("block sm_90 cold", BLOCK, "cuda:sm_90", STATIC, (None, None, None)),
    ("block sm_90 warm", BLOCK, "cuda:sm_90", STATIC, (0.25, None, None)),
    ("resnet18 cpu cold", RESNET, "cpu", {}, (8.0, None, None)),
)

FAMILIES = {"chain": (CHAIN, (250, 500, 1000, 2000, 5000)), "rank": (RANK, (8, 16, 32, 64))}
QUICK = {"chain": (250, 1000), "rank": (8, 64)}
TARGETS = ("cpu", "cuda:sm_90")


def measured(code: str, env: dict[str, str], **fields: Any) -> dict:
    """The JSON that ``code`` (formatted with ``fields``) prints last, run in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", code.format(**fields)], capture_output=True, text=True,
                          env={**os.environ, **env})
    if done.returncode:
        raise SystemExit(f"failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def goals(only: Sequence[str] = (), repeat: int = 1) -> list[dict]:
    """The goal rows (with ``only``, those whose name starts so, and the rows
    they are measured against), printed as they are measured. With
    ``repeat``, the rows are measured that many rounds, each with empty
    caches, and each row's seconds and ratio are the medians of its rounds
    (``runs``, ``ratio_runs``): on a shared VM one compile varies by 10%."""
    here = Path(__file__).resolve().parent
    paths = {"examples": str(here.parent / "examples"), "bench": str(here)}
    wanted = {name for name, *_ in GOALS if not only or any(name.startswith(o) for o in only)}
    wanted |= {against for name, *_, (_, against, _) in GOALS if name in wanted and against}
    rounds: list[dict[str, dict]] = []
    print(f"{'compile':22} {'seconds':>8} {'goal':>8}  vs peer")
    for _ in range(repeat):
        rows: dict[str, dict] = {}
        rounds.append(rows)
        with tempfile.TemporaryDirectory() as tessel_cache, tempfile.TemporaryDirectory() as inductor_cache:
            env = {"TESSEL_CACHE_DIR": tessel_cache, "TORCHINDUCTOR_CACHE_DIR": inductor_cache}
            if "torch.compile cold" in wanted:
                peer = measured(TORCH_BLOCK, env, **paths)
                rows["torch.compile cold"] = {"name": "torch.compile cold", "seconds": peer["seconds"]}
                print(f"{'torch.compile cold':22} {peer['seconds']:8.2f}")
            for name, code, target, fields, (goal, against, ratio_goal) in GOALS:
                if name not in wanted:
                    continue
                row = {"name": name, **measured(code, env, target=target, **fields, **paths), "goal_seconds": goal}
                line = f"{name:22} {row['seconds']:8.2f} {'' if goal is None else f'<= {goal:.2f}':>8}"
                if against in rows:  # not measured when --only left it out
                    row["ratio"] = row["seconds"] / rows[against]["seconds"]
                    row["ratio_goal"] = ratio_goal
                    line += f"  {row['ratio']:.2f}x {against} (goal <= {ratio_goal}x)"
                rows[name] = row
                print(line + f"  [cache {row.get('cache')}]", flush=True)
    if repeat == 1:
        return list(rounds[0].values())
    print(f"\nmedians of {repeat} rounds")
    medians = []
    for name, first in rounds[0].items():
        row = {**first, "runs": [r[name]["seconds"] for r in rounds]}
        row["seconds"] = statistics.median(row["runs"])
        line = f"{name:22} {row['seconds']:8.2f}"
        if "ratio" in first:
            row["ratio_runs"] = [r[name]["ratio"] for r in rounds]
            row["ratio"] = statistics.median(row["ratio_runs"])
            line += (f"  {row['ratio']:.2f}x (goal <= {row['ratio_goal']}x; rounds "
                     f"{', '.join(f'{x:.2f}' for x in row['ratio_runs'])})")
        medians.append(row)
        print(line)
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes per scaling family")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--goals", action="store_true", help="only the goals")
    which.add_argument("--scaling", action="store_true", help="only the scaling families")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=(),
                        help="the goal rows whose name starts so (and those they are measured against)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="measure the goal rows N rounds and report their medians")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.only and not any(name.startswith(o) for name, *_ in GOALS for o in args.only):
        parser.error(f"no goal row's name starts with any of {args.only}")
    goal_rows = [] if args.scaling else goals(args.only, args.repeat)
    rows = []
    if args.goals or args.only:
        return _write(args.json, goal_rows, rows)
    print(f"\n{'family':8} {'size':>6} {'target':12} {'seconds':>8} {'vs smallest':>11} {'growth':>7}")
    for family, (code, sizes) in FAMILIES.items():
        for target in TARGETS:
            first = previous = None
            for n in QUICK[family] if args.quick else sizes:
                t = measured(code, {}, n=n, target=target)["seconds"]
                first = first or t
                growth = math.log(t / previous[1]) / math.log(n / previous[0]) if previous else float("nan")
                rows.append({"family": family, "size": n, "target": target, "seconds": t, "growth": growth})
                print(f"{family:8} {n:>6} {target:12} {t:8.2f} {t / first:10.1f}x {growth:7.2f}")
                previous = (n, t)
    return _write(args.json, goal_rows, rows)


def _write(path: Path | None, goal_rows: list[dict], rows: list[dict]) -> int:
    if path:
        path.write_text(json.dumps({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                                    "cores": os.cpu_count(), "python": platform.python_version(),
                                    "goals": goal_rows, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
