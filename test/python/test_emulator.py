"""The PTX emulator on hand-written PTX: semantics against numpy and the
PTX ISA's own formulas, and every check it makes (bounds, races, async
copies, warp collectives, limits) on kernels that break them.

These need neither MLIR nor a GPU (a device named by its chip reads the
chip's limits from ``tessel.targets``); tessel's and Triton's kernels run in
test_emulator_kernels.py and test_emulator_triton.py.
"""

from fractions import Fraction

import numpy as np
import pytest

import tessel
from tessel.dtypes import BFLOAT16
from tessel.runtime import emulator
from tessel.runtime.artifact import TargetInfo

RNG = np.random.default_rng(0)

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


SCALE = """
.visible .entry scale(.param .u64 out, .param .u64 unused, .param .u32 n, .param .f32 s)
{
  .reg .pred %p<2>; .reg .b32 %r<8>; .reg .f32 %f<3>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  ld.param.f32 %f1, [s];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvt.rn.f32.u32 %f2, %r5;
  mul.rn.f32 %f2, %f2, %f1;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f2;
DONE:
  ret;
}
"""


def test_every_block_runs_with_typed_scalar_parameters_and_a_null_pointer():
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 3000)
    mod = gpu.load_ptx(HEADER + SCALE)
    assert mod.launch("scale", grid=(12, 1, 1), block=(256, 1, 1), args=[out, None, 3000, 0.5]) > 0
    np.testing.assert_array_equal(gpu.download(out, np.float32, (3000,)), np.arange(3000, dtype=np.float32) * 0.5)


def test_bad_launches_are_clear_errors():
    gpu = emulator.Device("sm_80")
    mod = gpu.load_ptx(HEADER + SCALE.replace("{\n", ".reqntid 256, 1, 1\n{\n", 1))
    out = gpu.alloc(64)
    with pytest.raises(tessel.RuntimeError, match="takes 4 parameters, got 3"):
        mod.launch("scale", (1, 1, 1), (256, 1, 1), [out, None, 16])
    with pytest.raises(tessel.RuntimeError, match=r"parameter n \(u32\) cannot hold -1"):
        mod.launch("scale", (1, 1, 1), (256, 1, 1), [out, None, -1, 1.0])
    with pytest.raises(tessel.RuntimeError, match=r"requires blocks of \(256, 1, 1\) threads \(.reqntid\)"):
        mod.launch("scale", (1, 1, 1), (128, 1, 1), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match="has 2048 threads; sm_80 allows 1 to 1024"):
        mod.launch("scale", (1, 1, 1), (2048, 1, 1), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match="grid .* is over sm_80's limits"):
        mod.launch("scale", (1, 70000, 1), (256, 1, 1), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match="asks 200704 bytes of shared memory; sm_80 has 166912"):
        mod.launch("scale", (1, 1, 1), (256, 1, 1), [out, None, 16, 1.0], shared_bytes=196 * 1024)
    with pytest.raises(tessel.RuntimeError, match="no .entry 'nope'"):
        mod.launch("nope", (1, 1, 1), (1, 1, 1), [])
    with pytest.raises(tessel.RuntimeError, match="PTX targets sm_90a; this device is sm_80"):
        gpu.load_ptx(HEADER.replace("sm_80", "sm_90a") + SCALE)
    with pytest.raises(tessel.RuntimeError, match="unknown target 'sm_75'"):
        emulator.Device("sm_75")
    with pytest.raises(tessel.RuntimeError, match="unknown target 'cpu'; the emulator knows sm_80"):
        emulator.Device("cpu")


def test_a_device_of_a_description_checks_launches_against_its_limits():
    tiny = TargetInfo("tiny", sm=80, max_threads_per_block=128, max_block=(128, 128, 4), max_grid=(16, 16, 16),
                      static_shared_per_block=1024, shared_per_block=2048, vector_bytes=16)
    gpu = emulator.Device(tiny)
    mod = gpu.load_ptx(HEADER + SCALE)
    out = gpu.alloc(64)
    assert gpu.target == "tiny" and mod.launch("scale", (16, 1, 1), (128, 1, 1), [out, None, 16, 1.0]) > 0
    with pytest.raises(tessel.RuntimeError, match="has 256 threads; tiny allows 1 to 128"):
        mod.launch("scale", (1, 1, 1), (256, 1, 1), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match=r"block \(1, 1, 8\) of kernel scale is over tiny's limits "
                                                  r"\(128, 128, 4\)"):
        mod.launch("scale", (1, 1, 1), (1, 1, 8), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match=r"grid \(17, 1, 1\) of kernel scale is over tiny's limits"):
        mod.launch("scale", (17, 1, 1), (128, 1, 1), [out, None, 16, 1.0])
    with pytest.raises(tessel.RuntimeError, match="asks 4096 bytes of shared memory; tiny has 2048 per block"):
        mod.launch("scale", (1, 1, 1), (128, 1, 1), [out, None, 16, 1.0], shared_bytes=4096)
    with pytest.raises(tessel.RuntimeError, match="PTX targets sm_90a; this device is tiny"):
        gpu.load_ptx(HEADER.replace("sm_80", "sm_90a") + SCALE)


def test_an_out_of_bounds_store_names_the_block_thread_and_line():
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 1000)
    mod = gpu.load_ptx(HEADER + SCALE.replace("setp.ge.u32", "setp.gt.u32"))  # off by one
    with pytest.raises(emulator.EmulationError) as error:
        mod.launch("scale", grid=(4, 1, 1), block=(256, 1, 1), args=[out, None, 1000, 1.0])
    e = error.value
    assert (e.kernel, e.block, e.thread) == ("scale", (3, 0, 0), (232, 0, 0))
    assert e.line == 21 and "st.global.f32" in str(e) and "outside every live allocation" in str(e)


DIVERGE = """
.visible .entry diverge(.param .u64 out)
{
  .reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  rem.u32 %r2, %r1, 7;
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra AFTER;
LOOP:
  add.u32 %r4, %r4, 1;
  add.u32 %r3, %r3, %r4;
  setp.lt.u32 %p2, %r4, %r2;
  @%p2 bra LOOP;
AFTER:
  and.b32 %r5, %r1, 1;
  setp.eq.u32 %p3, %r5, 0;
  @%p3 bra EVEN;
  mul.lo.u32 %r3, %r3, 3;
  bra.uni JOIN;
EVEN:
  add.u32 %r3, %r3, 100;
JOIN:
  shfl.sync.bfly.b32 %r6, %r3, 1, 31, -1;
  add.u32 %r7, %r3, %r6;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  ret;
}
"""


def test_divergent_loops_and_branches_reconverge_before_a_warp_shuffle():
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 96)
    gpu.load_ptx(HEADER + DIVERGE).launch("diverge", (1, 1, 1), (96, 1, 1), [out])
    t = np.arange(96)
    acc = np.array([sum(range(1, k + 1)) for k in t % 7])
    v = np.where(t % 2 == 0, acc + 100, acc * 3)
    np.testing.assert_array_equal(gpu.download(out, np.uint32, (96,)), v + v[t ^ 1])


def test_a_shuffle_in_divergent_code_is_an_error():
    # Only the even lanes reach this shuffle of the whole warp.
    body = DIVERGE.replace("EVEN:\n", "EVEN:\n  shfl.sync.bfly.b32 %r8, %r3, 1, 31, -1;\n")
    gpu = emulator.Device("sm_80")
    with pytest.raises(emulator.EmulationError, match=r"thread \(0, 0, 0\), PTX line 27 \(shfl.sync.bfly.b32\): "
                                                      r"shfl.sync.bfly.b32: lane 1 of the membermask is not "
                                                      r"executing it"):
        gpu.load_ptx(HEADER + body).launch("diverge", (1, 1, 1), (64, 1, 1), [gpu.alloc(4 * 64)])


SHUFFLES = """
.visible .entry shuffles(.param .u64 out, .param .u32 b, .param .u32 c)
{
  .reg .pred %p<2>; .reg .b32 %r<20>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [b];
  ld.param.u32 %r2, [c];
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r3, 10, 1;
  mul.wide.u32 %rd2, %r3, 16;
  add.s64 %rd3, %rd1, %rd2;
  shfl.sync.MODE.b32 %r5|%p1, %r4, %r1, %r2, -1;
  selp.b32 %r6, 1000000, 0, %p1;
  add.u32 %r7, %r5, %r6;
  st.global.u32 [%rd3], %r7;
  ret;
}
"""


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("width", [32, 8, 4])
def test_shuffles_follow_cuda_semantics_for_every_mode_and_segment_width(mode, width):
    # The reference is CUDA's __shfl_*_sync(mask, v, x, width), which
    # passes c = ((32 - width) << 8) | clamp.
    gpu = emulator.Device("sm_80")
    mod = gpu.load_ptx(HEADER + SHUFFLES.replace("MODE", mode))
    lane = np.arange(64) % 32
    start = lane & ~(width - 1)
    for x in (1, 3, width - 1):
        out = gpu.alloc(16 * 64)
        clamp = 0 if mode == "up" else 31
        mod.launch("shuffles", (1, 1, 1), (64, 1, 1), [out, x, ((32 - width) << 8) | clamp])
        src = {"up": lane - x, "down": lane + x, "bfly": lane ^ x, "idx": start + (x & (width - 1))}[mode]
        valid = {"up": src >= start, "down": src < start + width, "bfly": src < start + width,
                 "idx": np.ones(64, bool)}[mode]
        src = np.where(valid, src, lane) + np.arange(64) // 32 * 32
        got = gpu.download(out, np.uint32, (64, 4))[:, 0]
        np.testing.assert_array_equal(got, src * 10 + 1 + np.where(valid, 1000000, 0), err_msg=f"x={x}")


VOTES = """
.visible .entry votes(.param .u64 out)
{
  .reg .pred %p<6>; .reg .b32 %r<20>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 32;
  add.s64 %rd3, %rd1, %rd2;
  and.b32 %r2, %r1, 5;
  setp.ne.u32 %p1, %r2, 0;
  vote.sync.ballot.b32 %r3, %p1, -1;
  vote.sync.any.pred %p2, %p1, -1;
  vote.sync.all.pred %p3, !%p1, -1;
  vote.sync.uni.pred %p4, %p1, 0xffffffff;
  selp.u32 %r4, 1, 0, %p2;
  selp.u32 %r5, 1, 0, %p3;
  selp.u32 %r6, 1, 0, %p4;
  redux.sync.add.u32 %r7, %r1, -1;
  redux.sync.max.s32 %r8, %r1, -1;
  redux.sync.xor.b32 %r9, %r1, -1;
  activemask.b32 %r10;
  st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
  st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r10};
  ret;
}
"""


def test_votes_and_warp_reductions():
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(32 * 64)
    gpu.load_ptx(HEADER + VOTES).launch("votes", (1, 1, 1), (64, 1, 1), [out])
    got = gpu.download(out, np.uint32, (64, 8))
    t = np.arange(64)
    for warp in (0, 1):
        lanes = t[warp * 32:(warp + 1) * 32]
        p = (lanes & 5) != 0
        ballot = sum(1 << int(i) for i in np.flatnonzero(p))
        xor = 0
        for v in lanes:
            xor ^= int(v)
        np.testing.assert_array_equal(got[lanes], [[ballot, 1, 0, 0, lanes.sum(), lanes.max(), xor, 0xFFFFFFFF]] * 32)


SPECIAL = """
.visible .entry special(.param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %laneid;
  mov.u32 %r3, %lanemask_lt;
  mov.u32 %r4, %lanemask_ge;
  mov.u64 %rd2, %clock64;
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  cvt.u32.u64 %r5, %rd4;
  mul.wide.u32 %rd5, %r1, 16;
  add.s64 %rd6, %rd1, %rd5;
  st.global.v4.u32 [%rd6], {%r2, %r3, %r4, %r5};
  ret;
}
"""


def test_special_registers_lane_masks_and_a_clock_that_advances():
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(16 * 64)
    gpu.load_ptx(HEADER + SPECIAL).launch("special", (1, 1, 1), (64, 1, 1), [out])
    got = gpu.download(out, np.uint32, (64, 4))
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(got[:, 0], lane)
    np.testing.assert_array_equal(got[:, 1], (1 << lane) - 1)
    np.testing.assert_array_equal(got[:, 2], (0xFFFFFFFF << lane) & 0xFFFFFFFF)
    assert (got[:, 3] > 0).all()


LDMATRIX = """
.visible .entry frag(.param .u64 tile, .param .u64 out)
{
  .reg .b32 %r<16>; .reg .b64 %rd<8>;
  .shared .align 16 .b8 smem[512];
  ld.param.u64 %rd1, [tile];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd4];
  mov.u64 %rd5, smem;
  add.s64 %rd6, %rd5, %rd3;
  st.shared.v4.b32 [%rd6], {%r2, %r3, %r4, %r5};
  bar.sync 0;
  // lane l gives row l%8 (+8 for matrices 1 and 3) of column block l/16
  and.b32 %r6, %r1, 15;
  shr.u32 %r7, %r1, 4;
  mul.lo.u32 %r8, %r6, 32;
  mad.lo.u32 %r9, %r7, 16, %r8;
  cvt.u64.u32 %rd7, %r9;
  add.s64 %rd7, %rd5, %rd7;
  ldmatrix.sync.aligned.m8n8.NUMTRANS.shared.b16 REGISTERS, [%rd7];
  add.s64 %rd4, %rd2, %rd3;
  st.global.v4.b32 [%rd4], {%r10, %r11, %r12, %r13};
  ret;
}
"""


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["rows", "trans"])
def test_ldmatrix_fragments_follow_the_isa(trans, count):
    # PTX ISA, ldmatrix: thread t gets elements 2 * (t % 4) and 2 * (t % 4) + 1
    # of row t / 4 of each matrix; .trans reads the matrix column-major.
    # Lanes 8i..8i+7 give the rows of matrix i (the others' addresses are not read).
    tile = np.arange(256, dtype=np.uint16).reshape(16, 16)
    registers = ["%r10", "%r11", "%r12", "%r13"]
    body = LDMATRIX.replace("NUM", f"x{count}").replace("TRANS", ".trans" if trans else "").replace(
        "REGISTERS", "{" + ", ".join(registers[:count]) + "}")
    gpu = emulator.Device("sm_80")
    out = gpu.upload(np.zeros((32, 4), np.uint32))
    gpu.load_ptx(HEADER + body).launch("frag", (1, 1, 1), (32, 1, 1), [gpu.upload(tile), out])
    got = gpu.download(out, np.uint32, (32, 4))
    t = np.arange(32)
    for i, (r0, c0) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)][:count]):
        m = tile[r0:r0 + 8, c0:c0 + 8]
        m = m.T if trans else m
        low, high = m[t // 4, 2 * (t % 4)], m[t // 4, 2 * (t % 4) + 1]
        np.testing.assert_array_equal(got[:, i], low.astype(np.uint32) | (high.astype(np.uint32) << 16))


MMA = """
.visible .entry mma(.param .u64 fa, .param .u64 fb, .param .u64 fc, .param .u64 fd)
{
  .reg .b32 %a<4>; .reg .b32 %b<2>; .reg .b32 %c<4>; .reg .b32 %d<4>; .reg .b32 %r<2>; .reg .b64 %rd<12>;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 16;
  mul.wide.u32 %rd2, %r1, 8;
  ld.param.u64 %rd3, [fa];
  ld.param.u64 %rd4, [fb];
  ld.param.u64 %rd5, [fc];
  ld.param.u64 %rd6, [fd];
  add.s64 %rd7, %rd3, %rd1;
  add.s64 %rd8, %rd4, %rd2;
  add.s64 %rd9, %rd5, %rd1;
  add.s64 %rd10, %rd6, %rd1;
  ld.global.v4.b32 {%a0, %a1, %a2, %a3}, [%rd7];
  ld.global.v2.b32 {%b0, %b1}, [%rd8];
  ld.global.v4.b32 {%c0, %c1, %c2, %c3}, [%rd9];
  mma.sync.aligned.SHAPE.row.col.f32.TYPE.TYPE.f32 {%d0, %d1, %d2, %d3}, A, B, {%c0, %c1, %c2, %c3};
  st.global.v4.b32 [%rd10], {%d0, %d1, %d2, %d3};
  ret;
}
"""

# The fragment layouts as the PTX ISA tables give them ("Matrix fragments
# for mma.m16n8k16 with floating point type", ...): for element i of a
# lane's fragment, (row, column) in terms of groupID g and threadID_in_group t.
_A = {
    ("m16n8k16", "f16"): lambda g, t, i: (g + 8 * (i in (2, 3, 6, 7)), 2 * t + (i & 1) + 8 * (i >= 4)),
    ("m16n8k8", "f16"): lambda g, t, i: (g + 8 * (i >= 2), 2 * t + (i & 1)),
    ("m16n8k8", "tf32"): lambda g, t, i: (g + 8 * (i in (1, 3)), t + 4 * (i >= 2)),
    ("m16n8k4", "tf32"): lambda g, t, i: (g + 8 * i, t),
}
_B = {
    ("m16n8k16", "f16"): lambda g, t, i: (2 * t + (i & 1) + 8 * (i >= 2), g),
    ("m16n8k8", "f16"): lambda g, t, i: (2 * t + i, g),
    ("m16n8k8", "tf32"): lambda g, t, i: (t + 4 * i, g),
    ("m16n8k4", "tf32"): lambda g, t, i: (t, g),
}


def _fragments(matrix, layout, count, pack):
    """(32, registers) u32 words: lane l's elements of ``matrix`` in the layout."""
    words = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        values = [matrix[layout(lane >> 2, lane % 4, i)] for i in range(count)]
        if pack:  # two 16-bit elements a word, the first in the low half
            bits = np.array(values).view(np.uint16).astype(np.uint32)
            for j in range(count // 2):
                words[lane, j] = bits[2 * j] | (bits[2 * j + 1] << 16)
        else:
            words[lane, :count] = np.array(values, np.float32).view(np.uint32)
    return words


@pytest.mark.parametrize("shape,element", [("m16n8k16", "f16"), ("m16n8k16", "bf16"), ("m16n8k8", "f16"),
                                           ("m16n8k8", "bf16"), ("m16n8k8", "tf32"), ("m16n8k4", "tf32")])
def test_mma_follows_the_isa_fragment_layouts(shape, element):
    k = int(shape.split("k")[1])
    dtype = {"f16": np.float16, "bf16": BFLOAT16, "tf32": np.float32}[element]
    layout_type = "tf32" if element == "tf32" else "f16"
    a = RNG.standard_normal((16, k)).astype(dtype)
    b = RNG.standard_normal((k, 8)).astype(dtype)
    c = RNG.standard_normal((16, 8)).astype(np.float32)
    pack = element != "tf32"
    a_count, b_count = 16 * k // 32, k * 8 // 32
    fa = _fragments(a, _A[shape, layout_type], a_count, pack)
    fb = _fragments(b, _B[shape, layout_type], b_count, pack)[:, :2]
    fc = _fragments(c, lambda g, t, i: (g + 8 * (i >= 2), 2 * t + (i & 1)), 4, False)
    a_regs = a_count // 2 if pack else a_count
    b_regs = b_count // 2 if pack else b_count
    body = MMA.replace("SHAPE", shape).replace("TYPE", element) \
        .replace("A, B", "{" + ", ".join(f"%a{j}" for j in range(a_regs)) + "}, {"
                 + ", ".join(f"%b{j}" for j in range(b_regs)) + "}")
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(16 * 32)
    gpu.load_ptx(HEADER + body).launch("mma", (1, 1, 1), (32, 1, 1),
                                       [gpu.upload(fa), gpu.upload(fb), gpu.upload(fc), out])
    words = gpu.download(out, np.uint32, (32, 4)).view(np.float32)
    d = np.zeros((16, 8), np.float32)
    for lane in range(32):
        for i in range(4):
            d[(lane >> 2) + 8 * (i >= 2), 2 * (lane % 4) + (i & 1)] = words[lane, i]
    if element == "tf32":  # the tensor core reads the top 19 bits of each f32
        a = (a.view(np.uint32) & 0xFFFFE000).view(np.float32)
        b = (b.view(np.uint32) & 0xFFFFE000).view(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(d, want, rtol=1e-6, atol=1e-6)


def test_mma_in_a_partial_warp_is_an_error():
    gpu = emulator.Device("sm_80")
    body = MMA.replace("SHAPE", "m16n8k8").replace("TYPE", "tf32").replace("A, B", "{%a0, %a1, %a2, %a3}, {%b0, %b1}")
    buffers = [gpu.alloc(16 * 32) for _ in range(4)]
    for buffer in buffers[:3]:
        gpu.write(buffer.pointer, np.zeros(16 * 32, np.uint8))
    with pytest.raises(emulator.EmulationError, match="is warp-collective, but lane 16 of the warp is not executing it"):
        gpu.load_ptx(HEADER + body).launch("mma", (1, 1, 1), (16, 1, 1), buffers)


CONVERT = """
.visible .entry convert(.param .u64 x, .param .u64 out)
{
  .reg .b16 %h<4>; .reg .b32 %r<16>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  cvt.MODE.TO.f32 %h1, %f1;
  cvt.u32.u16 %r2, %h1;
  add.s64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r2;
  ret;
}
"""


def _round_reference(x, candidates: list[float], mode: str) -> float:
    """The candidate ``x`` rounds to toward zero, -inf or +inf, by exact comparison."""
    q = Fraction(x)
    candidates = [c for c in candidates if np.isfinite(c)]
    below = max((c for c in candidates if Fraction(c) <= q), key=Fraction)
    above = min((c for c in candidates if Fraction(c) >= q), key=Fraction)
    if mode == "rz":
        return below if q >= 0 else above
    if mode == "rm":
        return below
    return above


@pytest.mark.parametrize("to", ["f16", "bf16"])
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_narrowing_conversions_round_in_every_mode(to, mode):
    dtype = np.float16 if to == "f16" else BFLOAT16
    # Random values, values between neighbours and exact ties.
    exact = np.array([1.0, -2.5, 65504.0, 3.0e-5], np.float32)
    x = np.concatenate([RNG.standard_normal(60).astype(np.float32) * 10, exact,
                        (np.float32(1) + np.float32(2.0 ** -11)) * np.array([1, -1], np.float32)])
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * len(x))
    gpu.load_ptx(HEADER + CONVERT.replace("MODE", mode).replace("TO", to)).launch(
        "convert", (1, 1, 1), (len(x), 1, 1), [gpu.upload(x), out])
    got = gpu.download(out, np.uint32, (len(x),)).astype(np.uint16).view(dtype).astype(np.float64)
    for value, result in zip(x, got):
        nearest = np.array(value, np.float32).astype(dtype)
        if mode == "rn":
            want = float(nearest)
        else:
            bits = np.array(nearest).view(np.uint16).astype(np.int64)
            neighbours = [float(np.array(k, np.uint16).view(dtype)) for k in (bits - 1, bits, bits + 1)]
            want = _round_reference(float(value), neighbours, mode)
        assert result == want, (value, mode, result, want)


SETP_PAIRS = """
.visible .entry pairs(.param .u64 a, .param .u64 b, .param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  ld.global.b32 %r2, [%rd5];
  ld.global.b32 %r3, [%rd6];
  setp.ltu.f16x2 %p1|%p2, %r2, %r3;
  selp.u32 %r4, 1, 0, %p1;
  selp.u32 %r5, 2, 0, %p2;
  or.b32 %r6, %r4, %r5;
  add.s64 %rd7, %rd3, %rd4;
  st.global.u32 [%rd7], %r6;
  ret;
}
"""


def test_packed_half_comparisons_give_the_lower_halves_result_first():
    a = RNG.standard_normal((32, 2)).astype(np.float16)
    b = RNG.standard_normal((32, 2)).astype(np.float16)
    a[0, 1] = np.nan  # unordered: true
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 32)
    gpu.load_ptx(HEADER + SETP_PAIRS).launch("pairs", (1, 1, 1), (32, 1, 1), [gpu.upload(a), gpu.upload(b), out])
    less = (a < b) | np.isnan(a) | np.isnan(b)
    np.testing.assert_array_equal(gpu.download(out, np.uint32, (32,)), less[:, 0] * 1 + less[:, 1] * 2)


FMA = """
.visible .entry fused(.param .u64 a, .param .u64 out)
{
  .reg .b32 %r<4>; .reg .f32 %f<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 12;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd4+4];
  ld.global.f32 %f3, [%rd4+8];
  fma.MODE.f32 %f4, %f1, %f2, %f3;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f4;
  ret;
}
"""


def _f32_rounding(q: Fraction, mode: str) -> np.float32:
    """``q`` correctly rounded to f32 (normal range), by exact comparison."""
    guess = np.float32(float(q))
    candidates = [float(np.nextafter(guess, np.float32(-np.inf))), float(guess),
                  float(np.nextafter(guess, np.float32(np.inf)))]
    if mode == "rn":  # nearest, ties to an even mantissa
        return np.float32(min(candidates, key=lambda c: (abs(Fraction(c) - q),
                                                         int(np.float32(c).view(np.uint32)) & 1)))
    return np.float32(_round_reference(q, candidates, mode))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_rounds_once(mode):
    # Random triples, and triples whose product lands next to a tie of the
    # sum (where rounding the f64 sum first would be wrong).
    a = RNG.standard_normal((96, 3)).astype(np.float32)
    tie = np.float32(1 + 2 ** -12)
    a[:8] = [[tie, tie, np.float32(2 ** -24 * k)] for k in (-3, -1, 1, 3, -2, 2, 5, -5)]
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * len(a))
    gpu.load_ptx(HEADER + FMA.replace("MODE", mode)).launch("fused", (1, 1, 1), (len(a), 1, 1),
                                                            [gpu.upload(a), out])
    got = gpu.download(out, np.float32, (len(a),))
    for (x, y, z), result in zip(a, got):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        assert result == _f32_rounding(exact, mode), (x, y, z, mode)


RACE = """
.visible .entry race(.param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b8 buf[256];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, buf;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.shared.u32 [%rd4], %r1;
  FIRST
  add.u32 %r2, %r1, 32;
  rem.u32 %r3, %r2, 64;
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd2, %rd5;
  ld.shared.u32 %r4, [%rd6];
  SECOND
  add.s64 %rd7, %rd1, %rd3;
  st.global.u32 [%rd7], %r4;
  ret;
}
"""


def _race(first: str, second: str = "") -> np.ndarray:
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 64)
    gpu.load_ptx(HEADER + RACE.replace("FIRST", first).replace("SECOND", second)).launch(
        "race", (2, 1, 1), (64, 1, 1), [out])
    return gpu.download(out, np.uint32, (64,))


def test_the_race_detector_needs_a_barrier_between_threads_sharing_memory():
    # Each thread reads what a thread of the other warp wrote.
    np.testing.assert_array_equal(_race("bar.sync 0;"), (np.arange(64) + 32) % 64)
    with pytest.raises(emulator.EmulationError, match=r"block \(0, 0, 0\), thread \(0, 0, 0\), PTX line 20 "
                                                      r"\(ld.shared.u32\): race: shared load of shared memory that "
                                                      r"thread \(32, 0, 0\) wrote, with no bar.sync between"):
        _race("")
    # Writing again what another thread has read since the last barrier.
    with pytest.raises(emulator.EmulationError, match="race: shared store overwrites shared memory that thread "
                                                      r"\(32, 0, 0\) read"):
        _race("bar.sync 0;", "st.shared.u32 [%rd4], %r4;")
    _race("bar.sync 0;", "bar.sync 0;\n  st.shared.u32 [%rd4], %r4;")


def test_a_warp_barrier_orders_the_shared_accesses_of_its_warp():
    # bar.warp.sync guarantees memory ordering among its threads (PTX ISA): each reads its neighbour's word.
    def neighbours(first: str, threads: int, step: int) -> np.ndarray:
        body = RACE.replace("add.u32 %r2, %r1, 32;", f"add.u32 %r2, %r1, {step};").replace(
            "rem.u32 %r3, %r2, 64;", f"rem.u32 %r3, %r2, {threads};")
        gpu = emulator.Device("sm_80")
        out = gpu.alloc(4 * 64)
        gpu.load_ptx(HEADER + body.replace("FIRST", first).replace("SECOND", "")).launch(
            "race", (1, 1, 1), (threads, 1, 1), [out])
        return gpu.download(out, np.uint32, (threads,))
    np.testing.assert_array_equal(neighbours("bar.warp.sync -1;", 32, 1), (np.arange(32) + 1) % 32)
    with pytest.raises(emulator.EmulationError, match="race: shared load of shared memory that thread"):
        neighbours("", 32, 1)
    # Only its own warp's: the thread of the other warp is not ordered.
    with pytest.raises(emulator.EmulationError, match=r"race: shared load of shared memory that thread \(32, 0, 0\)"):
        neighbours("bar.warp.sync -1;", 64, 32)


def test_lanes_storing_one_value_to_one_place_do_not_race():
    # Every thread stores 7 to one word (a reduction's result), which all then read.
    body = RACE.replace("buf[256]", "buf[260]").replace(
        "st.shared.u32 [%rd4], %r1;", "st.shared.u32 [%rd4], %r1;\n  st.shared.u32 [buf+256], 7;").replace(
        "ld.shared.u32 %r4, [%rd6];", "ld.shared.u32 %r4, [buf+256];")
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4 * 64)
    gpu.load_ptx(HEADER + body.replace("FIRST", "bar.sync 0;").replace("SECOND", "")).launch(
        "race", (1, 1, 1), (64, 1, 1), [out])
    np.testing.assert_array_equal(gpu.download(out, np.uint32, (64,)), 7)
    different = RACE.replace("st.shared.u32 [%rd4], %r1;", "st.shared.u32 [buf], %r1;")
    with pytest.raises(emulator.EmulationError, match="lanes of one shared store write different values"):
        gpu.load_ptx(HEADER + different.replace("FIRST", "").replace("SECOND", "")).launch(
            "race", (1, 1, 1), (64, 1, 1), [out])


def test_reading_shared_memory_nothing_wrote_is_an_error():
    body = RACE.replace("add.u32 %r2, %r1, 32;", "add.u32 %r2, %r1, 1;").replace("rem.u32 %r3, %r2, 64;",
                                                                                 "mov.u32 %r3, %r2;")
    gpu = emulator.Device("sm_80")
    with pytest.raises(emulator.EmulationError, match=r"thread \(31, 0, 0\).*shared load reads shared memory "
                                                      "that nothing wrote"):
        gpu.load_ptx(HEADER + body.replace("FIRST", "bar.sync 0;").replace("SECOND", "")).launch(
            "race", (1, 1, 1), (32, 1, 1), [gpu.alloc(4 * 64)])


COPY = """
.visible .entry copy(.param .u64 src, .param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<10>;
  .shared .align 16 .b8 tile[2048];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  mov.u64 %rd5, tile;
  add.s64 %rd6, %rd5, %rd3;
  cp.async.cg.shared.global [%rd6], [%rd4], 16;
  cp.async.commit_group;
  WAIT
  BARRIER
  add.u32 %r2, %r1, 64;
  rem.u32 %r3, %r2, 128;
  mul.wide.u32 %rd7, %r3, 16;
  add.s64 %rd8, %rd5, %rd7;
  ld.shared.v4.b32 {%r4, %r5, %r6, %r7}, [%rd8];
  add.s64 %rd9, %rd2, %rd3;
  st.global.v4.b32 [%rd9], {%r4, %r5, %r6, %r7};
  ret;
}
"""


def _copy(wait: str, barrier: str, body: str = COPY) -> np.ndarray:
    gpu = emulator.Device("sm_80")
    src = np.arange(512, dtype=np.uint32)
    out = gpu.alloc(src.nbytes)
    gpu.load_ptx(HEADER + body.replace("WAIT", wait).replace("BARRIER", barrier)).launch(
        "copy", (1, 1, 1), (128, 1, 1), [gpu.upload(src), out])
    return gpu.download(out, np.uint32, (128, 4))


def test_async_copies_land_at_their_wait_and_need_a_barrier_for_other_threads():
    want = np.arange(512, dtype=np.uint32).reshape(128, 4)[(np.arange(128) + 64) % 128]
    np.testing.assert_array_equal(_copy("cp.async.wait_group 0;", "bar.sync 0;"), want)
    np.testing.assert_array_equal(_copy("cp.async.wait_all;", "bar.sync 0;"), want)
    for wait in ("", "cp.async.wait_group 1;"):
        with pytest.raises(emulator.EmulationError, match="shared load reads shared memory that a cp.async is "
                                                          "still copying into"):
            _copy(wait, "bar.sync 0;")
    with pytest.raises(emulator.EmulationError, match=r"race: shared load of shared memory that thread \(64, 0, 0\) "
                                                      "wrote"):
        _copy("cp.async.wait_group 0;", "")
    # A thread that leaves with copies in flight.
    early = COPY.replace("  add.u32 %r2, %r1, 64;", "  ret;\n  add.u32 %r2, %r1, 64;")
    with pytest.raises(emulator.EmulationError, match="exits with cp.async copies in flight"):
        _copy("", "", early)


def test_a_barrier_reached_by_part_of_a_warp_is_an_error():
    body = RACE.replace("FIRST", "setp.lt.u32 %p1, %r1, 16;\n  @%p1 bar.sync 0;").replace("SECOND", "") \
        .replace(".reg .b32 %r<8>;", ".reg .pred %p<2>; .reg .b32 %r<8>;")
    gpu = emulator.Device("sm_80")
    with pytest.raises(emulator.EmulationError, match=r"bar.sync is warp-collective, but lane 16"):
        gpu.load_ptx(HEADER + body).launch("race", (1, 1, 1), (64, 1, 1), [gpu.alloc(256)])


BARRIERS = """
.visible .entry barriers(.param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b8 buf[384];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, buf;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  // warp 1 loops longer before its store: warp 0 waits at the barrier meanwhile
  shr.u32 %r2, %r1, 5;
  mul.lo.u32 %r3, %r2, 50;
  mov.u32 %r4, 0;
LOOP:
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, %r3;
  @%p1 bra LOOP;
  st.shared.u32 [%rd4], %r4;
  setp.ge.u32 %p2, %r1, 64;
  @%p2 ret;
  bar.sync 0COUNT;
  xor.b32 %r5, %r1, 32;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd2, %rd5;
  ld.shared.u32 %r6, [%rd6];
  add.s64 %rd7, %rd1, %rd3;
  st.global.u32 [%rd7], %r6;
  ret;
}
"""


def test_barriers_wait_for_the_threads_still_running_not_for_those_that_exited():
    # 96 threads: the third warp exits before the barrier; the first waits there for the second.
    gpu = emulator.Device("sm_80")
    out = gpu.upload(np.zeros(96, np.uint32))
    gpu.load_ptx(HEADER + BARRIERS.replace("COUNT", "")).launch("barriers", (1, 1, 1), (96, 1, 1), [out])
    got = gpu.download(out, np.uint32, (96,))
    np.testing.assert_array_equal(got[:64], np.where(np.arange(64) < 32, 50, 1))
    with pytest.raises(emulator.EmulationError, match="bar.sync with a thread count other than the block's"):
        gpu.load_ptx(HEADER + BARRIERS.replace("COUNT", ", 64")).launch("barriers", (1, 1, 1), (96, 1, 1), [out])


@pytest.mark.parametrize("line,message", [
    ("frobnicate.b32 %r1, %r1;", r"kernel k, PTX line 8 \(frobnicate.b32\): frobnicate.b32: instruction frobnicate is not "
                                 "supported by the emulator"),
    ("ld.global.lu2.f32 %f1, [%rd1];", r"modifier .lu2 is not supported by the emulator"),
    ("mov.u32 %r1, %nosuch;", "unknown register or special register %nosuch"),
    ("add.f32 %f1, %f1, %undeclared;", "unknown register or special register %undeclared"),
    ("bra NOWHERE;", "branch to an unknown label NOWHERE"),
    ("tcgen05.fence::before_thread_sync;", "instruction tcgen05 is not supported by the emulator"),
    ("wgmma.fence.sync.aligned;", "needs sm_90a or newer; the PTX targets sm_80"),
])
def test_what_the_emulator_does_not_know_is_an_error_naming_it_and_its_line(line, message):
    body = f"""
.visible .entry k(.param .u64 p)
{{
  .reg .b32 %r<2>; .reg .f32 %f<2>; .reg .b64 %rd<2>;
  {line}
  ret;
}}
"""
    with pytest.raises(emulator.EmulationError, match=message):
        emulator.Device("sm_80").load_ptx(HEADER + body)


def test_unknown_directives_are_errors():
    with pytest.raises(emulator.EmulationError, match=r"PTX line 4: unknown PTX directive or statement '.frob'"):
        emulator.Device("sm_80").load_ptx(HEADER + ".frob 3;\n")


ATOMICS = """
.visible .entry atomics(.param .u64 counters, .param .u64 old)
{
  .reg .b32 %r<12>; .reg .f32 %f<2>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [counters];
  ld.param.u64 %rd2, [old];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 3;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  atom.global.add.u32 %r3, [%rd4], 1;
  atom.global.max.s32 %r4, [%rd1+16], %r1;
  red.global.add.f32 [%rd1+20], 0f3F000000;
  atom.global.cas.b32 %r5, [%rd1+24], 0, %r1;
  atom.global.exch.b32 %r6, [%rd1+28], %r1;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd5, %rd2, %rd3;
  st.global.v4.u32 [%rd5], {%r3, %r4, %r5, %r6};
  ret;
}
"""


def test_atomics_act_one_lane_after_another():
    gpu = emulator.Device("sm_80")
    counters = gpu.upload(np.zeros(8, np.uint32))
    old = gpu.alloc(16 * 64)
    gpu.load_ptx(HEADER + ATOMICS).launch("atomics", (1, 1, 1), (64, 1, 1), [counters, old])
    got = gpu.download(counters, np.uint32, (8,))
    np.testing.assert_array_equal(got[:4], 16)
    assert got[4] == 63 and got[5].view(np.float32) == 32.0 and got[7] in range(64)
    previous = gpu.download(old, np.uint32, (64, 4))
    # Each lane saw a distinct count of its counter, and one lane won the compare-and-swap.
    for k in range(4):
        assert sorted(previous[k::4, 0]) == list(range(16))
    saw_zero = set(np.flatnonzero(previous[:, 2] == 0))
    assert got[6] != 0 and got[6] in saw_zero and saw_zero <= {0, got[6]}
    assert sorted(previous[:, 3]) == sorted([0] + [int(v) for v in range(64) if v != got[7]])


MEMORY = """
.visible .entry mem(.param .u64 p)
{
  .reg .b32 %r<2>; .reg .f32 %f<2>; .reg .b64 %rd<2>;
  .shared .align 16 .b8 tiny;
  ld.param.u64 %rd1, [p];
  ACCESS
  ret;
}
"""


@pytest.mark.parametrize("access,message", [
    ("ld.global.f32 %f1, [%rd1+2];", "misaligned load of 4 bytes"),
    ("st.global.f32 [%rd1+64], %f1;", "outside every live allocation"),
    # A one-byte variable indexed as if the dynamic region started there.
    ("st.shared.f32 [tiny+4], %f1;", "in no shared variable"),
    ("st.shared.f32 [tiny+4096], %f1;", "is outside the block's 80 bytes of shared memory"),
])
def test_memory_checks(access, message):
    gpu = emulator.Device("sm_80")
    with pytest.raises(emulator.EmulationError, match=message):
        gpu.load_ptx(HEADER + MEMORY.replace("ACCESS", access)).launch("mem", (1, 1, 1), (1, 1, 1),
                                                                      [gpu.alloc(64)], shared_bytes=64)


def test_global_memory_nothing_wrote_is_poison_or_with_initcheck_an_error():
    body = MEMORY.replace("ACCESS", "ld.global.f32 %f1, [%rd1];\n  st.global.f32 [%rd1+4], %f1;")
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(8)
    gpu.load_ptx(HEADER + body).launch("mem", (1, 1, 1), (1, 1, 1), [out])
    assert np.isnan(gpu.download(out, np.float32, (2,))).all()
    strict = emulator.Device("sm_80", check_initialized=True)
    with pytest.raises(emulator.EmulationError, match=r"load of 4 bytes at 0x\w+ \(byte 0 of the 8-byte allocation "
                                                      r"at 0x\w+\) reads global memory that nothing wrote"):
        strict.load_ptx(HEADER + body).launch("mem", (1, 1, 1), (1, 1, 1), [strict.alloc(8)])


def test_a_vector_load_of_a_partly_written_stack_frame_is_not_an_error():
    # LLVM may load four words of a frame and use only those it wrote.
    body = """
.visible .entry frame(.param .u64 out)
{
  .reg .b32 %r<6>; .reg .b64 %rd<4>;
  .local .align 16 .b8 depot[16];
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, depot;
  st.local.v2.b32 [%rd2], {7, 9};
  ld.local.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];
  add.u32 %r5, %r1, %r2;
  st.global.u32 [%rd1], %r5;
  ret;
}
"""
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(4)
    gpu.load_ptx(HEADER + body).launch("frame", (1, 1, 1), (1, 1, 1), [out])
    assert gpu.download(out, np.uint32, (1,))[0] == 16
    strict = emulator.Device("sm_80", check_initialized=True)
    with pytest.raises(emulator.EmulationError, match="local load reads local memory that the thread never wrote"):
        strict.load_ptx(HEADER + body).launch("frame", (1, 1, 1), (1, 1, 1), [strict.alloc(4)])


def test_an_endless_loop_is_an_error_not_a_hang():
    body = MEMORY.replace("ACCESS", "LOOP:\n  bra.uni LOOP;")
    gpu = emulator.Device("sm_80", max_steps=1000)
    with pytest.raises(emulator.EmulationError, match="not finished after 1000 instruction steps"):
        gpu.load_ptx(HEADER + body).launch("mem", (1, 1, 1), (32, 1, 1), [gpu.alloc(4)])


CARRY = """
.visible .entry carry(.param .u64 a, .param .u64 b, .param .u64 out)
{
  .reg .pred %p; .reg .b32 %r<20>; .reg .b64 %rd<10>;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 8;
  ld.param.u64 %rd2, [a];
  add.s64 %rd3, %rd2, %rd1;
  ld.global.v2.u32 {%r2, %r3}, [%rd3];
  ld.param.u64 %rd4, [b];
  add.s64 %rd5, %rd4, %rd1;
  ld.global.v2.u32 {%r4, %r5}, [%rd5];
  add.cc.u32 %r6, %r2, %r4;
  addc.u32 %r7, %r3, %r5;
  sub.cc.u32 %r8, %r2, %r4;
  subc.u32 %r9, %r3, %r5;
  mad.lo.cc.u32 %r10, %r2, %r4, %r2;
  madc.hi.u32 %r11, %r2, %r4, %r3;
  add.cc.u32 %r12, %r3, %r5;
  addc.u32 %r13, 0, 0;
  and.b32 %r14, %r1, 1;
  setp.eq.u32 %p, %r14, 1;
  @%p add.cc.u32 %r15, 0xFFFFFFFF, 1;
  addc.u32 %r16, 0, 0;
  ld.param.u64 %rd6, [out];
  mul.wide.u32 %rd7, %r1, 48;
  add.s64 %rd8, %rd6, %rd7;
  st.global.v4.u32 [%rd8], {%r6, %r7, %r8, %r9};
  st.global.v4.u32 [%rd8+16], {%r10, %r11, %r12, %r13};
  st.global.v4.u32 [%rd8+32], {%r16, %r16, %r16, %r16};
  ret;
}
"""


def test_carry_chains_do_extended_precision_arithmetic():
    # 64-bit sums, differences and a multiply-add from 32-bit halves through
    # CC.CF, which only the lanes that run an instruction write.
    n = 64
    a = RNG.integers(0, 2**64, n, dtype=np.uint64)
    b = RNG.integers(0, 2**64, n, dtype=np.uint64)
    a[:4] = [2**64 - 1, 0, 2**32 - 1, 2**63]
    b[:4] = [1, 1, 2**32 - 1, 2**63]
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(48 * n)
    gpu.load_ptx(HEADER + CARRY).launch("carry", (1, 1, 1), (n, 1, 1), [gpu.upload(a), gpu.upload(b), out])
    got = gpu.download(out, dtype=np.uint32, shape=(n, 12)).astype(object)
    mask = 2**32 - 1
    for i, (x, y) in enumerate(zip(map(int, a), map(int, b))):
        lo_x, hi_x, lo_y, hi_y = x & mask, x >> 32, y & mask, y >> 32
        row = [int(v) for v in got[i]]
        assert row[0] | row[1] << 32 == (x + y) % 2**64
        assert row[2] | row[3] << 32 == (x - y) % 2**64
        assert row[4] | row[5] << 32 == (lo_x * lo_y + x) % 2**64
        assert (row[6], row[7]) == ((hi_x + hi_y) & mask, (hi_x + hi_y) >> 32)
        assert row[8] == (1 if i % 2 else row[7])  # odd lanes set the carry; even ones keep the last


CALLS = """
.func (.param .align 8 .b8 result[16]) divmod(.param .b32 a, .param .b32 b)
{
  .reg .b32 %r<5>; .reg .pred %p<2>; .reg .b64 %rd<3>;
  .local .align 4 .b8 __local_depot0[8];
  mov.u64 %rd1, __local_depot0;
  ld.param.b32 %r1, [a];
  ld.param.b32 %r2, [b];
  setp.eq.s32 %p1, %r2, 0;
  @%p1 bra ZERO;
  div.s32 %r3, %r1, %r2;
  st.local.b32 [%rd1+4], %r3;
  { // a nested call
  .reg .b32 tmp;
  .param .b32 x;
  .param .b32 y;
  st.param.b32 [x], %r3;
  call.uni (y), twice, (x);
  ld.param.b32 tmp, [y];
  st.local.b32 [%rd1], tmp;
  }
  ld.local.b32 %r4, [%rd1];
  st.param.b32 [result], %r4;
  rem.s32 %r4, %r1, %r2;
  st.param.b32 [result+8], %r4;
  ret;
ZERO:
  st.param.b32 [result], -1;
  st.param.b32 [result+8], -1;
  ret;
}
.func (.param .b32 out) twice(.param .b32 in)
{
  .reg .b32 %r<2>;
  ld.param.b32 %r1, [in];
  shl.b32 %r1, %r1, 1;
  st.param.b32 [out], %r1;
  ret;
}
.visible .entry calls(.param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 3;
  { // callseq 0
  .param .b32 p0;
  .param .b32 p1;
  .param .align 8 .b8 r[16];
  st.param.b32 [p0], %r1;
  st.param.b32 [p1], %r2;
  call.uni (r), divmod, (p0, p1);
  ld.param.b32 %r3, [r];
  ld.param.b32 %r4, [r+8];
  }
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v2.b32 [%rd3], {%r3, %r4};
  ret;
}
"""


def test_device_function_calls_pass_parameters_and_results_through_nested_calls():
    # libdevice's f64 sin, cos and pow call noinline functions (the slow
    # range reduction); the emulator inlines each call. Lanes take different
    # paths inside the callee (a divisor of 0 returns early).
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(8 * 64)
    gpu.load_ptx(HEADER + CALLS).launch("calls", (1, 1, 1), (64, 1, 1), [out])
    got = gpu.download(out, np.int32, (64, 2))
    t, d = np.arange(64), np.arange(64) % 4
    divisor = np.maximum(d, 1)
    want = np.stack([np.where(d == 0, -1, 2 * (t // divisor)), np.where(d == 0, -1, t % divisor)], 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("edit, message", [
    (("shl.b32 %r1, %r1, 1;", "shl.b32 %r1, %r1, 1;\n  { .param .b32 q; .param .b32 s; st.param.b32 [q], %r1;\n"
      "  call.uni (s), twice, (q); }"), "call to twice is recursive"),
    (("call.uni (r), divmod, (p0, p1);", "call.uni (r), nowhere, (p0, p1);"),
     "call to nowhere, which the module declares without a body"),
    (("call.uni (r), divmod, (p0, p1);", "call.uni (r), divmod, (p0);"), "passes 1 arguments and 1 results"),
])
def test_calls_the_emulator_cannot_inline_are_errors_naming_them(edit, message):
    with pytest.raises(emulator.EmulationError, match=message):
        gpu = emulator.Device("sm_80")
        gpu.load_ptx(HEADER + CALLS.replace(*edit)).launch("calls", (1, 1, 1), (32, 1, 1), [gpu.alloc(8 * 32)])


def test_f64_fma_rounds_once():
    from tessel.runtime.emulator.numerics import fma_f64

    # Products that cancel against the addend, where rounding the product first (even to
    # long double's 64 bits) loses the result: Cody-Waite range reductions live there.
    a = RNG.standard_normal(2000) * 10.0 ** RNG.integers(-20, 20, 2000)
    b = RNG.standard_normal(2000) * 10.0 ** RNG.integers(-20, 20, 2000)
    c = np.concatenate([-(a * b)[:1000] * (1 + RNG.standard_normal(1000) * 1e-12), RNG.standard_normal(1000)])
    got = fma_f64(a, b, c)
    for x, y, z, result in zip(a, b, c, got):
        assert result == float(Fraction(x) * Fraction(y) + Fraction(z)), (x, y, z)
    assert np.isnan(fma_f64(np.array([np.inf]), np.array([0.0]), np.array([1.0])))[0]
