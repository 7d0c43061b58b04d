"""Runs every ONNX node test case through tessel.from_onnx, compile(target="cpu") and comparison.

    python bench/onnx_node_tests.py [--only PREFIX...] [--workers N] [--json out.json] [--list KIND]

The cases are the onnx package's (``onnx.backend.test.case.node``: 1,884 in
onnx 1.23), each a one-node model with reference inputs and outputs. Each
case ends as one of:

* passed - imports, compiles and matches every data set (the case's rtol/atol);
* unsupported - tessel.UnsupportedError: a clean error naming what is missing;
* wrong result - runs but differs from the reference (or gives other shapes);
* crashed - any other exception, or the process dies or hangs.

Cases run in worker processes, so a crash costs only its case. Prints the
counts (goal: wrong 0, crashed 0, passed >= 1,100) and, with --list, the
cases of one outcome with their messages.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

OUTCOMES = ("passed", "unsupported", "wrong result", "crashed")


def _cases() -> dict[str, Any]:
    warnings.filterwarnings("ignore")  # the onnx package's own case generators warn
    from onnx.backend.test.case.node import collect_testcases

    return {c.name: c for c in collect_testcases() if c.kind == "node"}


def _array(value: Any) -> Any:
    """A data set's value as an array (some cases hold TensorProtos)."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def _compile(case: Any, inputs: list[Any], static: bool) -> tuple[Any, list[Any]]:
    """The executable and the inputs it takes. With ``static``, integer
    inputs (axes, shapes given at run time) are fixed to this data set's,
    and so is each other graph input that the importer names as one it
    needs as a constant (a Resize's float scales), as a user would with
    ``constants=``."""
    import re

    import tessel

    graph = case.model.graph
    names = [i.name for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    fixed = {n: x for n, x in zip(names, inputs) if static and x.dtype.kind in "iu"}
    while True:
        try:
            module = tessel.from_onnx(case.model, constants=fixed)
            break
        except tessel.UnsupportedError as e:
            needed = re.search(r"ONNX node (\S+) \(\w+\): .*\(input (\d+)\) must be a constant", str(e))
            if not static or needed is None:
                raise
            label, i = needed.group(1), int(needed.group(2))
            node = graph.node[int(label[1:])] if label.startswith("#") else \
                next(n for n in graph.node if n.name == label)
            name = node.input[i]
            if name not in names or name in fixed:
                raise
            fixed[name] = inputs[names.index(name)]
    return tessel.compile(module, target="cpu"), [x for n, x in zip(names, inputs) if n not in fixed]


def run_case(case: Any) -> tuple[str, str]:
    """(outcome, message) of one case, in this process. A case whose axes or
    shapes are run-time inputs is imported per data set with them fixed."""
    import numpy as np

    import tessel

    try:  # what the model needs, before its data (which may be sequences, ...)
        tessel.from_onnx(case.model)
    except tessel.UnsupportedError as e:
        if "must be a constant" not in str(e):
            return "unsupported", str(e).splitlines()[0][:300]
    except Exception as e:  # noqa: BLE001
        return "crashed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    for inputs, outputs in case.data_sets:
        inputs, outputs = [_array(x) for x in inputs], [_array(x) for x in outputs]
        try:
            try:
                executable, args = _compile(case, inputs, static=False)
            except tessel.UnsupportedError as e:
                if "must be a constant" not in str(e):
                    raise
                executable, args = _compile(case, inputs, static=True)
        except tessel.UnsupportedError as e:
            return "unsupported", str(e).splitlines()[0][:300]
        except Exception as e:  # noqa: BLE001 - classified, not hidden
            return "crashed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        try:
            got = executable(*args)
        except Exception as e:  # noqa: BLE001
            return "crashed", f"run: {type(e).__name__}: {e}"[:300]
        got = got if isinstance(got, tuple) else (got,)
        if len(got) != len(outputs):
            return "wrong result", f"{len(got)} results, expected {len(outputs)}"
        for i, (g, e) in enumerate(zip(got, outputs)):
            if g.shape != e.shape or g.dtype != e.dtype:
                return "wrong result", f"output {i}: {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"
            # float16 and bfloat16 results get two ulps: statistics are computed
            # in float32 (as torch does), in another order than the reference's.
            rtol = max(case.rtol, {"float16": 2e-3, "bfloat16": 2 ** -6}.get(g.dtype.name, 1e-5))
            try:
                np.testing.assert_allclose(g, e, rtol=rtol, atol=max(case.atol, 1e-6), equal_nan=True)
            except AssertionError as error:
                return "wrong result", f"output {i}: " + " ".join(str(error).split())[:250]
    return "passed", ""


def _worker(names: list[str]) -> None:
    cases = _cases()
    for name in names:
        outcome, message = run_case(cases[name])
        print(json.dumps([name, outcome, message]), flush=True)


def _run_batch(names: list[str], timeout: float) -> dict[str, tuple[str, str]]:
    command = [sys.executable, __file__, "--worker", *names]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        stdout, why = done.stdout, f"the process died (exit status {done.returncode})"
    except subprocess.TimeoutExpired as e:
        stdout, why = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            f"over {timeout:.0f} s"
    results = {}
    for line in stdout.splitlines():
        try:
            name, outcome, message = json.loads(line)
        except ValueError:
            continue
        results[name] = (outcome, message)
    rest = [n for n in names if n not in results]
    if len(names) == 1 and rest:
        results[rest[0]] = ("crashed", why)
    elif rest:  # the first unfinished case killed the process (or ran out of time): each alone
        for name in rest:
            results.update(_run_batch([name], timeout))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="cases whose name starts so (test_ prefix optional)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=40, help="cases per worker process")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per worker process")
    parser.add_argument("--json", default=None, help="write every case's outcome and message here")
    parser.add_argument("--list", choices=OUTCOMES, default=None, help="print the cases of one outcome")
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker)
        return 0

    names = sorted(_cases())
    if args.only:
        prefixes = [p if p.startswith("test_") else f"test_{p}" for p in args.only]
        names = [n for n in names if any(n.startswith(p) for p in prefixes)]
    start = time.perf_counter()
    batches = [names[i:i + args.batch] for i in range(0, len(names), args.batch)]
    with ThreadPoolExecutor(args.workers) as pool:
        parts = list(pool.map(lambda b: _run_batch(b, args.timeout), batches))
    results = {name: result for part in parts for name, result in part.items()}
    counts = collections.Counter(outcome for outcome, _ in results.values())
    if args.list:
        for name in sorted(results):
            if results[name][0] == args.list:
                print(f"{name}: {results[name][1]}")
    print(f"ONNX node tests: {len(results)} cases in {time.perf_counter() - start:.0f} s")
    for outcome in OUTCOMES:
        print(f"  {outcome:<14}{counts[outcome]:5d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({n: {"outcome": o, "message": m} for n, (o, m) in sorted(results.items())}, f, indent=1)
    return 1 if counts["wrong result"] or counts["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
