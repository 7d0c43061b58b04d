"""Hostile inputs (issue 34) to the CPU executable, the compilers and the
tuning-batch importer: odd argument arrays are taken as numpy reads them,
a CUDA constant of every dtype survives a save (one that is not dense is
refused), text MLIR cannot read and modules the JIT cannot emit are
CompileErrors, and a malformed batch is a ValueError naming the file and
the field."""

import copy
import json
import textwrap
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import tessel
from tessel import ops, runtime
from tessel.runtime.batch import BATCH_FORMAT

RNG = np.random.default_rng(34)
BF16 = np.dtype(ml_dtypes.bfloat16)
# Bytes of a numpy bool array: any nonzero byte is True to numpy.
BOOL_BYTES = np.array([[2, 0, 1, 255, 0, 4, 1, 0], [128, 1, 0, 3, 7, 0, 0, 1]], np.uint8)


# --- the CPU executable: another byte order is converted, any nonzero bool byte is True

@pytest.fixture(scope="module")
def masked():
    module = tessel.trace(lambda x, b: (ops.where(b, x, -1.0), ops.where(b, 1.0, 0.0) * x),
                          tessel.TensorSpec((2, 8), np.float32), tessel.TensorSpec((2, 8), np.bool_), name="masked")
    return tessel.compile(module)


def test_cpu_reads_odd_bool_bytes_as_numpy_does(masked):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    b = BOOL_BYTES.view(np.bool_)
    want = np.where(BOOL_BYTES != 0, x, -1.0), np.where(BOOL_BYTES != 0, x, 0.0)
    for mask in (b, np.asfortranarray(b), np.repeat(BOOL_BYTES, 2, axis=1).view(np.bool_)[:, ::2]):
        for got, expected in zip(masked(x, mask), want):
            np.testing.assert_array_equal(got, expected)
    assert BOOL_BYTES.tolist() == np.asarray(b).view(np.uint8).tolist(), "the caller's array is left as it was"


def test_cpu_converts_the_other_byte_order_and_names_it_when_wrong(masked):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    b = BOOL_BYTES != 0
    for got, expected in zip(masked(x.astype(">f4"), b), masked(x, b)):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match=r"masked: argument 0 must be float32\[2, 8\], got big-endian int32\[2, 8\]"):
        masked(x.astype(">i4"), b)
    with pytest.raises(ValueError, match=r"argument 1 must be bool\[2, 8\], got uint8\[2, 8\]"):
        masked(x, BOOL_BYTES)
    with pytest.raises(ValueError, match=r"argument 0 must be float32\[2, 8\], got float32\[8, 2\]"):
        masked(x.T, b)


# --- CUDA constants of every dtype are extracted, saved, loaded and run

def _bf16_words_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_bf16_constant_compiles_saves_loads_and_runs(tmp_path):
    c = RNG.standard_normal((32, 64)).astype(BF16)
    half = np.full((32, 64), 0.5, BF16)
    # The returned constant stays a splat memref.global; the product's is a full array.
    module = tessel.trace(lambda x: (x * c, ops.relu(half)), tessel.TensorSpec((32, 64), BF16), name="bf16")
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert sorted((v.dtype, v.shape) for v in artifact.constants.values()) == [(BF16, (32, 64))] * 2
    x = RNG.standard_normal((32, 64)).astype(BF16)
    # bf16 products rounded once, as numpy computes them in float32 and rounds.
    want = (x.astype(np.float32) * c.astype(np.float32)).astype(BF16)
    for executable in (runtime.load(artifact.save(tmp_path / "bf16"), emulate=True), artifact.emulate()):
        product, returned = executable(x)
        _bf16_words_equal(product, want)
        _bf16_words_equal(returned, half)
    saved = runtime.read(tmp_path / "bf16")
    values = [saved.constant(b) for b in saved.buffers if b.kind == "constant"]
    assert any(np.array_equal(v.view(np.uint16), c.view(np.uint16)) for v in values)


def test_f16_and_bool_constants_compile_and_run():
    mask = RNG.random((8, 8)) > 0.5
    w = RNG.standard_normal((8, 8)).astype(np.float16)
    module = tessel.trace(lambda x: ops.where(mask, x * w, 0.0), tessel.TensorSpec((8, 8), np.float16), name="h")
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert sorted(v.dtype.name for v in artifact.constants.values()) == ["float16", "int8"]
    x = RNG.standard_normal((8, 8)).astype(np.float16)
    np.testing.assert_array_equal(artifact.emulate()(x), np.where(mask, x * w, 0))


# A resource constant in upstream's arith (graph.constant takes dense values
# only): the backends meet it after lowering.
RESOURCE_CONSTANT = textwrap.dedent("""
    module {
      func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
        %0 = arith.constant dense_resource<blob> : tensor<2x4xf32>
        %1 = graph.mul %x, %0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
        return %1 : tensor<2x4xf32>
      }
    }
""")


def test_a_rank_0_graph_resource_constant_is_refused_by_the_verifier():
    # It reached UNREACHABLE in upstream's MemRefToLLVM.
    with pytest.raises(tessel.CompileError, match="a rank-0 dense_resource constant is not supported"):
        tessel.parse("func.func @f() -> tensor<f32> {\n  %0 = graph.constant dense_resource<blob> : tensor<f32>\n"
                     "  return %0 : tensor<f32>\n}")


def test_a_constant_that_is_not_dense_is_unsupported_for_cuda():
    blob = "0x04000000" + np.arange(8, dtype=np.float32).tobytes().hex()
    module = tessel.parse(RESOURCE_CONSTANT + f'{{-# dialect_resources: {{ builtin: {{ blob: "{blob}" }} }} #-}}')
    with pytest.raises(tessel.UnsupportedError, match="has initial value dense_resource<blob.*dense constants only"):
        tessel.compile(module, target="cuda:sm_90")


# --- compiler front and back: errors of MLIR's parser and JIT are CompileErrors

def test_a_constant_the_jit_cannot_emit_is_a_compile_error():
    with pytest.raises(tessel.CompileError, match="(?s)cannot make machine code for @f.*resource does not exist"):
        tessel.compile(tessel.parse(RESOURCE_CONSTANT))  # no blob of that name


def test_text_that_is_not_unicode_is_a_compile_error():
    with pytest.raises(tessel.CompileError, match=r"<input>:2:4: error: '\\udcff' is not a Unicode character"):
        tessel.parse("module {\n  @\udcff\n}")


# --- tessel.tuning.import_batch: malformed batches name the file and the field

def _valid_batch() -> tuple[dict[str, Any], dict[str, Any]]:
    """A batch.json and results.json as export_batch and the GPU machine
    write them: a kernel's default and two other candidates, one of which
    failed on the GPU."""
    def candidate(n: int, error: str | None = None) -> dict[str, Any]:
        return {"id": f"c{n:04d}", "kernel": "k_kernel0", "result": None, "key": "ab" * 32, "default": n == 0,
                "schedule": f"loop.schedule @k_kernel0 tile {n}", "error": error}

    batch = {"format": BATCH_FORMAT, "target": "sm_90", "tessel_version": tessel.__version__,
             "candidates": [candidate(0), candidate(1), candidate(2), candidate(3, "CompileError: no")]}
    results = {"format": BATCH_FORMAT + "-results", "target": "sm_90", "device": "NVIDIA H200", "dry": False,
               "results": {"c0000": {"seconds": [2e-3, 2.1e-3], "sample": [[1.0, -2.5, 3]]},
                           "c0001": {"seconds": [1e-3], "sample": [[1.0, -2.5, 3.0]]},
                           "c0002": {"error": "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"}}}
    return batch, results


def _write_batch(directory: Path, batch: Any, results: Any) -> Path:
    directory.mkdir()
    for name, data in (("batch.json", batch), ("results.json", results)):
        (directory / name).write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return directory


def test_a_valid_batch_imports(tmp_path):
    batch, results = _valid_batch()
    (summary,) = tessel.tuning.import_batch(_write_batch(tmp_path / "b", batch, results), tmp_path / "t.db")
    assert (summary.trials, summary.failures, summary.error) == (4, 2, None)
    assert summary.best_schedule.endswith("tile 1") and summary.best_seconds == 1e-3
    with tessel.tuning.TuningDatabase(tmp_path / "t.db", readonly=True) as db:
        assert {r.device for r in db.records()} == {"cuda/sm_90/NVIDIA H200"}


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """An edit setting the field at dotted ``path`` (list indices as numbers)."""
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]

    def edit(data: dict) -> None:
        for key in parents:
            data = data[key]
        data[last] = value
    return edit


def _delete(path: str) -> Callable[[dict], None]:
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]

    def edit(data: dict) -> None:
        for key in parents:
            data = data[key]
        del data[last]
    return edit


# (file, edit of its JSON data or its whole bytes, what the message says after "FILE: ")
MALFORMED = [
    ("batch.json", b"{\"format\": ", "not a tessel tuning batch (JSONDecodeError"),
    ("batch.json", b"\xff\xfe{}", "not a tessel tuning batch (UnicodeDecodeError"),
    ("batch.json", b"[" * 100_000, "not a tessel tuning batch (RecursionError"),
    ("batch.json", b"[1]", "not a tessel tuning batch (a JSON list, not an object)"),
    ("batch.json", _delete("target"), "the file has no 'target'"),
    ("batch.json", _set("target", "sm_00"), "target must be one of sm_"),
    ("batch.json", _set("candidates", {"c0000": {}}), "candidates must be a list, not {'c0000': {}}"),
    ("batch.json", _set("candidates.1", "c0001"), "candidates[1] must be an object, not 'c0001'"),
    ("batch.json", _delete("candidates.0.key"), "candidates[0] has no 'key'"),
    ("batch.json", _set("candidates.0.id", 7), "candidates[0].id must be a string, not 7"),
    ("batch.json", _set("candidates.2.result", True), "candidates[2].result must be an integer or null, not True"),
    ("batch.json", _set("candidates.2.result", "0"), "candidates[2].result must be an integer or null, not '0'"),
    ("batch.json", _set("candidates.1.default", 1), "candidates[1].default must be true or false, not 1"),
    ("batch.json", _set("candidates.1.schedule", None), "candidates[1].schedule must be a string, not None"),
    ("batch.json", _set("candidates.1.error", ""), "candidates[1].error must be null or a message, not ''"),
    ("batch.json", _set("candidates.3.id", "c0000"), "candidates[3].id 'c0000' is candidates[0]'s"),
    ("results.json", b"", "not the results of a tessel tuning batch (JSONDecodeError"),
    ("results.json", b"null", "not the results of a tessel tuning batch (a JSON NoneType, not an object)"),
    ("results.json", _set("target", "sm_80"), "results for target 'sm_80', the batch is for sm_90"),
    ("results.json", _set("device", ["H200"]), "device must be a string, not ['H200']"),
    ("results.json", _set("results", [1]), "results must be an object, not [1]"),
    ("results.json", _set("results.c0000", 3), "results['c0000'] must be an object, not 3"),
    ("results.json", _delete("results.c0000.sample"), "results['c0000'] has no 'sample'"),
    ("results.json", _set("results.c0000.seconds", "2e-3"), "results['c0000'].seconds must be a list, not '2e-3'"),
    ("results.json", _set("results.c0000.seconds", []), "results['c0000'].seconds must be positive, finite times"),
    ("results.json", _set("results.c0000.seconds", [0.0]), "results['c0000'].seconds must be positive, finite"),
    ("results.json", _set("results.c0000.seconds", [-1]), "results['c0000'].seconds must be positive, finite"),
    ("results.json", _set("results.c0000.seconds", [float("inf")]), "results['c0000'].seconds must be positive"),
    ("results.json", _set("results.c0000.seconds", [True]), "results['c0000'].seconds must be a list of numbers"),
    ("results.json", _set("results.c0000.sample", 3), "results['c0000'].sample must be a list, not 3"),
    ("results.json", _set("results.c0000.sample", [[1.0, "x"]]),
     "results['c0000'].sample[0] must be a list of numbers, not [1.0, 'x']"),
    ("results.json", _set("results.c0000.sample", [1.0]), "results['c0000'].sample[0] must be a list of numbers"),
    ("results.json", _set("results.c0002.error", 5), "results['c0002'].error must be a string, not 5"),
    ("results.json", _set("results.c0002.error", ""), "results['c0002'].error must be a message, not ''"),
]


@pytest.mark.parametrize("file, edit, message", MALFORMED, ids=[f"{f}: {m[:40]}" for f, _, m in MALFORMED])
def test_a_malformed_batch_is_a_value_error_naming_the_file_and_field(tmp_path, file, edit, message):
    files = dict(zip(("batch.json", "results.json"), _valid_batch()))
    if isinstance(edit, bytes):
        files[file] = edit
    else:
        files[file] = copy.deepcopy(files[file])
        edit(files[file])
    directory = _write_batch(tmp_path / "b", files["batch.json"], files["results.json"])
    with pytest.raises(ValueError) as error:
        tessel.tuning.import_batch(directory, tmp_path / "t.db")
    assert str(error.value).startswith(f"{directory / file}: {message}"), str(error.value)
    assert not (tmp_path / "t.db").exists(), "nothing is recorded from a malformed batch"


def test_another_programs_or_another_tessels_batch_is_a_tessel_error(tmp_path):
    batch, results = _valid_batch()
    cases = {"format": ({**batch, "format": "x"}, results, "batch.json is not a tessel tuning batch"),
             "version": ({**batch, "tessel_version": "0.0"}, results, "was written by tessel '0.0', this is"),
             "results": (batch, {**results, "format": BATCH_FORMAT}, "results.json does not hold the results")}
    for name, (b, r, message) in cases.items():
        with pytest.raises(tessel.TesselError, match=message):
            tessel.tuning.import_batch(_write_batch(tmp_path / name, b, r), tmp_path / "t.db")
    with pytest.raises(FileNotFoundError, match="results.json"):
        tessel.tuning.import_batch(_write_batch(tmp_path / "missing", batch, results), tmp_path / "t.db",
                                   results=tmp_path / "results.json")
