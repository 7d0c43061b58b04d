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


SINGLE_VALUES = {
    "centered": (lambda x: x - x.mean(), lambda x: x - x.mean(dtype=np.float64), ("batch", "seq", 32),
                 {"batch": (1, 4), "seq": (1, 512)}, [(1, 1, 32), (2, 7, 32), (4, 509, 32)]),
    "softmax_1d": (lambda x: ops.softmax(x, axis=0), _softmax, ("n",), {"n": (1, 65536)}, [(1,), (13,), (4099,)]),
}


@pytest.mark.parametrize("name", list(SINGLE_VALUES))
def test_reductions_to_a_single_value_over_symbols_run_in_parts(name):
    """A reduction to a single value over symbols is split into as many rows
    as its largest size calls for (16 of at least 4096 elements here), a
    block each; at a smaller size the rows are shorter, the last shorter
    still or empty. One block combines the partials."""
    fn, reference, shape, dims, sizes = SINGLE_VALUES[name]
    artifact = emulated(fn, spec(*shape), dims=dims)
    assert [16, 1, 1] in [k["grid"] for k in artifact.manifest()["kernels"]]
    exe = artifact.emulate()
    for size in sizes:
        x = normal(*size)
        np.testing.assert_allclose(np.asarray(exe(x)), reference(x), rtol=1e-4, atol=1e-5, err_msg=f"at {size}")


def _normalized(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


ROWS = {
    "softmax": (lambda x: ops.softmax(x, axis=-1), _softmax),
    "normalize": (lambda x: (lambda c: c / ops.sqrt((c * c).mean(-1, keepdims=True) + np.float32(1e-5)))(
        x - x.mean(-1, keepdims=True)), _normalized),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_rows_of_symbolic_length_are_shared_by_a_blocks_threads(name):
    """Rows whose length is a symbol (the scores of attention over the
    sequence): a block per row, each thread keeping its columns of the
    longest row in registers, those past the row's length at a call masked;
    no per-thread buffer of the largest row (stack 0)."""
    fn, reference = ROWS[name]
    artifact = emulated(fn, spec("batch", "seq"), dims={"batch": (1, 4), "seq": (1, 2048)})
    (kernel,) = artifact.manifest()["kernels"]
    assert kernel["grid"] == ["batch", 1, 1] and kernel["block"][0] >= 256
    assert kernel["ptxas"]["stack_bytes"] == 0
    # Each thread's columns of the longest row kept in registers: each read once.
    assert artifact.kernels[0].ptx.count("ld.global") == 2048 // kernel["block"][0]
    exe = artifact.emulate()
    for size in [(1, 1), (3, 7), (2, 1031)]:
        x = normal(*size)
        np.testing.assert_allclose(np.asarray(exe(x)), reference(x), rtol=1e-4, atol=1e-5, err_msg=f"at {size}")


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


@pytest.mark.parametrize("target,instruction", [("sm_80", "mma.sync.aligned.m16n8k16"),
                                                ("sm_90a", "wgmma.mma_async.sync.aligned.m64n")])
def test_tensor_core_contractions_over_a_symbol_mask_their_edge_tiles(target, instruction):
    # An f16 linear layer + GELU over a symbolic row count: one compile
    # whose grid counts row blocks at each call; the last block's rows past
    # the call's are zero-filled by the copies (on sm_90a TMA, whose tensor
    # map has the symbol as a dim) and not stored.
    f16 = np.dtype(np.float16)
    module = tessel.trace(lambda a, w, b: ops.gelu(a @ w + b, approximate="tanh"),
                          tessel.TensorSpec(("rows", 128), f16), tessel.TensorSpec((128, 192), f16),
                          tessel.TensorSpec((192,), f16), dims={"rows": (1, 300)}, name="linear")
    artifact = tessel.compile(module, target=f"cuda:{target}")
    [kernel] = artifact.kernels
    assert instruction in kernel.ptx and not any(isinstance(g, int) for g in kernel.grid[1:2])
    assert [m.dims for m in artifact.tensor_maps] == ([(192, 128), (128, "rows")] if target == "sm_90a" else [])
    w, b = (normal(128, 192) * 0.1).astype(f16), normal(192).astype(f16)
    run = artifact.emulate()
    for rows in (1, 37, 64, 211, 300):
        a = normal(rows, 128).astype(f16)
        x = a.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
        want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
        np.testing.assert_allclose(run(a, w, b).astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target,instruction", [("sm_80", "mma.sync.aligned.m16n8k16"),
                                                ("sm_90a", "wgmma.mma_async.sync.aligned.m64n")])
def test_tensor_cores_take_k_n_and_batch_over_symbols_in_whole_16_byte_rows(target, instruction):
    # Attention's p @ v over a symbolic batch (an outer batch loop, walked
    # in the block) and sequence (M and K, a multiple of 8 halves: whole
    # 16-byte rows of A; K steps counted at each call, the last one's
    # chunks past K zero-filled); then a linear layer whose N is a symbol
    # (B's rows and the epilogue's columns masked).
    f16 = np.dtype(np.float16)
    pv = tessel.compile(tessel.trace(lambda p, v: p @ v, tessel.TensorSpec(("batch", 2, "seq", "seq"), f16),
                                     tessel.TensorSpec(("batch", 2, "seq", 64), f16),
                                     dims={"batch": (1, 3), "seq": (8, 96, 8)}, name="pv"), target=f"cuda:{target}")
    assert [instruction in k.ptx for k in pv.kernels] == [True]
    run = pv.emulate()
    for batch, seq in ((1, 8), (3, 40), (2, 96)):
        p, v = (normal(batch, 2, seq, seq) * 0.3).astype(f16), normal(batch, 2, seq, 64).astype(f16)
        np.testing.assert_allclose(run(p, v).astype(np.float32), p.astype(np.float32) @ v.astype(np.float32),
                                   rtol=2e-2, atol=2e-2, err_msg=f"batch {batch}, seq {seq}")
    linear = tessel.compile(tessel.trace(lambda x, w, b: ops.relu(x @ w + b), tessel.TensorSpec(("rows", 64), f16),
                                         tessel.TensorSpec((64, "n"), f16), tessel.TensorSpec(("n",), f16),
                                         dims={"rows": (1, 200), "n": (8, 256, 8)}, name="linear"),
                            target=f"cuda:{target}")
    assert [instruction in k.ptx for k in linear.kernels] == [True]
    run = linear.emulate()
    for rows, n in ((1, 8), (37, 72), (200, 256)):
        x, w, b = normal(rows, 64).astype(f16), (normal(64, n) * 0.2).astype(f16), normal(n).astype(f16)
        want = np.maximum(x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32), 0)
        np.testing.assert_allclose(run(x, w, b).astype(np.float32), want, rtol=2e-2, atol=2e-2,
                                   err_msg=f"rows {rows}, n {n}")


@pytest.mark.parametrize("multiple_of", [1, 8])
def test_scores_over_a_sequence_run_on_wgmma_where_its_rows_are_whole_copies(multiple_of):
    # x @ W over [batch, seq] rows: M a product of symbols, on wgmma. The
    # scores q @ k^T have the sequence as N: on tensor cores where it is
    # declared a multiple of 8 (B's rows whole 16-byte copies at every
    # size), else on the general GPU schedule, as correctly.
    f16 = np.dtype(np.float16)
    module = tessel.trace(lambda x, w: (lambda q: q @ q.transpose(0, 2, 1))(x @ w),
                          tessel.TensorSpec(("batch", "seq", 64), f16), tessel.TensorSpec((64, 64), f16),
                          dims={"batch": (1, 4), "seq": (multiple_of, 96, multiple_of)}, name="scores")
    artifact = tessel.compile(module, target="cuda:sm_90a")
    assert sum("wgmma.mma_async" in k.ptx for k in artifact.kernels) == (2 if multiple_of == 8 else 1)
    run = artifact.emulate()
    w = (normal(64, 64) * 0.2).astype(f16)
    for batch, seq in ((1, multiple_of), (2, 13 if multiple_of == 1 else 40), (4, 96), (3, 64)):
        x = normal(batch, seq, 64).astype(f16)
        q = (x.astype(np.float32) @ w.astype(np.float32)).astype(f16).astype(np.float32)
        np.testing.assert_allclose(run(x, w).astype(np.float32), q @ q.transpose(0, 2, 1), rtol=3e-2, atol=3e-2)


W32 = normal(32, 32)
REGROUPED = {
    # A linear over [seq, batch] rows (seq * batch of them) transposed to [batch, seq].
    "linear_transposed": (lambda x, y: ops.linear(x, W32).transpose(1, 0, 2) + y,
                          lambda x, y: (x @ W32.T).transpose(1, 0, 2) + y,
                          (("seq", "batch", 32), ("batch", "seq", 32)), lambda b, s: ((s, b, 32), (b, s, 32))),
    # A buffer flattened over two symbols as the result.
    "flattened": (lambda x: (x * 2).reshape(["batch * seq"]), lambda x: (x * 2).reshape(-1),
                  (("batch", "seq"),), lambda b, s: ((b, s),)),
    # Flattened, multiplied and expanded again in the other order.
    "expanded_again": (lambda x: (x.transpose(1, 0, 2).reshape(["batch * seq", 32]) @ W32).reshape(["seq", "batch", 32]),
                       lambda x: (x.transpose(1, 0, 2).reshape(-1, 32) @ W32).reshape(x.shape[1], x.shape[0], 32),
                       (("batch", "seq", 32),), lambda b, s: ((b, s, 32),)),
}


@pytest.mark.parametrize("name", list(REGROUPED))
def test_buffers_regrouped_over_two_symbols_run_on_the_cpu_and_emulated(name):
    """Dims flattened over two symbols and grouped again (the buffer of seq *
    batch rows viewed as [seq, batch, 32], which once aborted in memref's
    ExpandStridedMetadata or ExpandShapeOp::build) compile once and match
    numpy on the CPU and on the emulator."""
    fn, reference, shapes, make = REGROUPED[name]
    module = tessel.trace(fn, *(spec(*s) for s in shapes), dims=DIMS)
    exe, run = tessel.compile(module, target="cpu"), tessel.compile(module, target="cuda:sm_90").emulate()
    for batch, seq in SIZES:
        args = [normal(*s) for s in make(batch, seq)]
        for got in (exe(*args), run(*args)):
            np.testing.assert_allclose(np.asarray(got), reference(*args), rtol=1e-4, atol=1e-4,
                                       err_msg=f"at batch {batch}, seq {seq}")
