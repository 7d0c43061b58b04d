"""Real models exported with torch.onnx.export (opsets 17 and 18) import
with tessel.from_onnx, compile for the CPU and match onnxruntime, the
reference ONNX runtime: torchvision's ResNet-18 and MobileNetV2
architectures and Hugging Face ViT, BERT and GPT-2, random weights, nothing
downloaded."""

import importlib.util
import io
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
transformers = pytest.importorskip("transformers")

import tessel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4)
Example = tuple[torch.nn.Module, tuple[torch.Tensor, ...]]  # a model in eval mode and its inputs


def _bench_models() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_models", ROOT / "bench" / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    return models


def _resnet18() -> Example:
    return _bench_models().resnet18(), (torch.randn(1, 3, 224, 224),)


def _mobilenet_v2() -> Example:
    return _bench_models().mobilenet_v2(), (torch.randn(1, 3, 224, 224),)


def _vit() -> Example:
    torch.manual_seed(0)
    config = transformers.ViTConfig(**SMALL, image_size=32, patch_size=8)
    return transformers.ViTModel(config).eval(), (torch.randn(2, 3, 32, 32),)


class _FirstOutput(torch.nn.Module):
    """A Hugging Face text model as the TorchScript exporter traces it: token ids and an attention mask in, the first
    output (hidden states or logits) out.

    Exported as it is, the model fails: the exporter passes every defaulted argument positionally and transformers
    then adds ``use_cache`` from the config as a keyword ("got multiple values for argument 'use_cache'"); without a
    mask transformers looks for packed sequences with ``torch.diff``, which the exporter lacks; and GPT-2's cache is
    an output tracing rejects."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(ids, attention_mask=mask, use_cache=False, return_dict=False)[0]


def _text_inputs(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two sequences of 16 token ids, the second padded after 12 (so the mask matters)."""
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0
    return torch.randint(0, vocab, (2, 16)), mask


def _bert() -> Example:
    torch.manual_seed(0)
    config = transformers.BertConfig(**SMALL, vocab_size=100, max_position_embeddings=64)
    return _FirstOutput(transformers.BertModel(config)).eval(), _text_inputs(100)


def _gpt2() -> Example:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=64)
    return _FirstOutput(transformers.GPT2LMHeadModel(config)).eval(), _text_inputs(100)


MODELS = {"resnet18": _resnet18, "mobilenet_v2": _mobilenet_v2, "vit": _vit, "bert": _bert, "gpt2": _gpt2}


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("name", list(MODELS))
def test_an_exported_model_matches_onnxruntime(name: str, opset: int) -> None:
    model, inputs = MODELS[name]()
    exported = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, inputs, exported, opset_version=opset, dynamo=False)
    arrays = [x.numpy() for x in inputs]
    session = ort.InferenceSession(exported.getvalue(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {arg.name: x for arg, x in zip(session.get_inputs(), arrays)})
    results = tessel.compile(tessel.from_onnx(onnx.load_from_string(exported.getvalue())), target="cpu")(*arrays)
    results = results if isinstance(results, tuple) else (results,)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))
