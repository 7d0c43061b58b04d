"""Hostile input to the compiler itself: each defect an adversarial run found
(issue 34) as a regression case. Each gives the right answer or a clean
tessel error; crash-prone ones run in a subprocess, so that a crash fails
the test instead of killing pytest.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops
from tessel.tracing import as_tensor

I32 = np.iinfo(np.int32)


def _run_isolated(code: str, timeout: float = 120) -> str:
    """Runs ``code`` in a fresh interpreter; its stdout, or a failure that
    names the signal or exit status."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


def _emulated(fn, *args):
    return tessel.compile(tessel.trace(fn, *args), target="cuda:sm_90").emulate()(*args)


# Integer division is defined for every divisor, as numpy's: x / 0 = 0 and
# MIN / -1 = MIN (wraparound); the folder agrees with the kernels.
DIVIDENDS = np.array([7, -7, I32.min, 5, I32.min, 0], np.int32)
DIVISORS = np.array([0, 2, -1, -1, 1, 0], np.int32)
QUOTIENTS = np.array([0, -3, I32.min, -5, I32.min, 0], np.int32)  # truncating, as torch's "trunc"


def test_integer_division_by_zero_and_min_by_minus_one_on_cpu():
    out = _run_isolated("""
        import numpy as np, tessel
        a = np.array(%s, np.int32); b = np.array(%s, np.int32)
        print(list(tessel.compile(tessel.trace(lambda a, b: a / b, a, b))(a, b)))
    """ % (DIVIDENDS.tolist(), DIVISORS.tolist()))
    assert eval(out) == QUOTIENTS.tolist()


def test_integer_division_of_constants_folds_to_the_same_values():
    zero = np.zeros(DIVIDENDS.shape, np.int32)
    fn = tessel.compile(tessel.trace(lambda z: as_tensor(DIVIDENDS) / as_tensor(DIVISORS) + z, zero))
    np.testing.assert_array_equal(fn(zero), QUOTIENTS)


def test_integer_division_on_the_emulator():
    np.testing.assert_array_equal(_emulated(lambda a, b: a / b, DIVIDENDS, DIVISORS), QUOTIENTS)


def test_log_of_subnormals_matches_numpy():
    x = np.array([1.4e-45, 1e-40, 1e-38, 1.1754944e-38, 2.0, 0.0, -1.0], np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(x)
    got = tessel.compile(tessel.trace(ops.log, x))(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gather_from_an_empty_axis_is_an_error_at_the_op():
    with pytest.raises(tessel.CompileError, match=r"gather of indices .* from axis 0 of 'tensor<0x4xf32>', which is empty"):
        tessel.trace(lambda x, i: ops.take(x, i, axis=0), np.zeros((0, 4), np.float32), np.array([0, 1], np.int32))


@pytest.mark.parametrize("shape", ["4294967296x4294967296", "9223372036854775807", "4611686018427387904x4"])
def test_tensors_of_2_to_the_63_bytes_or_more_are_refused_by_the_verifier(shape):
    # The reshape once verified (its element count wrapped to 0) and the
    # relu ran the CPU default schedule out of memory.
    text = f"""func.func @f(%a: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{
      %0 = graph.relu %a : tensor<{shape}xf32>
      return %0 : tensor<{shape}xf32>
    }}"""
    with pytest.raises(tessel.CompileError, match="less than 2\\^63 bytes"):
        tessel.parse(text)
    wrapped = f"""func.func @f(%a: tensor<{shape}xf32>) -> tensor<0xf32> {{
      %0 = graph.reshape %a : tensor<{shape}xf32> -> tensor<0xf32>
      return %0 : tensor<0xf32>
    }}"""
    with pytest.raises(tessel.CompileError, match="less than 2\\^63 bytes"):
        tessel.parse(wrapped)


def test_ranks_above_numpys_64_are_refused():
    shape = "x".join(["1"] * 65)
    with pytest.raises(tessel.CompileError, match="rank at most 64"):
        tessel.parse(f"""func.func @f(%a: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{
          %0 = graph.relu %a : tensor<{shape}xf32>
          return %0 : tensor<{shape}xf32>
        }}""")


def test_rank_64_compiles_and_runs():
    x = np.random.default_rng(0).standard_normal((1,) * 62 + (2, 3)).astype(np.float32)
    np.testing.assert_allclose(tessel.compile(tessel.trace(lambda x: ops.exp(ops.relu(x)), x))(x),
                               np.exp(np.maximum(x, 0)), rtol=1e-6)


def test_deep_nesting_is_refused_before_the_parser_recurses():
    out = _run_isolated("""
        import tessel
        for text in ["module attributes {x = " + "[" * 20000 + "]" * 20000 + "} {}",
                     "module {" * 5000 + "}" * 5000,
                     "module attributes {x = 1 : " + "tuple<" * 30000 + "i32" + ">" * 30000 + "} {}"]:
            try:
                tessel.parse(text)
            except tessel.CompileError as e:
                print(e.diagnostics[0])
    """)
    assert out.count("brackets nest deeper than 256 levels") == 3, out
    assert "<input>:1:" in out
    # Strings and real nesting are not affected.
    tessel.parse('module attributes {t.s = "' + "[" * 1000 + '", t.x = ' + "[" * 100 + "]" * 100 + "} {}")


@pytest.mark.parametrize("alignment", ["00000000", "00000080", "03000000"])
def test_resource_blobs_with_an_absurd_alignment_are_refused_before_parsing(alignment):
    # 0 aborted MLIR's parser; 2^31 reserved 2 GiB per parse.
    out = _run_isolated(f"""
        import tessel
        text = ('func.func @f() -> tensor<f32> {{ %0 = arith.constant dense_resource<blob> : tensor<f32> '
                'return %0 : tensor<f32> }}\\n{{-# dialect_resources: {{ builtin: {{ blob: "0x{alignment}0000803f" }} }} #-}}')
        try:
            tessel.parse(text)
        except tessel.CompileError as e:
            print(e.diagnostics[0])
    """)
    assert "is not a power of two of at most 4096" in out, out


# Zero-size tensors on every target: no kernel for an empty result, the
# identity for a reduction over nothing (ONNX's definition for max/min).
ZERO_SIZE = {
    "softmax": (lambda x: ops.softmax(x, axis=-1), [np.zeros((4, 0), np.float32)], lambda x: x),
    "layer_norm": (lambda x: ops.layer_norm(x, eps=1e-5), [np.zeros((4, 0), np.float32)], lambda x: x),
    "matmul_k0": (lambda a, b: a @ b, [np.zeros((8, 0), np.float16), np.zeros((0, 8), np.float16)],
                  lambda a, b: np.zeros((8, 8), np.float16)),
    "matmul_m0": (lambda a, b: a @ b, [np.zeros((0, 8), np.float16), np.ones((8, 8), np.float16)],
                  lambda a, b: np.zeros((0, 8), np.float16)),
    "conv_c0_bias": (lambda x, w, b: ops.conv2d(x, w, b),
                     [np.zeros((1, 0, 5, 5), np.float32), np.zeros((4, 0, 3, 3), np.float32),
                      np.arange(4, dtype=np.float32)],
                     lambda x, w, b: np.broadcast_to(b[:, None, None], (1, 4, 3, 3))),
    "sum": (lambda x: ops.sum(x, axis=1), [np.zeros((3, 0), np.float32)], lambda x: np.zeros(3, np.float32)),
    "max": (lambda x: ops.max(x, axis=1), [np.zeros((3, 0), np.float32)], lambda x: np.full(3, -np.inf, np.float32)),
    "min_int": (lambda x: ops.min(x, axis=1), [np.zeros((3, 0), np.int32)], lambda x: np.full(3, I32.max, np.int32)),
    "mean": (lambda x: ops.mean(x, axis=1), [np.zeros((3, 0), np.float32)], lambda x: np.full(3, np.nan, np.float32)),
    "concat": (lambda a, b: ops.concatenate([a, b], axis=1), [np.zeros((2, 0), np.float32), np.ones((2, 3), np.float32)],
               lambda a, b: np.ones((2, 3), np.float32)),
    "relu": (ops.relu, [np.zeros((0, 3), np.float32)], lambda x: x),
}


@pytest.mark.parametrize("case", sorted(ZERO_SIZE))
def test_zero_size_tensors_compile_and_match_numpy_on_cpu_and_on_the_emulator(case):
    fn, args, reference = ZERO_SIZE[case]
    want = reference(*args)
    for target in ("cpu", "cuda:sm_90"):
        code = f"""
            import numpy as np, pickle, sys, tessel
            from tessel import ops
            fn, args = {_source(case)}
            exe = tessel.compile(tessel.trace(fn, *args), target={target!r})
            out = exe(*args) if {target!r} == "cpu" else exe.emulate()(*args)
            sys.stdout.write(pickle.dumps(np.asarray(out)).hex())
        """
        got = __import__("pickle").loads(bytes.fromhex(_run_isolated(code)))
        assert got.shape == want.shape and got.dtype == want.dtype, (target, got.shape, got.dtype)
        np.testing.assert_array_equal(got, want, err_msg=target)


def _source(case: str) -> str:
    """The (fn, args) of ZERO_SIZE[case] as code for a subprocess."""
    return (f"(sys.path.insert(0, {str(Path(__file__).parent)!r}), "
            f"__import__('test_hostile_compiler').ZERO_SIZE[{case!r}][:2])[1]")


def test_recursion_and_calls_to_declarations_are_refused():
    recursive = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(tessel.UnsupportedError, match=r"<input>:2:\d+: @f calls @f recursively"):
        tessel.compile(tessel.parse(recursive))
    external = """func.func private @g(tensor<4xf32>) -> tensor<4xf32>
    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = call @g(%a) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    for target in ("cpu", "cuda:sm_90"):
        with pytest.raises(tessel.UnsupportedError, match="@f calls @g, which is a declaration without a body"):
            tessel.compile(tessel.parse(external), target=target)


def test_a_nul_in_a_function_name_is_refused():
    with pytest.raises(tessel.UnsupportedError, match="contains a NUL character"):
        tessel.compile(tessel.trace(lambda x: x + 1, np.zeros(3, np.float32), name="a\0b"))


def test_absurd_tunable_values_are_refused_and_large_unroll_factors_unroll_fully():
    import re

    from tessel import schedules

    a = np.ones((16, 16), np.float32)
    text = str(schedules.default_schedules(tessel.trace(lambda a, b: a @ b, a, a, name="mm"), "sm_90"))
    assert "loop.unroll factor [%unroll]" in text
    with pytest.raises(tessel.CompileError, match="unroll factor 9223372036854775807 exceeds the largest tunable"):
        tessel.parse(text.replace("loop.unroll factor [%unroll]", "loop.unroll factor [9223372036854775807]"))
    # Beyond the trip count: the loop unrolls fully.
    big = tessel.parse(re.sub(r"loop.unroll factor \[[^\]]*\]", "loop.unroll factor [2147483647]", text))
    np.testing.assert_array_equal(tessel.compile(big, target="cuda:sm_90").emulate()(a, a), a @ a)


def test_a_5000_op_elementwise_chain_compiles_in_seconds():
    # Pairwise fusion once copied bodies quadratically (5.5 s at 2,000 ops).
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)

    def chain(x, n=5000):
        for i in range(n):
            x = ops.relu(x) - np.float32(0.5) if i % 2 else ops.tanh(x) * np.float32(1.5)
        return x

    exe = tessel.compile(tessel.trace(chain, x))
    want = x.astype(np.float64)
    for i in range(5000):
        want = np.maximum(want, 0) - 0.5 if i % 2 else np.tanh(want) * 1.5
    np.testing.assert_allclose(exe(x), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("build", [
    lambda x: ops.sum(x, axis=2**70), lambda x: ops.reshape(x, [2**64]), lambda x: ops.softmax(x, axis=-2**65),
    lambda x: ops.transpose(x, [2**64, 0]), lambda x: ops.broadcast_to(x, [2**64, 3]),
    lambda x: ops.take(x, np.array([0], np.int32), axis=2**66),
])
def test_out_of_range_axes_and_dims_are_tessel_errors_at_the_users_line(build):
    with pytest.raises(tessel.CompileError, match=r"test_hostile_compiler.py:\d+:\d+: error: .* does not fit in 64 bits"):
        tessel.trace(build, np.ones((2, 3), np.float32))


def test_knob_values_that_are_not_64_bit_integers_are_value_errors():
    from tessel import schedules

    a = np.ones((16, 16), np.float32)
    scheduled = schedules.default_schedules(tessel.trace(lambda a, b: a @ b, a, a, name="mm"), "cpu")
    key = schedules.knobs(scheduled)[0].key
    for bad in (2**70, 1.5, True):
        with pytest.raises(ValueError, match="must be a 64-bit integer"):
            schedules.with_knobs(scheduled, {key: bad})
    with pytest.raises(tessel.CompileError, match="knob '.*' = -1 is outside its domain"):
        schedules.with_knobs(scheduled, {key: -1})
