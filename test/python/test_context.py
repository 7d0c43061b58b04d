"""tessel.context(): dialect and pass registration, in-process and across processes."""

import subprocess
import sys
import textwrap

from mlir import ir, passmanager

import tessel
from tessel.dialects import graph, loop


def test_context_loads_tessel_and_upstream_dialects():
    ctx = tessel.context()
    for name in ["graph", "loop", "func", "linalg", "tensor", "arith", "scf", "gpu", "nvgpu", "nvvm", "transform"]:
        assert ctx.dialects[name] is not None, name


def test_contexts_are_independent():
    contexts = [tessel.context() for _ in range(50)]
    modules = [tessel.parse("func.func @f() { return }", ctx=c) for c in contexts]
    assert all(m.context is c for m, c in zip(modules, contexts))


def test_tessel_passes_are_in_the_global_registry():
    with tessel.context():
        pm = passmanager.PassManager.parse("builtin.module(graph-to-linalg,canonicalize)")
        assert "graph-to-linalg" in str(pm)


def test_parsed_ops_have_generated_classes():
    m = tessel.parse(
        """
        func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.relu %a : tensor<4xf32>
          return %0 : tensor<4xf32>
        }
        """
    )
    relu = m.body.operations[0].regions[0].blocks[0].operations[0]
    assert isinstance(relu, graph.ReluOp)
    assert str(relu.input.type) == "tensor<4xf32>"


def test_ops_built_from_python_infer_result_types():
    ctx = tessel.context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        with ir.InsertionPoint(module.body):
            a = ir.Operation.create(
                "func.func",
                attributes={
                    "sym_name": ir.StringAttr.get("f"),
                    "function_type": ir.TypeAttr.get(
                        ir.FunctionType.get([ir.RankedTensorType.get([4, 1], f32), ir.RankedTensorType.get([3], f32)], [])
                    ),
                },
                regions=1,
            )
            block = a.regions[0].blocks.append(ir.RankedTensorType.get([4, 1], f32), ir.RankedTensorType.get([3], f32))
            with ir.InsertionPoint(block):
                add = graph.AddOp(block.arguments[0], block.arguments[1])
                ir.Operation.create("func.return")
        assert str(add.result.type) == "tensor<4x3xf32>"
        tessel.verify(module)


def test_loop_ops_are_typed():
    m = tessel.parse(
        """
        func.func @k() { return }
        loop.schedule @k target "sm_90" {
          %bm = loop.knob "block_m" = 128 choices [64, 128]
          loop.tile [%bm, 0] mapping [#gpu.block<x>]
        }
        """
    )
    schedule = m.body.operations[1]
    assert isinstance(schedule, loop.ScheduleOp)
    knob = schedule.regions[0].blocks[0].operations[0]
    assert isinstance(knob, loop.KnobOp)
    assert knob.value.value == 128


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_import_twice_and_clean_exit():
    proc = _run(
        """
        import importlib, sys
        import tessel, tessel.ir
        importlib.reload(tessel.ir)
        importlib.reload(tessel)
        ctxs = [tessel.context() for _ in range(10)]
        m = tessel.parse("func.func @f() { return }", ctx=ctxs[3])
        tessel.run_passes(m, "builtin.module(graph-to-linalg)")
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr == ""


def test_import_after_mlir_and_exit_with_live_objects():
    proc = _run(
        """
        from mlir import ir
        ctx = ir.Context()
        import tessel
        keep = tessel.parse("func.func @f() { return }")
        op = keep.body.operations[0]
        """
    )
    assert proc.returncode == 0, proc.stderr
