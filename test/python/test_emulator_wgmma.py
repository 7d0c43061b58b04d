"""The PTX emulator's warpgroup MMA (wgmma) on hand-written PTX: operands
laid out in shared memory in each canonical layout (K-major and M/N-major,
no swizzle and 32B, 64B, 128B swizzles, strides between core matrices) or
A in registers, f16, bf16 and tf32 inputs, f32 and f16 accumulators, every
legal N, the scale and transpose immediates, against numpy; the
asynchronous rules (wgmma.fence, commit/wait groups, the registers and
shared memory of a wgmma in flight) and the errors of kernels that break
them; a tile TMA swizzles read back through a descriptor of the same swizzle.
"""

import numpy as np
import pytest

import tessel
from tessel.dtypes import BFLOAT16
from tessel.runtime import emulator
from tessel.runtime.emulator.tensormap import encode_tensor_map

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
RNG = np.random.default_rng(0)
IMAGE = 32768  # bytes of shared memory the operands are laid out in
SPANS = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
MODES = {0: 0, 128: 1, 64: 2, 32: 3}  # span -> the descriptor's swizzle mode (bits 62-63)
NUMPY = {"f16": np.float16, "bf16": BFLOAT16, "tf32": np.float32}


def _lane_rows_cols(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The accumulator fragments of the ISA's wgmma .m64nNk* table: (row, col) of element i of thread t."""
    t, i = np.arange(128)[:, None], np.arange(n // 2)[None, :]
    warp, group, lane = t // 32, t % 32 // 4, t % 4
    return 16 * warp + group + 8 * (i // 2 % 2), 8 * (i // 4) + 2 * lane + i % 2


def _a_fragments(a: np.ndarray, itype: str) -> np.ndarray:
    """A (64 x K) as the 4 registers of each thread (the ISA's table for A in registers)."""
    t, i = np.arange(128)[:, None], np.arange(8 if itype != "tf32" else 4)[None, :]
    warp, group, lane = t // 32, t % 32 // 4, t % 4
    if itype == "tf32":
        return a[16 * warp + group + 8 * (i % 2), lane + 4 * (i // 2)].view(np.uint32)
    halves = a[16 * warp + group + 8 * (i // 2 % 2), 2 * lane + i % 2 + 8 * (i // 4)].view(np.uint16)
    return halves[:, 0::2].astype(np.uint32) | halves[:, 1::2].astype(np.uint32) << 16


def _place(image: np.ndarray, matrix: np.ndarray, start: int, k_major: bool, span: int, lbo: int, sbo: int):
    """Writes one instruction's operand (rows x 32 bytes of K) into the shared image at ``start`` in the
    canonical layout (CUTLASS's make_gmma_desc, in elements), element by element."""
    element = matrix.dtype.itemsize
    per_chunk = 16 // element
    raw = matrix.view(np.uint8).reshape(matrix.shape[0], matrix.shape[1], element)
    for r in range(matrix.shape[0]):
        for k in range(matrix.shape[1]):
            if k_major:  # ((8,m),(T,2)):((1T,SBO),(1,LBO)) unswizzled, ((8,m),(T,2)):((S/16 T,SBO),(1,T)) swizzled
                at = r // 8 * sbo + (r % 8 * span + k * element if span else
                                     r % 8 * 16 + k // per_chunk * lbo + k % per_chunk * element)
            else:  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) unswizzled, ((T,S/16,m),(8,k)):((1,T,LBO),(S/16 T,SBO))
                chunk, within = divmod(r, per_chunk)
                at = (chunk * sbo + k // 8 * lbo + k % 8 * 16 if not span else
                      chunk // (span // 16) * lbo + chunk % (span // 16) * 16 + k // 8 * sbo + k % 8 * span)
                at += within * element
            address = start + at
            if span:
                address ^= (address >> 7 & span // 16 - 1) << 4
            image[address:address + element] = raw[r, k]


def _descriptor(span: int, lbo: int, sbo: int, base: int = 0) -> int:
    """The bits of a descriptor but its start address (the kernel adds it)."""
    return (lbo >> 4) << 16 | (sbo >> 4) << 32 | base << 49 | MODES[span] << 62


def _kernel(n: int, dtype: str, itype: str, a_in_registers: bool, operands: str) -> str:
    """Every thread copies its part of the shared image from global memory and loads its accumulator (and A)
    fragments; the warpgroup runs one wgmma, and every thread stores its accumulators."""
    count = n // 2 if dtype == "f32" else n // 4
    k = 8 if itype == "tf32" else 16
    d = ",".join(f"%d{i}" for i in range(count))
    a = "{%a0,%a1,%a2,%a3}" if a_in_registers else "%rd7"
    copy = "\n".join(f"  ld.global.v4.b32 {{%r10,%r11,%r12,%r13}}, [%rd3+{2048 * i}];\n"
                     f"  st.shared.v4.b32 [%r3+{2048 * i}], {{%r10,%r11,%r12,%r13}};" for i in range(IMAGE // 2048))
    loads = "\n".join(f"  ld.global.b32 %d{i}, [%rd11+{4 * i}];" for i in range(count))
    stores = "\n".join(f"  st.global.b32 [%rd12+{4 * i}], %d{i};" for i in range(count))
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{dtype}.{itype}.{itype} {{{d}}}, {a}, %rd8, {operands};"
    return HEADER + f"""
.visible .entry mma(.param .u64 image, .param .u64 adesc, .param .u64 bdesc, .param .u32 aoff, .param .u32 boff,
                    .param .u64 c, .param .u64 afrag, .param .u32 accumulate, .param .u64 out)
{{
  .reg .pred %p<4>; .reg .b32 %r<20>; .reg .b32 %d<{count}>; .reg .b32 %a<4>; .reg .b64 %rd<20>;
  .shared .align 1024 .b8 smem[{IMAGE}];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [image];
  mov.u32 %r2, smem;
  shl.b32 %r4, %r1, 4;
  add.u32 %r3, %r2, %r4;
  cvt.u64.u32 %rd2, %r4;
  add.s64 %rd3, %rd1, %rd2;
{copy}
  ld.param.u32 %r5, [aoff];
  add.u32 %r5, %r5, %r2;
  shr.u32 %r5, %r5, 4;
  cvt.u64.u32 %rd4, %r5;
  ld.param.u64 %rd5, [adesc];
  add.s64 %rd7, %rd5, %rd4;
  ld.param.u32 %r6, [boff];
  add.u32 %r6, %r6, %r2;
  shr.u32 %r6, %r6, 4;
  cvt.u64.u32 %rd4, %r6;
  ld.param.u64 %rd5, [bdesc];
  add.s64 %rd8, %rd5, %rd4;
  ld.param.u32 %r7, [accumulate];
  setp.ne.u32 %p1, %r7, 0;
  ld.param.u64 %rd9, [c];
  mul.wide.u32 %rd10, %r1, {4 * count};
  add.s64 %rd11, %rd9, %rd10;
{loads}
  ld.param.u64 %rd13, [afrag];
  mul.wide.u32 %rd14, %r1, 16;
  add.s64 %rd15, %rd13, %rd14;
  ld.global.v4.b32 {{%a0,%a1,%a2,%a3}}, [%rd15];
  ld.param.u64 %rd9, [out];
  add.s64 %rd12, %rd9, %rd10;
  bar.sync 0;
  fence.proxy.async.shared::cta;
  wgmma.fence.sync.aligned;
  {mma}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{stores}
  ret;
}}
"""


def _values(shape, itype: str) -> np.ndarray:
    """Small multiples of 1/4: every product and sum of them is exact, so results compare exactly."""
    values = RNG.integers(-8, 9, shape) / 4
    return values.astype(NUMPY[itype])


def _mma(n=64, *, itype="f16", dtype="f32", a=None, b=None, c=None, a_layout=(True, 0, 128, 256, 0),
         b_layout=(True, 0, 128, 256, 16384), a_in_registers=False, scale_a=1, scale_b=1, accumulate=True,
         descriptors=None, edit=None):
    """Runs one wgmma of shape m64nN; layouts are (K-major, swizzle span, LBO, SBO, shared offset). Returns the
    accumulator D (64 x N) and the expected one."""
    k = 8 if itype == "tf32" else 16
    a = _values((64, k), itype) if a is None else a
    b = _values((n, k), itype) if b is None else b  # B as N x K: the operand the descriptor describes
    c = _values((64, n), "f16").astype(np.float32) if c is None else c
    image = np.zeros(IMAGE, np.uint8)
    if not a_in_registers:
        _place(image, a, a_layout[4], a_layout[0], *a_layout[1:4])
    _place(image, b, b_layout[4], b_layout[0], *b_layout[1:4])
    rows, cols = _lane_rows_cols(n)
    frag = c[rows, cols]
    if dtype == "f16":
        halves = frag.astype(np.float16).view(np.uint16)
        frag = halves[:, 0::2].astype(np.uint32) | halves[:, 1::2].astype(np.uint32) << 16
    afrag = _a_fragments(a, itype) if a_in_registers else np.zeros((128, 4), np.uint32)
    transposes = [] if itype == "tf32" else [int(not b_layout[0])] if a_in_registers else \
        [int(not a_layout[0]), int(not b_layout[0])]
    operands = ", ".join(["%p1", str(scale_a), str(scale_b)] + [str(t) for t in transposes])
    ptx = _kernel(n, dtype, itype, a_in_registers, operands)
    if edit is not None:
        ptx = edit(ptx)
    gpu = emulator.Device("sm_90")
    out = gpu.alloc(frag.nbytes)
    adesc, bdesc = descriptors or (_descriptor(*a_layout[1:4]), _descriptor(*b_layout[1:4]))
    gpu.load_ptx(ptx).launch("mma", (1, 1, 1), (128, 1, 1),
                             [gpu.upload(image), adesc, bdesc, a_layout[4], b_layout[4], gpu.upload(frag),
                              gpu.upload(afrag), int(accumulate), out])
    got = gpu.download(out, np.uint32, frag.shape)
    d = np.zeros((64, n), np.float32)
    if dtype == "f16":
        d[rows[:, 0::2], cols[:, 0::2]] = (got & 0xFFFF).astype(np.uint16).view(np.float16)
        d[rows[:, 1::2], cols[:, 1::2]] = (got >> 16).astype(np.uint16).view(np.float16)
    else:
        d[rows, cols] = got.view(np.float32)
    exact = (lambda x: (x.view(np.uint32) & 0xFFFFE000).view(np.float32)) if itype == "tf32" else (lambda x: x)
    want = scale_a * scale_b * exact(a).astype(np.float64) @ exact(b).astype(np.float64).T
    return d, want + (c if accumulate else 0)


LAYOUTS = {  # span -> (A, B) layouts (K-major, span, LBO, SBO, offset), core matrices apart by LBO/SBO
    "none": ((True, 0, 128, 256, 0), (True, 0, 2048, 256, 16384)),
    "32B": ((True, 32, 0, 512, 0), (True, 32, 0, 256, 16384)),
    "64B": ((True, 64, 0, 512, 0), (True, 64, 0, 1024, 16384)),
    "128B": ((True, 128, 0, 1024, 0), (True, 128, 0, 1024, 16384)),
}


@pytest.mark.parametrize("swizzle", list(SPANS))
def test_k_major_operands_in_each_swizzle(swizzle):
    a_layout, b_layout = LAYOUTS[swizzle]
    got, want = _mma(64, a_layout=a_layout, b_layout=b_layout)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("swizzle", list(SPANS))
def test_mn_major_operands_in_each_swizzle(swizzle):
    # imm-trans 1: A M-major, B N-major; unswizzled the stride-dimension offset steps along M/N, swizzled the
    # leading one steps from one span of M/N to the next.
    span = SPANS[swizzle]
    a_layout = (False, span, 2048, 256, 0) if not span else (False, span, 2048, 8 * span, 0)
    b_layout = (False, span, 2048, 256, 16384) if not span else (False, span, 4096, 8 * span, 16384)
    got, want = _mma(64, a_layout=a_layout, b_layout=b_layout)
    np.testing.assert_array_equal(got, want)


def test_mixed_majors_and_the_second_k_step_of_a_swizzled_row():
    # A K-major 128B starting 32 bytes into its rows (the second k16 slice of a 64-wide tile), B N-major.
    got, want = _mma(128, a_layout=(True, 128, 0, 1024, 32), b_layout=(False, 128, 8192, 1024, 16384))
    np.testing.assert_array_equal(got, want)
    got, want = _mma(32, a_layout=(False, 64, 1024, 512, 1024), b_layout=(True, 0, 1024, 128, 8192))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [8, 24, 136, 256])
def test_every_legal_n(n):
    got, want = _mma(n, b_layout=(True, 32, 0, 256, 8192))
    np.testing.assert_array_equal(got, want)


def test_bf16_tf32_and_f16_accumulators():
    got, want = _mma(64, itype="bf16")
    np.testing.assert_array_equal(got, want)
    # tf32 (k8) reads f32 operands ignoring their low 13 mantissa bits.
    a = RNG.standard_normal((64, 8)).astype(np.float32)
    b = RNG.standard_normal((48, 8)).astype(np.float32)
    got, want = _mma(48, itype="tf32", a=a, b=b, a_layout=(True, 32, 0, 256, 0), b_layout=(True, 128, 0, 1024, 8192))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-6)
    got, want = _mma(64, dtype="f16")
    np.testing.assert_array_equal(got, want.astype(np.float16).astype(np.float32))


def test_a_in_registers():
    got, want = _mma(40, a_in_registers=True, b_layout=(False, 0, 2048, 128, 16384))
    np.testing.assert_array_equal(got, want)
    a = RNG.standard_normal((64, 8)).astype(np.float32)
    got, want = _mma(16, itype="tf32", a=a, a_in_registers=True, b_layout=(True, 0, 128, 256, 16384))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_the_scales_and_scale_d():
    got, want = _mma(64, scale_a=-1, accumulate=False)
    np.testing.assert_array_equal(got, want)
    got, want = _mma(64, scale_b=-1, scale_a=-1)
    np.testing.assert_array_equal(got, want)


def test_a_base_offset_moves_the_swizzle_pattern():
    # B laid out as a 128B pattern starting 3 rows (384 bytes) past the 1024-byte repeat: the descriptor's
    # base offset 3 reads it back (the ISA: base offset = (pattern start >> 7) & 7).
    image_start = 16384 + 384
    b = _values((64, 16), "f16")
    image = np.zeros(IMAGE, np.uint8)
    raw = b.view(np.uint8).reshape(64, 32)
    for r in range(64):
        for chunk in range(2):
            at = r // 8 * 1024 + r % 8 * 128 + chunk * 16
            at ^= (r % 8) << 4  # the pattern's row, counted from its own start
            image[image_start + at:image_start + at + 16] = raw[r, 16 * chunk:16 * chunk + 16]
    a = _values((64, 16), "f16")
    _place(image, a, 0, True, 0, 128, 256)
    gpu = emulator.Device("sm_90", max_steps=200_000)
    rows, cols = _lane_rows_cols(64)
    out = gpu.alloc(128 * 32 * 4)
    gpu.load_ptx(_kernel(64, "f32", "f16", False, "%p1, 1, 1, 0, 0")).launch(
        "mma", (1, 1, 1), (128, 1, 1), [gpu.upload(image), _descriptor(0, 128, 256), _descriptor(128, 0, 1024, 3), 0,
                                        image_start, gpu.upload(np.zeros((128, 32), np.float32)),
                                        gpu.upload(np.zeros((128, 4), np.uint32)), 0, out])
    d = np.zeros((64, 64), np.float32)
    d[rows, cols] = gpu.download(out, np.float32, (128, 32))
    np.testing.assert_array_equal(d, a.astype(np.float64) @ b.astype(np.float64).T)


def test_a_descriptor_off_by_one_row_or_with_the_wrong_swizzle_mismatches():
    a_layout, b_layout = LAYOUTS["128B"]
    # The start address one 128-byte row on: every row of B is the next one's.
    got, want = _mma(64, a_layout=a_layout, b_layout=b_layout,
                     descriptors=(_descriptor(*a_layout[1:4]), _descriptor(*b_layout[1:4]) + (128 >> 4)))
    assert not np.array_equal(got, want)
    got, want = _mma(64, a_layout=a_layout, b_layout=b_layout,
                     descriptors=(_descriptor(*a_layout[1:4]), _descriptor(64, 0, 1024)))
    assert not np.array_equal(got, want)


def _two_groups(ptx: str, tail: str) -> str:
    """Two wgmma-groups, on accumulators %d then %e, and wait_group 1 (then ``tail`` before ret)."""
    mma = next(line for line in ptx.splitlines() if "wgmma.mma_async" in line)
    second = mma.replace("%d", "%e")
    return ptx.replace(".reg .b32 %d<32>;", ".reg .b32 %d<32>; .reg .b32 %e<32>;").replace(
        "  wgmma.wait_group.sync.aligned 0;",
        f"{second}\n  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 1;").replace(
        "  ret;", f"{tail}\n  ret;")


def test_wait_group_retires_the_groups_older_than_its_count():
    # wait_group 1 retires the first group: its accumulators (%d) are stored; the second's (%e, the same
    # product) only after wait_group 0.
    got, want = _mma(64, accumulate=False, edit=lambda ptx: _two_groups(
        ptx, "  wgmma.wait_group.sync.aligned 0;\n  st.global.b32 [%rd12], %e0;"))
    np.testing.assert_array_equal(got, want)
    with pytest.raises(tessel.RuntimeError, match=r"st.global.b32 accesses %e0, an accumulator of the "
                                                   r"wgmma.mma_async at line \d+, still in flight"):
        _mma(64, edit=lambda ptx: _two_groups(ptx, "  st.global.b32 [%rd12], %e0;"))


def test_a_proxy_fence_by_the_writers_before_the_barrier_orders_their_writes():
    # CUTLASS's order (fence_view_async_shared, then the barrier) as well as Triton's (the barrier, then a
    # fence by the warpgroup that issues the wgmma) put a proxy fence between each write and the wgmma.
    got, want = _mma(64, edit=lambda ptx: ptx.replace("  bar.sync 0;\n  fence.proxy.async.shared::cta;",
                                                      "  fence.proxy.async.shared::cta;\n  bar.sync 0;"))
    np.testing.assert_array_equal(got, want)


def test_once_retired_its_operands_are_the_warpgroups_to_overwrite():
    # After wgmma.wait_group every thread of the warpgroup is ordered after the wgmma's reads: each may
    # overwrite B's bytes with no bar.sync between (the race detector's view of the retired reads).
    got, want = _mma(64, edit=lambda ptx: ptx.replace("  wgmma.wait_group.sync.aligned 0;\n",
                                                      "  wgmma.wait_group.sync.aligned 0;\n"
                                                      "  st.shared.b32 [%r3+16384], %r1;\n"))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("edit,message", [
    # wait_group dropped: the accumulators are read while the wgmma is in flight.
    (lambda p: p.replace("  wgmma.wait_group.sync.aligned 0;\n", ""),
     r"st.global.b32 accesses %d0, an accumulator of the wgmma.mma_async at line \d+, still in flight"),
    # No group committed: wait_group 0 waits for committed groups only.
    (lambda p: p.replace("  wgmma.commit_group.sync.aligned;\n", ""), "still in flight"),
    # The accumulators loaded with no wgmma.fence between the loads and the wgmma.
    (lambda p: p.replace("  wgmma.fence.sync.aligned;\n", ""),
     "reads %d0, which the thread may have accessed since its last wgmma.fence"),
    # A write to B's shared memory while the wgmma reads it.
    (lambda p: p.replace("  wgmma.wait_group.sync.aligned 0;", "  st.shared.b32 [%r2+16384], %r1;\n"
                         "  wgmma.wait_group.sync.aligned 0;"),
     r"\(st.shared.b32\): shared store overwrites an operand of a wgmma.mma_async in flight"),
    # Half the warpgroup at the wgmma.
    (lambda p: p.replace("  wgmma.mma_async", "  setp.lt.u32 %p2, %r1, 64;\n  @%p2 wgmma.mma_async"),
     "warpgroup-collective .*thread 64 of the warpgroup is not executing it"),
    # The thread leaves with the wgmma in flight.
    (lambda p: p.replace("  wgmma.wait_group.sync.aligned 0;\n", "  ret;\n"),
     "exits with a wgmma.mma_async in flight"),
    # No proxy fence: the wgmma (the async proxy) reads the tiles the threads wrote with st.shared.
    (lambda p: p.replace("  fence.proxy.async.shared::cta;\n", ""),
     r"wgmma.mma_async's B reads shared memory at shared address 0x[0-9a-f]+ that thread \(\d+, 0, 0\) wrote at "
     r"line \d+ \(st.shared.v4.b32\) through the generic proxy, with no fence.proxy.async between"),
    # The fence before the writes orders nothing written after it.
    (lambda p: p.replace("  fence.proxy.async.shared::cta;\n", "").replace(
        "  ld.param.u64 %rd1, [image];", "  fence.proxy.async.shared::cta;\n  ld.param.u64 %rd1, [image];"),
     "through the generic proxy, with no fence.proxy.async between"),
    # Threads of the warpgroup give different descriptors.
    (lambda p: p.replace("  add.s64 %rd8, %rd5, %rd4;", "  add.s64 %rd8, %rd5, %rd4;\n  cvt.u64.u32 %rd16, %r1;\n"
                         "  shr.u64 %rd16, %rd16, 6;\n  add.s64 %rd8, %rd8, %rd16;"),
     "the threads of a warpgroup give different b-desc"),
])
def test_broken_wgmma_kernels_are_errors(edit, message):
    with pytest.raises(tessel.RuntimeError, match=message):
        _mma(64, edit=edit)


def test_reserved_descriptor_bits_and_unsupported_shapes_are_refused():
    with pytest.raises(tessel.RuntimeError, match="sets bits outside its fields"):
        _mma(64, descriptors=(_descriptor(0, 128, 256) | 1 << 46, _descriptor(0, 2048, 256)))
    for old, new, message in [("k16.f32.f16.f16", "k16.f32.bf16.f16", "equal A and B types"),
                              ("n64k16.f32.f16", "n64k32.f32.f16", r"\.m64n64k32\.f32\.f16\.f16 is not supported"),
                              ("n64k16.f32.f16", "n68k16.f32.f16", "a multiple of 8 from 8 to 256"),
                              ("k16.f32.f16.f16", "k16.f16.bf16.bf16", r"\.f16\.bf16\.bf16 is not supported"),
                              ("wgmma.mma_async.sync", "wgmma.mma_async.sp.sync", "sparse")]:
        ptx = _kernel(64, "f32", "f16", False, "%p1, 1, 1, 0, 0").replace(old, new)
        with pytest.raises(tessel.RuntimeError, match=message):
            emulator.Device("sm_90").load_ptx(ptx)
    with pytest.raises(tessel.RuntimeError, match="needs sm_90a"):
        emulator.Device("sm_90").load_ptx(_kernel(64, "f32", "f16", False, "%p1, 1, 1, 0, 0").replace(
            ".target sm_90a", ".target sm_90"))


# Thread 0 loads a 64 x 64 f16 tile with TMA in a swizzle; the warpgroup multiplies it (as A, K-major, and the
# 64 x 16 slice at k as B) through descriptors of that swizzle: TMA's and wgmma's swizzles must agree.
TMA_MMA = HEADER + """
.visible .entry tma_mma(.param .align 64 .b8 tmap[128], .param .u64 adesc, .param .u32 k, .param .u64 out)
{
  .reg .pred %p<4>; .reg .b32 %r<20>; .reg .b32 %d<32>; .reg .b64 %rd<12>;
  .shared .align 8 .b8 bar[8];
  .shared .align 1024 .b8 tile[8192];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r2, bar;
  mov.u32 %r3, tile;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 8192;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [tmap, {0, 0}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  ld.param.u64 %rd1, [adesc];
  ld.param.u32 %r4, [k];
  shl.b32 %r4, %r4, 1;
  add.u32 %r4, %r4, %r3;
  shr.u32 %r4, %r4, 4;
  cvt.u64.u32 %rd2, %r4;
  add.s64 %rd3, %rd1, %rd2;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {ACCUMULATORS}, %rd3, %rd3, 0, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ld.param.u64 %rd4, [out];
  mul.wide.u32 %rd5, %r1, 128;
  add.s64 %rd6, %rd4, %rd5;
  STORES
  ret;
}
""".replace("STORES", "\n  ".join(f"st.global.b32 [%rd6+{4 * i}], %d{i};" for i in range(32))).replace(
    "ACCUMULATORS", ",".join(f"%d{i}" for i in range(32)))


@pytest.mark.parametrize("swizzle,tma_swizzle", [("128B", "128B"), ("64B", "64B"), ("32B", "32B"), ("128B", "64B")])
def test_a_tile_tma_swizzled_is_read_through_a_descriptor_of_the_same_swizzle(swizzle, tma_swizzle):
    span = SPANS[tma_swizzle]
    x = _values((64, 64), "f16")
    gpu = emulator.Device("sm_90", max_steps=200_000)
    # A box of 8192 bytes as wide as the swizzle span: rows past x's 64 are filled with zeros.
    box = (span // 2, 8192 // span)
    src = gpu.upload(x)
    tmap = encode_tensor_map(src.pointer, np.float16, (64, 64), [128], box, swizzle=tma_swizzle)
    out = gpu.alloc(128 * 32 * 4)
    gpu.load_ptx(TMA_MMA).launch("tma_mma", (1, 1, 1), (128, 1, 1),
                                 [tmap, _descriptor(SPANS[swizzle], 0, 8 * SPANS[swizzle]), 0, out])
    rows, cols = _lane_rows_cols(64)
    d = np.zeros((64, 64), np.float32)
    d[rows, cols] = gpu.download(out, np.float32, (128, 32))
    operand = x[:, :16].astype(np.float64)  # the box's first 64 rows, k 0..15, whatever its width
    if swizzle == tma_swizzle:
        np.testing.assert_array_equal(d, operand @ operand.T)
    else:
        assert not np.array_equal(d, operand @ operand.T)


STMATRIX = HEADER + """
.visible .entry store(.param .u64 in, .param .u64 out)
{
  .reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
  .shared .align 16 .b8 rows[512];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [in];
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd3];
  mul.lo.u32 %r6, %r1, 5;
  and.b32 %r6, %r6, 31;
  shl.b32 %r6, %r6, 4;
  mov.u32 %r7, rows;
  add.u32 %r8, %r7, %r6;
  stmatrix.sync.aligned.m8n8.NUM.shared.b16 [%r8], REGS;
  setp.lt.u32 %p1, %r1, ROWS;
  @%p1 ld.shared.v4.b32 {%r2, %r3, %r4, %r5}, [%r8];
  ld.param.u64 %rd4, [out];
  add.s64 %rd5, %rd4, %rd2;
  @%p1 st.global.v4.b32 [%rd5], {%r2, %r3, %r4, %r5};
  ret;
}
"""


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_stores_the_fragments_of_8x8_matrices(count, trans):
    # The epilogue of Triton's wgmma kernels: lane 8i + r gives the address of row r of matrix i (here
    # 16 (5 lane % 32), and reads it back), and register i of lane t holds (row t / 4, columns 2 (t % 4) and
    # + 1) of matrix i, of its transpose with .trans.
    registers = RNG.integers(0, 2 ** 32, (32, 4), dtype=np.uint32)
    ptx = STMATRIX.replace("NUM", f"x{count}{'.trans' if trans else ''}").replace("ROWS", str(8 * count)).replace(
        "REGS", "{" + ", ".join(f"%r{2 + i}" for i in range(count)) + "}")
    gpu = emulator.Device("sm_90")
    out = gpu.alloc(32 * 16)
    gpu.load_ptx(ptx).launch("store", (1, 1, 1), (32, 1, 1), [gpu.upload(registers), out])
    got = gpu.download(out, np.uint16, (32, 8))
    halves = registers.view(np.uint16).reshape(32, 4, 2)  # lane, register, low/high
    for lane in range(8 * count):
        i, r = divmod(lane, 8)
        want = [halves[4 * c + r // 2, i, r % 2] if trans else halves[4 * r + c // 2, i, c % 2] for c in range(8)]
        np.testing.assert_array_equal(got[lane], want)
