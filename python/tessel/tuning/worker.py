"""A runner's worker process: compiles and times candidates on request.

Run as ``python -m tessel.tuning.worker`` by
:class:`tessel.tuning.runners.LocalCpuRunner`, which sends pickled requests
on stdin and reads pickled replies on stdout:

* ``("compile", text, entry, target, cuda)`` -> ``("ok",)`` or
  ``("error", message)``; ``target`` is ``"cpu"`` or a GPU chip, whose
  artifact is loaded on CUDA device ``cuda[0]`` (on the dry driver when
  ``cuda[1]``)
* ``("measure", min_seconds, min_runs, max_runs)`` (the last compiled
  candidate) -> ``("ok", seconds, sample)`` or ``("error", message)``;
  inputs and output samples as a GPU batch's (:mod:`tessel.runtime.batch`)
* ``("exit",)``
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..runtime import batch


def _serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """A worker: compiles and measures candidates on request."""
    from .. import ir as tir
    from .. import runtime
    from ..backends.cpu import compile_cpu
    from ..backends.cuda import compile_cuda

    def reply(message: tuple[Any, ...]) -> None:
        pickle.dump(message, replies)
        replies.flush()

    executable = None
    cuda: tuple[int, bool] | None = None  # (device, dry) of a CUDA candidate
    inputs: dict[tuple[Any, ...], list[np.ndarray]] = {}  # by signature and ranges
    with tempfile.TemporaryDirectory(prefix="tessel-tune-") as scratch:
        while True:
            try:
                message = pickle.load(requests)
            except EOFError:
                return
            if message[0] == "exit":
                return
            try:
                if message[0] == "compile":
                    _, text, entry, target, cuda = message
                    executable = None
                    module = tir.parse(text, source_name="<candidate>")
                    if target == "cpu":
                        executable = compile_cpu(module, entry=entry)
                    else:
                        path = Path(scratch) / "candidate"
                        shutil.rmtree(path, ignore_errors=True)
                        compile_cuda(module, target, entry=entry).save(path)
                        executable = runtime.load(path, device=cuda[0], dry=cuda[1])
                    reply(("ok",))
                elif message[0] == "measure":
                    _, min_seconds, min_runs, max_runs = message
                    if cuda is not None:
                        reply(("ok", *batch.measure(executable, dry=cuda[1], min_seconds=min_seconds,
                                                    min_runs=min_runs, max_runs=max_runs)))
                        continue
                    # The same inputs for every candidate of a kernel, so
                    # that their outputs compare.
                    args = inputs.setdefault((executable.inputs, tuple(executable.ranges.items())),
                                             batch.candidate_inputs([(spec.sizes(), spec.dtype)
                                                                     for spec in executable.inputs],
                                                                    executable.ranges))
                    reply(("ok", *_time(executable, args, min_seconds, min_runs, max_runs)))
            except Exception as e:  # noqa: BLE001 - any failure of a candidate is its result
                reply(("error", f"{type(e).__name__}: {e}"))


_SLOW_SECONDS = 1.0


def _time(executable: Any, args: list[np.ndarray], min_seconds: float, min_runs: int,
          max_runs: int) -> tuple[list[float], list[list[float]]]:
    sample = batch.output_sample(executable(*args))  # the first warm-up call
    # First calls of a fresh process pay for page faults and thread start:
    # a second warm-up call, and more for up to half of min_seconds.
    start = time.perf_counter()
    executable(*args)
    while time.perf_counter() - start < min_seconds / 2 and time.perf_counter() - start < _SLOW_SECONDS:
        executable(*args)
    # A slow candidate (a second or more per call) is not timed further:
    # a search only needs to know it is slow.
    seconds = batch.timed_calls(lambda: executable(*args), min_seconds=min_seconds, min_runs=min_runs,
                                max_runs=max_runs, slow_seconds=_SLOW_SECONDS)
    return seconds, sample

if __name__ == "__main__":
    # Replies go to the original stdout; anything else printed (by Python or
    # by native code) goes to stderr instead of corrupting them.
    _replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, _replies)
