"""tessel.runtime without a GPU: loading, checking, dry-running and emulating artifacts.

The dry driver does everything a GPU run does except launching: each step's
buffers must be live allocations of the right size, launch shapes must fit
the hardware, and memory must be freed afterwards, also after a failure.
The emulator (``emulate=True``) also launches: every kernel runs on the PTX
emulator, and results are real.
"""

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tessel
from tessel import dlpack, ops, runtime
from tessel.cli import main as cli


def _model():
    """A small model with weights, views and temporaries."""
    w = np.random.default_rng(0).standard_normal((32, 48)).astype(np.float32)

    def model(x):
        h = ops.layer_norm(x, eps=1e-5)
        return ops.softmax(ops.gelu(h @ w), axis=-1).reshape(2, 8, 48), h

    return tessel.trace(model, tessel.TensorSpec((16, 32), np.float32), name="model")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The model's saved sm_90 artifact."""
    return tessel.compile(_model(), target="cuda:sm_90").save(tmp_path_factory.mktemp("a") / "model")


def test_runtime_loads_and_inspects_without_mlir(saved):
    script = textwrap.dedent(f"""
        import sys
        sys.modules["mlir"] = None  # any import of MLIR now fails
        import tessel.runtime
        artifact = tessel.runtime.read({str(saved)!r})
        print(artifact.entry, len(artifact.kernels), artifact.inputs[0][0], artifact.outputs[1][0])
        import numpy as np
        tessel.runtime.load({str(saved)!r}, emulate=True)(np.ones((16, 32), np.float32))
        assert not any(m == "mlir" or m.startswith("mlir.") for m in sys.modules if sys.modules[m])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["model", str(len(json.loads((saved / "manifest.json").read_text())["kernels"])),
                                   "(16,", "32)", "(16,", "32)"]


def pooled(executable):
    return {p for pointers in executable.pool.values() for p in pointers}


def test_dry_run_checks_every_step_and_frees_memory(saved):
    executable = runtime.load(saved, dry=True)
    driver = executable.driver
    constants = set(driver.live)
    assert constants, "the weights are uploaded once, at load"
    y, h = executable(np.ones((16, 32), np.float32))
    assert (y.shape, y.dtype, h.shape) == ((2, 8, 48), np.float32, (16, 32))
    launches = [s for s in executable.artifact.steps if s["op"] == "launch"]
    assert len(driver.launches) == len(launches) > 0
    # Inputs, outputs and temporaries went back to the pool, and the next
    # call allocates nothing new.
    assert set(driver.live) == constants | pooled(executable)
    before = set(driver.live)
    devices = executable(np.ones((16, 32), np.float32), device_outputs=True)
    assert devices[0].__cuda_array_interface__["shape"] == (2, 8, 48)
    assert set(driver.live) == before
    del devices  # their memory returns to the pool
    assert set(driver.live) == before and set(driver.live) == constants | pooled(executable)
    executable.close()
    assert driver.live == {}


def test_a_failing_launch_frees_everything(saved):
    class Failing(runtime.DryDriver):
        def launch(self, function, kernel, pointers):
            if len(self.launches) == 1:
                raise tessel.RuntimeError(f"cuLaunchKernel failed in kernel {kernel.name}: CUDA_ERROR_LAUNCH_FAILED")
            super().launch(function, kernel, pointers)

    artifact = runtime.read(saved)
    driver = Failing(artifact.target_description)
    executable = runtime.Executable(artifact, driver)
    constants = set(driver.live)
    with pytest.raises(tessel.RuntimeError, match="CUDA_ERROR_LAUNCH_FAILED"):
        executable(np.ones((16, 32), np.float32))
    assert set(driver.live) == constants | pooled(executable)
    executable.close()
    assert driver.live == {}


def test_arguments_are_checked_before_anything_runs(saved):
    executable = runtime.load(saved, dry=True)
    with pytest.raises(tessel.RuntimeError, match=r"argument 0 must be float32\[16, 32\], got float64\[16, 32\]"):
        executable(np.ones((16, 32)))
    with pytest.raises(tessel.RuntimeError, match="takes 1 arguments, got 2"):
        executable(np.ones((16, 32), np.float32), np.ones(3))

    class Strided:
        __cuda_array_interface__ = {"shape": (16, 32), "typestr": "<f4", "data": (1 << 20, False),
                                    "version": 3, "strides": (4, 64)}

    with pytest.raises(tessel.RuntimeError, match="must be contiguous"):
        executable(Strided())


class DeviceTensor:
    """What a CUDA tensor of torch, cupy or jax gives the runtime: a DLPack
    export of device memory (here an allocation of the dry driver)."""

    def __init__(self, pointer, shape, dtype=np.float32, device=(dlpack.CUDA, 0)):
        self.pointer, self.shape, self.dtype, self.device = pointer, shape, np.dtype(dtype), device
        self.streams = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        self.streams.append(stream)
        return dlpack.export(self.pointer, self.shape, self.dtype, self.device, self)


def test_device_tensors_are_used_in_place_and_results_exported(saved, monkeypatch):
    executable = runtime.load(saved, dry=True)
    driver = executable.driver
    uploads = []
    monkeypatch.setattr(driver, "upload", lambda pointer, array: uploads.append(pointer))
    x = DeviceTensor(driver.alloc(16 * 32 * 4), (16, 32))
    y, h = executable(x, device_outputs=True)
    assert uploads == [] and x.streams == [None]
    assert any(x.pointer in pointers for _, pointers in driver.launches)
    view = dlpack.read(y)
    assert (view.pointer, view.shape, view.dtype, view.device) == (y.pointer, (2, 8, 48), np.float32,
                                                                   (dlpack.CUDA, 0))
    with pytest.raises(tessel.RuntimeError, match=r"argument 0: DLPack device \(2, 1\) is neither the CPU nor CUDA "
                                                  "device 0"):
        executable(DeviceTensor(x.pointer, (16, 32), device=(dlpack.CUDA, 1)))
    with pytest.raises(tessel.RuntimeError, match=r"argument 0 must be float32\[16, 32\], got float16\[16, 32\]"):
        executable(DeviceTensor(x.pointer, (16, 32), np.float16))
    # A tensor at an offset kernels cannot take 16-byte vectors from is
    # copied, on the device, to an aligned buffer.
    big = driver.alloc(16 * 32 * 4 + 4)
    copies = []
    monkeypatch.setattr(driver, "copy", lambda target, source, nbytes: copies.append((source, nbytes)))
    executable(DeviceTensor(big + 4, (16, 32)))
    assert copies[0] == (big + 4, 16 * 32 * 4)
    # CPU tensors are copied in.
    torch = pytest.importorskip("torch")
    executable(torch.ones(16, 32))
    assert len(uploads) == 1


def test_the_drivers_check_launches_against_the_artifacts_target_description(saved):
    from tessel import targets
    from tessel.runtime.artifact import TargetInfo
    from tessel.runtime.emulator import EmulatorDriver

    artifact = runtime.read(saved)
    description = json.loads((saved / "manifest.json").read_text())["target_description"]
    assert description == targets.get("sm_90").to_json()
    assert artifact.target_description == TargetInfo.from_json(description)
    # A chip of one thread per block: every kernel of the model is over its limits.
    narrow = dataclasses.replace(artifact.target_description, max_threads_per_block=1)
    x = np.ones((16, 32), np.float32)
    with pytest.raises(tessel.RuntimeError, match="is over the hardware limits of sm_90"):
        runtime.Executable(artifact, runtime.DryDriver(narrow))(x)
    with pytest.raises(tessel.RuntimeError, match=r"has \d+ threads; sm_90 allows 1 to 1\b"):
        runtime.Executable(artifact, EmulatorDriver(narrow))(x)


def test_bad_artifacts_are_clear_errors(saved, tmp_path):
    with pytest.raises(tessel.RuntimeError, match="not a tessel artifact"):
        runtime.read(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "onnx"}')
    with pytest.raises(tessel.RuntimeError, match="not a tessel artifact .format 'onnx'"):
        runtime.read(tmp_path)

    def broken(edit):
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(saved, copy)
        manifest = json.loads((copy / "manifest.json").read_text())
        edit(manifest)
        (copy / "manifest.json").write_text(json.dumps(manifest))
        return copy

    def use_after_free(m):
        free = next(i for i, s in enumerate(m["steps"]) if s["op"] == "free")
        m["steps"].insert(0, m["steps"].pop(free))

    with pytest.raises(tessel.RuntimeError, match="uses a buffer that is not allocated"):
        runtime.read(broken(use_after_free))
    with pytest.raises(tessel.RuntimeError, match="launches unknown kernel"):
        runtime.read(broken(lambda m: next(s for s in m["steps"] if s["op"] == "launch").update(kernel=99)))
    with pytest.raises(tessel.RuntimeError, match="invalid launch shape"):
        runtime.read(broken(lambda m: m["kernels"][0].update(block=[2048, 1, 1])))
    with pytest.raises(tessel.RuntimeError, match="malformed manifest"):
        runtime.read(broken(lambda m: m.pop("steps")))


def test_gpu_run_without_a_gpu_is_one_clear_message(saved):
    try:
        target = runtime.cuda_target()
    except tessel.RuntimeError as e:
        assert re.search("cuda-bindings|no usable CUDA driver or GPU|no CUDA device", str(e))
    else:
        pytest.skip(f"this machine has a GPU ({target})")
    with pytest.raises(tessel.RuntimeError, match="cuda-bindings|no usable CUDA driver or GPU|no CUDA device"):
        runtime.load(saved)


def test_command_line_dry_run(saved, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", arg0=np.ones((16, 32), np.float32))
    assert cli(["run", str(saved), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz"),
                "--dry"]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert out["out0"].shape == (2, 8, 48) and out["out1"].shape == (16, 32)
    assert "ran model" in capsys.readouterr().out
    np.savez(tmp_path / "bad.npz", x=np.ones(3))
    assert cli(["run", str(saved), "--inputs", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "o.npz"),
                "--dry"]) == 1
    assert "must hold arg0" in capsys.readouterr().err


def test_emulated_runs_match_the_cpu_and_free_their_memory(saved):
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    executable = runtime.load(saved, emulate=True)
    assert executable.driver.device_name == "PTX emulator (sm_90)"
    want = tessel.compile(_model())(x)
    for got, expected in zip(executable(x), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    memory = executable.driver.device.memory
    live = set(memory.sizes)
    executable(x)
    assert set(memory.sizes) == live  # the second call reuses the pool
    # Results left on the emulated device copy out, but are no CUDA memory to export.
    result, other = executable(x, device_outputs=True)
    np.testing.assert_allclose(result.numpy(), want[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(BufferError, match="no CUDA memory"):
        result.__dlpack__()
    assert not hasattr(result, "__cuda_array_interface__")
    del result, other
    executable.close()
    assert not memory.sizes
    with pytest.raises(ValueError, match="dry and emulate exclude each other"):
        runtime.load(saved, dry=True, emulate=True)


def test_command_line_emulated_run(saved, tmp_path, capsys):
    x = np.random.default_rng(2).standard_normal((16, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", arg0=x)
    assert cli(["run", str(saved), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz"),
                "--emulate"]) == 0
    assert "on PTX emulator (sm_90)" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["out1"], tessel.compile(_model())(x)[1], rtol=1e-5, atol=1e-6)


def test_bool_inputs_and_outputs_round_trip(tmp_path):
    # Booleans are one byte on the device (i8 buffers); the manifest gives
    # arguments the signature's dtype, so the runtime takes and returns bool.
    module = tessel.trace(lambda x, m: (x > 0, ops.where(m, x, 0.0)), np.zeros(8, np.float32), np.zeros(8, bool))
    saved = tessel.compile(module, target="cuda:sm_90").save(tmp_path / "bool")
    artifact = runtime.read(saved)
    assert [d for _, d in artifact.inputs] == [np.float32, np.bool_] and artifact.outputs[0][1] == np.bool_
    positive, _ = runtime.load(saved, dry=True)(np.ones(8, np.float32), np.ones(8, bool))
    assert positive.dtype == np.bool_ and positive.shape == (8,)
    x, m = np.array([-1, 2, 0, 3, -4, 5, 6, -7], np.float32), np.array([1, 0, 1, 1, 0, 0, 1, 0], bool)
    positive, kept = runtime.load(saved, emulate=True)(x, m)
    np.testing.assert_array_equal(positive, x > 0)
    np.testing.assert_array_equal(kept, np.where(m, x, 0))
