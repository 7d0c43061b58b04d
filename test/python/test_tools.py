"""tessel-opt is installed, lists tessel's passes, and replays a compile."""

import subprocess

from tessel import tools

from test_parse import MLP


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



def test_tessel_opt_replays_a_cuda_compile_by_name():
    import tessel
    from tessel import ir as tir
    from tessel.backends.cuda import _ptx_objects

    artifact = tessel.compile(tessel.parse(MLP), target="cuda:sm_90")
    proc = _run(tools.tessel_opt(), "--tessel-cuda-pipeline=chip=sm_90", "-", stdin=MLP)
    assert proc.returncode == 0, proc.stderr
    replayed = _ptx_objects(tir.parse(proc.stdout))
    assert sorted(replayed.values()) == sorted(k.ptx for k in artifact.kernels)


def test_tessel_opt_cpu_pipeline_is_its_stages():
    from tessel import ir as tir
    from tessel.backends.pipelines import cpu_stages, run_stages

    module = tir.parse(MLP)
    run_stages(module, cpu_stages())
    proc = _run(tools.tessel_opt(), "--tessel-cpu-pipeline", "-", stdin=MLP)
    assert proc.returncode == 0, proc.stderr
    assert "llvm.func @mlp" in proc.stdout
    assert str(tir.parse(proc.stdout)) == str(module)


def test_tessel_opt_pipeline_refuses_unknown_chip():
    proc = _run(tools.tessel_opt(), "--tessel-cuda-pipeline=chip=sm_99", "-", stdin=MLP)
    assert proc.returncode != 0
    assert "unknown target 'sm_99'; expected one of: cpu, sm_80" in proc.stderr
    proc = _run(tools.tessel_opt(), "--tessel-gpu-lower-pipeline=target=cpu", "-", stdin=MLP)
    assert proc.returncode != 0 and "'cpu' is not a GPU" in proc.stderr
