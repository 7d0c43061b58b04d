"""The tuner: tasks, runners, the search with its cost model, reuse through
``tessel.compile(..., tuning_db=)``, and ``tessel tune``.

Models are small so that a candidate compiles in well under a second; the
database's own crash-safety is tested in test_tuning_db.py.
"""

import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel.tuning import LocalCpuRunner, TuningDatabase, device_key, kernel_keys, tasks, tune
from tessel.tuning.cost_model import CostModel
from tessel.tuning.features import kernel_info, schedule_features
from tessel.tuning.runners import Measurement
from tessel.tuning.search import CONFIRM, CONFIRM_ROUNDS, ENTRY, RECHECKS, _mismatch

RNG = np.random.default_rng(0)
X = RNG.standard_normal((256, 96)).astype(np.float32)
W = (RNG.standard_normal((96, 128)) * 0.1).astype(np.float32)
B = RNG.standard_normal(128).astype(np.float32)


def _model(name="mlp"):
    # Two kernels: a matmul with its epilogue, and a softmax over its rows
    # (256 x 128: two default CPU tiles, so it has a schedule too).
    return tessel.trace(lambda x, w, b: ops.softmax(ops.relu(x @ w + b) * 4.0, axis=-1), X, W, B, name=name)


def _reference():
    h = np.maximum(X @ W + B, 0) * 4.0
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def runner():
    with LocalCpuRunner(min_seconds=0.01, min_runs=2, max_runs=5) as r:
        yield r


def test_tasks_are_one_kernel_each_that_compiles_alone():
    found = tasks(schedules.default_schedules(_model(), "cpu"))
    assert [t.name for t in found] == ["mlp_kernel0", "mlp_kernel1"]
    mm = found[0]
    assert [k.name for k in mm.knobs] == ["split_k", "block_m", "block_n", "block_k", "cache_m", "reg_m", "reg_n", "reg_k"]
    assert mm.is_legal(mm.default)
    # A task module holds one kernel and an entry that calls it.
    exe = tessel.compile(mm.module, entry=ENTRY)
    got = exe(X, W, B)
    np.testing.assert_allclose(got, np.maximum(X @ W + B, 0) * 4.0, rtol=1e-4, atol=1e-4)


def test_a_kernel_whose_name_needs_quotes_is_tuned_and_reused(tmp_path, runner):
    # "linear+relu" is not an MLIR identifier: its symbols print quoted.
    model = tessel.trace(lambda x, w: ops.relu(x @ w), X, W, name="linear+relu")
    db = str(tmp_path / "tune.db")
    [summary] = tessel.tune(model, trials=2, db=db, search="random", runner=runner)
    assert summary.error is None and summary.failures == 0
    exe = tessel.compile(model, tuning_db=db)
    assert exe.tuning == {"linear+relu_kernel0": "database"}
    np.testing.assert_allclose(exe(X, W), np.maximum(X @ W, 0), rtol=1e-4, atol=1e-4)


def test_runner_measures_and_reports_failures_without_stopping(runner):
    task = tasks(schedules.default_schedules(_model(), "cpu"))[0]
    good = task.candidate(task.default).operation.get_asm()
    results = runner.measure([good, "this is not MLIR", good], ENTRY)
    assert results[0].error is None and len(results[0].seconds) >= 2 and all(s > 0 for s in results[0].seconds)
    assert "CompileError" in results[1].error
    assert results[2].error is None and results[2].sample == results[0].sample


def test_runner_replaces_a_worker_that_dies(runner):
    task = tasks(schedules.default_schedules(_model(), "cpu"))[1]
    text = task.candidate(task.default).operation.get_asm()
    runner.measure([text], ENTRY)
    os.kill(runner._processes[0]._process.pid, signal.SIGKILL)
    dead = runner.measure([text], ENTRY)
    assert "killed the worker process" in dead[0].error
    assert runner.measure([text], ENTRY)[0].error is None


def test_a_candidate_whose_outputs_differ_is_a_failure():
    reference = ((1.0, 2.0, 3.0),)
    assert _mismatch(Measurement((1e-3,), ((1.0, 2.0, 3.0001),)), reference) is None
    assert "wrong result: output 0" in _mismatch(Measurement((1e-3,), ((1.0, 2.5, 3.0),)), reference)


def test_cost_model_ranks_by_what_it_learned():
    model = CostModel()
    rng = random.Random(0)
    rows = [{"a": rng.choice([1, 2, 4, 8, 16, 32]), "b": rng.choice([1, 2, 4])} for _ in range(40)]
    assert not model.fit(rows[:3], [1.0] * 3) and not model.trained
    assert model.fit(rows, [0.1 * r["a"] for r in rows])  # time grows with a, not b
    fast, slow, no_b = model.predict([{"a": 1, "b": 2}, {"a": 32, "b": 2}, {"a": 1}])
    assert fast < slow and no_b < slow  # a feature a candidate lacks is missing, not an error


def _features(model, target="cpu", workers=2):
    found = []
    for task in tasks(schedules.default_schedules(model, target)):
        names = [k.name for k in task.knobs]
        info = kernel_info(task)
        found.append((task, info, lambda values, info=info, names=names, **knobs: schedule_features(
            info, names, [knobs.get(n, v) for n, v in zip(names, values)], workers)))
    return found


def test_features_read_the_kernel_and_what_the_knobs_make_of_its_loops():
    [(mm, info, features), (sm, sm_info, _)] = _features(_model())
    # The matmul + epilogue kernel: its root is the 256x128 epilogue, its
    # contraction 256x128x96.
    assert info.loops == (256, 128) and info.reductions == (False, False)
    assert info.contraction == (256, 128, 96) and info.element_bytes == 4
    f = features(mm.default, block_m=64, block_n=96)
    assert f["kernel.m"] == 8 and f["kernel.n"] == 7 and f["kernel.points"] == 15
    assert f["block_m.pieces.log2"] == 2 and f["block_m.pad"] == 0  # 4 row tiles
    assert f["block_n.pieces.log2"] == 1 and f["block_n.pad"] == 0.5  # 2 column tiles of 96: 192 for 128
    assert f["tile.tasks.log2"] == 3 and f["tile.points.log2"] == math.log2(64 * 96)
    assert f["tile.busy"] == 1.0
    # Three tiles keep two workers busy for 3 of 4 task slots.
    assert features(mm.default, block_m=256, block_n=48)["tile.busy"] == 0.75
    assert features(mm.default, block_m=256, block_n=64)["tile.busy"] == 1.0
    assert _features(_model(), workers=3)[0][2](mm.default, block_m=256, block_n=64)["tile.busy"] == 2 / 3
    # The softmax kernel reduces its rows; the knobs differ, and so do the features.
    assert sm_info.contraction is None and "kernel.m" not in _features(_model())[1][2](sm.default)
    # Another shape of the same compute: the same knobs, other features.
    other = tessel.trace(lambda x, w, b: ops.softmax(ops.relu(x @ w + b) * 4.0, axis=-1),
                         X[:100], W, B, name="mlp")
    g = _features(other)[0][2](mm.default, block_m=64, block_n=96)
    assert g["block_m"] == f["block_m"] and g["block_m.pad"] == 128 / 100 - 1 and g["kernel.m"] != f["kernel.m"]


def test_the_cost_model_carries_over_between_kernels():
    # Trained on two matmuls' candidates, where time grows with the padding
    # that block_n adds, it ranks a third matmul's candidates the same way.
    rng = random.Random(0)
    train = []
    for columns in (128, 96):
        [(task, _, features)] = _features(tessel.trace(lambda x, w: x @ w, X, W[:, :columns], name="mm"))
        train += [features(task.default, block_m=rng.choice([32, 64, 128]),
                           block_n=rng.choice([16, 32, 48, 64, 96, 112, 128])) for _ in range(40)]
    model = CostModel()
    model.fit(train, [1.0 + row["block_n.pad"] for row in train])
    [(task, _, features)] = _features(tessel.trace(lambda x, w: x @ w, X, W[:, :100], name="mm"))
    tight, padded = model.predict([features(task.default, block_n=100), features(task.default, block_n=64)])
    assert tight < padded  # 100 columns: no padding; blocks of 64: 128 for 100


@pytest.mark.parametrize("search", ["model", "random"])
def test_tune_records_every_trial_and_compile_reuses_the_best(tmp_path, runner, search):
    db = tmp_path / "tune.db"
    progress = []
    summaries = tessel.tune(_model(), trials=10, db=str(db), search=search, runner=runner, seed=1,
                            progress=lambda *a: progress.append(a))
    assert [s.name for s in summaries] == ["mlp_kernel0", "mlp_kernel1"]
    for s in summaries:
        assert s.error is None and s.failures == 0 and s.trials == len(s.curve) >= 2
        # The best is what a compile takes: where rechecks cannot tell it from the fastest point
        # measured (both within noise of the default, as for a kernel whose default is already at
        # the best point), it may be a little slower than the default.
        assert s.best_seconds <= 1.1 * s.default_seconds
        assert all(a >= b for a, b in zip(s.curve, s.curve[1:]))  # best so far never rises
        assert "loop.schedule @mlp_kernel" in s.best_schedule
    assert progress[-1][-1] is True  # the last report closes the last kernel
    with TuningDatabase(db, readonly=True) as d:
        # Every trial, then the default and the best points measured again,
        # then pairs of points that the database preferred to the winner.
        for s in summaries:
            confirmed = s.trials + CONFIRM_ROUNDS * (1 + min(CONFIRM, s.trials - 1))
            extra = len([r for r in d.records() if r.kernel == s.kernel]) - confirmed
            assert 0 <= extra <= 2 * CONFIRM_ROUNDS * RECHECKS and extra % (2 * CONFIRM_ROUNDS) == 0
        assert {r.device for r in d.records()} == {device_key("cpu")}
        # What a compile takes is what the search reported.
        keys = kernel_keys(schedules.default_schedules(_model(), "cpu"))
        assert [d.best(keys[(s.kernel, None)], device_key("cpu")).schedule for s in summaries] == \
            [s.best_schedule for s in summaries]
    # The same computation in another program (other names) reuses them.
    exe = tessel.compile(_model(name="other"), tuning_db=str(db))
    assert exe.tuning == {"other_kernel0": "database", "other_kernel1": "database"}
    np.testing.assert_allclose(exe(X, W, B), _reference(), rtol=1e-4, atol=1e-6)
    plain = tessel.compile(_model())
    assert plain.tuning == {}


class _LuckyOnceRunner:
    """Times by candidate: the default schedule 1 ms, every other point 0.5
    ms the first time it is measured (a lucky run) and 1.2 ms after."""

    target = "cpu"
    device = "cpu/scripted"

    def __init__(self, default: str) -> None:
        self.default = default
        self.runs: dict[str, int] = {}

    def measure(self, candidates, entry):
        out = []
        for text in candidates:
            self.runs[text] = self.runs.get(text, 0) + 1
            seconds = 1e-3 if text == self.default else 0.5e-3 if self.runs[text] == 1 else 1.2e-3
            out.append(Measurement((seconds,), ((1.0,),)))
        return out

    def close(self) -> None:
        pass


def test_a_lucky_measurement_does_not_outlast_the_confirmation(tmp_path):
    # Every point beats the default once while searching; measured again,
    # all are slower. Both the search and the database must keep the default.
    model = tessel.trace(lambda x, w: x @ w, X, W, name="mm")
    task = tasks(schedules.default_schedules(model, "cpu"))[0]
    default = task.candidate(task.default)
    runner = _LuckyOnceRunner(default.operation.get_asm())
    db = str(tmp_path / "tune.db")
    [summary] = tune(model, trials=6, db=db, search="random", runner=runner)
    assert summary.best_schedule == task.schedule_text(default) and summary.speedup == 1.0
    assert min(summary.curve) == 0.5e-3  # the search saw the lucky runs
    with TuningDatabase(db, readonly=True) as d:
        assert d.best(task.key, runner.device).schedule == summary.best_schedule
        # Each point the database would have taken instead was measured again.
        assert all(n >= 2 for text, n in runner.runs.items() if text != runner.default)


def test_a_second_run_starts_from_the_records_and_measures_new_points(tmp_path, runner):
    db = str(tmp_path / "tune.db")
    def distinct():
        with TuningDatabase(db, readonly=True) as d:
            return {k: {r.schedule for r in d.records() if r.kernel == k} for k in ("mlp_kernel0", "mlp_kernel1")}

    tune(_model(), trials=6, db=db, search="evolution", runner=runner)
    before = distinct()
    again = tune(_model(), trials=6, db=db, search="evolution", runner=runner, seed=2)
    assert all(s.reused >= 5 for s in again)
    # Every trial but the default (each run's baseline) is a new point.
    assert all(len(distinct()[k] - before[k]) == 5 for k in before)


def test_compile_with_a_database_that_has_no_records_uses_the_defaults(tmp_path):
    db = tmp_path / "empty.db"
    TuningDatabase(db).close()
    exe = tessel.compile(_model(), tuning_db=str(db))
    assert exe.tuning == {"mlp_kernel0": "default", "mlp_kernel1": "default"}
    with pytest.raises(tessel.TesselError, match="missing.db"):
        tessel.compile(_model(), tuning_db=str(tmp_path / "missing.db"))


def test_tune_rejects_what_it_cannot_do(tmp_path, runner):
    if not _has_gpu():
        with pytest.raises(tessel.RuntimeError, match="export_batch"):
            tune(_model(), target="sm_90", trials=4, db=str(tmp_path / "t.db"))
    with pytest.raises(tessel.UnsupportedError, match="the runner measures for 'cpu', not 'sm_90'"):
        tune(_model(), target="sm_90", trials=4, db=str(tmp_path / "t.db"), runner=runner)
    with pytest.raises(ValueError, match="trials must be at least 1"):
        tune(_model(), trials=0, db=str(tmp_path / "t.db"))


def _has_gpu():
    try:
        from tessel.runtime.cuda_driver import CudaDriver

        CudaDriver(0)
    except tessel.RuntimeError:
        return False
    return True


def test_tune_for_a_gpu_target_through_the_cuda_runner(tmp_path):
    a = RNG.standard_normal((128, 64)).astype(np.float16)
    w = (RNG.standard_normal((64, 96)) * 0.1).astype(np.float16)
    module = tessel.trace(lambda a, w: ops.relu(a @ w), a, w, name="gemm")
    db = str(tmp_path / "gpu.db")
    # Dry on machines without a GPU: everything but the kernels runs.
    with tessel.tuning.LocalCudaRunner("sm_90", dry=not _has_gpu(), min_runs=2) as cuda:
        summaries = tune(module, target="sm_90", trials=3, db=db, search="random", runner=cuda)
        device = cuda.device
    assert [(s.name, s.trials, s.failures, s.error) for s in summaries] == [("gemm_kernel0", 3, 0, None)]
    with TuningDatabase(db, readonly=True) as d:
        assert {r.device for r in d.records()} == {device}
    assert tessel.compile(module, target="cuda:sm_90", tuning_db=db).tuning == {"gemm_kernel0": "database"}


def _write_model(tmp_path):
    path = tmp_path / "model.mlir"
    path.write_text(str(_model()))
    return path


def test_tessel_tune_command_prints_a_table_and_plots(tmp_path):
    model = _write_model(tmp_path)
    db, plot = tmp_path / "cli.db", tmp_path / "curve.png"
    done = subprocess.run([sys.executable, "-m", "tessel.cli", "tune", str(model), "--trials", "3",
                           "--db", str(db), "--plot", str(plot), "--search", "random"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "speed-up" in done.stdout and "mlp_kernel0" in done.stdout and "mlp_kernel1" in done.stdout
    assert "3/3 trials" in done.stderr  # the progress bar
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = subprocess.run([sys.executable, "-m", "tessel.cli", "tune", str(tmp_path / "nope.mlir"), "--db",
                          str(db)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "tessel tune:" in bad.stderr and "nope.mlir" in bad.stderr


def test_a_tuner_killed_mid_run_leaves_every_finished_record(tmp_path):
    model = _write_model(tmp_path)
    db = tmp_path / "killed.db"
    process = subprocess.Popen([sys.executable, "-m", "tessel.cli", "tune", str(model), "--trials", "200",
                                "--db", str(db), "--search", "random"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        count = 0
        while count < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
            if db.exists():
                try:
                    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
                        count = c.execute("SELECT count(*) FROM records").fetchone()[0]
                except sqlite3.OperationalError:
                    pass  # being created
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the tuner and its workers
        process.wait()
    assert count >= 3
    with TuningDatabase(db, readonly=True) as d:
        records = d.records()
    assert len(records) >= count
    assert all(r.error is None and math.isfinite(r.median) for r in records)


@pytest.mark.parametrize("rows", [128, "m"])
def test_gpu_batch_exports_runs_without_mlir_and_imports(tmp_path, rows):
    # Rows over a size symbol: measured at the largest of its range.
    a = tessel.TensorSpec((rows, 64), np.dtype(np.float16))
    w = (RNG.standard_normal((64, 96)) * 0.1).astype(np.float16)
    module = tessel.trace(lambda a, w: ops.relu(a @ w), a, w, name="gemm",
                          dims={"m": (1, 128)} if rows == "m" else None)
    batch, db = tmp_path / "batch", tmp_path / "gpu.db"
    count = tessel.tuning.export_batch(module, batch, target="sm_90", trials=4, seed=3)
    assert count == 4 and len(list(batch.glob("c*/manifest.json"))) == 4
    # What the GPU machine runs: numpy, cuda-bindings and tessel.runtime;
    # MLIR is blocked to show it is not needed.
    script = ("import sys, runpy; sys.modules['mlir'] = None; "
              f"sys.argv = ['batch', {str(batch)!r}, '--dry']; "
              "runpy.run_module('tessel.runtime.batch', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "measured 4 candidates on dry run" in done.stderr
    summaries = tessel.tuning.import_batch(batch, db)
    assert [(s.name, s.trials, s.failures, s.error) for s in summaries] == [("gemm_kernel0", 4, 0, None)]
    with TuningDatabase(db, readonly=True) as d:
        assert {r.device for r in d.records()} == {"cuda/sm_90/dry run (no device)"}
    # Records of any GPU of the chip serve a compile for it.
    artifact = tessel.compile(module, target="cuda:sm_90", tuning_db=str(db))
    assert artifact.tuning == {"gemm_kernel0": "database"}
    # A second batch starts from the records: no point is proposed twice.
    tessel.tuning.export_batch(module, tmp_path / "next", target="sm_90", trials=4, db=db, seed=3)
    first = {c["schedule"] for c in json.loads((batch / "batch.json").read_text())["candidates"]}
    second = json.loads((tmp_path / "next" / "batch.json").read_text())["candidates"]
    assert second[0]["default"] and not {c["schedule"] for c in second[1:]} & first


def test_a_space_smaller_than_the_trials_stops_early_and_says_so(tmp_path, runner, capsys):
    # A 4 x 16 softmax has one knob (lanes) with three legal values.
    model = tessel.trace(lambda x: ops.softmax(x, axis=-1), tessel.TensorSpec((4, 16), np.float32), name="sm")
    [summary] = tune(model, trials=10, db=str(tmp_path / "t.db"), search="random", runner=runner,
                     progress=tessel.tuning.ProgressBar())
    assert summary.exhausted and summary.trials == 3 and summary.error is None
    err = capsys.readouterr().err
    assert "3/10 trials" in err and "(space exhausted: every legal point measured)" in err
    from tessel.cli import _print_summaries

    _print_summaries([summary])
    assert "sm_kernel0: stopped after 3 trials: every legal point of its space was measured" in capsys.readouterr().out


def test_the_progress_bar_estimates_the_time_left_for_all_kernels(capsys):
    bar = tessel.tuning.ProgressBar()
    bar("first", 0, 4, 8, 8, 1.5, True)  # a quarter of the work done
    bar("last", 3, 4, 8, 8, 1.0, True)  # all of it
    first, last = capsys.readouterr().err.splitlines()
    assert first.startswith("[1/4] first") and "8/8 trials, best 1.50x" in first and first.endswith(" left")
    assert "left" not in last and "exhausted" not in last
