"""The CUDA backend without a GPU: schedules, PTX, ptxas, artifacts.

Every kernel is assembled by ptxas (a test dependency) and run on the PTX
emulator (``CudaArtifact.emulate()``) against numpy, at shapes the emulator
runs in about a second; larger shapes only compile. The schedules' tiling
is also checked on the CPU, where the same scheduled IR runs
(``compile_cpu(..., schedules="sm_90")``).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel.backends.cpu import compile_cpu
from tessel.backends.cuda import CudaArtifact
from tessel.dtypes import BFLOAT16
from tessel.testing import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import transformer_block  # noqa: E402

RNG = np.random.default_rng(0)


def _randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _emulated(module, *args, target="sm_90", **options):
    """``module``'s artifact for ``target``, run on the PTX emulator."""
    return tessel.compile(module, target=f"cuda:{target}", **options).emulate()(*args)


def _block():
    params = transformer_block.init_params(64, 128, np.random.default_rng(1))
    x = _randn(2, 16, 64)
    module = tessel.trace(lambda t: transformer_block.block(t, params, 4), x, name="encoder_block")
    return module, params, x


def test_transformer_block_compiles_to_an_sm90_artifact(tmp_path):
    module, params, x = _block()
    artifact = tessel.compile(module, target="cuda:sm_90", cache=False)
    assert isinstance(artifact, CudaArtifact)
    assert artifact.target == "sm_90" and artifact.name == "encoder_block"
    assert list(artifact.stage_seconds) == ["graph", "graph-to-linalg", "schedule", "bufferize", "gpu", "manifest"]
    assert len(artifact.kernels) >= 10
    for kernel in artifact.kernels:
        assert f".entry {kernel.name}(" in kernel.ptx and ".target sm_90" in kernel.ptx
        assert all(0 < d for d in kernel.grid + kernel.block) and np.prod(kernel.block) <= 1024
        # ptxas -v figures are recorded for every kernel.
        assert kernel.ptxas["registers"] > 0 and kernel.ptxas["spill_stores"] == 0
        # Nothing is left to a single thread (a returned intermediate that
        # the tiling did not yield would be, computed a second time).
        assert kernel.grid + kernel.block != (1,) * 6, kernel.name

    path = artifact.save(tmp_path / "block")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "tessel-cuda-artifact" and manifest["entry"] == "encoder_block"
    assert manifest["inputs"] == [{"shape": [2, 16, 64], "dtype": "float32"}]
    buffers = {b["id"]: b for b in manifest["buffers"]}
    for kernel in manifest["kernels"]:
        assert (path / kernel["file"]).read_text().startswith("//")
    # Every step refers to known buffers and kernels, buffers are allocated
    # before use and not used after they are freed.
    live = {i for i, b in buffers.items() if b["kind"] in ("input", "output", "constant")}
    for step in manifest["steps"]:
        if step["op"] == "alloc":
            assert buffers[step["buffer"]]["kind"] == "temporary"
            live.add(step["buffer"])
        elif step["op"] == "free":
            live.remove(step["buffer"])
        elif step["op"] == "launch":
            assert 0 <= step["kernel"] < len(manifest["kernels"])
            bases = {buffers[a].get("view_of") if buffers[a]["kind"] == "view" else a for a in step["args"]}
            assert bases <= live
    # The weights travel with the artifact.
    constants = [b for b in manifest["buffers"] if b["kind"] == "constant"]
    stored = {np.load(path / b["file"]).tobytes() for b in constants}
    assert params["w_up"].tobytes() in stored or params["w_up"].T.tobytes() in stored
    # Every kernel runs, on the emulator.
    np.testing.assert_allclose(tessel.load(path, emulate=True)(x), transformer_block.reference(x, params, 4),
                               rtol=2e-4, atol=2e-5)
    # Saving another artifact there replaces these files.
    small = tessel.compile(tessel.trace(lambda v: -v, tessel.TensorSpec((8,), np.float32)), target="cuda:sm_90")
    small.save(path)
    assert sorted(p.name for p in (path / "kernels").iterdir()) == [Path(k["file"]).name for k in small.manifest()["kernels"]]
    assert not list((path / "constants").iterdir())


def test_the_example_runs_its_gpu_artifact_on_the_emulator_or_says_how():
    example = [sys.executable, str(Path(transformer_block.__file__)), "--target", "cuda:sm_90", "--batch", "1",
               "--seq", "8", "--d-model", "32", "--d-ff", "64"]
    done = subprocess.run(example + ["--emulate"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "target cuda:sm_90 on the PTX emulator" in done.stdout and "OK: matches numpy" in done.stdout
    if not _has_gpu():
        done = subprocess.run(example, capture_output=True, text=True)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "needs a GPU to run on, and this machine has none" in done.stderr and "--emulate" in done.stderr


def _has_gpu() -> bool:
    try:
        tessel.runtime.cuda_target()
        return True
    except tessel.RuntimeError:
        return False


def test_transformer_block_gpu_schedules_match_numpy_on_cpu():
    module, params, x = _block()
    executable = compile_cpu(module, schedules="sm_90")
    np.testing.assert_allclose(executable(x), transformer_block.reference(x, params, 4), rtol=2e-4, atol=2e-5)


CASES = {
    "softmax": (lambda x: ops.softmax(x, axis=-1), lambda x: np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True), [(96, 1000)]),
    "softmax_1d": (lambda x: ops.softmax(x, axis=0), lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
                   [(37,)]),
    "layer_norm": (lambda x, w, b: ops.layer_norm(x, w, b, eps=1e-5),
                   lambda x, w, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b,
                   [(8, 33, 64), (64,), (64,)]),
    "matmul_bias_gelu": (lambda a, w, b: ops.gelu(a @ w + b, approximate="tanh"),
                         lambda a, w, b: 0.5 * (a @ w + b) * (1 + np.tanh(0.7978845608 * ((a @ w + b) + 0.044715 * (a @ w + b) ** 3))),
                         [(3, 17, 40), (40, 24), (24,)]),
    "sum_to_scalar": (lambda x: ops.sum(x), lambda x: x.sum(), [(7, 9)]),
    "sum_axis0": (lambda x: ops.sum(x, axis=0), lambda x: x.sum(0), [(300, 5)]),
    "transpose_merge": (lambda x: x.transpose(0, 2, 1, 3).reshape(2, 8, 24),
                        lambda x: x.transpose(0, 2, 1, 3).reshape(2, 8, 24), [(2, 3, 8, 8)]),
    "concat_inner": (lambda x, y: ops.concatenate([x, y], axis=1), lambda x, y: np.concatenate([x, y], 1),
                     [(4, 3), (4, 5)]),
    "embedding": (lambda ids, table: ops.take(table, ids, axis=0), lambda ids, table: table[ids.astype(np.int64)],
                  [(4, 16), (100, 64)]),
    "conv_pool": (lambda x, w: ops.max_pool2d(ops.relu(ops.conv2d(x, w, padding=1)), 2),
                  lambda x, w: fuzz.pool2d_reference(np.maximum(fuzz.conv2d_reference(
                      x, w, stride=1, padding=1, dilation=1, groups=1, layout="NCHW"), 0),
                      "max", kernel=2, stride=2, padding=0, count_include_pad=False, layout="NCHW"),
                  [(2, 3, 10, 10), (4, 3, 3, 3)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_schedules_match_numpy_and_assemble(case):
    fn, reference, shapes = CASES[case]
    args = [_randn(*s) for s in shapes]
    if case == "embedding":  # the ids
        args[0] = RNG.integers(0, shapes[1][0], shapes[0]).astype(np.int64)
    module = tessel.trace(fn, *args, name=case)
    got = compile_cpu(module, schedules="sm_90")(*args)
    np.testing.assert_allclose(got, reference(*[a.astype(np.float64) for a in args]), rtol=1e-4, atol=1e-4)
    artifact = tessel.compile(module, target="cuda:sm_80")
    assert all(".target sm_80" in k.ptx for k in artifact.kernels)
    np.testing.assert_allclose(artifact.emulate()(*args), reference(*[a.astype(np.float64) for a in args]),
                               rtol=1e-4, atol=1e-4)


def test_without_ptxas_a_compile_warns_and_its_kernels_say_they_were_not_assembled(monkeypatch, tmp_path):
    import tessel.backends.cuda as cuda

    def no_ptxas():
        raise FileNotFoundError("ptxas is not installed (pip install 'tessel[cuda]', or a CUDA toolkit on PATH)")

    monkeypatch.setattr(cuda, "ptxas", no_ptxas)
    x = _randn(4, 64)
    module = tessel.trace(lambda x: ops.relu(x) + 1.0, x, name="unassembled")
    with pytest.warns(UserWarning, match=r"tessel\[cuda\].*not assembled"):
        artifact = tessel.compile(module, target="cuda:sm_90")
    assert artifact.kernels and all(k.ptxas is None for k in artifact.kernels)
    saved = tessel.runtime.read(artifact.save(tmp_path / "unassembled"))
    assert all(k.ptxas is None for k in saved.kernels)
    np.testing.assert_allclose(artifact.emulate()(x), np.maximum(x, 0) + 1, rtol=1e-6)


def test_a_prime_extent_gets_full_blocks_and_idle_threads_in_the_last():
    # 997 has no divisor near 256: blocks of 256 threads, the last one's
    # surplus threads guarded, rather than 997 blocks of one thread.
    x = _randn(5, 997)
    module = tessel.trace(lambda x: ops.tanh(x) * 2.0 + x, x, name="prime")
    artifact = tessel.compile(module, target="cuda:sm_90")
    (kernel,) = artifact.kernels
    assert kernel.block == (256, 1, 1) and kernel.grid == (4, 5, 1)
    assert "setp." in kernel.ptx
    np.testing.assert_allclose(artifact.emulate()(x), np.tanh(x) * 2 + x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,width", [(np.float32, 4), (np.float16, 8)], ids=["f32", "f16"])
def test_elementwise_threads_load_and_store_16_byte_vectors(dtype, width):
    # Each thread takes 16 bytes of adjacent points (loop.vector_access):
    # the inputs and the row-broadcast bias load as one vector each, the
    # result stores as one; no scalar access is left.
    spec = tessel.TensorSpec((64, 4096), np.dtype(dtype))
    module = tessel.trace(lambda x, y, b: ops.relu(x * y + b), spec, spec, tessel.TensorSpec((4096,), np.dtype(dtype)))
    artifact = tessel.compile(module, target="cuda:sm_90")
    (kernel,) = artifact.kernels
    assert kernel.block == (256, 1, 1) and kernel.grid == (4096 // (256 * width), 64, 1)
    assert kernel.ptx.count("ld.global.v4.b32") == 3 and kernel.ptx.count("st.global.v4.b32") == 1
    scalar = "ld.global.f32" if dtype == np.float32 else "ld.global.b16"
    assert scalar not in kernel.ptx
    x, y, b = _randn(64, 4096, dtype=dtype), _randn(64, 4096, dtype=dtype), _randn(4096, dtype=dtype)
    want = np.maximum(x.astype(np.float32) * y + b, 0)
    np.testing.assert_allclose(artifact.emulate()(x, y, b).astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_vector_threads_match_numpy_on_cpu_with_broadcast_and_transposed_operands():
    # Vectors where the layout allows (x, the bias), a transposed operand
    # read per point, a per-row scalar read once.
    x, t, b, s = _randn(6, 1000), _randn(1000, 6), _randn(1000), _randn(6, 1)
    module = tessel.trace(lambda x, t, b, s: ops.tanh(x * t.T + b) * s, x, t, b, s, name="vectors")
    scheduled = schedules.default_schedules(module, "sm_90")
    assert {k.name: k.value for k in schedules.knobs(scheduled)} == {"vector": 4}
    np.testing.assert_allclose(compile_cpu(scheduled, schedules="sm_90")(x, t, b, s), np.tanh(x * t.T + b) * s,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_emulated(scheduled, x, t, b, s), np.tanh(x * t.T + b) * s, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,width", [(np.float32, 4), (np.float16, 8)], ids=["f32", "f16"])
def test_transposing_threads_read_and_write_16_byte_vectors(dtype, width):
    # An attention's key split into heads and transposed for q @ k^T: each
    # thread takes a square of width x width points, reads width vectors
    # along the input's contiguous loop and writes width along the
    # output's, where one thread per vector once read width scalars a row
    # apart. Every sampled vector width keeps the numerics.
    k = _randn(64, 4, 32, dtype=dtype)  # [seq, heads, head dim]
    module = tessel.trace(lambda k: k.transpose(1, 2, 0), k, name="heads")
    (kernel,) = tessel.compile(module, target="cuda:sm_90").kernels
    assert kernel.ptx.count("ld.global.v4.b32") == width and kernel.ptx.count("st.global.v4.b32") == width
    assert ("ld.global.f32" if dtype == np.float32 else "ld.global.b16") not in kernel.ptx
    scheduled = schedules.default_schedules(module, "sm_90")
    [knob] = schedules.knobs(scheduled)
    for value in knob.domain:
        point = schedules.with_knobs(scheduled, {knob.key: value})
        np.testing.assert_array_equal(compile_cpu(point, schedules="sm_90")(k), k.transpose(1, 2, 0))
        np.testing.assert_array_equal(_emulated(point, k), k.transpose(1, 2, 0))


def test_grouped_convolution_leaves_nothing_to_a_single_thread():
    # A grouped convolution is no matmul: its padding and the convolution
    # itself, which its epilogue reads through a reshape, are left untiled
    # by the epilogue's schedule and get nests of their own (the padding as
    # a gather) instead of one thread each.
    x, w = _randn(2, 4, 9, 9), _randn(6, 2, 3, 3)
    module = tessel.trace(lambda x, w: ops.relu(ops.conv2d(x, w, padding=1, groups=2)), x, w, name="grouped")
    artifact = tessel.compile(module, target="cuda:sm_90")
    for kernel in artifact.kernels:
        assert kernel.grid + kernel.block != (1,) * 6, kernel.name
    want = np.maximum(fuzz.conv2d_reference(x, w, stride=1, padding=1, dilation=1, groups=2, layout="NCHW"), 0)
    np.testing.assert_allclose(compile_cpu(module, schedules="sm_90")(x, w), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(artifact.emulate()(x, w), want, rtol=1e-4, atol=1e-4)


def test_concatenation_parts_are_computed_in_place_by_threads():
    # Each part of a concatenation is written into its slice of the result
    # by a nest of its own: an input by a vectorized copy, the transpose
    # for the 64 rows taken; none is a single-thread copy.
    x, y, z = _randn(64, 96), _randn(64, 32), _randn(8, 96)
    module = tessel.trace(lambda x, y, z: ops.concatenate([x, ops.relu(y), z.T[:64]], 1) * 2.0, x, y, z,
                          name="concat")
    artifact = tessel.compile(module, target="cuda:sm_90")
    kernels = artifact.kernels
    # The concatenation's kernel: three parts, then the product.
    assert [k.name for k in kernels].count(kernels[-1].name) == 4
    for kernel in kernels:
        assert kernel.grid + kernel.block != (1,) * 6, kernel.name
    want = np.concatenate([x, np.maximum(y, 0), z.T[:64]], 1) * 2
    np.testing.assert_allclose(compile_cpu(module, schedules="sm_90")(x, y, z), want, rtol=1e-6)
    np.testing.assert_allclose(artifact.emulate()(x, y, z), want, rtol=1e-6)


def test_a_kernel_that_only_concatenates_gets_threads():
    # A key cache grown by one step: the kernel has no linalg root, so its
    # empty default schedule only names the target; both copies get threads.
    past, new = _randn(2, 4, 63, 16), _randn(2, 4, 1, 16)
    module = tessel.trace(lambda past, new: ops.concatenate([past, new], 2), past, new, name="cache")
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert len(artifact.kernels) == 2
    for kernel in artifact.kernels:
        assert kernel.grid + kernel.block != (1,) * 6, kernel.name
    np.testing.assert_array_equal(compile_cpu(module, schedules="sm_90")(past, new), np.concatenate([past, new], 2))
    np.testing.assert_array_equal(artifact.emulate()(past, new), np.concatenate([past, new], 2))


def _gemm_bias_gelu(a, w, b):
    return ops.gelu(a @ w + b, approximate="tanh")


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["f16", "bf16"])
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
# The last shape leaves edge tiles in M, N and K (masked copies and stores).
@pytest.mark.parametrize("m,n,k", [(256, 384, 512), (4096, 4096, 4096), (8192, 768, 3072), (200, 296, 104)])
def test_16_bit_matmul_with_epilogue_runs_on_tensor_cores_without_spills(target, m, n, k, dtype):
    dtype = np.dtype(dtype)
    module = tessel.trace(_gemm_bias_gelu, tessel.TensorSpec((m, k), dtype), tessel.TensorSpec((k, n), dtype),
                          tessel.TensorSpec((n,), dtype), name="gemm")
    artifact = tessel.compile(module, target=f"cuda:{target}")
    [kernel] = artifact.kernels
    ptx_type = {"float16": "f16", "bfloat16": "bf16"}[dtype.name]
    for instruction in (f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx_type}.{ptx_type}.f32",
                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                        "cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group"):
        assert instruction in kernel.ptx, instruction
    # Four warps; multi-buffered tiles in dynamic shared memory.
    assert kernel.block == (128, 1, 1) and kernel.dynamic_shared_bytes > 0
    assert kernel.ptxas["spill_stores"] == 0 and kernel.ptxas["spill_loads"] == 0
    if m * n * k <= 256 * 384 * 512:  # the larger ones only compile
        a, w, b = _randn(m, k, dtype=dtype), (_randn(k, n) * 0.1).astype(dtype), _randn(n, dtype=dtype)
        x = a.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
        want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
        np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
# The second shape leaves edge tiles in M and N and a partial last K step.
@pytest.mark.parametrize("m,n,k", [(256, 384, 512), (200, 296, 100)])
def test_f32_matmuls_run_on_tf32_tensor_cores_only_when_allowed(target, m, n, k):
    a, w, b = _randn(m, k), _randn(k, n) * 0.1, _randn(n)
    module = tessel.trace(_gemm_bias_gelu, a, w, b, name="gemm")
    exact = tessel.compile(module, target=f"cuda:{target}")
    assert not any("mma.sync" in kernel.ptx for kernel in exact.kernels)
    tf32 = tessel.compile(module, target=f"cuda:{target}", allow_tf32=True)
    [kernel] = tf32.kernels
    for instruction in ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global"):
        assert instruction in kernel.ptx, instruction
    assert kernel.ptxas["spill_stores"] == 0 and kernel.ptxas["spill_loads"] == 0
    # The schedule's tiling, fusion and masking, run exactly on the CPU.
    scheduled = schedules.default_schedules(module, target, allow_tf32=True)
    assert "shape [16, 8, 8]" in str(scheduled)
    x = a.astype(np.float64) @ w + b
    want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(compile_cpu(scheduled, schedules=target)(a, w, b), want, rtol=1e-4, atol=1e-4)
    # On the tensor cores, inputs lose all but 10 bits of their mantissas.
    np.testing.assert_allclose(tf32.emulate()(a, w, b), want, rtol=1e-2, atol=1e-2)
    if m * n * k < 256 * 384 * 512:  # the exact f32 kernel runs a thread's dot products one FMA at a time
        np.testing.assert_allclose(exact.emulate()(a, w, b), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", [(2, 64, 96, 128), (3, 37, 40, 104)], ids=["whole_tiles", "edge_tiles"])
def test_tensor_core_schedules_match_numpy_on_cpu(shape, dtype):
    # The same block tiling and epilogue fusion, run by the CPU; a 3-D x
    # reaches the matmul collapsed to 2-D.
    batch, rows, k, n = shape
    a, w, b = (_randn(batch, rows, k, dtype=dtype), (_randn(k, n) * 0.1).astype(dtype), _randn(n, dtype=dtype))
    module = tessel.trace(_gemm_bias_gelu, a, w, b, name="gemm")
    got = compile_cpu(module, schedules="sm_90")(a, w, b)
    x = a.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
    want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert any("mma.sync" in k.ptx for k in artifact.kernels)
    np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2)])
def test_padded_f16_convolutions_run_on_tensor_cores_over_materialized_patches(layout, stride, dilation):
    # The patches (im2col) go to memory in a launch of their own, read
    # through the zero padding by bounds tests; the filter is shared by the
    # batch (a broadcast operand of the batched matmul). A padding of the
    # dilation keeps the output pixels a multiple of 8 (whole 16-byte rows).
    x = _randn(2, 16, 16, 16, dtype=np.float16)
    w = (_randn(32, 16, 3, 3) * 0.1).astype(np.float16)
    if layout == "NHWC":
        x, w = x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()
    module = tessel.trace(lambda x, w: ops.relu(ops.conv2d(x, w, stride=stride, padding=dilation,
                                                          dilation=dilation, layout=layout)),
                          x, w, name="conv")
    scheduled = schedules.default_schedules(module, "sm_90")
    assert "loop.materialize inputs [%d]" % (1 if layout == "NCHW" else 0) in str(scheduled)
    want = np.maximum(fuzz.conv2d_reference(x.astype(np.float64), w.astype(np.float64), stride=stride,
                                            padding=dilation, dilation=dilation, groups=1,
                                            layout=layout), 0)
    got = compile_cpu(scheduled, schedules="sm_90")(x, w)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    artifact = tessel.compile(module, target="cuda:sm_90")
    np.testing.assert_allclose(artifact.emulate()(x, w).astype(np.float32), want, rtol=2e-2, atol=2e-2)
    kernels = artifact.kernels
    # No launch runs in one thread (a padded copy of the input once did).
    assert all(np.prod(k.grid) * np.prod(k.block) > 1 for k in kernels)
    [mma] = [k for k in kernels if "mma.sync.aligned.m16n8k16" in k.ptx]
    assert "cp.async.cg.shared.global" in mma.ptx and mma.ptxas["spill_stores"] == 0


def test_every_contraction_of_an_f16_transformer_layer_runs_on_tensor_cores():
    # bench/gpu's encoder layer at a small size whose contractions tiles
    # divide: q, k, v, q @ k^T, p @ v, out (with the residual and a cast for
    # the next layer_norm), and both MLP matmuls.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "gpu"))
    import workloads

    layer = workloads._encoder_layer(2, 128, 128, 2, 256)
    specs = [tessel.TensorSpec(shape, np.dtype(dtype)) for shape, dtype in layer.inputs]
    module = tessel.trace(layer.tessel_fn, *specs, name="layer")
    artifact = tessel.compile(module, target="cuda:sm_90")
    kernels = artifact.kernels
    tensor_core = [k for k in kernels if "mma.sync.aligned.m16n8k16" in k.ptx]
    assert len(tensor_core) == 8
    assert all("cp.async.cg.shared.global" in k.ptx and k.ptxas["spill_stores"] == 0 for k in tensor_core)
    # The same schedules on the CPU agree with the CPU's own pipeline, with
    # its reductions sequential as the GPU schedules' are here: sums
    # reassociated by loop.split_reduction (in f32) can round to a different
    # f16 mean or variance, which one ill-conditioned row of this f16 layer
    # amplifies to 13% (its float64 value both pipelines miss by more).
    args = layer.arrays()
    scheduled = compile_cpu(module, schedules="sm_90")(*args)
    cpu = schedules.default_schedules(module, "cpu")
    sequential = schedules.with_knobs(cpu, {k.key: 1 for k in schedules.knobs(cpu) if k.name == "lanes"})
    np.testing.assert_allclose(scheduled.astype(np.float32), tessel.compile(sequential)(*args).astype(np.float32),
                               rtol=2e-2, atol=2e-2)
    # The GPU kernels, run, agree with their schedules on the CPU to f16
    # roundings of the layer's largest intermediate values (~1000).
    np.testing.assert_allclose(artifact.emulate()(*args).astype(np.float32), scheduled.astype(np.float32),
                               rtol=2e-2, atol=4e-3 * float(np.abs(scheduled).max()))


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_row_reductions_share_rows_through_warp_shuffles(op):
    f16 = np.dtype(np.float16)
    fn = {"softmax": lambda x: ops.softmax(x, axis=-1),
          "layer_norm": lambda x, w, b: ops.layer_norm(x, w, b, eps=1e-5)}[op]
    specs = [tessel.TensorSpec((8192, 8192), f16)] + [tessel.TensorSpec((8192,), f16)] * (op == "layer_norm") * 2
    kernels = tessel.compile(tessel.trace(fn, *specs), target="cuda:sm_90").kernels
    # One row per block, 512 threads, partials combined by butterfly shuffles
    # (layer_norm's weight and bias casts are kernels of their own). Each
    # thread's 16 columns stay in registers: the row is read once, in
    # 16-byte loads, and written in 16-byte stores.
    [kernel] = [k for k in kernels if k.grid == (8192, 1, 1)]
    assert kernel.block == (512, 1, 1)
    assert "shfl.sync.bfly.b32" in kernel.ptx and kernel.ptxas["spill_stores"] == 0
    assert "ld.global.v4.b32" in kernel.ptx and "st.global.v4.b32" in kernel.ptx
    assert "ld.global.b16" not in kernel.ptx and "st.global.b16" not in kernel.ptx
    # The same kernels over fewer rows, run.
    rows = [_randn(16, 8192, dtype=f16)] + [_randn(8192, dtype=f16)] * (op == "layer_norm") * 2
    small = tessel.trace(fn, *rows)
    assert any(k.block == (512, 1, 1) and "shfl.sync.bfly.b32" in k.ptx
               for k in tessel.compile(small, target="cuda:sm_90").kernels)
    x = rows[0].astype(np.float64)
    if op == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    else:
        want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * rows[1] + rows[2]
    np.testing.assert_allclose(_emulated(small, *rows).astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("op", ["sum", "mean_exp", "max_keepdims"])
def test_reductions_of_rows_share_each_row_among_a_blocks_threads(op, dtype):
    # A root that reduces rows, or an op on its per-row results (the f16
    # cast of an f32 sum): one block per row, partials combined by warp
    # shuffles, instead of one thread per row reading it with strides (or,
    # for the cast, a single thread for everything). An f16 maximum is
    # shuffled as f32, which is exact.
    fn, reference = {"sum": (lambda x: ops.sum(x * 2.0, axis=-1), lambda x: (x * 2).sum(-1)),
                     "mean_exp": (lambda x: ops.mean(ops.exp(x), axis=-1), lambda x: np.exp(x).mean(-1)),
                     "max_keepdims": (lambda x: ops.max(x, axis=-1, keepdims=True) + 1.0,
                                      lambda x: x.max(-1, keepdims=True) + 1)}[op]
    x = np.random.default_rng(0).random((4, 64, 300)).astype(dtype)
    module = tessel.trace(fn, x, name="rows")
    [kernel] = tessel.compile(module, target="cuda:sm_90").kernels
    assert sorted(kernel.grid) == [1, 4, 64] and "shfl.sync.bfly.b32" in kernel.ptx
    want = reference(x.astype(np.float64))
    got = compile_cpu(module, schedules="sm_90")(x).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-5)
    np.testing.assert_allclose(_emulated(module, x).astype(np.float64), want,
                               rtol=2e-3 if dtype == np.float16 else 1e-5)


SINGLE_VALUE_REDUCTIONS = {
    # name: (fn, reference, shape, dtype, launches as (grid x, threads))
    "sum": (lambda x: ops.sum(ops.exp(x) * 2.0), lambda x: (np.exp(x) * 2).sum(), (512, 1024), np.float32,
            [(128, 256), (1, 32)]),
    "mean_keepdims": (lambda x: ops.mean(x, axis=(0, 1), keepdims=True) + 1.0, lambda x: x.mean(keepdims=True) + 1,
                      (300, 7), np.float32, [(1, 256)]),
    "prime": (lambda x: ops.sum(x), lambda x: x.sum(), (10007,), np.float32, [(1, 1024)]),
    "f16_max": (lambda x: ops.max(x), lambda x: x.max(), (4096, 8), np.float16, [(8, 256), (1, 32)]),
    "i32_sum": (lambda x: ops.sum(x), lambda x: x.sum(), (1000, 64), np.int32, [(10, 512), (1, 32)]),
    "i64_max": (lambda x: ops.max(x), lambda x: x.max(), (1000, 64), np.int64, [(10, 512), (1, 32)]),
    "standardize": (lambda x: (x - ops.mean(x)) * ops.rsqrt(ops.mean((x - ops.mean(x)) * (x - ops.mean(x))) + 1e-5),
                    lambda x: (x - x.mean()) / np.sqrt(x.var() + 1e-5), (256, 512), np.float32,
                    [(32, 256), (1, 32), (32, 256), (1, 32), (1, 128)]),
    "centered": (lambda x: x - ops.mean(x), lambda x: x - x.mean(), (64, 96), np.float32, None),
    "variance": (lambda x: ops.mean((x - ops.mean(x)) * (x - ops.mean(x))), lambda x: x.var(), (128, 256),
                 np.float32, [(8, 256), (1, 32), (8, 256), (1, 32)]),
    "softmax_1d": (lambda x: ops.softmax(x, axis=0), lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
                   (6144,), np.float32, None),
}


@pytest.mark.parametrize("name", SINGLE_VALUE_REDUCTIONS)
def test_reductions_to_a_single_value_run_in_parts_across_the_grid(name):
    # loop.grid_reduce: each reduction to a single value is split into rows
    # of partial results, a block each, which one block then combines with
    # the single-value ops after them, both through warp shuffles; ops over
    # tensors that read the value are tiled pointwise. Before, a sum ran in
    # a single thread. Integer partials are shuffled as they are. A
    # variance reads x, not the centered values written first (the
    # elementwise producer is fused into the reduction). Every sampled part
    # count and thread count keeps the numerics.
    fn, reference, shape, dtype, launches = SINGLE_VALUE_REDUCTIONS[name]
    rng = np.random.default_rng(0)
    integers = np.issubdtype(dtype, np.integer)
    x = (rng.integers(-1000, 1000, shape) if integers else rng.standard_normal(shape)).astype(dtype)
    module = tessel.trace(fn, x, name=name)
    kernels = tessel.compile(module, target="cuda:sm_90").kernels
    assert all(k.block != (1, 1, 1) for k in kernels)
    if launches is not None:
        assert [(k.grid[0], k.block[0]) for k in kernels] == launches
    assert all("shfl.sync.bfly.b32" in k.ptx for k in kernels if k.grid == (1, 1, 1))
    want = reference(x.astype(np.float64))
    tolerance = dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
    scheduled = schedules.default_schedules(module, "sm_90")
    by_name = {k.name: k for k in schedules.knobs(scheduled)}
    for parts, threads in [(by_name["parts"].value, by_name["threads"].value),
                           (rng.choice(by_name["parts"].domain), rng.choice(by_name["threads"].domain))]:
        values = {by_name["parts"].key: int(parts), by_name["threads"].key: int(threads)}
        point = schedules.with_knobs(scheduled, values)
        for got in (compile_cpu(point, schedules="sm_90")(x), _emulated(point, x)):
            np.testing.assert_allclose(np.asarray(got, np.float64), want, **tolerance)


FUZZ_GRAPHS = int(os.environ.get("TESSEL_CUDA_FUZZ_GRAPHS", "40"))


@pytest.fixture(scope="module")
def gpu_fuzz_outcomes():
    batches = [range(start, start + 5) for start in range(0, FUZZ_GRAPHS, 5)]
    return fuzz.run_isolated(batches, workers=os.cpu_count() or 1, schedules="sm_90")


@pytest.mark.parametrize("seed", range(FUZZ_GRAPHS), ids=lambda s: f"seed{s:06d}")
def test_random_graph_compiles_for_sm90_and_runs_on_the_emulator_matching_numpy(seed, gpu_fuzz_outcomes):
    graph, outcome = fuzz.random_graph(seed), gpu_fuzz_outcomes[seed]
    problems = [outcome] if isinstance(outcome, str) else fuzz.check(graph, outcome)
    if problems:
        pytest.fail(fuzz.report(graph, "\n".join(problems)), pytrace=False)


def test_a_model_whose_name_ptx_cannot_spell_compiles_and_runs():
    # NVPTX aborted the process on a symbol like "linear+relu_kernel0_kernel".
    x = _randn(2, 8)
    module = tessel.trace(lambda v: ops.relu(v) * 2.0, x, name="linear+relu")
    for scheduled in (module, schedules.default_schedules(module, "sm_90")):
        artifact = tessel.compile(scheduled, target="cuda:sm_90")
        assert artifact.name == "linear+relu" and [k.name for k in artifact.kernels] == ["linear_relu_kernel0_kernel"]
        np.testing.assert_allclose(artifact.emulate()(x), np.maximum(x, 0) * 2)


def test_unknown_gpu_target_is_a_clear_error():
    module = tessel.trace(lambda x: -x, _randn(4))
    with pytest.raises(tessel.UnsupportedError, match="unknown target 'cuda:sm_75'.*cuda:sm_90"):
        tessel.compile(module, target="cuda:sm_75")
    with pytest.raises(tessel.UnsupportedError, match="unknown target 'sm_75' for schedules; available: cpu, sm_80"):
        compile_cpu(module, schedules="sm_75")


def test_invalid_schedule_is_reported_with_its_location():
    text = """
    #id = affine_map<(d0, d1) -> (d0, d1)>
    func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
      %e = tensor.empty() : tensor<64x64xf32>
      %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
      ^bb0(%x: f32, %o: f32):
        %y = arith.negf %x : f32
        linalg.yield %y : f32
      } -> tensor<64x64xf32>
      return %0 : tensor<64x64xf32>
    }
    loop.schedule @k target "sm_90" {
      loop.tile [1, 64] mapping [#gpu.block<y>, #gpu.block<x>]
      loop.tile [0, 0] mapping [#gpu.thread<x>]
    }
    """
    with pytest.raises(tessel.CompileError, match="tiles no loop"):
        tessel.parse(text)
    # A block of 64 x 64 threads is over the target's limit: the error names
    # the tile op's line.
    too_many = text.replace("loop.tile [1, 64] mapping [#gpu.block<y>, #gpu.block<x>]",
                            "loop.tile [64, 64] mapping [#gpu.block<y>, #gpu.block<x>]").replace(
        "loop.tile [0, 0] mapping [#gpu.thread<x>]", "loop.tile [1, 1] mapping [#gpu.thread<y>, #gpu.thread<x>]")
    with pytest.raises(tessel.CompileError, match=r":15:\d+: error: gives 4096 threads per block on target "
                                                  r"'sm_90'; the limit is 1024"):
        tessel.run_passes(tessel.parse(too_many), "builtin.module(loop-validate)")


def test_sin_cos_and_erf_are_exact_to_an_ulp_at_any_argument_on_the_cpu_and_the_gpu():
    # Large arguments need a full range reduction (libm on the CPU, libdevice's
    # Payne-Hanek path with its carry chains on the GPU, run on the emulator).
    x = np.array([0.5, -3.0, 100.0, 12345.6, 1.0e5, 3.0e5, 1.0e6, 3.0e7, -7.7e8, 1e30, 0.0, -0.0] * 4,
                 np.float32)
    module = tessel.trace(lambda t: ops.sin(t) + 2 * ops.cos(t) + ops.erf(t * 1e-5),
                          tessel.TensorSpec(x.shape, np.float32))
    x64 = x.astype(np.float64)
    expected = np.sin(x64) + 2 * np.cos(x64) + np.vectorize(math.erf)(x.astype(np.float32) * np.float32(1e-5))
    cpu = tessel.compile(module, target="cpu")
    gpu = tessel.compile(module, target="cuda:sm_90").emulate()
    for run in (cpu, gpu):
        np.testing.assert_allclose(run(x), expected, rtol=0, atol=5e-7)


def test_remainders_and_rounding_match_numpy_exactly_on_the_cpu_and_the_gpu():
    # fmod is exact (no x - trunc(x / y) * y rounding), with the dividend's
    # sign; remainder has the divisor's; round takes halves to even.
    x = np.array([5.5, -5.5, 7.0, -7.0, 1e30, 3.0, -0.5, 2.5, -2.5, np.inf, 1.0, 0.1] * 3, np.float32)
    y = np.array([2.0, 2.0, -3.0, 3.0, 7.0, np.inf, 0.3, 1.5, -1.5, 2.0, 0.0, 0.03] * 3, np.float32)
    spec = tessel.TensorSpec(x.shape, np.float32)

    def fn(a, b):
        return ops.fmod(a, b), ops.remainder(a, b), ops.floor(a * 0.7), ops.ceil(a * 0.7), ops.round(a)

    module = tessel.trace(fn, spec, spec)
    with np.errstate(invalid="ignore"):
        expected = (np.fmod(x, y), np.remainder(x, y), np.floor(x * np.float32(0.7)), np.ceil(x * np.float32(0.7)),
                    np.round(x))
    i = np.array([7, -7, 7, -7, 5, 0, -(2 ** 31)], np.int32)
    j = np.array([3, 3, -3, -3, 0, 4, -1], np.int32)
    ints = tessel.trace(lambda a, b: (ops.fmod(a, b), ops.remainder(a, b)), *[tessel.TensorSpec(i.shape, np.int32)] * 2)
    for target in ("cpu", "cuda:sm_90"):
        exe, int_exe = (tessel.compile(m, target=target) for m in (module, ints))
        if target != "cpu":
            exe, int_exe = exe.emulate(), int_exe.emulate()
        for got, want in zip(exe(x, y), expected):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(int_exe(i, j)[0], [1, -1, 1, -1, 0, 0, 0])
        np.testing.assert_array_equal(int_exe(i, j)[1], [1, 2, -2, -1, 0, 0, 0])


def test_float64_int8_and_int16_compute_on_the_cpu_and_the_gpu():
    # float64 keeps its precision through the math (no f32 detour); int8 and
    # int16 wrap as numpy does; f64 -> f16/bf16 rounds once, correctly.
    x = ((np.arange(64).reshape(8, 8) - 20) * 0.37).astype(np.float64)
    spec = tessel.TensorSpec(x.shape, np.float64)

    def fn(t):
        # sin/cos (libdevice's slow reduction at 1e6) and pow are device-function calls on the GPU.
        return (ops.tanh(t) + ops.log(abs(t) + 1) + ops.sqrt(abs(t)) + ops.exp(t * 0.1), ops.softmax(t @ t, axis=-1),
                ops.sin(t * 1e6) + ops.cos(t * 3e4) + ops.pow(abs(t) + 1, 1.5))

    scores = x @ x
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    expected = (np.tanh(x) + np.log(abs(x) + 1) + np.sqrt(abs(x)) + np.exp(x * 0.1),
                probs / probs.sum(-1, keepdims=True), np.sin(x * 1e6) + np.cos(x * 3e4) + (abs(x) + 1) ** 1.5)
    wide = np.array([1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -40, 65519.99, 65520.0, -3.14159265358979, 1e-8], np.float64)
    narrow = tessel.trace(lambda t: (t.astype(np.float16), t.astype(BFLOAT16)),
                          tessel.TensorSpec(wide.shape, np.float64))
    i = np.array([100, -100, 127, -128, 77, 5], np.int8)
    j = np.array([30000, -30000, 32767, -32768, 1234, 5], np.int16)
    ints = tessel.trace(lambda a, b: (a * 3 + a, (b * 2) / 7, ops.maximum(a, 0).astype(np.int16) + b),
                        tessel.TensorSpec(i.shape, np.int8), tessel.TensorSpec(j.shape, np.int16))
    with np.errstate(over="ignore"):
        int_expected = (i * 3 + i, ((j * 2) / 7).astype(np.int16), np.maximum(i, 0).astype(np.int16) + j)
    for target in ("cpu", "cuda:sm_90"):
        runs = [tessel.compile(m, target=target) for m in (tessel.trace(fn, spec), narrow, ints)]
        if target != "cpu":
            runs = [r.emulate() for r in runs]
        for got, want in zip(runs[0](x), expected):
            assert got.dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)  # f32 would miss by 1e-7
        half, brain = runs[1](wide)
        with np.errstate(over="ignore"):  # 65520 rounds to inf
            np.testing.assert_array_equal(half, wide.astype(np.float16))
        np.testing.assert_array_equal(brain.astype(np.float32), wide.astype(BFLOAT16).astype(np.float32))
        for got, want in zip(runs[2](i, j), int_expected):
            np.testing.assert_array_equal(got, want)
