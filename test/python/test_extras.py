"""Each optional dependency, when missing, is one error naming the extra
that installs it, raised before any work is done."""

import sys

import numpy as np
import pytest

import tessel
from tessel import ops


def _without(monkeypatch, package):
    """Makes ``import package`` (and its submodules) raise ImportError."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)


def _model():
    return tessel.trace(lambda x: ops.relu(x), tessel.TensorSpec((4, 8), np.float32), name="m")


def test_from_torch_without_torch(monkeypatch):
    import tessel.frontends.torch as frontend

    _without(monkeypatch, "torch")
    monkeypatch.setattr(frontend, "torch", None)  # as if the import at the top had failed
    with pytest.raises(tessel.MissingExtraError,
                       match=r"^tessel.from_torch needs torch, which is not installed: pip install 'tessel\[torch\]'$"):
        tessel.from_torch(object(), ())


def test_from_onnx_without_onnx(monkeypatch):
    _without(monkeypatch, "onnx")
    with pytest.raises(ImportError,  # a MissingExtraError is also an ImportError
                       match=r"^tessel.from_onnx needs onnx, which is not installed: pip install 'tessel\[onnx\]'$"):
        tessel.from_onnx("missing.onnx")


@pytest.mark.parametrize("package, options", [("lightgbm", {"search": "model"}),
                                              ("matplotlib", {"search": "random", "plot": "curve.png"})])
def test_tune_without_its_extras_fails_before_measuring(monkeypatch, tmp_path, package, options):
    _without(monkeypatch, package)
    monkeypatch.chdir(tmp_path)

    class Unused:
        target = "cpu"

        def measure(self, *args):
            raise AssertionError("measured before the missing extra was named")

    with pytest.raises(tessel.MissingExtraError, match=rf"needs {package}, .*pip install 'tessel\[tune\]'"):
        tessel.tune(_model(), trials=2, db=str(tmp_path / "t.db"), runner=Unused(), **options)


def test_tessel_tune_without_lightgbm_is_one_line(monkeypatch, tmp_path, capsys):
    from tessel import cli

    _without(monkeypatch, "lightgbm")
    model = tmp_path / "m.mlir"
    model.write_text(str(_model()))
    assert cli.main(["tune", str(model), "--trials", "2", "--db", str(tmp_path / "t.db")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'tessel[tune]'" in err


def test_the_cuda_runtime_without_cuda_bindings(monkeypatch):
    from tessel.runtime.cuda_driver import CudaDriver

    _without(monkeypatch, "cuda")
    with pytest.raises(tessel.RuntimeError, match=r"needs NVIDIA's cuda-bindings: pip install 'tessel\[cuda\]'"):
        CudaDriver()
