"""Hostile tuning databases and options (issue 34): databases in read-only
folders, records that cannot be applied to their kernel, unknown search
strategies and counts, and SQLite's special file names.

The read-only folder is real: made read-only with chmod, or, for root
(whom permissions do not stop), by a read-only bind mount of it in a
private mount namespace; the reader then runs in a subprocess that sees it
so.
"""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel.tuning import Record, TuningDatabase, TuningDatabaseError, apply_records, device_key, kernel_keys, tune
from tessel.tuning.batch import export_batch

RNG = np.random.default_rng(0)
X = RNG.standard_normal((256, 96)).astype(np.float32)
W = (RNG.standard_normal((96, 128)) * 0.1).astype(np.float32)
B = RNG.standard_normal(128).astype(np.float32)


def _model():
    # Two kernels: a matmul with its epilogue (mlp_kernel0) and a row softmax (mlp_kernel1).
    return tessel.trace(lambda x, w, b: ops.softmax(ops.relu(x @ w + b) * 4.0, axis=-1), X, W, B, name="mlp")


def _reference():
    h = np.maximum(X @ W + B, 0) * 4.0
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _schedule(module, kernel):
    (op,) = [op for op in module.body.operations
             if op.operation.name == "loop.schedule" and str(op.attributes["kernel"]) == f"@{kernel}"]
    return str(op)


def _records(path, schedules_by_kernel):
    """A database at ``path`` with one record per kernel, for this CPU."""
    scheduled = schedules.default_schedules(_model(), "cpu")
    keys = kernel_keys(scheduled)
    with TuningDatabase(path) as db:
        for kernel, text in schedules_by_kernel.items():
            db.add(Record(keys[(kernel, None)], device_key("cpu"), kernel, text, (1e-3,)))


def _tuned_softmax():
    """mlp_kernel1's schedule with another legal row tile."""
    scheduled = schedules.default_schedules(_model(), "cpu")
    return _schedule(schedules.with_knobs(scheduled, {("mlp_kernel1", None, "tile_0"): 64}), "mlp_kernel1")


# --- 5. databases in read-only folders --------------------------------------

READER = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import tessel
    from tessel import ops
    from tessel.tuning import TuningDatabase
    path, x, w, b = sys.argv[1], *(np.load(p) for p in sys.argv[2:5])
    seen = {}
    for readonly in (True, False):
        try:
            with TuningDatabase(path, readonly=readonly) as db:
                seen[str(readonly)] = len(db.records())
        except tessel.TesselError as e:
            seen[str(readonly)] = f"{type(e).__name__}: {e}"
    module = tessel.trace(lambda x, w, b: ops.softmax(ops.relu(x @ w + b) * 4.0, axis=-1), x, w, b, name="mlp")
    try:
        exe = tessel.compile(module, tuning_db=path)
        seen["compile"] = exe.tuning
        np.save(sys.argv[5], exe(x, w, b))
    except tessel.TesselError as e:
        seen["compile"] = f"{type(e).__name__}: {e}"
    print(json.dumps(seen))
""")


@contextmanager
def _read_only(folder):
    """A command prefix under which ``folder`` (and what is in it) cannot be written."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for path, mode in modes.items():
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            yield []
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    if shutil.which("unshare") is None:
        pytest.skip("root ignores permissions, and there is no unshare for a read-only mount")
    prefix = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && '
              'exec "$@"', str(folder)]
    if subprocess.run(prefix + ["true"], capture_output=True).returncode != 0:
        pytest.skip("root ignores permissions, and this machine allows no read-only bind mount")
    yield prefix


def _read_in_read_only_folder(tmp_path, folder):
    arrays = []
    for name, value in (("x", X), ("w", W), ("b", B)):
        arrays.append(str(tmp_path / f"{name}.npy"))
        np.save(arrays[-1], value)
    out = tmp_path / "out.npy"
    with _read_only(folder) as prefix:
        done = subprocess.run(prefix + [sys.executable, "-c", READER, str(folder / "tune.db"), *arrays, str(out)],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


def test_a_database_in_a_read_only_folder_is_read_and_used_by_compiles(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    _records(folder / "tune.db", {"mlp_kernel1": _tuned_softmax()})
    assert sorted(p.name for p in folder.iterdir()) == ["tune.db"]  # closed: the log is merged
    seen, out = _read_in_read_only_folder(tmp_path, folder)
    assert seen["True"] == 1
    assert "cannot be written: " in seen["False"] and "pass readonly=True to read it" in seen["False"]
    assert seen["compile"] == {"mlp_kernel0": "default", "mlp_kernel1": "database"}
    np.testing.assert_allclose(np.load(out), _reference(), rtol=1e-4, atol=1e-6)
    assert sorted(p.name for p in folder.iterdir()) == ["tune.db"]  # nothing written


WRITER = textwrap.dedent("""
    import os, sys
    from tessel.tuning import Record, TuningDatabase
    db = TuningDatabase(sys.argv[1])
    db.add(Record("k", "cpu/test/2 cores", "f_kernel0", "loop.schedule ...", (1.0,)))
    os.kill(os.getpid(), 9)  # the log and its index stay behind
""")


@pytest.mark.parametrize("index", ["kept", "lost"])
def test_a_killed_writers_log_in_a_read_only_folder(tmp_path, index):
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "tune.db"
    done = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert (folder / "tune.db-wal").stat().st_size > 0
    if index == "lost":
        (folder / "tune.db-shm").unlink()
    seen, _ = _read_in_read_only_folder(tmp_path, folder)
    if index == "kept":  # SQLite reads the log through its index
        assert seen["True"] == 1
    else:  # the log holds the record, and no index can be made for it: said so, not read as empty
        assert seen["True"].startswith(f"TuningDatabaseError: tuning database {path} cannot be read here: its "
                                       "write-ahead log tune.db-wal holds records")


def test_sqlites_special_names_are_not_databases(tmp_path):
    for name in (":memory:", ""):
        for readonly in (False, True):
            with pytest.raises(ValueError, match="a tuning database is a file: pass a file path"):
                TuningDatabase(name, readonly=readonly)
    with pytest.raises(ValueError, match="a tuning database is a file"):
        tessel.compile(_model(), tuning_db=":memory:")
    with pytest.raises(ValueError, match="a tuning database is a file"):
        tune(_model(), trials=2, db=":memory:", search="random")
    with pytest.raises(TuningDatabaseError, match=f"{tmp_path} is a folder, not a tuning database file"):
        TuningDatabase(tmp_path)
    with pytest.raises(TuningDatabaseError, match="its folder .*missing does not exist$"):
        TuningDatabase(tmp_path / "missing" / "tune.db")


# --- 6. a record that cannot be applied keeps the default schedule ---------

def _bad_schedules():
    scheduled = schedules.default_schedules(_model(), "cpu")
    softmax, matmul = _schedule(scheduled, "mlp_kernel1"), _schedule(scheduled, "mlp_kernel0")
    return {
        "a tile of another rank": (softmax.replace("loop.tile [%tile_0, 0]", "loop.tile [%tile_0, 0, 4]"),
                                   "has 3 sizes but the kernel's root has 2 loops"),
        "another kernel's schedule": (matmul.replace("@mlp_kernel0", "@mlp_kernel1"), "contractions"),
        "a knob outside its choices": (softmax.replace('"tile_0" = 128', '"tile_0" = 100'),
                                       "does not parse: .*outside its domain"),
        "not a schedule": ("func.func private @other()", "does not parse: the text is not one loop.schedule"),
    }


@pytest.mark.parametrize("case", sorted(_bad_schedules()))
def test_a_record_that_cannot_be_applied_is_skipped_with_a_warning(tmp_path, case):
    text, reason = _bad_schedules()[case]
    path = tmp_path / "tune.db"
    scheduled = schedules.default_schedules(_model(), "cpu")
    tuned_matmul = _schedule(schedules.with_knobs(scheduled, {("mlp_kernel0", None, "block_n"): 64}), "mlp_kernel0")
    _records(path, {"mlp_kernel1": text, "mlp_kernel0": tuned_matmul})
    warning = (f"tuning database {path}: the best record for kernel mlp_kernel1 on .* cannot be applied "
               f"\\(.*{reason}.*\\); it keeps its default schedule")
    with pytest.warns(UserWarning, match=warning):
        exe = tessel.compile(_model(), tuning_db=path)
    # The other kernel's record still applies.
    assert exe.tuning == {"mlp_kernel0": "database", "mlp_kernel1": "default"}
    np.testing.assert_allclose(exe(X, W, B), _reference(), rtol=1e-4, atol=1e-6)
    with TuningDatabase(path, readonly=True) as db, pytest.warns(UserWarning, match=warning):
        result, used = apply_records(scheduled, db, device_key("cpu"))
    assert used[("mlp_kernel1", None)] is None and used[("mlp_kernel0", None)] is not None
    assert _schedule(result, "mlp_kernel1") == _schedule(scheduled, "mlp_kernel1")


# --- 7. tune's options are checked before any work -------------------------

@pytest.mark.parametrize("options, error, message", [
    ({"search": "bogus"}, ValueError, "unknown search 'bogus'; the strategies are 'model', 'evolution', 'random'"),
    ({"search": None}, ValueError, "unknown search None"),
    ({"trials": 0}, ValueError, "trials must be at least 1, got 0"),
    ({"trials": -3}, ValueError, "trials must be at least 1, got -3"),
    ({"trials": 2.5}, ValueError, "trials must be an integer, got 2.5"),
    ({"trials": True}, ValueError, "trials must be an integer, got True"),
    ({"seed": "7"}, ValueError, "seed must be an integer, got '7'"),
    ({"progress": 5}, ValueError, "progress must be a callable or None, got 5"),
    ({"plot": 5}, ValueError, "plot must be a file path, got 5"),
    ({"plot": "/nonexistent/curves.png"}, ValueError, "the folder /nonexistent does not exist"),
    ({"target": "bogus"}, tessel.UnsupportedError, "unknown tuning target 'bogus'"),
])
def test_tune_rejects_bad_options_before_any_work(tmp_path, options, error, message):
    path = tmp_path / "tune.db"
    with pytest.raises(error, match=message.replace("(", "\\(").replace(")", "\\)")):
        tune(_model(), **{"trials": 2, "db": str(path), **options})
    assert not path.exists()  # failed before opening the database, let alone measuring


def test_export_batch_checks_its_counts(tmp_path):
    for options, message in (({"trials": 0}, "trials must be at least 1"), ({"seed": 1.5}, "seed must be an integer")):
        with pytest.raises(ValueError, match=message):
            export_batch(_model(), tmp_path / "batch", **options)
    assert not (tmp_path / "batch").exists()
