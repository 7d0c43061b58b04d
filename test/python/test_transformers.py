"""Hugging Face models as they come (default configs but small, random
weights, nothing downloaded): from_torch and torch.compile(backend="tessel")
against eager."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import tessel  # noqa: E402

SMALL = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4)


def _gpt2():
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=64)
    return transformers.GPT2LMHeadModel(config), torch.randint(0, 100, (2, 16))


def _llama():
    config = transformers.LlamaConfig(**SMALL, num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config), torch.randint(0, 100, (2, 16))


def _bert():
    config = transformers.BertConfig(**SMALL, vocab_size=100, max_position_embeddings=64)
    return transformers.BertModel(config), torch.randint(0, 100, (2, 16))


def _vit():
    config = transformers.ViTConfig(**SMALL, image_size=32, patch_size=8)
    return transformers.ViTModel(config), torch.randn(2, 3, 32, 32)


MODELS = {"gpt2": _gpt2, "llama": _llama, "bert": _bert, "vit": _vit}
# The ops each model's torch.compile graph leaves to eager PyTorch.


def _model(name):
    torch.manual_seed(0)
    model, x = MODELS[name]()
    return model.eval(), x


def _eager(model, x):
    """The model's tensor outputs, flattened as torch.export flattens them (the cache left out)."""
    with torch.no_grad():
        out = model(x, use_cache=False) if "use_cache" in model.forward.__code__.co_varnames else model(x)
    return [t for t in out.to_tuple() if isinstance(t, torch.Tensor)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_torch_takes_the_model_as_it_comes(name):
    model, x = _model(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = tessel.from_torch(model, (x,))
    said = [str(w.message) for w in caught if "use_cache=False" in str(w.message)]
    assert bool(said) == getattr(model.config, "use_cache", False)
    results = tessel.compile(module, target="cpu")(x)
    results = results if isinstance(results, tuple) else (results,)
    expected = _eager(model, x)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torch_compile_runs_the_model_on_tessel(name, capfd):
    model, x = _model(name)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tessel", dynamic=False, options={"report": True})
    with torch.no_grad():
        got = compiled(x)
    report = capfd.readouterr().err
    # All but BERT's gather of its token-type ids (a torch.gather, which tessel lacks) run on tessel.
    eager = {line.split()[1] for line in report.splitlines() if line.strip().startswith("eager:")}
    assert "ops compiled" in report and not eager, report  # every op runs on tessel
    want = _eager(model, x)
    got = [t for t in got.to_tuple() if isinstance(t, torch.Tensor)][:len(want)]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-4, atol=2e-5)
