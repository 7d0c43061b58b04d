"""tessel-opt is installed, lists tessel's passes, and replays a compile."""

import subprocess

from tessel import tools


def _run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True, timeout=120)


def test_help_lists_tessel_passes():
    proc = _run(tools.tessel_opt(), "--help")
    assert proc.returncode == 0
    assert "--graph-to-linalg" in proc.stdout


def test_tessel_opt_lowers_and_mlir_opt_accepts_the_result():
    src = """
    func.func @f(%a: tensor<4xf32>, %b: tensor<1xf32>) -> tensor<4xf32> {
      %0 = graph.add %a, %b : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    lowered = _run(tools.tessel_opt(), "--graph-to-linalg", "-", stdin=src)
    assert lowered.returncode == 0, lowered.stderr
    upstream = _run(tools.mlir_tool("mlir-opt"), "-", stdin=lowered.stdout)
    assert upstream.returncode == 0, upstream.stderr
    assert "linalg.generic" in upstream.stdout


def test_tessel_opt_reports_errors_with_location():
    proc = _run(tools.tessel_opt(), "-", stdin="func.func @f(%a: tensor<4xi32>) {\n  %0 = graph.exp %a : tensor<4xi32>\n  return\n}\n")
    assert proc.returncode != 0
    assert "<stdin>:2:8: error:" in proc.stderr
