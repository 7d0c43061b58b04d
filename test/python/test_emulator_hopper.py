"""The PTX emulator's Hopper asynchronous proxy on hand-written PTX:
mbarriers (phases, arrivals, tx-counts), cp.async.bulk both ways,
elect.sync, setmaxnreg and the fences, against numpy and the PTX ISA, and
the checks on kernels that break its rules.
"""

import numpy as np
import pytest

import tessel
from tessel.runtime import emulator

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
N = 128  # threads, one f32 each: 512 bytes a tile

# Thread 0 sets up an mbarrier and a 512-byte bulk copy; every thread waits
# for phase 0 and writes twice its element.
LOAD = """
.visible .entry load(.param .u64 src, .param .u64 out)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .f32 %f<3>; .reg .b64 %rd<6>;
  .shared .align 8 .b8 bar[8];
  .shared .align 16 .b8 tile[512];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r2, bar;
  mov.u32 %r3, tile;
  INIT
  fence.mbarrier_init.release.cluster;
  SYNC
  @%p1 EXPECT
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3+DST], [%rd1+SRC], SIZE, [%r2];
WAIT:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r2], PARITY;
  @!%p2 bra WAIT;
  shl.b32 %r4, %r1, 2;
  add.u32 %r5, %r3, %r4;
  ld.shared.f32 %f1, [%r5];
  add.f32 %f2, %f1, %f1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f2;
  ret;
}
"""

_LOAD = {"INIT": "@%p1 mbarrier.init.shared::cta.b64 [%r2], 1;", "SYNC": "bar.sync 0;",
         "EXPECT": "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%r2], 512;",
         "DST": "0", "SRC": "0", "SIZE": "512", "PARITY": "0"}


def _load(max_steps: int = 100_000, **edits: str) -> np.ndarray:
    body = LOAD
    for key, value in {**_LOAD, **edits}.items():
        body = body.replace(key, value)
    gpu = emulator.Device("sm_90", max_steps=max_steps)
    x = np.linspace(-1, 1, N, dtype=np.float32)
    out = gpu.alloc(x.nbytes)
    gpu.load_ptx(HEADER + body).launch("load", (2, 1, 1), (N, 1, 1), [gpu.upload(x), out])
    return gpu.download(out, np.float32, (N,))


def test_a_bulk_copy_lands_for_the_threads_that_waited_for_its_mbarrier_phase():
    np.testing.assert_array_equal(_load(), 2 * np.linspace(-1, 1, N, dtype=np.float32))
    # The .shared spelling, and try_wait with a suspend-time hint.
    np.testing.assert_array_equal(
        _load(PARITY="0, 1000000", EXPECT="mbarrier.arrive.expect_tx.shared.b64 _, [%r2], 512;"),
        2 * np.linspace(-1, 1, N, dtype=np.float32))
    # Two expect_tx of half the bytes each and an arrival with a count, before the copy: the phase
    # completes at the copy's complete_tx.
    two = "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r2], 256;\n  @%p1 mbarrier.expect_tx.shared::cta.b64 " \
          "[%r2], 256;\n  @%p1 mbarrier.arrive.shared::cta.b64 %rd5, [%r2], 2;"
    np.testing.assert_array_equal(_load(INIT="@%p1 mbarrier.init.shared::cta.b64 [%r2], 2;", EXPECT=two),
                                  2 * np.linspace(-1, 1, N, dtype=np.float32))


@pytest.mark.parametrize("edit,message", [
    # Without expect_tx the arrival completes phase 0 at once; the copy signals phase 1.
    ({"EXPECT": "mbarrier.arrive.release.cta.shared::cta.b64 _, [%r2];"},
     r"thread \(0, 0, 0\).*shared load reads a bulk-copy destination before its mbarrier phase completed "
     r"\(phase 1 of the mbarrier at shared offset 0 has not completed\)"),
    # Phase 1 never completes: every thread waits in try_wait, a deadlock rather than an endless loop.
    ({"PARITY": "1"}, r"block \(0, 0, 0\).*every thread waits on an mbarrier phase nothing can complete \(this one "
                      r"for phase 1 of the mbarrier at shared offset 0, with 1 arrivals"),
    ({"INIT": ""}, r"on shared offset 0, where no mbarrier is initialised \(mbarrier.init\)"),
    ({"SYNC": ""}, r"thread \(1, 0, 0\).*uses an mbarrier that thread \(0, 0, 0\) initialised, with no bar.sync "
                   "between"),
    ({"SIZE": "500"}, "cp.async.bulk of 500 bytes: the size must be a multiple of 16"),
    ({"SRC": "8"}, r"cp.async.bulk source at global address 0x[0-9a-f]+ is not 16-byte aligned"),
    ({"DST": "8"}, "cp.async.bulk destination at shared address 0x18 is not 16-byte aligned"),
    ({"INIT": "@%p1 mbarrier.init.shared::cta.b64 [%r2], 1;\n  @%p1 ld.shared.u32 %r6, [%r2];"},
     "shared load reads the bytes of an initialised mbarrier"),
    ({"INIT": "mbarrier.init.shared::cta.b64 [%r2], 1;"}, "mbarrier.init of an mbarrier that is already initialised"),
    ({"EXPECT": "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 2000000;"}, "outside the ISA's range"),
    ({"EXPECT": "mbarrier.arrive.noComplete.shared.b64 %rd5, [%r2], 1;"}, "completes the mbarrier's phase, which "
                                                                          ".noComplete forbids"),
    ({"EXPECT": "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 512;\n  @%p1 mbarrier.arrive.shared::cta.b64 _, "
                "[%r2], 2;"}, "arrive.shared::cta.b64 of 2 on an mbarrier with 0 arrivals pending in its phase"),
])
def test_broken_mbarrier_protocols_are_errors(edit, message):
    with pytest.raises(tessel.RuntimeError, match=message):
        _load(max_steps=3000, **edit)


def test_reading_the_destination_without_waiting_is_an_error():
    body = LOAD.replace("  @!%p2 bra WAIT;\n", "")
    for key, value in {**_LOAD, "PARITY": "0"}.items():
        body = body.replace(key, value)
    body = body.replace("mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r2], 0;", "")
    gpu = emulator.Device("sm_90")
    with pytest.raises(tessel.RuntimeError, match=r"bulk-copy destination before its mbarrier phase completed "
                                                  r"\(phase 0 of the mbarrier at shared offset 0 has completed, "
                                                  "but the thread has not seen it complete"):
        gpu.load_ptx(HEADER + body).launch("load", (1, 1, 1), (N, 1, 1), [gpu.upload(np.zeros(N, np.float32)),
                                                                          gpu.alloc(4 * N)])


# Two stages, six tiles: tile i in stage i % 2, whose mbarrier is in phase i // 2 (parity 0, 0, 1, 1, 0, 0).
RING = """
.visible .entry ring(.param .u64 src, .param .u64 out)
{
  .reg .pred %p<5>; .reg .b32 %r<16>; .reg .f32 %f<3>; .reg .b64 %rd<10>;
  .shared .align 8 .b8 bars[16];
  .shared .align 16 .b8 tiles[1024];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bars;
  mov.u32 %r3, tiles;
  elect.sync %r15|%p1, 0xffffffff;
  setp.lt.u32 %p4, %r1, 32;
  and.pred %p1, %p1, %p4;
  @%p1 mbarrier.init.shared.b64 [%r2], 1;
  @%p1 mbarrier.init.shared.b64 [%r2+8], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared.b64 _, [%r2], 512;
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 512, [%r2];
  @%p1 mbarrier.arrive.expect_tx.shared.b64 _, [%r2+8], 512;
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3+512], [%rd1+512], 512, [%r2+8];
  mov.u32 %r4, 0;
LOOP:
  and.b32 %r5, %r4, 1;
  shr.u32 %r6, %r4, 1;
  and.b32 %r6, %r6, 1;
  shl.b32 %r7, %r5, 3;
  add.u32 %r7, %r2, %r7;
  shl.b32 %r8, %r5, 9;
  add.u32 %r8, %r3, %r8;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r7], %r6;
  @!%p2 bra WAIT;
  shl.b32 %r9, %r1, 2;
  add.u32 %r10, %r8, %r9;
  ld.shared.f32 %f1, [%r10];
  add.f32 %f2, %f1, %f1;
  mad.lo.u32 %r11, %r4, 128, %r1;
  mul.wide.u32 %rd3, %r11, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f2;
  REUSE
  add.u32 %r12, %r4, 2;
  setp.lt.u32 %p3, %r12, 6;
  and.pred %p3, %p3, %p1;
  mul.wide.u32 %rd5, %r12, 512;
  add.s64 %rd6, %rd1, %rd5;
  @%p3 mbarrier.arrive.expect_tx.shared.b64 _, [%r7], 512;
  @%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r8], [%rd6], 512, [%r7];
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, 6;
  @%p3 bra LOOP;
  @%p1 mbarrier.inval.shared.b64 [%r2];
  @%p1 mbarrier.inval.shared.b64 [%r2+8];
  ret;
}
"""


def _ring(reuse: str = "bar.sync 0;") -> np.ndarray:
    gpu = emulator.Device("sm_90", max_steps=100_000)
    x = np.arange(6 * N, dtype=np.float32)
    out = gpu.alloc(x.nbytes)
    gpu.load_ptx(HEADER + RING.replace("REUSE", reuse)).launch("ring", (1, 1, 1), (N, 1, 1), [gpu.upload(x), out])
    return gpu.download(out, np.float32, (6 * N,))


def test_a_two_stage_ring_reuses_its_mbarriers_over_flipping_parities():
    np.testing.assert_array_equal(_ring(), 2 * np.arange(6 * N, dtype=np.float32))
    # Refilling a stage that other threads still read, with no barrier between, races.
    with pytest.raises(tessel.RuntimeError, match="race: cp.async.bulk overwrites shared memory that"):
        _ring("")


# Warp specialization: thread 32 (warp 1) produces six 128-byte tiles into a two-stage ring, warp 0
# consumes them. full[s] (count 1) carries the producer's expect_tx and the copy's bytes; empty[s]
# (count 32) the consumers' arrivals after their reads, which the producer waits for before refilling
# (parity flipped: a fresh barrier's preceding phase counts as complete, so round 0 goes at once).
# The consumer's wait loop is at a lower counter than the producer, and no bar.sync is in the ring.
WARP_SPECIALIZED = """
.visible .entry ws(.param .u64 src, .param .u64 out)
{
  .reg .pred %p<6>; .reg .b32 %r<16>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
  .shared .align 8 .b8 bars[32];
  .shared .align 16 .b8 tiles[256];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bars;
  mov.u32 %r3, tiles;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r2+8], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r2+16], 32;
  @%p1 mbarrier.init.shared::cta.b64 [%r2+24], 32;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  shr.u32 %r4, %r1, 5;
  setp.ne.u32 %p2, %r4, 0;
  @%p2 bra PRODUCER;
  mov.u32 %r5, 0;
CONSUME:
  and.b32 %r6, %r5, 1;
  shr.u32 %r7, %r5, 1;
  and.b32 %r7, %r7, 1;
  shl.b32 %r8, %r6, 3;
  add.u32 %r9, %r2, %r8;
  shl.b32 %r10, %r6, 7;
  add.u32 %r10, %r3, %r10;
FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r9], %r7;
  @!%p3 bra FULL;
  EARLY
  shl.b32 %r11, %r1, 2;
  add.u32 %r11, %r10, %r11;
  ld.shared.f32 %f1, [%r11];
  ld.shared.f32 %f2, [%r10];
  add.f32 %f3, %f1, %f2;
  LATE
  mad.lo.u32 %r12, %r5, 32, %r1;
  mul.wide.u32 %rd3, %r12, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f3;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p4, %r5, 6;
  @%p4 bra CONSUME;
  ret;
PRODUCER:
  setp.ne.u32 %p5, %r1, 32;
  @%p5 bra DONE;
  mov.u32 %r5, 0;
PRODUCE:
  and.b32 %r6, %r5, 1;
  shr.u32 %r7, %r5, 1;
  and.b32 %r7, %r7, 1;
  xor.b32 %r13, %r7, 1;
  shl.b32 %r8, %r6, 3;
  add.u32 %r9, %r2, %r8;
  shl.b32 %r10, %r6, 7;
  add.u32 %r10, %r3, %r10;
EMPTY:
  WAIT_EMPTY
  mul.wide.u32 %rd5, %r5, 128;
  add.s64 %rd6, %rd1, %rd5;
  EXPECT
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r10], [%rd6], 128, [%r9];
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p4, %r5, 6;
  @%p4 bra PRODUCE;
DONE:
  ret;
}
"""

_WARP_SPECIALIZED = {"EARLY": "", "LATE": "mbarrier.arrive.release.cta.shared::cta.b64 _, [%r9+16];",
                     "WAIT_EMPTY": "mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r9+16], %r13;\n  @!%p3 bra EMPTY;",
                     "EXPECT": "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%r9], 128;"}


def _warp_specialized(**edits: str) -> np.ndarray:
    body = WARP_SPECIALIZED
    for key, value in {**_WARP_SPECIALIZED, **edits}.items():
        body = body.replace(key, value)
    gpu = emulator.Device("sm_90", max_steps=20_000)
    x = np.arange(6 * 32, dtype=np.float32)
    out = gpu.alloc(x.nbytes)
    gpu.load_ptx(HEADER + body).launch("ws", (2, 1, 1), (64, 1, 1), [gpu.upload(x), out])
    return gpu.download(out, np.float32, (6, 32))


def test_a_warp_specialized_ring_hands_stages_back_through_mbarriers_alone():
    x = np.arange(6 * 32, dtype=np.float32).reshape(6, 32)
    np.testing.assert_array_equal(_warp_specialized(), x + x[:, :1])
    # test_wait in place of the producer's try_wait: a failed test waits too, while others can run.
    np.testing.assert_array_equal(_warp_specialized(WAIT_EMPTY="mbarrier.test_wait.parity.shared::cta.b64 %p3, "
                                                               "[%r9+16], %r13;\n  @!%p3 bra EMPTY;"), x + x[:, :1])


@pytest.mark.parametrize("edit,message", [
    # The producer forgets its arrival: full[0]'s phase 0 waits for it, the producer for empty[0].
    ({"EXPECT": ""}, r"kernel ws, block \(0, 0, 0\), thread \(0, 0, 0\).*mbarrier.try_wait.*every thread waits on an "
                     r"mbarrier phase nothing can complete \(this one for phase 0 of the mbarrier at shared offset 0, "
                     r"with 1 arrivals and -128 transaction bytes pending\)"),
    # The consumers hand the stage back before reading it.
    ({"EARLY": _WARP_SPECIALIZED["LATE"], "LATE": ""},
     "race: cp.async.bulk overwrites shared memory that several threads read"),
    # A relaxed arrival releases nothing: the refill is not ordered after the reads.
    ({"LATE": "mbarrier.arrive.relaxed.cta.shared::cta.b64 _, [%r9+16];"},
     "race: cp.async.bulk overwrites shared memory that several threads read"),
    # With nothing but a test_wait loop left, the test returns false for ever: an endless loop.
    ({"EXPECT": "", "WAIT_EMPTY": "mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r9+16], %r13;\n  @!%p3 bra EMPTY;"},
     r"thread \(32, 0, 0\).*has not finished after 20000 instruction steps"),
])
def test_broken_warp_specialized_rings_are_errors(edit, message):
    with pytest.raises(tessel.RuntimeError, match=message):
        _warp_specialized(**edit)


def test_arrivals_with_a_state_and_test_wait_work_on_sm_80_but_try_wait_needs_sm_90():
    body = """
.visible .entry arrive(.param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<6>; .reg .b64 %rd<6>;
  .shared .align 8 .b8 bar[8];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 64;
  bar.sync 0;
  mbarrier.arrive.shared.b64 %rd2, [bar];
WAIT:
  mbarrier.test_wait.shared.b64 %p2, [bar], %rd2;
  @!%p2 bra WAIT;
  mbarrier.arrive.shared.b64 %rd3, [bar];
  sub.s64 %rd4, %rd3, %rd2;
  mul.wide.u32 %rd5, %r1, 8;
  add.s64 %rd5, %rd1, %rd5;
  st.global.u64 [%rd5], %rd4;
  ret;
}
"""
    gpu = emulator.Device("sm_80")
    out = gpu.alloc(8 * 64)
    gpu.load_ptx(HEADER.replace("sm_90a", "sm_80") + body).launch("arrive", (1, 1, 1), (64, 1, 1), [out])
    # The second arrivals are in the next phase (the state is opaque; its phases differ by one here).
    np.testing.assert_array_equal(gpu.download(out, np.uint64, (64,)), np.ones(64, np.uint64))
    gpu90 = emulator.Device("sm_90")
    out = gpu90.alloc(8 * 64)
    gpu90.load_ptx(HEADER + body.replace("test_wait", "try_wait")).launch("arrive", (1, 1, 1), (64, 1, 1), [out])
    np.testing.assert_array_equal(gpu90.download(out, np.uint64, (64,)), np.ones(64, np.uint64))
    with pytest.raises(tessel.RuntimeError, match=r"mbarrier.try_wait.shared.b64: needs sm_90 or newer; the PTX "
                                                  "targets sm_80"):
        gpu.load_ptx(HEADER.replace("sm_90a", "sm_80") + body.replace("test_wait", "try_wait"))
    with pytest.raises(tessel.RuntimeError, match="cp.async.bulk.commit_group: needs sm_90 or newer"):
        gpu.load_ptx(HEADER.replace("sm_90a", "sm_80") + body.replace("bar.sync 0;", "cp.async.bulk.commit_group;"))


# Every thread writes its element to shared memory; thread 0 stores the tile with one bulk copy.
STORE = """
.visible .entry store(.param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<8>; .reg .f32 %f<3>; .reg .b64 %rd<4>;
  .shared .align 16 .b8 tile[512];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r3, tile;
  shl.b32 %r4, %r1, 2;
  add.u32 %r5, %r3, %r4;
  cvt.rn.f32.u32 %f1, %r1;
  st.shared.f32 [%r5], %f1;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 512;
  @%p1 cp.async.bulk.commit_group;
  BEFORE
  @%p1 cp.async.bulk.wait_group.read 0;
  AFTER
  ret;
}
"""


def _store(before: str = "", after: str = "", wait: bool = True, body: str = STORE) -> np.ndarray:
    body = body.replace("BEFORE", before).replace("AFTER", after)
    if not wait:
        body = body.replace("@%p1 cp.async.bulk.wait_group.read 0;", "")
    gpu = emulator.Device("sm_90")
    out = gpu.alloc(4 * N)
    gpu.load_ptx(HEADER + body).launch("store", (1, 1, 1), (N, 1, 1), [out])
    return gpu.download(out, np.float32, (N,))


def test_a_bulk_store_holds_its_source_until_wait_group_read():
    np.testing.assert_array_equal(_store(), np.arange(N, dtype=np.float32))
    # After the wait the source is free again; reading it while the store is in flight is no hazard.
    np.testing.assert_array_equal(_store(before="@%p1 ld.shared.f32 %f2, [%r3];",
                                         after="@%p1 st.shared.f32 [%r3], %f1;"), np.arange(N, dtype=np.float32))
    with pytest.raises(tessel.RuntimeError, match=r"thread \(0, 0, 0\).*shared store overwrites the source of a "
                                                  r"cp.async.bulk store before its cp.async.bulk.wait_group.read"):
        _store(before="@%p1 st.shared.f32 [%r3], %f1;")
    with pytest.raises(tessel.RuntimeError, match="exits with cp.async.bulk stores in flight that no "
                                                  "cp.async.bulk.wait_group waited for"):
        _store(wait=False)
    # wait_group 1 leaves the newest group in flight.
    with pytest.raises(tessel.RuntimeError, match="exits with cp.async.bulk stores in flight"):
        _store(before="@%p1 cp.async.bulk.wait_group 1;", wait=False)
    with pytest.raises(tessel.RuntimeError, match="cp.async.bulk source at shared address 0x4 is not 16-byte aligned"):
        _store(before="", body=STORE.replace("[%rd1], [%r3], 512", "[%rd1], [%r3+4], 512"))



def test_a_bulk_store_of_generic_writes_needs_a_proxy_fence_between():
    # Without the fence, or with the source written again after it (thread 0's store after the wait
    # overwrites its element; a second bulk store of it reads that unfenced write).
    with pytest.raises(tessel.RuntimeError, match=r"\(cp.async.bulk.global.shared::cta.bulk_group\): cp.async.bulk "
                                                  r"source reads shared memory at shared address 0x0 that thread "
                                                  r"\(0, 0, 0\) wrote at line \d+ \(st.shared.f32\) through the "
                                                  r"generic proxy, with no fence.proxy.async between"):
        _store(body=STORE.replace("  fence.proxy.async.shared::cta;\n", ""))
    again = "@%p1 st.shared.f32 [%r3], %f1;\n  @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 512;\n" \
        "  @%p1 cp.async.bulk.commit_group;\n  @%p1 cp.async.bulk.wait_group.read 0;"
    with pytest.raises(tessel.RuntimeError, match=r"line (\d+) \(cp.async.bulk.global.*address 0x0 that thread "
                                                  r"\(0, 0, 0\) wrote at line \d+ \(st.shared.f32\)"):
        _store(after=again)
    np.testing.assert_array_equal(_store(after=again.replace("[%r3], %f1;", "[%r3], %f1;\n  @%p1 fence.proxy.async;")),
                                  np.arange(N, dtype=np.float32))


ELECT = """
.visible .entry elect(.param .u64 out)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r6, 0;
  mov.u32 %r7, 99;
  and.b32 %r2, %r1, 4;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra SKIP;
  elect.sync %r7|%p2, MASK;
  selp.u32 %r6, 1, 0, %p2;
SKIP:
  elect.sync _|%p3, 0xffffffff;
  selp.u32 %r3, 2, 0, %p3;
  add.u32 %r6, %r6, %r3;
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r6, %r7};
  ret;
}
"""


def test_elect_sync_elects_the_lowest_lane_of_the_mask():
    gpu = emulator.Device("sm_90")
    out = gpu.alloc(8 * 48)
    gpu.load_ptx(HEADER + ELECT.replace("MASK", "0xF0F0F0F0")).launch("elect", (1, 1, 1), (48, 1, 1), [out])
    got = gpu.download(out, np.uint32, (48, 2))
    lane = np.arange(48) % 32
    inside = (lane & 4) != 0
    np.testing.assert_array_equal(got[:, 0], np.where(lane == 4, 1, 0) + np.where(lane == 0, 2, 0))
    np.testing.assert_array_equal(got[:, 1], np.where(inside, 4, 99))
    with pytest.raises(tessel.RuntimeError, match=r"elect.sync: lane 0 of the membermask is not executing it"):
        gpu.load_ptx(HEADER + ELECT.replace("MASK", "0xF0F0F0F1")).launch("elect", (1, 1, 1), (48, 1, 1), [out])
    with pytest.raises(tessel.RuntimeError, match="elect.sync: needs sm_90 or newer; the PTX targets sm_80"):
        emulator.Device("sm_80").load_ptx(HEADER.replace("sm_90a", "sm_80") + ELECT.replace("MASK", "-1"))
    with pytest.raises(tessel.RuntimeError, match=r"expects d\|p"):
        gpu.load_ptx(HEADER + ELECT.replace("%r7|%p2, MASK", "%r7, 0xffffffff"))


@pytest.mark.parametrize("count,message", [(240, None), (24, None), (20, "multiple of 8 in 24..256"),
                                           (100, "multiple of 8 in 24..256"), (264, "multiple of 8 in 24..256")])
def test_setmaxnreg_takes_a_multiple_of_8_in_24_to_256(count, message):
    body = f"""
.visible .entry regs()
{{
  setmaxnreg.dec.sync.aligned.u32 {count};
  setmaxnreg.inc.sync.aligned.u32 {count};
  ret;
}}
"""
    gpu = emulator.Device("sm_90")
    if message is None:
        gpu.load_ptx(HEADER + body).launch("regs", (1, 1, 1), (128, 1, 1), [])
        with pytest.raises(tessel.RuntimeError, match="needs sm_90a or newer; the PTX targets sm_90"):
            gpu.load_ptx(HEADER.replace("sm_90a", "sm_90") + body)
    else:
        with pytest.raises(tessel.RuntimeError, match=message):
            gpu.load_ptx(HEADER + body)


def test_fences_of_the_async_proxy_decode():
    body = """
.visible .entry fences()
{
  fence.proxy.async;
  fence.proxy.async.global;
  fence.proxy.async.shared::cta;
  fence.proxy.async.shared::cluster;
  fence.mbarrier_init.release.cluster;
  ret;
}
"""
    emulator.Device("sm_90").load_ptx(HEADER + body).launch("fences", (1, 1, 1), (32, 1, 1), [])
    with pytest.raises(tessel.RuntimeError, match="modifier .cta is not supported"):
        emulator.Device("sm_90").load_ptx(HEADER + body.replace("fence.proxy.async;", "fence.proxy.async.cta;"))
    with pytest.raises(tessel.RuntimeError, match="fence.proxy.async: needs sm_90"):
        emulator.Device("sm_80").load_ptx(HEADER.replace("sm_90a", "sm_80") + body)
