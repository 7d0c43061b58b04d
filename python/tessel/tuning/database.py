"""The tuning database: measured schedules of kernels, in one SQLite file.

A :class:`Record` is one measured candidate: a kernel's compute (its key,
:func:`tessel.tuning.kernel_keys`), the device it ran on
(:func:`tessel.tuning.device_key`), the printed ``loop.schedule`` op, every
time measured, or the error of a candidate that failed (recorded too, so a
search does not try it again). :meth:`TuningDatabase.best` is what compiles
reuse: the fastest success for a kernel on a device, measured by this
tessel version.

The file is safe to share: it is in WAL mode, every :meth:`TuningDatabase.add`
is one transaction, so concurrent tuners all get their records in, and a
tuner killed mid-run leaves every record whose ``add`` returned. A file that
is not a tessel tuning database is reported as such and never written to.
A database in a folder this process cannot write (a shared, read-only
copy) opens with ``readonly=True``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Iterator
from urllib.parse import quote

from .. import __version__
from ..errors import TuningDatabaseError

__all__ = ["FORMAT", "SCHEMA_VERSION", "Record", "TuningDatabase"]

# What the meta table says about a file of ours.
FORMAT = "tessel-tuning"
SCHEMA_VERSION = 1

# Every writer holds the lock for one short transaction per record, so even
# many tuners on a slow disk get their turn well within this.
_BUSY_TIMEOUT_S = 60.0
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})  # primary result codes

_SCHEMA = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE records (
        id INTEGER PRIMARY KEY,  -- insertion order
        key TEXT NOT NULL,
        device TEXT NOT NULL,
        kernel TEXT NOT NULL,
        schedule TEXT NOT NULL,
        seconds TEXT NOT NULL,  -- a JSON list of floats
        median REAL,  -- NULL for failures; best() reads only these
        error TEXT,
        tessel_version TEXT NOT NULL,
        created REAL NOT NULL
    )""",
    "CREATE INDEX records_by_kernel ON records (key, device, tessel_version, median)",
)

_COLUMNS = "key, device, kernel, schedule, seconds, error, tessel_version, created"


def _device_clause(device: str) -> tuple[str, tuple[str, ...]]:
    """An SQL condition on the device column matching ``device``, with
    ``*`` standing for anything (GLOB: case-sensitive; the other GLOB
    metacharacters are matched literally), and its parameters."""
    if "*" not in device:
        return "device = ?", (device,)
    literal = "".join(f"[{c}]" if c in "?[]" else c for c in device)
    return "device GLOB ?", (literal,)


@dataclass(frozen=True)
class Record:
    """One measured schedule of one kernel on one device.

    ``schedule`` is the printed ``loop.schedule`` op of kernel ``kernel``
    (the symbol it had when measured; :func:`tessel.tuning.apply_records`
    renames it). ``error`` is None for a success, whose ``seconds`` holds
    at least one positive time; a failure's message otherwise.
    """

    key: str
    device: str
    kernel: str
    schedule: str
    seconds: tuple[float, ...]
    error: str | None = None
    tessel_version: str = __version__  # of the tessel that measured it
    created: float = field(default_factory=time.time)  # unix time

    def __post_init__(self) -> None:
        # Any iterable of numbers is accepted; the record keeps a tuple of floats.
        object.__setattr__(self, "seconds", tuple(float(s) for s in self.seconds))
        if self.error == "":
            raise ValueError("a failed record needs an error message")
        if self.error is None and not self.seconds:
            raise ValueError("a successful record needs at least one measured time")
        if self.error is None and not all(0 < s < math.inf for s in self.seconds):
            raise ValueError(f"measured times must be positive and finite, not {self.seconds}")

    @property
    def median(self) -> float:
        """The median time in seconds; inf for a failure."""
        return statistics.median(self.seconds) if self.error is None else math.inf

    @property
    def spread(self) -> float:
        """(max - min) / median of the times: 0 for one time, inf for a failure."""
        if self.error is not None:
            return math.inf
        return (max(self.seconds) - min(self.seconds)) / self.median


class TuningDatabase:
    """A tuning database file, opened or created at ``path``.

    ``readonly=True`` opens an existing database without writing to it,
    also where its file or folder is read-only. Raises
    :class:`TuningDatabaseError` when the file cannot be opened (or, without
    ``readonly``, written) or is not a tessel tuning database of this schema
    version; a foreign file is left as it was. Use as a context manager, or
    call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        # SQLite's special names: an in-memory or a temporary database,
        # either gone when closed, which no tuning run or compile could share.
        if os.fspath(path) in ("", ":memory:"):
            raise ValueError(f"a tuning database is a file: pass a file path, not {os.fspath(path)!r} "
                             "(SQLite would keep the records only until it is closed)")
        self.path = Path(path)
        self.readonly = readonly
        if self.path.is_dir():
            raise TuningDatabaseError(f"{self.path} is a folder, not a tuning database file")
        if readonly and not self.path.is_file():
            raise TuningDatabaseError(f"no tuning database at {self.path}")
        if not readonly and (reason := self._unwritable()):
            hint = "; pass readonly=True to read it" if self.path.is_file() else ""
            raise TuningDatabaseError(f"tuning database {self.path} cannot be written: {reason}{hint}")
        with self._errors():
            self._conn = self._connect()
        try:
            with self._errors():
                self._open()
        except BaseException:
            self._conn.close()
            raise

    def _unwritable(self) -> str | None:
        """Why this process cannot write the database (SQLite also creates
        its journal files beside it), or None."""
        folder = self.path.absolute().parent
        if not folder.is_dir():
            return f"its folder {folder} does not exist"
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return "the file is read-only"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"its folder {folder} is read-only"
        return None

    def _connect(self, *, immutable: bool = False) -> sqlite3.Connection:
        # Autocommit (isolation_level=None): each statement outside an
        # explicit BEGIN is its own transaction.
        if not self.readonly:
            return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")
        return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)

    def _open(self) -> None:
        if self.readonly:
            try:
                self._check_schema(create=False)
            except sqlite3.OperationalError as e:
                if e.sqlite_errorcode & 0xFF != sqlite3.SQLITE_CANTOPEN:
                    raise
                self._reopen_immutable()
            return
        # SQLite answers "locked" without waiting where waiting could
        # deadlock (openers racing to switch a new file to WAL), so the
        # whole open is retried until the same deadline as any other wait.
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            try:
                self._create_or_check()
                return
            except sqlite3.OperationalError as e:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if e.sqlite_errorcode & 0xFF not in _BUSY_CODES or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.001, 0.02))

    def _reopen_immutable(self) -> None:
        """Reads a WAL database whose folder SQLite cannot create the
        ``-shm`` index in (read-only; the file may be shared) as immutable:
        without locks or the index. That sees every record when there is no
        write-ahead log, as after every writer closed (the last one merges
        the log into the file and removes it); and no writer has it open,
        since a writer keeps the index while it does."""
        wal = Path(f"{self.path}-wal")
        if wal.exists() and wal.stat().st_size:
            raise TuningDatabaseError(
                f"tuning database {self.path} cannot be read here: its write-ahead log {wal.name} holds records "
                "not yet in the file, and SQLite cannot create its index beside it (the folder is read-only); "
                "open it once where the folder is writable (closing merges the log into the file), or copy "
                "the files to a writable folder")
        self._conn.close()
        self._conn = self._connect(immutable=True)
        self._check_schema(create=False)

    def _create_or_check(self) -> None:
        # The write lock makes check-then-create atomic against other
        # processes creating the same new file; nothing is written to a
        # file that turns out not to be ours.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_schema(create=True)
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        # Persistent in the file, so only its first opener switches it
        # (outside a transaction, as SQLite requires).
        if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._conn.execute("PRAGMA journal_mode=WAL")

    def _check_schema(self, *, create: bool) -> None:
        tables = {name for (name,) in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            if not create:
                raise TuningDatabaseError(f"{self.path} is empty, not a tessel tuning database")
            for statement in _SCHEMA:
                self._conn.execute(statement)
            self._conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?)",
                                   [("format", FORMAT), ("schema_version", str(SCHEMA_VERSION))])
            return
        if "meta" not in tables:
            raise TuningDatabaseError(f"{self.path} is not a tessel tuning database: "
                                      "an SQLite database without a meta table (another program's?)")
        try:
            meta = dict(self._conn.execute("SELECT name, value FROM meta"))
        except sqlite3.OperationalError:  # a meta table of other columns
            meta = {}
        if meta.get("format") != FORMAT:
            raise TuningDatabaseError(f"{self.path} is not a tessel tuning database: its meta table "
                                      f"names format {meta.get('format')!r}, not {FORMAT!r}")
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            newer = version is not None and version.isdigit() and int(version) > SCHEMA_VERSION
            raise TuningDatabaseError(
                f"{self.path} has tuning database schema version {version}; this tessel reads version "
                f"{SCHEMA_VERSION}" + (" (the file was written by a newer tessel)" if newer else ""))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Reports SQLite's errors as TuningDatabaseError naming the file."""
        try:
            yield
        except sqlite3.Error as e:
            raise TuningDatabaseError(f"tuning database {self.path}: {e}") from None

    def add(self, record: Record) -> None:
        """Adds ``record``, committed when this returns."""
        median = record.median if record.error is None else None
        with self._errors():
            self._conn.execute(
                f"INSERT INTO records ({_COLUMNS}, median) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.key, record.device, record.kernel, record.schedule, json.dumps(record.seconds),
                 record.error, record.tessel_version, record.created, median))

    def best(self, key: str, device: str) -> Record | None:
        """The latest record of the fastest schedule for kernel ``key`` on
        ``device`` measured by this tessel version: the schedule whose
        successes have the lowest median of their medians (a schedule
        measured again is judged by all its measurements, not its luckiest,
        and one disturbed run, another process taking the core, does not
        outweigh many; the earliest of equals); None if there is none. A
        ``*`` in ``device`` matches anything (``cuda/sm_90/*``: any GPU of
        that chip)."""
        where, params = _device_clause(device)
        with self._errors():
            rows = self._conn.execute(
                f"SELECT schedule, median, id FROM records WHERE key = ? AND {where} AND tessel_version = ? "
                "AND error IS NULL ORDER BY id", (key, *params, __version__)).fetchall()
            if not rows:
                return None
            runs: dict[str, list[float]] = {}
            latest: dict[str, int] = {}
            for schedule, median, id_ in rows:
                runs.setdefault(schedule, []).append(median)
                latest[schedule] = id_
            fastest = min(runs, key=lambda s: statistics.median(runs[s]))  # dicts keep first-seen order
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM records WHERE id = ?", (latest[fastest],)).fetchone()
        return self._record(row)

    def records(self, key: str | None = None, device: str | None = None) -> list[Record]:
        """Every record (of kernel ``key``, on ``device`` where given, ``*``
        matching anything), in insertion order, of every tessel version."""
        where, params = _device_clause(device) if device is not None else ("1", ())
        with self._errors():
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM records WHERE (? IS NULL OR key = ?) AND {where} ORDER BY id",
                (key, key, *params)).fetchall()
        return [self._record(row) for row in rows]

    def _record(self, row: tuple) -> Record:
        key, device, kernel, schedule, seconds, error, version, created = row
        try:
            return Record(key, device, kernel, schedule, tuple(json.loads(seconds)), error, version, created)
        except (TypeError, ValueError) as e:
            raise TuningDatabaseError(f"tuning database {self.path} holds a malformed record: {e}") from None

    def __len__(self) -> int:
        with self._errors():
            (count,) = self._conn.execute("SELECT count(*) FROM records").fetchone()
        return count

    def close(self) -> None:
        """Closes the file; further use is an error. Closing twice is fine."""
        self._conn.close()

    def __enter__(self) -> TuningDatabase:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TuningDatabase({str(self.path)!r}{', readonly=True' if self.readonly else ''})"
