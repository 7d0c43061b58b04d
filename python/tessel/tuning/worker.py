"""A runner's worker process: compiles and times candidates on request.

Run as ``python -m tessel.tuning.worker`` by
:class:`tessel.tuning.runners.LocalCpuRunner`, which sends pickled requests
on stdin and reads pickled replies on stdout:

* ``("compile", text, entry)`` -> ``("ok",)`` or ``("error", message)``
* ``("measure", min_seconds, min_runs, max_runs)`` (the last compiled
  candidate) -> ``("ok", seconds, sample)`` or ``("error", message)``
* ``("exit",)``
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Any, BinaryIO, Sequence

import numpy as np

# Output values a measurement reports: enough to tell a wrong schedule from
# a reordered floating-point sum.
SAMPLE_POINTS = 64


def _serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """A worker: compiles and measures candidates on request."""
    from .. import ir as tir
    from ..backends.cpu import compile_cpu

    def reply(message: tuple[Any, ...]) -> None:
        pickle.dump(message, replies)
        replies.flush()

    executable = None
    inputs: dict[tuple[Any, ...], list[np.ndarray]] = {}
    while True:
        try:
            message = pickle.load(requests)
        except EOFError:
            return
        if message[0] == "exit":
            return
        try:
            if message[0] == "compile":
                _, text, entry = message
                executable = None
                executable = compile_cpu(tir.parse(text, source_name="<candidate>"), entry=entry)
                reply(("ok",))
            elif message[0] == "measure":
                _, min_seconds, min_runs, max_runs = message
                # The same inputs for every candidate of a kernel, so that
                # their outputs compare.
                args = inputs.setdefault(executable.inputs, _inputs(executable.inputs))
                reply(("ok", *_time(executable, args, min_seconds, min_runs, max_runs)))
        except Exception as e:  # noqa: BLE001 - any failure of a candidate is its result
            reply(("error", f"{type(e).__name__}: {e}"))


def _inputs(specs: Sequence[Any]) -> list[np.ndarray]:
    """Normal values for floats; zeros for integers and booleans, which are
    always valid indices."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s.shape).astype(s.dtype) if np.issubdtype(s.dtype, np.floating)
            else np.zeros(s.shape, s.dtype) for s in specs]


def _time(executable: Any, args: list[np.ndarray], min_seconds: float, min_runs: int,
          max_runs: int) -> tuple[list[float], list[list[float]]]:
    results = executable(*args)  # warm-up; its outputs are the sample
    seconds: list[float] = []
    while len(seconds) < max_runs and (len(seconds) < min_runs or sum(seconds) < min_seconds):
        start = time.perf_counter()
        executable(*args)
        seconds.append(time.perf_counter() - start)
    results = results if isinstance(results, tuple) else (results,)
    sample = []
    for r in results:
        flat = np.asarray(r, dtype=np.float64).reshape(-1)
        sample.append(flat[np.linspace(0, flat.size - 1, min(SAMPLE_POINTS, flat.size)).astype(int)].tolist())
    return seconds, sample


if __name__ == "__main__":
    # Replies go to the original stdout; anything else printed (by Python or
    # by native code) goes to stderr instead of corrupting them.
    _replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, _replies)
