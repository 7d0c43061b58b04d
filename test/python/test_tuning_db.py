"""The tuning database: records, crash safety, concurrent writers, bad
files, kernel keys that survive renaming, and applying records to a module."""

import math
import os
import random
import signal
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel.tuning import (Record, TuningDatabase, TuningDatabaseError, apply_records, device_key,
                           kernel_keys)

DEVICE = "cpu/test/2 cores"


def _record(key="k", seconds=(1.0,), **fields):
    fields = {"device": DEVICE, "kernel": "f_kernel0", "schedule": "loop.schedule ...", **fields}
    return Record(key=key, seconds=seconds, **fields)


def test_records_round_trip_in_insertion_order(tmp_path):
    path = tmp_path / "tune.db"
    added = [_record("a", (3.0, 1.0, 2.0), created=1.5), _record("b", (), error="ptxas: out of registers"),
             _record("a", (0.5,), device="cuda/sm_90/any", tessel_version="0.0.1")]
    with TuningDatabase(path) as db:
        for record in added:
            db.add(record)
        assert len(db) == 3
    with TuningDatabase(path, readonly=True) as db:
        assert db.records() == added
        assert db.records(key="a") == [added[0], added[2]]
        assert db.records(device=DEVICE) == added[:2]
        assert db.records(key="a", device=DEVICE) == [added[0]]
        with pytest.raises(TuningDatabaseError, match="readonly"):
            db.add(added[0])


def test_record_median_spread_and_checks():
    assert _record(seconds=(3.0, 1.0, 2.0)).median == 2.0
    assert _record(seconds=(3.0, 1.0, 2.0)).spread == 1.0
    assert _record(seconds=[2.0]).seconds == (2.0,) and _record(seconds=[2.0]).spread == 0.0
    failed = _record(seconds=(), error="does not validate")
    assert failed.median == math.inf and failed.spread == math.inf
    for bad in ({"seconds": ()}, {"seconds": (1.0, 0.0)}, {"seconds": (math.nan,)}, {"error": ""}):
        with pytest.raises(ValueError):
            _record(**bad)


def test_best_is_the_fastest_success_on_the_device_by_this_version(tmp_path):
    with TuningDatabase(tmp_path / "tune.db") as db:
        assert db.best("k", DEVICE) is None
        db.add(_record(seconds=(), error="crashed"))
        assert db.best("k", DEVICE) is None  # failures never count
        db.add(_record(seconds=(2.0, 2.0, 9.0), kernel="slow", schedule="s1"))
        db.add(_record(seconds=(1.0, 1.5, 1.2), kernel="fast", schedule="s2"))
        db.add(_record(seconds=(1.2, 0.9, 5.0), kernel="same median, later", schedule="s3"))
        db.add(_record(seconds=(0.1,), device="cuda/sm_90/any", kernel="other device", schedule="s4"))
        db.add(_record(seconds=(0.1,), tessel_version="0.0.1", kernel="other version", schedule="s5"))
        db.add(_record("other key", seconds=(0.1,), kernel="other kernel", schedule="s6"))
        assert db.best("k", DEVICE).kernel == "fast"
        assert db.best("k", "cuda/sm_90/any").kernel == "other device"
        assert db.best("k", "cuda/sm_80/any") is None
        # A pattern matches any GPU of a chip.
        assert db.best("k", "cuda/sm_90/*").kernel == "other device"


def test_best_judges_a_schedule_by_all_its_measurements(tmp_path):
    with TuningDatabase(tmp_path / "tune.db") as db:
        db.add(_record(seconds=(0.5,), kernel="lucky once", schedule="lucky"))
        db.add(_record(seconds=(1.2,), kernel="steady", schedule="steady"))
        assert db.best("k", DEVICE).schedule == "lucky"
        db.add(_record(seconds=(3.0,), kernel="lucky measured again", schedule="lucky"))
        assert db.best("k", DEVICE).schedule == "steady"  # lucky's median is 1.75


def test_one_disturbed_run_does_not_outweigh_many(tmp_path):
    # Another process took the core during one run of the fast schedule: an
    # average of the runs would prefer the slower one.
    with TuningDatabase(tmp_path / "tune.db") as db:
        for seconds in (1.0, 1.0, 50.0, 1.0, 1.0):
            db.add(_record(seconds=(seconds,), kernel="fast", schedule="fast"))
        for _ in range(5):
            db.add(_record(seconds=(1.2,), kernel="slower", schedule="slower"))
        assert db.best("k", DEVICE).schedule == "fast"


# Adds records forever, printing the index of each once its add returned.
_ADD_FOREVER = """
import itertools, sys
from tessel.tuning import Record, TuningDatabase
with TuningDatabase(sys.argv[1]) as db:
    for i in itertools.count():
        db.add(Record(f"key{i % 5}", "cpu/test", f"kernel{i}", "x" * (i % 4000), (1e-3 * (i + 1),)))
        print(i, flush=True)
"""


def test_a_killed_writer_leaves_every_committed_record(tmp_path):
    path = tmp_path / "tune.db"
    child = subprocess.Popen([sys.executable, "-c", _ADD_FOREVER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        reported = [int(child.stdout.readline()) for _ in range(200)]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL and reported == list(range(200))
    for readonly in (True, False):
        with TuningDatabase(path, readonly=readonly) as db:
            records = db.records()
            assert len(records) >= 200 and len(db) == len(records)
            assert [r.kernel for r in records] == [f"kernel{i}" for i in range(len(records))]
            assert records[150] == Record("key0", "cpu/test", "kernel150", "x" * 150, (0.151,),
                                          created=records[150].created)


# Waits for a go file, then adds argv[4] records of key argv[3].
_ADD_AT_ONCE = """
import os, sys, time
from tessel.tuning import Record, TuningDatabase
path, go, key, count = sys.argv[1:]
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
with TuningDatabase(path) as db:
    for i in range(int(count)):
        db.add(Record(key, "cpu/test", f"kernel{i}", "schedule", (1.0,)))
"""


def test_concurrent_writers_all_get_their_records_in(tmp_path):
    path, go = tmp_path / "tune.db", tmp_path / "go"
    # The database does not exist yet: the writers also race to create it.
    children = [subprocess.Popen([sys.executable, "-c", _ADD_AT_ONCE, str(path), str(go), f"p{n}", "100"],
                                 stdout=subprocess.PIPE, text=True) for n in range(4)]
    for child in children:
        assert child.stdout.readline() == "ready\n"
    go.touch()
    for child in children:
        child.stdout.close()
        assert child.wait(timeout=60) == 0
    with TuningDatabase(path) as db:
        assert len(db) == 400
        for n in range(4):
            assert [r.kernel for r in db.records(key=f"p{n}")] == [f"kernel{i}" for i in range(100)]


def _valid_database(path):
    with TuningDatabase(path) as db:
        for i in range(300):
            db.add(_record(f"key{i}", schedule="s" * 500))


def _truncated(path):
    _valid_database(path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def _foreign(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("INSERT INTO users VALUES ('ada')")
    conn.close()


def _foreign_meta(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (name TEXT, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('format', 'someone-else')")
    conn.close()


def _newer(path):
    _valid_database(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    conn.close()


BAD_FILES = {
    "random bytes": (lambda p: p.write_bytes(random.Random(0).randbytes(8192)), "file is not a database"),
    "text": (lambda p: p.write_text("block_m = 128\n" * 100), "file is not a database"),
    "truncated": (_truncated, "malformed"),
    "foreign sqlite": (_foreign, "without a meta table"),
    "foreign meta": (_foreign_meta, "names format 'someone-else'"),
    "newer schema": (_newer, "schema version 2; this tessel reads version 1 .*newer tessel"),
}


@pytest.mark.parametrize("readonly", [False, True], ids=["rw", "ro"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_are_clear_errors_and_left_alone(tmp_path, case, readonly):
    path = tmp_path / "tune.db"
    make, message = BAD_FILES[case]
    make(path)
    before = path.read_bytes()
    with pytest.raises(TuningDatabaseError, match=message) as error:
        TuningDatabase(path, readonly=readonly)
    assert str(path) in str(error.value)
    assert path.read_bytes() == before


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TuningDatabaseError, match=f"no tuning database at {tmp_path / 'missing.db'}"):
        TuningDatabase(tmp_path / "missing.db", readonly=True)
    assert not (tmp_path / "missing.db").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(TuningDatabaseError, match=f"{empty} is empty"):
        TuningDatabase(empty, readonly=True)
    with TuningDatabase(empty) as db:  # an empty file is a new database
        assert len(db) == 0
    with TuningDatabase(empty, readonly=True) as db:
        assert db.records() == []


def test_device_keys():
    cpu = device_key("cpu")
    assert cpu.startswith("cpu/") and cpu.endswith(f"/{os.cpu_count()} cores")
    assert device_key("sm_90") == "cuda/sm_90/any"
    assert device_key("sm_80", gpu_name="NVIDIA A100-SXM4-80GB") == "cuda/sm_80/NVIDIA A100-SXM4-80GB"
    with pytest.raises(tessel.UnsupportedError, match="unknown tuning target 'sm_70'"):
        device_key("sm_70")


def _args(m=64, k=32, n=64, dtype=np.float16):
    return [np.zeros(s, dtype) for s in ((m, k), (k, n), (n,))]


def _bias_relu(a, w, b):
    return ops.relu(a @ w + b)


def _alone(**shape):
    return schedules.default_schedules(tessel.trace(_bias_relu, *_args(**shape), name="alone"), "sm_90")


def _in_a_program():
    """The same computation as the second kernel of another program."""
    def program(x, a, w, b):
        return ops.softmax(x, axis=-1), ops.relu(a @ w + b)  # other locations than _bias_relu's

    x = np.zeros((16, 512), np.float32)
    return schedules.default_schedules(tessel.trace(program, x, *_args(), name="program"), "sm_90")


def test_kernel_keys_depend_on_the_compute_only():
    alone, program = _alone(), _in_a_program()
    text = str(alone)
    keys = kernel_keys(alone)
    assert str(alone) == text  # not modified
    other = kernel_keys(program)
    assert list(keys) == [("alone_kernel0", None)]
    assert list(other) == [("program_kernel0", None), ("program_kernel1", None)]
    assert keys[("alone_kernel0", None)] == other[("program_kernel1", None)]
    assert keys[("alone_kernel0", None)] != other[("program_kernel0", None)]
    changed = [_alone(m=128), _alone(n=32), _alone(dtype=np.float32),
               schedules.default_schedules(tessel.trace(lambda a, w, b: ops.gelu(a @ w + b), *_args(),
                                                        name="alone"), "sm_90")]
    assert len({keys[("alone_kernel0", None)]} | {kernel_keys(m)[("alone_kernel0", None)] for m in changed}) == 5


def _schedule_text(module, kernel):
    (op,) = [op for op in module.body.operations
             if op.operation.name == "loop.schedule" and str(op.attributes["kernel"]) == f"@{kernel}"]
    return str(op)


def test_apply_records_uses_the_best_record_of_each_kernel(tmp_path):
    alone, program = _alone(), _in_a_program()
    key = kernel_keys(alone)[("alone_kernel0", None)]
    tuned = schedules.with_knobs(alone, {("alone_kernel0", None, "stages"): 2})
    program_text = str(program)
    with TuningDatabase(tmp_path / "tune.db") as db:
        record = _record(key, (1.0,), kernel="alone_kernel0", schedule=_schedule_text(tuned, "alone_kernel0"))
        db.add(record)
        # Worse, or for another device: not used.
        db.add(_record(key, (2.0,), kernel="alone_kernel0", schedule=_schedule_text(alone, "alone_kernel0")))
        db.add(_record(key, (0.5,), device="cuda/sm_90/any", kernel="alone_kernel0", schedule="junk"))
        result, used = apply_records(program, db, DEVICE)
    assert str(program) == program_text  # not modified
    assert used == {("program_kernel0", None): None, ("program_kernel1", None): record}
    values = {k.key: k.value for k in schedules.knobs(result)}
    assert values[("program_kernel1", None, "stages")] == 2
    assert values == {**{k.key: k.value for k in schedules.knobs(program)}, ("program_kernel1", None, "stages"): 2}
    assert _schedule_text(result, "program_kernel0") == _schedule_text(program, "program_kernel0")
    artifact = tessel.compile(result, target="cuda:sm_90")
    assert all(k.ptxas["registers"] > 0 for k in artifact.kernels)


@pytest.mark.parametrize("schedule", [
    'loop.schedule @alone_kernel0 target "sm_90" {\n  loop.frobnicate [1, 2]\n}',  # another loop dialect
    "not mlir at all {",
    "func.func private @alone_kernel0()",  # parses, but is no schedule
    None,  # a schedule for sm_80, not the module's sm_90
])
def test_apply_records_keeps_the_default_when_a_record_does_not_fit(tmp_path, schedule):
    alone = _alone()
    if schedule is None:
        sm80 = schedules.default_schedules(tessel.trace(_bias_relu, *_args(), name="alone"), "sm_80")
        schedule = _schedule_text(sm80, "alone_kernel0")
    with TuningDatabase(tmp_path / "tune.db") as db:
        db.add(_record(kernel_keys(alone)[("alone_kernel0", None)], kernel="alone_kernel0", schedule=schedule))
        with pytest.warns(UserWarning, match="cannot be applied.*it keeps its default schedule"):
            result, used = apply_records(alone, db, DEVICE)
    assert used == {("alone_kernel0", None): None}
    assert str(result) == str(alone)
