"""Real models exported with torch.onnx.export (opsets 17 and 18) import
with tessel.from_onnx, compile for the CPU and match onnxruntime, the
reference ONNX runtime: torchvision's ResNet-18 architecture and a Hugging
Face ViT, random weights, nothing downloaded."""

import importlib.util
import io
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
transformers = pytest.importorskip("transformers")

import tessel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _resnet18():
    spec = importlib.util.spec_from_file_location("bench_models", ROOT / "bench" / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    return models.resnet18(), torch.randn(1, 3, 224, 224)


def _vit():
    torch.manual_seed(0)
    config = transformers.ViTConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                    num_attention_heads=4, image_size=32, patch_size=8)
    return transformers.ViTModel(config).eval(), torch.randn(2, 3, 32, 32)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("build", [_resnet18, _vit], ids=["resnet18", "vit"])
def test_an_exported_model_matches_onnxruntime(build, opset):
    model, x = build()
    exported = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, (x,), exported, opset_version=opset, dynamo=False)
    session = ort.InferenceSession(exported.getvalue(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    results = tessel.compile(tessel.from_onnx(onnx.load_from_string(exported.getvalue())), target="cpu")(x.numpy())
    results = results if isinstance(results, tuple) else (results,)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))
