"""Schedules as data: knobs, their domains, and randomly sampled legal points.

Every sampled schedule's tiling runs on the CPU against numpy and compiles
to PTX that ptxas assembles, so the knob space, not just the defaults, is
checked on machines without a GPU.
"""

import random
import re

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel import targets
from tessel.backends.cpu import compile_cpu
from tessel.runtime.artifact import read as read_artifact
from tessel.testing import fuzz

F16 = np.dtype(np.float16)
RNG = np.random.default_rng(0)


def _gemm_bias_gelu(m=128, k=64, n=128):
    args = [RNG.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n), (n,))]
    args[1] *= np.float16(0.1)

    def reference(a, w, b):
        x = a.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    return lambda a, w, b: ops.gelu(a @ w + b, approximate="tanh"), args, reference


def _softmax(rows=16, cols=512):
    x = RNG.standard_normal((rows, cols)).astype(np.float16)

    def reference(x):
        e = np.exp(x.astype(np.float32) - x.astype(np.float32).max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return lambda x: ops.softmax(x, axis=-1), [x], reference


def _layer_norm(batch=8):
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((batch, 3, 256), (256,), (256,)))

    def reference(x, w, b):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b

    return lambda x, w, b: ops.layer_norm(x, w, b, eps=1e-5), [x, w, b], reference


def _f32_matmul(m=40, k=72, n=56):
    # f32 without allow_tf32: the fallback, a point per thread walking K
    # (its loop.unroll knob is sampled).
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    return lambda a, b: ops.relu(a @ b), [a, b], lambda a, b: np.maximum(a @ b, 0)


def _elementwise(rows=6, cols=1000):
    # f16 threads take vectors of up to 8 points (loop.vector_access, its
    # width sampled); the transposed operand is read per point.
    x, t, b = (RNG.standard_normal(s).astype(np.float16) for s in ((rows, cols), (cols, rows), (cols,)))

    def reference(x, t, b):
        return np.maximum(x.astype(np.float32) * t.T.astype(np.float32) + b.astype(np.float32), 0)

    return lambda x, t, b: ops.relu(x * t.T + b), [x, t, b], reference


CASES = {"gemm_bias_gelu": _gemm_bias_gelu, "softmax": _softmax, "layer_norm": _layer_norm,
         "f32_matmul": _f32_matmul, "elementwise": _elementwise,
         # Edge tiles in M, N and K for most sampled tile sizes.
         "gemm_edges": lambda: _gemm_bias_gelu(100, 72, 136)}


def _scheduled(case):
    fn, args, reference = CASES[case]()
    module = tessel.trace(fn, *args, name=case)
    return schedules.default_schedules(module, "sm_90"), args, reference


def test_knobs_list_the_default_tensor_core_schedule_with_domains():
    scheduled, _, _ = _scheduled("gemm_bias_gelu")
    found = {k.name: k for k in schedules.knobs(scheduled)}
    assert set(found) == {"block_m", "block_n", "block_k", "warp_m", "warp_n", "stages", "pad", "split_k"}
    # K = 64 splits into parts of at least 16; too short to split by default.
    assert found["split_k"].domain == (1, 2, 4) and found["split_k"].value == 1
    assert found["stages"].domain == (1, 2, 3, 4, 5) and found["block_m"].value in found["block_m"].domain
    assert all(k.kernel == "gemm_bias_gelu_kernel0" and k.result is None for k in found.values())


def test_with_knobs_sets_values_and_rejects_bad_ones():
    scheduled, _, _ = _scheduled("gemm_bias_gelu")
    key = ("gemm_bias_gelu_kernel0", None, "stages")
    changed = schedules.with_knobs(scheduled, {key: 2})
    assert {k.name: k.value for k in schedules.knobs(changed)}["stages"] == 2
    # The original is untouched.
    assert {k.name: k.value for k in schedules.knobs(scheduled)}["stages"] == 4
    with pytest.raises(tessel.CompileError, match="knob 'stages' = 9 is outside its domain"):
        schedules.with_knobs(scheduled, {key: 9})
    with pytest.raises(tessel.UnsupportedError, match="no knob"):
        schedules.with_knobs(scheduled, {("gemm_bias_gelu_kernel0", None, "nope"): 1})


def test_illegal_combination_is_reported_by_the_validator_with_the_knob():
    scheduled, _, _ = _scheduled("gemm_bias_gelu")
    bad = schedules.with_knobs(scheduled, {("gemm_bias_gelu_kernel0", None, "warp_m"): 128})
    with pytest.raises(tessel.CompileError, match="knob 'block_m' = .* is not a multiple of the warp tile knob 'warp_m'"):
        tessel.compile(bad, target="cuda:sm_90")


def test_schedules_for_one_target_do_not_compile_for_another():
    scheduled, _, _ = _scheduled("softmax")
    with pytest.raises(tessel.UnsupportedError, match="schedules are for sm_90, not sm_80"):
        tessel.compile(scheduled, target="cuda:sm_80")
    with pytest.raises(tessel.UnsupportedError, match="schedules are for sm_90, not cpu"):
        tessel.compile(scheduled)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sampled_legal_schedules_match_numpy_on_cpu_and_on_the_emulator(case):
    scheduled, args, reference = _scheduled(case)
    want = reference(*args)

    def check(point):
        got = compile_cpu(point, schedules="sm_90")(*args)
        np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=2e-2, atol=2e-2)
        artifact = tessel.compile(point, target="cuda:sm_90")
        assert all(k.ptxas["registers"] > 0 for k in artifact.kernels)
        np.testing.assert_allclose(np.asarray(artifact.emulate()(*args), np.float32), want, rtol=2e-2, atol=2e-2)

    _check_samples(scheduled, random.Random(case), check)


def _check_samples(scheduled, rng, check, count=3):
    """``check``s ``count`` legal random points of ``scheduled``, which must differ."""
    seen = set()
    for _ in range(count):
        point = schedules.sample(scheduled, rng)
        seen.add(tuple(k.value for k in schedules.knobs(point)))
        check(point)
    assert len(seen) > 1  # the samples differ


# CPU schedules: every kernel class gets one with knobs, and sampled legal
# points (tiles, K blocks, register blocks) still compute the same thing.
# Shapes are over one default tile (16K points), which leaves smaller
# kernels whole.
CPU_CASES = {
    "matmul_epilogue": lambda: _f32(_gemm_bias_gelu(96, 80, 120)),
    # Prime sizes: every block is padded, and the edge tiles are dynamic.
    "matmul_prime": lambda: _f32(_gemm_bias_gelu(37, 53, 29)),
    "softmax": lambda: _f32(_softmax(rows=96)),
    # No lane count divides 509 columns: a remainder follows the vectors.
    "softmax_prime": lambda: _f32(_softmax(rows=96, cols=509)),
    "layer_norm": lambda: _layer_norm(batch=40),
    # Grouped: a generic contraction whose tiles walk the window (unroll).
    "grouped_conv": lambda: (lambda x, w: ops.conv2d(x, w, padding=1, groups=4),
                             [RNG.standard_normal(s).astype(np.float32) for s in ((2, 8, 10, 10), (8, 2, 3, 3))],
                             lambda x, w: fuzz.conv2d_reference(x, w, stride=1, padding=1, dilation=1, groups=4,
                                                                layout="NCHW")),
    # Depthwise, strided: whole-width tiles read the image through its
    # padding (cpu-vectorize-convolutions), column blocks the padded copy.
    "depthwise_conv": lambda: (lambda x, w, b: ops.conv2d(x, w, b, stride=2, padding=1, groups=6),
                               [RNG.standard_normal(s).astype(np.float32) for s in ((1, 6, 23, 70), (6, 1, 3, 3), (6,))],
                               lambda x, w, b: fuzz.conv2d_reference(x, w, b, stride=2, padding=1, dilation=1,
                                                                     groups=6, layout="NCHW")),
    "batched_matmul": lambda: (lambda a, b: a @ b,
                               [RNG.standard_normal(s).astype(np.float32) for s in ((4, 24, 16), (4, 16, 40))],
                               np.matmul),
}


def _f32(case):
    fn, args, reference = case
    return fn, [a.astype(np.float32) for a in args], reference


def test_cpu_default_schedules_have_knobs_with_legal_defaults():
    fn, args, _ = CPU_CASES["matmul_epilogue"]()
    scheduled = schedules.default_schedules(tessel.trace(fn, *args), "cpu")
    found = {k.name: k for k in schedules.knobs(scheduled)}
    assert set(found) == {"block_m", "block_n", "block_k", "cache_m", "reg_m", "reg_n", "reg_k", "split_k"}
    # K = 80 in parts of at least 16.
    assert found["split_k"].domain == (1, 2, 4)
    # Blocks are powers of two or divisors of the matmul (96 x 120, K 80):
    # loop.vectorize pads the tiles of those that do not divide it.
    assert found["block_m"].domain == (8, 12, 16, 24, 32, 48, 64, 96)
    assert found["block_n"].domain == (8, 10, 12, 15, 16, 20, 24, 30, 32, 40, 60, 64, 120)
    assert found["block_k"].domain == (16, 20, 32, 40, 64, 80)
    # 96 rows in one tile would leave a core idle: two of 48. Row blocks
    # take the rows' choices; a tile of at most 64 rows is one (B in place).
    assert found["block_m"].value == 48
    assert found["cache_m"].domain == found["block_m"].domain
    assert found["cache_m"].value == 48
    assert all(k.value in k.domain for k in found.values())
    assert "parallel" in str(scheduled) and "loop.vectorize" in str(scheduled)


@pytest.mark.parametrize("flags, machine, bits", [
    ({"sse2", "avx", "avx2", "fma", "avx512f", "avx512bw"}, "x86_64", 512),
    ({"sse2", "avx", "avx2", "fma"}, "x86_64", 256),
    ({"sse2", "sse4_2"}, "x86_64", 128),
    ({"fp", "asimd"}, "aarch64", 128),
    (set(), "x86_64", 256),  # no /proc/cpuinfo: AVX2 assumed
    (set(), "arm64", 128),
])
def test_the_host_vector_width_comes_from_its_cpu_flags(flags, machine, bits):
    assert targets.vector_bits_of(flags, machine) == bits


@pytest.mark.parametrize("m, k, n", [(37, 53, 29), (1, 1000, 1000), (197, 768, 130)])
def test_cpu_matmuls_that_blocks_do_not_divide_keep_full_register_blocks(m, k, n):
    fn, args, reference = _f32(_gemm_bias_gelu(m, k, n))
    scheduled = schedules.default_schedules(tessel.trace(fn, *args), "cpu")
    found = {k.name: k.value for k in schedules.knobs(scheduled)}
    # Register blocks no longer shrink to divisors (a prime N once gave 1
    # column, scalar code); the edge tiles are padded instead. They are two
    # of this machine's vectors wide (one, and twice as tall, where that
    # pads the tile's columns less), whole vectors in a narrower tile, and
    # as many times wider (up to 64 columns) as they have fewer rows.
    bits = targets.get("cpu").vector_bits
    lanes = bits // 32
    reg_m, reg_n = (8 if bits >= 512 else 4), 2 * lanes
    bm, bn = found["block_m"], found["block_n"]
    if bn % reg_n and 2 * reg_m <= bm and -(-bn // lanes) < 2 * -(-bn // reg_n):
        reg_m, reg_n = 2 * reg_m, lanes
    rows = min(m, reg_m)
    wide = min(reg_n * (reg_m // rows), 64)
    assert found["reg_n"] == (wide if n >= wide else lanes) and found["reg_m"] == rows
    np.testing.assert_allclose(tessel.compile(scheduled)(*args), reference(*args), rtol=2e-3, atol=2e-3)


def test_cpu_register_block_larger_than_the_tile_is_rejected_with_its_knob():
    fn, args, _ = CPU_CASES["matmul_epilogue"]()
    scheduled = schedules.default_schedules(tessel.trace(fn, *args, name="mm"), "cpu")
    values = {k.name: k for k in schedules.knobs(scheduled)}
    bad = schedules.with_knobs(scheduled, {values["block_m"].key: 8, values["reg_m"].key: 16})
    with pytest.raises(tessel.CompileError, match="knob 'reg_m' = 16 exceeds the tile's 8 rows"):
        tessel.compile(bad)


@pytest.mark.parametrize("case", sorted(CPU_CASES))
def test_sampled_cpu_schedules_match_numpy(case):
    fn, args, reference = CPU_CASES[case]()
    scheduled = schedules.default_schedules(tessel.trace(fn, *args, name=case), "cpu")
    assert schedules.knobs(scheduled)
    want = reference(*args)
    _check_samples(scheduled, random.Random(case),
                   lambda point: np.testing.assert_allclose(tessel.compile(point)(*args), want,
                                                            rtol=2e-3, atol=2e-3))


# Hand-written tile levels, reduction loops included: validation rejects a
# schedule or the kernel computes what numpy does. Each case: function, its
# inputs, the reference, the root's loop count (a reduction root's last loop
# is its reduction).
RAW_TILE_CASES = {
    "matmul": (lambda a, b: a @ b, [RNG.standard_normal(s).astype(np.float32) for s in ((24, 36), (36, 20))],
               np.matmul, 3),
    "row_sum": (lambda x: ops.sum(x, axis=1), [RNG.standard_normal((12, 40)).astype(np.float32)],
                lambda x: x.sum(1), 2),
    "softmax": (lambda x: ops.softmax(x, axis=-1), [RNG.standard_normal((6, 30)).astype(np.float32)],
                lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(
                    -1, keepdims=True), 2),
}


def _with_schedule(module, kernel: str, body: str) -> str:
    """``module``'s kernels with one CPU schedule, of ``kernel``, holding ``body``."""
    text = str(schedules.default_schedules(module, "cpu"))
    return f'{text[:text.index("  loop.schedule")]}  loop.schedule @{kernel} target "cpu" {{\n{body}\n  }}\n}}\n'


@pytest.mark.parametrize("case", sorted(RAW_TILE_CASES))
def test_random_tile_levels_are_rejected_or_match_numpy(case):
    fn, args, reference, loops = RAW_TILE_CASES[case]
    module = tessel.trace(fn, *args, name=case)
    want = reference(*args)
    rng = random.Random(case)
    outcomes = {"rejected": 0, "ran": 0}
    for _ in range(12):
        levels = []
        for _ in range(rng.randint(1, 2)):
            sizes = [rng.choice([0, 0, 1, 3, 4, 8, 16]) for _ in range(loops)]
            levels.append(f"    loop.tile {sizes}" + (" parallel" if rng.random() < 0.5 else ""))
        text = _with_schedule(module, f"{case}_kernel0", "\n".join(levels))
        try:
            exe = tessel.compile(tessel.parse(text))
        except tessel.CompileError as e:
            reasons = ("exceeds its loop's extent", "tiles reduction loop", "tiles no loop")
            assert any(why in str(e) for why in reasons), str(e)
            outcomes["rejected"] += 1
            continue
        np.testing.assert_allclose(exe(*args), want, rtol=1e-4, atol=1e-4, err_msg="\n".join(levels))
        outcomes["ran"] += 1
    assert outcomes["ran"] and (outcomes["rejected"] or case == "softmax"), outcomes


# loop.split_k: K in parts computed in parallel into a workspace, then a
# second loop nest sums the parts and runs the epilogue.
def _parts(scheduled, parts):
    [knob] = [k for k in schedules.knobs(scheduled) if k.name == "split_k"]
    return schedules.with_knobs(scheduled, {knob.key: parts})


@pytest.mark.parametrize("parts", [1, 2, 4, 8])
def test_cpu_split_k_matches_numpy(parts):
    # Edge tiles in M and N; an epilogue after the sum.
    fn, args, reference = _f32(_gemm_bias_gelu(37, 256, 29))
    scheduled = _parts(schedules.default_schedules(tessel.trace(fn, *args), "cpu"), parts)
    assert ("loop.split_k" in str(scheduled)) and f'"split_k" = {parts}' in str(scheduled)
    np.testing.assert_allclose(tessel.compile(scheduled)(*args), reference(*args), rtol=2e-3, atol=2e-3)


def test_cpu_split_k_of_a_batched_matmul_with_a_broadcast_operand():
    a, b = RNG.standard_normal((3, 20, 96)).astype(np.float32), RNG.standard_normal((96, 24)).astype(np.float32)
    scheduled = _parts(schedules.default_schedules(tessel.trace(lambda a, b: a @ b, a, b), "cpu"), 4)
    np.testing.assert_allclose(tessel.compile(scheduled)(a, b), a @ b, rtol=2e-3, atol=2e-3)


def test_cpu_default_splits_the_long_k_of_a_small_result():
    a, b = RNG.standard_normal((16, 8192)).astype(np.float32), RNG.standard_normal((8192, 16)).astype(np.float32)
    scheduled = schedules.default_schedules(tessel.trace(lambda a, b: a @ b, a, b), "cpu")
    # One 16x16 tile: K splits until there are four tiles to run in parallel.
    assert {k.name: k.value for k in schedules.knobs(scheduled)}["split_k"] == 4
    np.testing.assert_allclose(tessel.compile(scheduled)(a, b), a @ b, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", ["cpu", "sm_90"])
def test_grid_reduce_parts_that_do_not_divide_the_reduction_make_rows_of_unequal_lengths(target):
    """loop.grid_reduce with 7 parts of 2^17 elements: rows of ceil(n / 7),
    the last shorter (a knob domain edited to take 7; the defaults keep
    counts that divide, or, on GPUs, take uneven rows where those are too
    few), on the CPU and on the emulator."""
    x = RNG.standard_normal(1 << 17).astype(np.float32)
    scheduled = schedules.default_schedules(tessel.trace(lambda x: (x * x).sum(), x), target)
    text, edits = re.subn(r'"parts" = \d+ choices \[[^\]]*\]', '"parts" = 7 choices [7]', str(scheduled))
    assert edits == 1
    module = tessel.parse(text)
    run = tessel.compile(module) if target == "cpu" else tessel.compile(module, target="cuda:" + target).emulate()
    np.testing.assert_allclose(float(np.asarray(run(x))), float((x.astype(np.float64) ** 2).sum()), rtol=1e-4)


@pytest.mark.parametrize("parts", [2, 8])
def test_tensor_core_split_k_tiles_match_numpy_on_cpu_and_on_the_emulator(parts, tmp_path):
    # 64x96 results over K = 2048: the default already splits K (few tiles).
    fn, args, reference = _gemm_bias_gelu(64, 2048, 96)
    args[1] *= np.float16(0.2)
    scheduled = schedules.default_schedules(tessel.trace(fn, *args, name="gemm"), "sm_90")
    assert {k.name: k.value for k in schedules.knobs(scheduled)}["split_k"] > 1
    point = _parts(scheduled, parts)
    got = compile_cpu(point, schedules="sm_90")(*args)
    np.testing.assert_allclose(np.asarray(got, np.float32), reference(*args), rtol=2e-2, atol=2e-2)
    artifact = tessel.compile(point, target="cuda:sm_90")
    kernels = artifact.kernels
    # The partial products on tensor cores, one part per block along grid z;
    # the sum and the epilogue in a second kernel.
    [partials] = [k for k in kernels if "mma.sync.aligned.m16n8k16" in k.ptx]
    assert partials.grid[2] == parts and partials.ptxas["spill_stores"] == 0
    assert len(kernels) == 2 and all(k.ptxas["registers"] > 0 for k in kernels)
    # Both launches' functions have one name; the artifact keeps them apart.
    assert kernels[0].name == kernels[1].name
    saved = read_artifact(artifact.save(tmp_path / "gemm"))
    assert [k.ptx for k in saved.kernels] == [k.ptx for k in kernels]
    got = tessel.load(tmp_path / "gemm", emulate=True)(*args)
    np.testing.assert_allclose(np.asarray(got, np.float32), reference(*args), rtol=2e-2, atol=2e-2)


def test_the_knob_table_says_what_each_knob_cuts():
    x = tessel.TensorSpec((64, 96), np.float32)
    w = tessel.TensorSpec((96, 128), np.float32)
    scheduled = schedules.default_schedules(tessel.trace(lambda a, b: ops.relu(a @ b), x, w, name="mm"), "cpu")
    [schedule] = schedules.knob_table(scheduled)
    assert (schedule.kernel, schedule.result, schedule.target) == ("mm_kernel0", None, "cpu")
    assert list(schedule.knobs) == schedules.knobs(scheduled)
    cuts = {(p.op, v.name, e.knob): e.extent for p in schedule.primitives for v in p.lists for e in v.entries}
    # The parallel tile cuts the root's 64 x 128 loops; the depth block and
    # split-K cut K = 96; register blocks cut a tile, no loop of the kernel.
    assert cuts[("loop.tile", "", "block_m")] == 64 and cuts[("loop.tile", "", "block_n")] == 128
    assert cuts[("loop.vectorize", "depth", "block_k")] == 96 and cuts[("loop.split_k", "parts", "split_k")] == 96
    assert cuts[("loop.vectorize", "", "reg_m")] is None
    assert [p.parallel for p in schedule.primitives if p.op == "loop.tile"] == [True]
