"""tessel.parse / verify / run_passes: round trips and error reporting."""

import subprocess

import numpy as np
import pytest

import tessel
from tessel import tools

MLP = """\
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.relu %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
"""


def test_round_trip():
    printed = str(tessel.parse(MLP))
    assert "graph.matmul" in printed and "graph.relu" in printed
    assert str(tessel.parse(printed)) == printed


def test_syntax_error_has_location():
    with pytest.raises(tessel.CompileError) as info:
        tessel.parse("func.func @f(%a: tensor<4xf32>) {\n  %0 = graph.relu %a : tensor<4x\n}", source_name="model.mlir")
    err = info.value
    assert err.diagnostics, "diagnostics are kept"
    assert err.diagnostics[0].location.startswith("model.mlir:2:")
    assert err.diagnostics[0].severity == "error"
    assert "model.mlir:2:" in str(err)


def test_verifier_error_has_location_and_message():
    bad = MLP.replace("tensor<8x16xf32>, %b", "tensor<9x16xf32>, %b").replace(
        "(tensor<4x8xf32>, tensor<8x16xf32>)", "(tensor<4x8xf32>, tensor<9x16xf32>)"
    )
    with pytest.raises(tessel.CompileError) as info:
        tessel.parse(bad, source_name="mlp.mlir")
    first = info.value.diagnostics[0]
    assert first.location == "mlp.mlir:2:8"
    assert "matmul contraction dimensions differ" in first.message


def test_unknown_dialect_is_an_error():
    with pytest.raises(tessel.CompileError, match="<input>:2:[0-9]+: error: operation being parsed with an unregistered dialect"):
        tessel.parse('func.func @f() {\n  "nosuch.op"() : () -> ()\n  return\n}')


def test_run_passes_lowers_to_linalg():
    module = tessel.run_passes(tessel.parse(MLP), "builtin.module(graph-to-linalg)")
    text = str(module)
    assert "graph." not in text
    assert "linalg.matmul" in text


def test_to_linalg_exports_upstream_mlir_that_mlir_opt_parses(tmp_path):
    module = tessel.trace(lambda x: tessel.ops.softmax(x @ x.T, axis=-1), np.ones((4, 8), np.float32))
    exported = tessel.to_linalg(module)
    text = str(exported)
    assert "graph." not in text and "linalg.matmul" in text and "math.exp" in text
    assert "graph." in str(module)  # the original is untouched
    path = tmp_path / "exported.mlir"
    path.write_text(text)
    done = subprocess.run([str(tools.mlir_tool("mlir-opt")), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # And it compiles as it is.
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(tessel.compile(exported)(x), tessel.compile(module)(x), rtol=1e-5, atol=1e-6)


def test_failing_pass_raises_with_diagnostics():
    dynamic = """\
func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
  %0 = graph.relu %a : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""
    module = tessel.parse(dynamic, source_name="dyn.mlir")
    with pytest.raises(tessel.CompileError) as info:
        tessel.run_passes(module, "builtin.module(graph-to-linalg)")
    assert any(
        d.location == "dyn.mlir:2:8" and "without size symbols (#graph.shape)" in d.message
        for d in info.value.diagnostics
    ), str(info.value)


def test_bad_pipeline_is_a_compile_error():
    with pytest.raises(tessel.CompileError, match="invalid pass pipeline"):
        tessel.run_passes(tessel.parse(MLP), "builtin.module(no-such-pass)")
