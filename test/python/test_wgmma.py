"""Hopper tensor cores (sm_90a): contractions on wgmma.mma_async, their
operands copied by TMA (cp.async.bulk.tensor) through an mbarrier ring.

Every kernel is assembled by ptxas (sm_90a) and the small ones run on the
PTX emulator against numpy, whose wgmma model (descriptors, swizzles,
fences, async-proxy ordering) is checked against Triton's sm_90a kernels in
test_emulator_triton.py; larger shapes only compile.
"""

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops, schedules, targets
from tessel.backends.cpu import compile_cpu
from tessel.dtypes import BFLOAT16
from tessel.testing import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import transformer_block  # noqa: E402

RNG = np.random.default_rng(0)
PTX_TYPES = {"float16": "f16", "bfloat16": "bf16"}


def _randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _gemm_bias_gelu(a, w, b):
    return ops.gelu(a @ w + b, approximate="tanh")


def _reference(a, w, b):
    x = a.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def _module(m, n, k, dtype):
    spec = tessel.TensorSpec
    return tessel.trace(_gemm_bias_gelu, spec((m, k), dtype), spec((k, n), dtype), spec((n,), dtype), name="gemm")


def _wgmma_shapes(ptx: str) -> set[str]:
    return set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k(?:16|8))\.f32\.(\w+)\.\w+", ptx))


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["f16", "bf16"])
# The second shape leaves edge tiles in M, N and K (masked copies and
# stores, a K step half past K); the last two only compile.
@pytest.mark.parametrize("m,n,k", [(256, 384, 512), (200, 296, 104), (4096, 4096, 4096), (8192, 768, 3072)])
def test_16_bit_matmul_with_epilogue_runs_on_wgmma_without_spills(m, n, k, dtype):
    dtype = np.dtype(dtype)
    artifact = tessel.compile(_module(m, n, k, dtype), target="cuda:sm_90a")
    [kernel] = artifact.kernels
    ptx = kernel.ptx
    assert ".target sm_90a" in ptx and "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert {t for _, t in _wgmma_shapes(ptx)} == {PTX_TYPES[dtype.name]}
    # A and B by TMA into 128-byte-swizzled boxes, each stage's bytes
    # counted by its mbarrier.
    for instruction in ("cp.async.bulk.tensor.2d.shared::cluster.global", "mbarrier.arrive.expect_tx",
                        "mbarrier.try_wait.parity", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                        ".extern .shared .align 1024"):
        assert instruction in ptx, instruction
    assert "cp.async.cg" not in ptx
    # The results leave in 16 bytes per lane (8 columns, gathered from the
    # lane's quad by shuffles), never in a lane's own 4-byte pair.
    assert "shfl.sync.bfly.b32" in ptx and "st.global.v4.b32" in ptx
    assert not re.search(r"st\.global(\.v2)?\.b(16|32)\b", ptx)
    assert [(m.buffer, m.swizzle, m.box[0]) for m in artifact.tensor_maps] == [(1, "128B", 64), (0, "128B", 64)]
    assert kernel.ptxas["spill_stores"] == 0 and kernel.ptxas["spill_loads"] == 0
    if m * n * k >= 4096**3:
        # The largest tile: two consumer warpgroups of 64 x 256 and a
        # producer's, four stages of 128x64 and 64x256 swizzled tiles
        # (192 KiB).
        assert _wgmma_shapes(ptx) == {("m64n256k16", PTX_TYPES[dtype.name])}
        assert kernel.block == (384, 1, 1) and kernel.dynamic_shared_bytes == 4 * (128 * 64 + 64 * 256) * 2
        # A persistent grid: one block per SM of the H100/H200.
        assert kernel.grid == (132, 1, 1) and "setmaxnreg.inc.sync.aligned.u32" in ptx
        assert "mbarrier.arrive.shared.b64" in ptx  # consumers release stages to the producer
    if (m, n) == (8192, 768):
        # 256 tiles of 128x192 keep the 132 SMs' two waves 97% busy; 192
        # tiles of 128x256 would leave 73%.
        assert _wgmma_shapes(ptx) == {("m64n192k16", PTX_TYPES[dtype.name])}
    if m * n * k <= 256 * 384 * 512:
        a, w, b = _randn(m, k, dtype=dtype), (_randn(k, n) * 0.1).astype(dtype), _randn(n, dtype=dtype)
        np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), _reference(a, w, b),
                                   rtol=2e-2, atol=2e-2)


# (block_m, block_n, warp_n, stages, producers) over the knobs' legal
# points: one and two consumer warpgroups, instructions of n 64 to 256, two
# to four stages (with two, no wgmma group is left running across steps),
# with and without a producer warpgroup.
@pytest.mark.parametrize("block_m,block_n,warp_n,stages,producers", [
    (64, 64, 64, 2, 1), (64, 128, 128, 3, 0), (128, 64, 64, 4, 1), (128, 256, 256, 3, 1), (64, 256, 128, 2, 0),
    (128, 128, 128, 4, 0), (128, 192, 192, 3, 1)])
def test_sampled_wgmma_schedules_match_numpy(block_m, block_n, warp_n, stages, producers):
    m, n, k = 192, 256, 160
    module = _module(m, n, k, np.dtype(np.float16))
    scheduled = schedules.default_schedules(module, "sm_90a")
    knobs = {knob.name: knob for knob in schedules.knobs(scheduled)}
    point = schedules.with_knobs(scheduled, {knobs["block_m"].key: block_m, knobs["block_n"].key: block_n,
                                             knobs["warp_n"].key: warp_n, knobs["stages"].key: stages,
                                             knobs["producers"].key: producers})
    text = str(point).replace(f"shape [64, {knobs['warp_n'].value}, 16]", f"shape [64, {warp_n}, 16]")
    point = tessel.parse(text)
    artifact = tessel.compile(point, target="cuda:sm_90a")
    [kernel] = artifact.kernels
    assert _wgmma_shapes(kernel.ptx) == {(f"m64n{warp_n}k16", "f16")}
    assert kernel.block == ((block_m // 64 * block_n // warp_n + producers) * 128, 1, 1)
    assert ("mbarrier.arrive.shared.b64" in kernel.ptx) == bool(producers)
    a, w, b = _randn(m, k, dtype=np.float16), (_randn(k, n) * 0.1).astype(np.float16), _randn(n, dtype=np.float16)
    np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), _reference(a, w, b),
                               rtol=2e-2, atol=2e-2)


def test_an_illegal_wgmma_point_is_an_error_naming_its_knob():
    module = _module(128, 128, 128, np.dtype(np.float16))
    scheduled = schedules.default_schedules(module, "sm_90a")
    knobs = {knob.name: knob for knob in schedules.knobs(scheduled)}
    point = schedules.with_knobs(scheduled, {knobs["block_k"].key: 32})
    assert not schedules.is_legal(point)
    with pytest.raises(tessel.CompileError, match="block_k.* = 32 is not 64: wgmma reads K in 128-byte swizzled rows"):
        tessel.compile(point, target="cuda:sm_90a")


def test_batched_attention_matmuls_run_on_wgmma():
    # q @ k^T and p @ v per head: the batch on grid z; in q @ k^T, K (the
    # head dim, 32) is half a K step, zero-filled.
    q, kt, v = (_randn(4, 64, 32, dtype=np.float16), _randn(4, 32, 64, dtype=np.float16),
                _randn(4, 64, 64, dtype=np.float16))
    module = tessel.trace(lambda q, kt, v: ops.softmax(q @ kt * 0.125, axis=-1).astype(np.float16) @ v,
                          q, kt, v, name="attention")
    artifact = tessel.compile(module, target="cuda:sm_90a")
    assert sum(bool(_wgmma_shapes(k.ptx)) for k in artifact.kernels) == 2
    s = q.astype(np.float32) @ kt.astype(np.float32) * 0.125
    p = np.exp(s - s.max(-1, keepdims=True))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(artifact.emulate()(q, kt, v).astype(np.float32), p @ v.astype(np.float32),
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["f16", "bf16"])
def test_batch_indices_in_a_block_share_one_warp_specialized_pipeline(dtype):
    # [batch, heads] of 2 x 3: heads on grid z, each block walks both batch
    # indices of its head. The mbarriers are set up once and the phases of
    # the 3-stage ring count on across the indices (2 K steps each, so a
    # stage's fills alternate between them); the producer copies every
    # index's boxes at its batch coordinates.
    a, b = _randn(2, 3, 64, 128, dtype=dtype), (_randn(2, 3, 128, 64) * 0.1).astype(dtype)
    artifact = tessel.compile(tessel.trace(lambda a, b: a @ b, a, b, name="heads"), target="cuda:sm_90a")
    [kernel] = artifact.kernels
    assert kernel.grid == (1, 1, 3) and kernel.block == (256, 1, 1)
    assert "cp.async.bulk.tensor" in kernel.ptx and "mbarrier.arrive.shared.b64" in kernel.ptx
    np.testing.assert_allclose(artifact.emulate()(a, b).astype(np.float32),
                               a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_a_bf16_transformer_block_runs_every_contraction_on_warp_specialized_wgmma():
    # Batch 2, so the attention matmuls walk a batch dim in the block.
    rng = np.random.default_rng(3)
    params = {k: v.astype(BFLOAT16) for k, v in transformer_block.init_params(128, 256, rng).items()}
    x = rng.standard_normal((2, 64, 128)).astype(BFLOAT16)
    module = tessel.trace(lambda t: transformer_block.block(t, params, 2), x, name="block")
    contractions = str(schedules.default_schedules(module, "sm_90a")).count('tessel.kernel = "contraction"')
    artifact = tessel.compile(module, target="cuda:sm_90a")
    specialized = [k for k in artifact.kernels if _wgmma_shapes(k.ptx)]
    assert contractions >= 6 and len(specialized) == contractions
    for kernel in specialized:
        assert "cp.async.bulk.tensor" in kernel.ptx and "mbarrier.arrive.shared.b64" in kernel.ptx, kernel.name
        assert kernel.ptxas["spill_stores"] == 0 and kernel.ptxas["spill_loads"] == 0, kernel.name
    assert not any("mma.sync" in k.ptx for k in artifact.kernels)
    f32 = {k: v.astype(np.float32) for k, v in params.items()}
    np.testing.assert_allclose(artifact.emulate()(x).astype(np.float32),
                               transformer_block.reference(x.astype(np.float32), f32, 2), rtol=3e-2, atol=3e-2)


def test_convolutions_run_on_wgmma_over_materialized_patches():
    x = _randn(2, 16, 16, 16, dtype=np.float16)
    w = (_randn(64, 16, 3, 3) * 0.1).astype(np.float16)
    module = tessel.trace(lambda x, w: ops.relu(ops.conv2d(x, w, padding=1)), x, w, name="conv")
    artifact = tessel.compile(module, target="cuda:sm_90a")
    assert sum(bool(_wgmma_shapes(k.ptx)) for k in artifact.kernels) == 1
    want = np.maximum(fuzz.conv2d_reference(x.astype(np.float64), w.astype(np.float64), stride=1, padding=1,
                                            dilation=1, groups=1, layout="NCHW"), 0)
    np.testing.assert_allclose(artifact.emulate()(x, w).astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("k,parts", [(8192, 8), (3120, 2)])
def test_split_k_parts_are_copied_by_tma(k, parts):
    # One block of 64 x 64 results, K split in parts on grid z: A's part is
    # a transposed view of the buffer seen as [m, parts, k / parts], whose
    # tensor map the boxes index in the buffer's dim order; past a part's
    # K (1560 = 24 K steps and 24 columns) a box zero-fills instead of
    # reading the next part's.
    a, w = _randn(64, k, dtype=np.float16), (_randn(k, 64) * 0.1).astype(np.float16)
    artifact = tessel.compile(tessel.trace(lambda a, w: a @ w, a, w, name="split"), target="cuda:sm_90a")
    [partial] = [kernel for kernel in artifact.kernels if _wgmma_shapes(kernel.ptx)]
    assert partial.grid == (1, 1, parts) and "cp.async.bulk.tensor" in partial.ptx
    assert "cp.async.cg" not in partial.ptx and "mbarrier.arrive.shared.b64" in partial.ptx
    # Dims innermost first: A's [64, parts, k / parts], B's [parts, k / parts, 64].
    assert sorted(tuple(m.dims) for m in artifact.tensor_maps) == sorted([(k // parts, parts, 64),
                                                                          (64, k // parts, parts)])
    np.testing.assert_allclose(artifact.emulate()(a, w).astype(np.float32), a.astype(np.float32) @ w.astype(np.float32),
                               rtol=2e-2, atol=2e-2)


def test_contractions_wgmma_cannot_take_keep_mma_sync():
    # N = 40 fits no 64-column group of a 16-bit B's swizzled tile.
    [kernel] = tessel.compile(_module(128, 40, 64, np.dtype(np.float16)), target="cuda:sm_90a").kernels
    assert "mma.sync.aligned" in kernel.ptx and "wgmma" not in kernel.ptx


# f32 operands as tf32 (allow_tf32): wgmma reads them K-major only (it
# transposes 16-bit operands alone), so B, row-major in memory, is copied
# into its K-major swizzled tile element by element (4-byte cp.async.ca)
# by the consumer warpgroups; no TMA, no producer. The second shape leaves
# edge tiles in M, N and K; the last only compiles.
@pytest.mark.parametrize("m,n,k", [(192, 256, 160), (200, 296, 104), (4096, 4096, 4096)])
def test_tf32_matmul_with_epilogue_runs_on_wgmma(m, n, k):
    artifact = tessel.compile(_module(m, n, k, np.dtype(np.float32)), target="cuda:sm_90a", allow_tf32=True)
    [kernel] = artifact.kernels
    assert {t for _, t in _wgmma_shapes(kernel.ptx)} == {"tf32"} and "mma.sync" not in kernel.ptx
    assert re.search(r"cp\.async\.ca\.shared\.global \[[^]]+\], \[[^]]+\], 4\b", kernel.ptx)
    assert not artifact.tensor_maps and "mbarrier" not in kernel.ptx
    assert kernel.ptxas["spill_stores"] == 0 and kernel.ptxas["spill_loads"] == 0
    if m * n * k > 1 << 24:
        return
    a, w, b = _randn(m, k), _randn(k, n) * 0.1, _randn(n)
    np.testing.assert_allclose(artifact.emulate()(a, w, b), _reference(a, w, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("block_m,block_n,warp_n,stages", [(64, 64, 64, 2), (128, 128, 64, 3), (64, 256, 256, 4)])
def test_sampled_tf32_wgmma_schedules_match_numpy(block_m, block_n, warp_n, stages):
    m, n, k = 192, 256, 96
    scheduled = schedules.default_schedules(_module(m, n, k, np.dtype(np.float32)), "sm_90a", allow_tf32=True)
    knobs = {knob.name: knob for knob in schedules.knobs(scheduled)}
    assert "producers" not in knobs
    point = schedules.with_knobs(scheduled, {knobs["block_m"].key: block_m, knobs["block_n"].key: block_n,
                                             knobs["warp_n"].key: warp_n, knobs["stages"].key: stages})
    point = tessel.parse(str(point).replace(f"shape [64, {knobs['warp_n'].value}, 8]", f"shape [64, {warp_n}, 8]"))
    artifact = tessel.compile(point, target="cuda:sm_90a", allow_tf32=True)
    [kernel] = artifact.kernels
    assert _wgmma_shapes(kernel.ptx) == {(f"m64n{warp_n}k8", "tf32")}
    assert kernel.block == (block_m // 64 * block_n // warp_n * 128, 1, 1)
    a, w, b = _randn(m, k), _randn(k, n) * 0.1, _randn(n)
    np.testing.assert_allclose(artifact.emulate()(a, w, b), _reference(a, w, b), rtol=1e-2, atol=1e-2)


def test_wgmma_schedules_match_numpy_on_cpu():
    # The same block tiling and fused epilogue, run by the CPU.
    a, w, b = _randn(2, 40, 104, dtype=np.float16), (_randn(104, 136) * 0.1).astype(np.float16), \
        _randn(136, dtype=np.float16)
    module = tessel.trace(_gemm_bias_gelu, a, w, b, name="gemm")
    assert "shape [64, " in str(schedules.default_schedules(module, "sm_90a"))
    np.testing.assert_allclose(compile_cpu(module, schedules="sm_90a")(a, w, b).astype(np.float32),
                               _reference(a, w, b), rtol=2e-2, atol=2e-2)


def _few_sms(sms: int) -> str:
    """sm_90a's description with ``sms`` SMs, registered under a name of its
    own: a persistent grid of that many blocks walks several tiles each at
    shapes the emulator runs quickly."""
    name = f"sm_90a_{sms}sms"
    if name not in targets.names():
        targets.register(dataclasses.replace(targets.get("sm_90a"), name=name, multiprocessors=sms))
    return name


@pytest.mark.parametrize("m,n,group_m", [(512, 512, 8), (640, 1024, 2), (640, 1024, 1)])
def test_a_persistent_grid_walks_every_tile_while_the_producer_runs_ahead(m, n, group_m):
    # 4 blocks over 8 or 20 tiles of 128 x 256 (groups of 2 tile rows leave
    # a last group of one): each block's producer fills the stages of its
    # next tile while its consumers store the last; the consumers take the
    # registers the producer gives up (setmaxnreg, under a register cap at
    # entry).
    target = _few_sms(4)
    module = _module(m, n, 192, np.dtype(np.float16))
    scheduled = schedules.default_schedules(module, target)
    knobs = {knob.name: knob for knob in schedules.knobs(scheduled)}
    artifact = tessel.compile(schedules.with_knobs(scheduled, {knobs["group_m"].key: group_m}),
                              target=f"cuda:{target}")
    [kernel] = artifact.kernels
    assert kernel.grid == (4, 1, 1) and kernel.block == (384, 1, 1)
    for line in (".minnctapersm 1", "setmaxnreg.dec.sync.aligned.u32 \t40;", "setmaxnreg.inc.sync.aligned.u32 \t232;"):
        assert line in kernel.ptx, line
    assert kernel.ptxas["spill_stores"] == 0
    a, w, b = _randn(m, 192, dtype=np.float16), (_randn(192, n) * 0.1).astype(np.float16), _randn(n, dtype=np.float16)
    np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), _reference(a, w, b),
                               rtol=2e-2, atol=2e-2)


def test_group_m_0_turns_the_persistent_walk_off():
    # The knob's point 0: a block per tile of 128 x 256 (4 x 2), each still
    # warp-specialized with the registers moved to its consumers.
    target = _few_sms(4)
    module = _module(512, 512, 192, np.dtype(np.float16))
    scheduled = schedules.default_schedules(module, target)
    group_m = {knob.name: knob for knob in schedules.knobs(scheduled)}["group_m"]
    assert 0 in group_m.domain and group_m.value == 8
    artifact = tessel.compile(schedules.with_knobs(scheduled, {group_m.key: 0}), target=f"cuda:{target}")
    [kernel] = artifact.kernels
    assert kernel.grid == (2, 4, 1) and kernel.block == (384, 1, 1)
    assert "setmaxnreg.inc.sync.aligned.u32 \t232;" in kernel.ptx and kernel.ptxas["spill_stores"] == 0
    a, w, b = _randn(512, 192, dtype=np.float16), (_randn(192, 512) * 0.1).astype(np.float16), _randn(512, dtype=np.float16)
    np.testing.assert_allclose(artifact.emulate()(a, w, b).astype(np.float32), _reference(a, w, b),
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("rows,n,calls", [(320, 384, (320,)), ("rows", 512, (1, 200, 1000))],
                         ids=["edge_tiles", "symbolic_rows"])
def test_tiles_a_persistent_grid_cannot_take_get_a_block_each(rows, n, calls):
    # Edge tiles (masked stores) or rows over a size symbol: one block per
    # tile, still warp-specialized (a persistent block's next tile would
    # start with its warps diverged by the last one's masked stores).
    target = _few_sms(4)
    f16 = np.dtype(np.float16)
    module = tessel.trace(_gemm_bias_gelu, tessel.TensorSpec((rows, 192), f16), tessel.TensorSpec((192, n), f16),
                          tessel.TensorSpec((n,), f16), dims={"rows": (1, 1024)} if rows == "rows" else None,
                          name="gemm")
    artifact = tessel.compile(module, target=f"cuda:{target}")
    [kernel] = artifact.kernels
    assert kernel.grid != (4, 1, 1) and kernel.block == (384, 1, 1) and "setmaxnreg" in kernel.ptx
    run = artifact.emulate()
    w, b = (_randn(192, n) * 0.1).astype(f16), _randn(n, dtype=f16)
    for count in calls:
        a = _randn(count, 192, dtype=f16)
        np.testing.assert_allclose(run(a, w, b).astype(np.float32), _reference(a, w, b), rtol=2e-2, atol=2e-2)
