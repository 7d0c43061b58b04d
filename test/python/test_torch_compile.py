"""torch.compile(model, backend="tessel"): found by name, partitioned around
unsupported ops, inference only, static shapes, results as eager's."""

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")


def _compiled(model, **options):
    torch._dynamo.reset()  # each test compiles afresh
    return torch.compile(model, backend="tessel", dynamic=False, options=options)


def test_the_backend_is_found_by_name_without_importing_tessel():
    code = textwrap.dedent("""
        import sys, torch
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
        x = torch.randn(3, 8)
        with torch.no_grad():
            out = torch.compile(model, backend="tessel", options={"report": True})(x)
            assert torch.allclose(out, model(x), rtol=1e-5, atol=1e-6)
        assert "tessel.frontends.dynamo" in sys.modules  # loaded by torch, through the entry point
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("ok")
    assert "ops compiled, in 1 partitions" in run.stderr and "eager" not in run.stderr


@pytest.mark.parametrize("norm_first, activation", [(False, torch.nn.functional.silu), (False, "relu"), (True, "gelu")],
                         ids=["unfused", "fused", "fused_norm_first"])
def test_a_transformer_layer_compiles_whole_and_matches_eager(norm_first, activation, capfd):
    # Under no_grad, nn.TransformerEncoderLayer calls its fused kernel
    # (aten._transformer_encoder_layer_fwd, translated as the layer it is)
    # unless its activation is a callable: the unfused layer's ops.
    model = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0, norm_first=norm_first,
                                             activation=activation).eval()
    x = torch.randn(2, 8, 32)
    compiled = _compiled(model, report=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    report = capfd.readouterr().err
    assert "ops compiled, in 1 partitions" in report and "eager" not in report, report


class _Unsupported(torch.nn.Module):
    """Supported ops around one tessel has no converter for."""

    def forward(self, x):
        y = torch.relu(x @ x.T)
        z = torch.special.bessel_j0(y)
        return torch.softmax(z * 2, -1) + 1


def test_an_unsupported_op_runs_in_eager_between_compiled_partitions(capfd):
    compiled = _compiled(_Unsupported(), report=True)
    x = torch.randn(4, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), _Unsupported()(x), rtol=1e-5, atol=1e-6)
    report = capfd.readouterr().err
    assert "in 2 partitions" in report and "eager: aten.special_bessel_j0.default x1 (no converter)" in report


def test_weights_updated_in_place_are_used():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    compiled = _compiled(model)
    x = torch.randn(2, 8)
    with torch.no_grad():
        compiled(x)
        model[0].weight.mul_(-2)
        torch.testing.assert_close(compiled(x), model(x))


def test_a_graph_that_needs_gradients_runs_in_eager_with_a_warning():
    model = torch.nn.Linear(4, 2)
    compiled = _compiled(model)
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match="needs gradients.*torch.no_grad"):
        out = compiled(x)
    out.sum().backward()  # autograd works: eager ran
    assert model.weight.grad is not None


def test_dynamic_shapes_fall_back_to_eager_and_static_ones_recompile():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh()).eval()
    torch._dynamo.reset()
    dynamic = torch.compile(model, backend="tessel")  # Dynamo's default: symbolic after a second shape
    with torch.no_grad():
        x = torch.randn(2, 8)
        torch.testing.assert_close(dynamic(x), model(x))
        x = torch.randn(3, 8)
        with pytest.warns(UserWarning, match="symbolic.*dynamic=False"):
            out = dynamic(x)
        torch.testing.assert_close(out, model(x))
    static = _compiled(model)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(static(x), model(x), rtol=1e-5, atol=1e-6)


def test_a_tuning_database_is_read_by_each_partition(tmp_path, capfd):
    from tessel.tuning import TuningDatabase

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU()).eval()
    x = torch.randn(3, 8)
    with pytest.raises(Exception, match="TuningDatabaseError: no tuning database at"):  # Dynamo wraps it
        with torch.no_grad():
            _compiled(model, tuning_db=tmp_path / "missing.db")(x)
    TuningDatabase(tmp_path / "empty.db").close()  # no records: every kernel keeps its default schedule
    with torch.no_grad():
        torch.testing.assert_close(_compiled(model, tuning_db=tmp_path / "empty.db", report=True)(x), model(x))
    assert "eager" not in capfd.readouterr().err


def test_a_cuda_target_runs_its_partitions_through_the_runtime_here_on_the_emulator(capfd):
    # The same partitions, compiled for sm_90 and run by tessel.runtime; with
    # emulate the PTX emulator runs them on CPU tensors (no GPU needed).
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(3, 8)
    compiled = _compiled(model, target="cuda:sm_90", emulate=True, report=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    report = capfd.readouterr().err
    assert "ops compiled, in 1 partitions" in report and "eager" not in report, report


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_tensors_run_on_their_gpu_and_results_stay_there():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval().cuda()
    x = torch.randn(3, 8, device="cuda")
    with torch.no_grad():
        got = _compiled(model, target="auto")(x)
        assert got.device == x.device
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("options, message", [
    ({"target": "cuda:sm_99"}, "unknown target 'cuda:sm_99'"),
    ({"emulate": True}, "emulate runs a CUDA target's kernels on the PTX emulator; the target is the CPU"),
])
def test_bad_targets_are_refused(options, message):
    with pytest.raises(Exception, match=message):
        with torch.no_grad():
            _compiled(torch.nn.ReLU(), **options)(torch.randn(2))


def test_an_unknown_option_is_refused():
    compiled = _compiled(torch.nn.ReLU(), tile=3)
    with pytest.raises(Exception, match="unknown tessel backend options \\['tile'\\]"):
        with torch.no_grad():
            compiled(torch.randn(2))
