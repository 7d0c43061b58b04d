"""Long-lived worker subprocesses for tests that feed tessel hostile input.

A hostile case (a corrupted artifact, a malformed module, a mutated ONNX
model) may crash the interpreter, hang or exhaust memory. Run in the test
process it would end pytest; run in a fresh interpreter per case it would pay
a second of imports each time. :class:`CaseWorker` keeps one subprocess that
handles case after case, and starts a new one when a case kills it or runs
past its timeout, so that such a case is an outcome (``"crash"`` or
``"timeout"``) the test reports like any other.

The protocol is JSON lines. The parent writes a request a line on the
worker's stdin; the worker answers with any number of progress lines (a dict
without ``"outcome"``, say ``{"stage": "compile"}``) and then the final reply,
a dict with ``"outcome"`` and ``"message"``. The worker side is :func:`serve`:
a worker script says how to handle one request and calls ``serve(handle)``::

    # worker.py (or the test file itself, under ``if __name__ == "__main__"``)
    from tessel.testing.workers import serve

    def handle(request, progress):
        progress(stage="parse")
        tessel.parse(request)

    serve(handle)

    # the test
    with CaseWorker(Path("worker.py"), timeout=20, memory_cap=4 << 30) as worker:
        reply = worker.run(text)  # {"outcome": "ok" | "tessel" | ... | "crash" | "timeout", ...}

Outcomes: ``"ok"`` (the handler returned), ``"tessel"`` (it raised a
:class:`tessel.TesselError`), ``"value"`` (a :class:`ValueError`), the name
of any other exception it raised (its message the traceback), ``"crash"``
(the worker died) and ``"timeout"`` (it was killed for running too long).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Callable, Mapping, Sequence

from tessel.errors import TesselError

__all__ = ["CaseWorker", "WorkerError", "serve"]

Reply = dict[str, Any]
Progress = Callable[..., None]
Handler = Callable[[Any, Progress], "Mapping[str, Any] | None"]

READY: Reply = {"ready": True}  # the worker's first line: its imports are done


class WorkerError(RuntimeError):
    """The worker did not start, or broke the protocol (not a case's outcome)."""


# --- the worker's side

def serve(handle: Handler, *, message_chars: int = 4000, traceback_limit: int = -4) -> None:
    """Answers the requests on stdin, one JSON line each, until stdin closes.

    ``handle(request, progress)`` handles one decoded request. It may call
    ``progress(**fields)`` to send a progress line (the fields are also kept
    for the final reply, so that a crash or an exception after it still says,
    for instance, which stage it reached) and may return a dict of fields for
    the final reply (an ``"outcome"`` among them replaces ``"ok"``). Its
    exceptions are the case's outcome (see the module's docstring); messages are cut to ``message_chars``, tracebacks to their
    last ``-traceback_limit`` frames.
    """
    # Replies go to a private copy of stdout, and fd 1 then points at stderr:
    # whatever a kernel, MLIR or a tool prints (C's stdout included) cannot
    # land in the protocol.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    seen: Reply = {}

    def send(fields: Mapping[str, Any]) -> None:
        replies.write(json.dumps(fields, default=str) + "\n")
        replies.flush()  # the parent waits for this line with a timeout

    def progress(**fields: Any) -> None:
        seen.update(fields)
        send(fields)

    send(READY)
    for line in sys.stdin:
        if not line.strip():  # as typed at a terminal, trying a worker by hand
            continue
        # Decoded outside the try: a malformed request is the parent's bug
        # (a crash), not a ValueError of the case's.
        request = json.loads(line)
        seen.clear()
        reply: Reply
        try:
            reply = {"outcome": "ok", "message": "", **(handle(request, progress) or {})}
        except TesselError as e:
            reply = {"outcome": "tessel", "message": str(e)}
        except ValueError as e:
            reply = {"outcome": "value", "message": str(e)}
        except BaseException as e:  # noqa: BLE001 - any other exception is the finding
            reply = {"outcome": type(e).__name__, "message": traceback.format_exc(limit=traceback_limit)}
        reply["message"] = str(reply["message"])[:message_chars]
        send({**seen, **reply})


# --- the parent's side

class CaseWorker:
    """A worker subprocess that runs cases one at a time, each with a timeout.

    ``script`` is the worker's source text (a ``str``) or its file (a
    :class:`~pathlib.Path`, such as a test file that calls :func:`serve`
    when run as a script); ``args`` follow it on the command line.
    ``memory_cap`` (bytes of address space, Linux) makes an exhausted memory
    a :class:`MemoryError` in the worker rather than in the machine.
    ``keep_stderr`` keeps what the worker writes to stderr during a case,
    for the message of a crash or a timeout (a crash's faulthandler stack,
    an assertion of LLVM's); otherwise it is discarded.

    A worker that dies or times out is started again at the next
    :meth:`run`; :attr:`starts` counts its starts.
    """

    def __init__(self, script: str | Path, args: Sequence[str] = (), *, timeout: float = 30.0,
                 memory_cap: int | None = None, keep_stderr: bool = False, start_timeout: float = 120.0,
                 stderr_chars: int = 1 << 16) -> None:
        self._folder: str | None = None
        if isinstance(script, Path):
            self.script = script
        else:  # a file rather than `python -c`, so that tracebacks show the lines
            self._folder = tempfile.mkdtemp(prefix="tessel-worker-")
            self.script = Path(self._folder) / "worker.py"
            self.script.write_text(script)
        self.args = list(args)
        self.timeout = timeout
        self.memory_cap = memory_cap
        self.keep_stderr = keep_stderr
        self.start_timeout = start_timeout
        self.stderr_chars = stderr_chars
        self.starts = 0
        self._process: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        self._readers: list[threading.Thread] = []

    def __enter__(self) -> CaseWorker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def run(self, request: Any, timeout: float | None = None) -> Reply:
        """The final reply to ``request`` (any JSON value): the worker's, or
        after a crash or a timeout ``{"outcome": "crash" | "timeout",
        "message": ...}`` (the exit status or the time, then the case's
        stderr where kept), with the fields of the last progress lines."""
        if self._process is None:
            self._start()
        assert self._process is not None and self._process.stdin is not None
        timeout = self.timeout if timeout is None else timeout
        del self._stderr[:]  # from now on, this case's
        progress: Reply = {}
        deadline = time.monotonic() + timeout
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            while (line := self._replies.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
                reply = self._decode(line)
                if "outcome" in reply:
                    return reply
                progress.update(reply)
            timed_out = False  # its stdout closed: it died
        except BrokenPipeError:  # it died before reading the case
            timed_out = False
        except queue.Empty:
            timed_out = True
        status = self._stop(kill=timed_out)
        message = f"no reply within {timeout:g} s" if timed_out else f"exit status {status}"
        tail = "".join(self._stderr)[-self.stderr_chars:]
        return {**progress, "outcome": "timeout" if timed_out else "crash",
                "message": f"{message}\n{tail}" if tail else message}

    def close(self) -> None:
        """Ends the worker and removes the script it was given as text."""
        if self._process is not None:
            self._stop(kill=True)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def _start(self) -> None:
        self.starts += 1
        # -X faulthandler: a crash reports the Python stack (which call of
        # tessel's died) on stderr, for keep_stderr.
        process = subprocess.Popen([sys.executable, "-X", "faulthandler", str(self.script), *self.args],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE if self.keep_stderr else subprocess.DEVNULL,
                                   text=True, encoding="utf-8", errors="replace",
                                   start_new_session=True)  # its own process group: see _stop
        if self.memory_cap is not None:
            # Set from here rather than by the script, so that any script is
            # capped, before it reads its first case (it waits for one).
            with contextlib.suppress(ProcessLookupError):  # it died already: the handshake says so
                resource.prlimit(process.pid, resource.RLIMIT_AS, (self.memory_cap, self.memory_cap))
        self._process = process
        # Threads read its pipes, so that a reply can be awaited with a
        # timeout and a chatty stderr never fills its pipe and blocks it.
        self._replies = queue.Queue()
        self._stderr = []
        self._readers = [threading.Thread(target=_read, args=(process.stdout, self._replies.put, None), daemon=True)]
        if self.keep_stderr:
            self._readers.append(threading.Thread(target=_read, args=(process.stderr, self._stderr.append, ""),
                                                  daemon=True))
        for reader in self._readers:
            reader.start()
        try:
            line = self._replies.get(timeout=self.start_timeout)
        except queue.Empty:
            line = None
        if line is None or _json_object(line) != READY:
            status = self._stop(kill=True)
            raise WorkerError(f"the worker {self.script} did not start (exit status {status}), it wrote {line!r}"
                              + (":\n" + "".join(self._stderr)[-self.stderr_chars:] if self.keep_stderr
                                 else "; keep_stderr=True shows its stderr"))

    def _stop(self, *, kill: bool) -> int:
        """Ends the worker (killed, or waited for: it is dying) and its
        readers; its exit status."""
        process, self._process = self._process, None
        assert process is not None
        if not kill:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # its stdout closed, yet it lives on
                kill = True
        if kill:
            process.kill()
        status = process.wait()
        # Then what it started (ptxas, mlir-opt, ...), which a timeout may
        # have left hanging, or a crash running and holding the pipes open.
        with contextlib.suppress(ProcessLookupError, PermissionError):  # none left
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):  # a pipe that broke with it
            assert process.stdin is not None
            process.stdin.close()
        for reader in self._readers:
            # The rest of a crash report; a grandchild that holds the pipe
            # open must not hang the test.
            reader.join(timeout=10)
        return status

    def _decode(self, line: str) -> Reply:
        reply = _json_object(line)
        if reply is None:
            raise WorkerError(f"the worker {self.script} wrote {line[:200]!r}, not a JSON object: "
                              "does it reply through serve()?")
        return reply


def _json_object(line: str) -> Reply | None:
    """``line`` decoded, where it is a JSON object."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _read(stream: IO[str] | None, put: Callable[[Any], None], end: str | None) -> None:
    """Passes on each line of ``stream``, then ``end`` (it closed), then closes it."""
    assert stream is not None
    with stream:
        for line in stream:
            put(line)
    put(end)
