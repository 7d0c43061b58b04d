"""Runners: compile candidate schedules and measure them.

A candidate is a small module (one kernel, its schedules, and a public entry
that calls it; :class:`tessel.tuning.search.Task` builds it) as text. A
runner (this machine's CPU, or its GPU) compiles a batch of them, then
measures them one at a time, so that
no compile competes with a measurement for the cores, and reports each as a
:class:`Measurement`: the times, or why there are none. A candidate that
fails to compile, crashes or hangs the compiler is a failure, never an
exception out of the runner.
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

__all__ = ["LocalCpuRunner", "LocalCudaRunner", "Measurement", "Runner"]


@dataclass(frozen=True)
class Measurement:
    """The outcome of one candidate: ``seconds`` of each timed run and a
    sample of each output (``error`` None), or why it failed."""

    seconds: tuple[float, ...] = ()
    sample: tuple[tuple[float, ...], ...] = ()
    error: str | None = None


class Runner(Protocol):
    """Measures candidates; ``measure`` returns one Measurement per text.
    ``target`` is what candidates are compiled for (``"cpu"``, ``"sm_90"``)
    and ``device`` the tuning database's name for what they run on
    (:func:`tessel.tuning.device_key`)."""

    target: str
    device: str

    def measure(self, candidates: Sequence[str], entry: str) -> list[Measurement]: ...

    def close(self) -> None: ...


class LocalCpuRunner:
    """Compiles candidates in ``workers`` processes in parallel, then runs
    each in its process, one at a time, on this machine's CPU.

    Each measurement is the median-worthy list of ``min_runs`` or more timed
    calls, adding runs until ``min_seconds`` have passed (at most
    ``max_runs``), after untimed warm-up calls. A worker that dies or
    takes over ``timeout`` seconds is replaced and its candidate recorded as
    a failure.
    """

    target = "cpu"

    def __init__(self, workers: int | None = None, *, min_seconds: float = 0.2, min_runs: int = 3,
                 max_runs: int = 50, timeout: float = 120.0) -> None:
        from .keys import device_key

        self.workers = max(1, workers or os.cpu_count() or 1)
        self.min_seconds, self.min_runs, self.max_runs = min_seconds, min_runs, max_runs
        self.timeout = timeout
        self.device = device_key("cpu")
        self._processes: list[_Worker | None] = [None] * self.workers

    def _compile_request(self, text: str, entry: str) -> tuple[Any, ...]:
        return ("compile", text, entry, self.target, None)

    def measure(self, candidates: Sequence[str], entry: str) -> list[Measurement]:
        results = []
        # Rounds of one candidate per worker: compiled in parallel, then
        # measured one at a time; a worker holds one compiled candidate.
        for first in range(0, len(candidates), self.workers):
            batch = list(enumerate(candidates[first:first + self.workers]))
            for worker, text in batch:
                self._worker(worker).send(self._compile_request(text, entry))
            compiled = [self._receive(worker, f"compiling candidate {first + worker}")
                        for worker, _ in batch]
            for (worker, _), reply in zip(batch, compiled):
                if reply[0] == "ok":
                    self._worker(worker).send(("measure", self.min_seconds, self.min_runs, self.max_runs))
                    reply = self._receive(worker, f"running candidate {first + worker}")
                results.append(Measurement(tuple(reply[1]), tuple(map(tuple, reply[2])))
                               if reply[0] == "ok" else Measurement(error=reply[1]))
        return results

    def close(self) -> None:
        for i, worker in enumerate(self._processes):
            if worker is not None:
                worker.stop()
                self._processes[i] = None

    def __enter__(self) -> LocalCpuRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _worker(self, i: int) -> _Worker:
        if self._processes[i] is None:
            self._processes[i] = _Worker()
        return self._processes[i]  # type: ignore[return-value]

    def _receive(self, i: int, doing: str) -> tuple[Any, ...]:
        worker = self._worker(i)
        reply = worker.receive(self.timeout)
        if reply is None:
            code = worker.stop()
            self._processes[i] = None
            why = (f"took over {self.timeout:.0f} s" if code is None
                   else f"killed the worker process (exit status {code})")
            return ("error", f"{doing} {why}")
        return reply


class LocalCudaRunner(LocalCpuRunner):
    """The same for GPU chip ``target`` (``"sm_90"``) on this machine's CUDA
    device ``device``: workers compile candidates to CUDA artifacts and time
    them through :mod:`tessel.runtime` with inputs and outputs on the
    device. ``dry=True`` runs them on the runtime's dry driver (no GPU; the
    times are host times and mean nothing). Needs a GPU and cuda-bindings
    otherwise: a clear :class:`tessel.RuntimeError` here when there is none.
    """

    def __init__(self, target: str = "sm_90", *, device: int = 0, dry: bool = False,
                 workers: int | None = None, min_seconds: float = 0.05, min_runs: int = 5,
                 max_runs: int = 100, timeout: float = 120.0) -> None:
        from .. import targets
        from ..errors import UnsupportedError
        from ..runtime import DryDriver
        from .keys import device_key

        if target not in (chips := targets.names("cuda")):
            raise UnsupportedError(f"unknown GPU target {target!r}; available: {', '.join(chips)}")
        super().__init__(workers, min_seconds=min_seconds, min_runs=min_runs, max_runs=max_runs,
                         timeout=timeout)
        self.target, self.ordinal, self.dry = target, device, dry
        if dry:
            name = DryDriver.device_name
        else:
            from ..runtime.cuda_driver import CudaDriver

            name = CudaDriver(device).device_name  # fails clearly without a GPU
        self.device = device_key(target, gpu_name=name)

    def _compile_request(self, text: str, entry: str) -> tuple[Any, ...]:
        return ("compile", text, entry, self.target, (self.ordinal, self.dry))


class _Worker:
    """One worker process (``python -m tessel.tuning.worker``), spoken to
    with pickled messages over its stdin and stdout. A process rather than
    a multiprocessing child, so that the caller's script is not re-imported
    and needs no ``if __name__ == "__main__"`` guard."""

    def __init__(self) -> None:
        self._process = subprocess.Popen([sys.executable, "-m", "tessel.tuning.worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)

    def send(self, message: tuple[Any, ...]) -> None:
        try:
            pickle.dump(message, self._process.stdin)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died; receive() says so

    def receive(self, timeout: float) -> tuple[Any, ...] | None:
        """The next reply, or None when the process died or timed out."""
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        if not ready:
            return None
        try:
            return pickle.load(self._process.stdout)
        except (EOFError, pickle.UnpicklingError, OSError):
            return None

    def stop(self) -> int | None:
        """Ends the process; its exit status (None if it had to be killed)."""
        code = self._process.poll()
        if code is None:
            self.send(("exit",))
            try:
                code = self._process.wait(2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return code
