"""Size symbols end to end on the CPU (docs/dynamic-shapes.md): functions
traced over ``TensorSpec``s whose dims are symbols, compiled once and run
at several sizes in their ranges (1 and primes included) against numpy;
sizes outside a range, or that disagree, are a ValueError naming the dim."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops
from tessel.shapes import DimRange, bind, evaluate, parse_size
from tessel.testing.fuzz import conv2d_reference, pool2d_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import transformer_block  # noqa: E402

RNG = np.random.default_rng(0)
SIZES = [(1, 1), (2, 7), (3, 64), (5, 97), (8, 128)]
DIMS = {"batch": (1, 8), "seq": (1, 128)}


def spec(*shape, dtype=np.float32):
    return tessel.TensorSpec(shape, np.dtype(dtype))


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_at_sizes(fn, reference, make_args, sizes=SIZES, dims=DIMS, atol=1e-4, **specs):
    """Compiles ``fn`` once over ``specs`` and checks it at every size."""
    exe = tessel.compile(tessel.trace(fn, *specs["args"], dims=dims), target="cpu")
    for size in sizes:
        args = make_args(*size)
        got = exe(*args)
        want = reference(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            assert g.shape == w.shape, size
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, err_msg=f"at sizes {size}")
    return exe


def test_size_expressions_parse_and_evaluate():
    values = {"batch": 3, "seq": 7}
    for text, value in [("seq", 7), ("2 * seq", 14), ("seq * 2", 14), ("batch * seq", 21),
                        ("seq floordiv 2 + 1", 4), ("(seq + 1) * 3", 24), ("seq - 1", 6), ("seq mod 4", 3),
                        ("seq ceildiv 2", 4), ("-seq + 10", 3)]:
        assert evaluate(parse_size(text), values) == value, text
    for bad in ["seq +", "2 ** seq", "(seq", "seq seq"]:
        with pytest.raises(ValueError, match="size expression"):
            parse_size(bad)


def test_binding_reads_each_symbol_once_and_checks_every_dim():
    ranges = {"n": DimRange(1, 16, 2)}
    sizes = [("n", 4), ({"mul": [2, "n"]},)]
    assert bind("f", sizes, [(6, 4), (12,)], ranges) == {"n": 6}
    with pytest.raises(ValueError, match=r"argument 0 has 7 as dim 0 \(n\), outside the range \[1, 16\], a "
                                         "multiple of 2 declared for n"):
        bind("f", sizes, [(7, 4), (14,)], ranges)
    with pytest.raises(ValueError, match=r"argument 1 has 10 as dim 0, but it is \(2 \* n\) = 12 with n = 6 "
                                         r"\(from argument 0 dim 0\)"):
        bind("f", sizes, [(6, 4), (10,)], ranges)


def test_a_dense_layer_runs_at_every_size_from_one_compile():
    w, b = normal(64, 96), normal(96)
    exe = run_at_sizes(lambda x: ops.gelu(x @ w + b), lambda x: _gelu(x @ w + b),
                       lambda batch, seq: (normal(batch, seq, 64),), args=[spec("batch", "seq", 64)], atol=1e-3)
    assert exe.inputs[0].shape == ("batch", "seq", 64)
    assert exe.outputs[0].shape == ("batch", "seq", 96)


def test_norms_softmax_and_reductions_over_symbols():
    g, b = normal(48), normal(48)

    def fn(x):
        return ops.layer_norm(x, g, b), ops.softmax(x, axis=-1), x.mean(axis=1), ops.rms_norm(x, g)

    def reference(x):
        x64 = x.astype(np.float64)
        norm = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * g + b
        e = np.exp(x64 - x64.max(-1, keepdims=True))
        rms = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * g
        return norm, e / e.sum(-1, keepdims=True), x64.mean(1), rms

    run_at_sizes(fn, reference, lambda batch, seq: (normal(batch, seq, 48),), args=[spec("batch", "seq", 48)])


def test_attention_with_heads_split_over_both_symbols():
    heads, d = 4, 64
    wq, wk, wv = normal(d, d), normal(d, d), normal(d, d)

    def split(t, batch, seq):
        return t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)

    def fn(x):
        batch, seq, _ = x.shape
        q, k, v = (split(x @ w, batch, seq) for w in (wq, wk, wv))
        attn = ops.softmax((q @ k.transpose(0, 1, 3, 2)) * (1 / math.sqrt(d // heads)), axis=-1) @ v
        return attn.transpose(0, 2, 1, 3).reshape(batch, seq, -1)

    def reference(x):
        batch, seq, _ = x.shape
        q, k, v = ((x @ w).reshape(batch, seq, heads, -1).transpose(0, 2, 1, 3) for w in (wq, wk, wv))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)

    run_at_sizes(fn, reference, lambda batch, seq: (normal(batch, seq, d),), args=[spec("batch", "seq", d)],
                 atol=1e-3)


def test_causal_attention_masks_with_iotas_of_the_sequence():
    def fn(q, k):
        seq = q.shape[1]
        scores = q @ k.transpose(0, 2, 1)
        causal = ops.iota((seq, 1), 0) >= ops.iota((1, seq), 1)
        return ops.softmax(ops.where(causal, scores, float("-inf")), axis=-1), ops.arange(seq, np.float32) * 2

    def reference(q, k):
        seq = q.shape[1]
        s = np.where(np.tril(np.ones((seq, seq), bool)), q @ k.transpose(0, 2, 1), -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True), np.arange(seq, dtype=np.float32) * 2

    run_at_sizes(fn, reference, lambda batch, seq: (normal(batch, seq, 16), normal(batch, seq, 16)),
                 args=[spec("batch", "seq", 16), spec("batch", "seq", 16)])


def test_the_example_block_compiles_once_for_every_batch_and_sequence():
    params = transformer_block.init_params(32, 64, RNG)
    run_at_sizes(lambda x: transformer_block.block(x, params, 4), lambda x: transformer_block.reference(x, params, 4),
                 lambda batch, seq: (normal(batch, seq, 32),), args=[spec("batch", "seq", 32)], atol=2e-4)


def test_embeddings_and_slices_over_symbolic_dims():
    table = normal(50, 16)

    def fn(ids, x):
        e = ops.take(table, ids, 0)
        return e + x, x[:, :, 2:10], x[..., None], e[:, :, ::2]

    def reference(ids, x):
        e = table[ids]
        return e + x, x[:, :, 2:10], x[..., None], e[:, :, ::2]

    run_at_sizes(fn, reference, lambda batch, seq: (RNG.integers(-50, 50, (batch, seq)), normal(batch, seq, 16)),
                 args=[spec("batch", "seq", dtype=np.int64), spec("batch", "seq", 16)])
    with pytest.raises(tessel.UnsupportedError, match=r"index slice\(None, 4, None\) of dim 1, whose size is the "
                                                      "size symbol seq"):
        tessel.trace(lambda x: x[:, :4], spec("batch", "seq", 16), dims=DIMS)


def test_a_cnn_over_a_symbolic_batch():
    w1, b1, w2 = normal(8, 3, 3, 3) * 0.3, normal(8), normal(10, 8) * 0.3
    wd = normal(8, 1, 3, 3) * 0.3

    def fn(x):
        h = ops.relu(ops.conv2d(x, w1, b1, padding=1))
        h = ops.conv2d(ops.max_pool2d(h, 2), wd, groups=8, padding=1, stride=2)
        return ops.avg_pool2d(h, 3, stride=1, padding=1, count_include_pad=False).mean(axis=(2, 3)) @ w2.T

    def reference(x):
        h = np.maximum(conv2d_reference(x, w1, b1, stride=1, padding=1, dilation=1, groups=1, layout="NCHW"), 0)
        h = pool2d_reference(h, "max", 2, 2, 0, True, "NCHW")
        h = conv2d_reference(h, wd, stride=2, padding=1, dilation=1, groups=8, layout="NCHW")
        return pool2d_reference(h, "avg", 3, 1, 1, False, "NCHW").mean(axis=(2, 3)) @ w2.T

    run_at_sizes(fn, reference, lambda batch, _: (normal(batch, 3, 16, 16),), sizes=[(1, 0), (3, 0), (13, 0)],
                 args=[spec("batch", 3, 16, 16)], dims={"batch": (1, 16)})


def test_a_result_sized_by_an_expression_of_symbols():
    exe = run_at_sizes(lambda x, y: ops.concatenate([x, y, x], axis=1),
                       lambda x, y: np.concatenate([x, y, x], axis=1),
                       lambda batch, seq: (normal(batch, seq, 8), normal(batch, seq, 8)),
                       args=[spec("batch", "seq", 8), spec("batch", "seq", 8)])
    assert exe.outputs[0].shape == ("batch", "seq * 3", 8)


def test_sizes_outside_their_range_or_that_disagree_are_value_errors():
    exe = tessel.compile(tessel.trace(lambda x, y: x + y, spec("n", 4), spec("n", 4), dims={"n": (2, 32, 2)}),
                         target="cpu")
    np.testing.assert_array_equal(exe(np.ones((6, 4), np.float32), np.ones((6, 4), np.float32)), 2)
    for n, why in [(34, r"34 as dim 0 \(n\), outside the range \[2, 32\], a multiple of 2"),
                   (5, r"5 as dim 0 \(n\), outside the range")]:
        with pytest.raises(ValueError, match=why):
            exe(np.ones((n, 4), np.float32), np.ones((n, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument 1 has 8 as dim 0, but it is n = 6"):
        exe(np.ones((6, 4), np.float32), np.ones((8, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument 0 must be float32\[n, 4\], got float32\[6, 5\]"):
        exe(np.ones((6, 5), np.float32), np.ones((6, 4), np.float32))
    # A call at the sizes of the last good one binds nothing again; refused calls leave nothing behind.
    for n in (6, 6, 4):
        np.testing.assert_array_equal(exe(np.ones((n, 4), np.float32), np.ones((n, 4), np.float32)),
                                      np.full((n, 4), 2, np.float32))


def test_results_of_every_size_come_from_the_pool():
    exe = tessel.compile(tessel.trace(lambda x: x * 2, spec("n"), dims={"n": (1, 1 << 16)}), target="cpu")
    for n in (1 << 16, 3, 1 << 16, 1, 17):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(exe(x), 2 * x)


def test_a_symbol_without_a_range_or_read_from_no_argument_is_refused():
    with pytest.raises(tessel.CompileError, match=r"example 0 has dim 'seq', which dims= does not give a range"):
        tessel.trace(lambda x: x, spec("seq", 4), dims={"batch": (1, 4)})
    with pytest.raises(tessel.CompileError, match=r"dims\['seq'\] is \(1,\); give \(min, max\)"):
        tessel.trace(lambda x: x, spec("seq", 4), dims={"seq": (1,)})
    module = tessel.parse("""
      func.func @f(%x: tensor<?xf32, #graph.shape<[2 * n]>>) -> tensor<?xf32, #graph.shape<[2 * n]>>
          attributes {graph.dims = {n = #graph.dim<1, 8>}} {
        return %x : tensor<?xf32, #graph.shape<[2 * n]>>
      }""")
    with pytest.raises(tessel.UnsupportedError, match=r"argument 0 of @f has dim 0 = n \* 2, but no argument has "
                                                      "a dim that is n alone"):
        tessel.compile(module, target="cpu")


@pytest.mark.parametrize("name", ["bias_relu", "softmax", "matmul"])
def test_gpu_schedules_of_symbolic_kernels_run_on_the_cpu(name):
    # The GPU's default schedules, chosen at the largest sizes and applied to
    # dynamic tiles, checked on the CPU (compile_cpu(schedules=...)) before
    # the GPU backend takes size symbols: softmax rows share a block's
    # threads (loop.warp_reduce) however many rows there are.
    from tessel import schedules
    from tessel.backends.cpu import compile_cpu

    b, w = normal(64), normal(64, 32)
    fn, reference = {
        "bias_relu": (lambda x: ops.relu(x + b), lambda x: np.maximum(x + b, 0)),
        "softmax": (lambda x: ops.softmax(x, axis=-1),
                    lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(
                        -1, keepdims=True)),
        "matmul": (lambda x: x @ w, lambda x: x @ w),
    }[name]
    module = tessel.trace(fn, spec("n", 64), dims={"n": (1, 300)})
    if name == "softmax":
        assert "loop.warp_reduce" in str(schedules.default_schedules(module, "sm_90"))
    exe = compile_cpu(module, schedules="sm_90")
    for n in (1, 7, 300):
        x = normal(n, 64)
        np.testing.assert_allclose(exe(x), reference(x), rtol=1e-4, atol=1e-4)


def test_kernels_over_symbols_are_tuned_at_their_largest_sizes_and_compiles_take_the_records(tmp_path):
    from tessel.tuning import TuningDatabase, device_key, tune

    w, b = normal(64, 48), normal(48)
    module = tessel.trace(lambda x: ops.softmax(ops.relu(x @ w + b), axis=-1) * 2.0, spec("n", 64),
                          dims={"n": (1, 200, 8)})
    db = tmp_path / "db.sqlite"
    summaries = tune(module, target="cpu", trials=3, db=db, search="random")
    for s in summaries:
        assert s.error is None and s.trials == 3 and s.sizes == {"n": 200}
        assert 0 < s.best_seconds < math.inf and 0 < s.default_seconds < math.inf
    with TuningDatabase(db, readonly=True) as d:
        assert {r.kernel for r in d.records()} == {s.kernel for s in summaries}
        assert {r.device for r in d.records()} == {device_key("cpu")}
    expected = lambda x: 2 * _softmax_rows(np.maximum(x @ w + b, 0))
    exe = tessel.compile(module, tuning_db=db)
    assert set(exe.tuning.values()) == {"database"}
    for n in (8, 56, 200):
        x = normal(n, 64)
        np.testing.assert_allclose(exe(x), expected(x), rtol=1e-4, atol=1e-5)
    # A scheduled module over symbols compiles for the GPU too (no records for it: the defaults).
    artifact = tessel.compile(module, target="cuda:sm_90", tuning_db=db)
    assert set(artifact.tuning.values()) == {"default"}
    emulated = artifact.emulate()
    x = normal(16, 64)
    np.testing.assert_allclose(emulated(x), expected(x), rtol=1e-4, atol=1e-5)


def _softmax_rows(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
