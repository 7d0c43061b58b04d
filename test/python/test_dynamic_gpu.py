"""Size symbols on the GPU (issue 30 item 4): kernels over a symbolic batch
and sequence compiled once for sm_90 (grids counted on the host from the
sizes, buffers passed as their largest static extent plus their sizes,
manifest version 4 with size expressions) and run on the PTX emulator at
several sizes, 1 and primes included, against numpy."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import transformer_block  # noqa: E402

RNG = np.random.default_rng(0)
DIMS = {"batch": (1, 4), "seq": (1, 16)}
SIZES = [(1, 1), (2, 7), (4, 16), (3, 13)]


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def emulated(fn, *specs, dims=DIMS):
    """``fn`` traced over ``specs``, compiled once for sm_90, on the emulator."""
    return tessel.compile(tessel.trace(fn, *specs, dims=dims), target="cuda:sm_90")


def spec(*shape):
    return tessel.TensorSpec(shape, np.dtype(np.float32))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


B, G = normal(32), normal(32)
KERNELS = {
    "bias_gelu": (lambda x: ops.gelu(x + B),
                  lambda x: 0.5 * (x + B) * (1 + np.vectorize(math.erf)((x + B) / math.sqrt(2)))),
    "layer_norm": (lambda x: ops.layer_norm(x, G, B),
                   lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * G + B),
    "softmax": (lambda x: ops.softmax(x, axis=-1), _softmax),
    "scores": (lambda x: ops.softmax(x @ x.transpose(0, 2, 1), axis=-1),
               lambda x: _softmax(x @ x.transpose(0, 2, 1))),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_a_kernel_class_runs_emulated_at_every_size(name):
    fn, reference = KERNELS[name]
    artifact = emulated(fn, spec("batch", "seq", 32))
    manifest = artifact.manifest()
    assert manifest["dims"] == {"batch": {"min": 1, "max": 4, "multiple_of": 1},
                                "seq": {"min": 1, "max": 16, "multiple_of": 1}}
    exe = artifact.emulate()
    for batch, seq in SIZES:
        x = normal(batch, seq, 32)
        np.testing.assert_allclose(np.asarray(exe(x)), reference(x), rtol=1e-4, atol=1e-4,
                                   err_msg=f"at batch {batch}, seq {seq}")


def test_the_example_block_compiles_once_for_the_gpu():
    params = transformer_block.init_params(32, 64, RNG)
    artifact = emulated(lambda x: transformer_block.block(x, params, 4), spec("batch", "seq", 32))
    # Grids are counted from the sizes at each call, and sizes are kernel arguments.
    assert any(not isinstance(g, int) for k in artifact.manifest()["kernels"] for g in k["grid"])
    assert any(isinstance(a, dict) and "size" in a for step in artifact.steps for a in step.get("args", []))
    exe = artifact.emulate()
    for batch, seq in SIZES:
        x = normal(batch, seq, 32)
        expected = transformer_block.reference(x, params, 4)
        np.testing.assert_allclose(np.asarray(exe(x)), expected, rtol=1e-4, atol=2e-4)


def test_a_call_outside_the_range_is_a_value_error():
    exe = emulated(lambda x: x * 2, spec("batch", "seq", 32)).emulate()
    with pytest.raises(ValueError, match=r"argument 0 has 17 as dim 1 \(seq\), outside the range \[1, 16\]"):
        exe(normal(1, 17, 32))
