"""The PTX emulator's TMA (cp.async.bulk.tensor, tile mode) on hand-written
PTX: boxes of the emulator's tensor maps loaded into shared memory in each
swizzle layout (checked byte by byte against numpy), ragged edges filled
and clipped, a ring of mbarrier stages and the tensor store, maps a kernel
builds field by field (tensormap.replace, tensormap.cp_fenceproxy), the
checks of encode_tensor_map and of kernels that break the rules.
"""

import numpy as np
import pytest

import tessel
from tessel.runtime import emulator
from tessel.runtime.emulator.tensormap import decode_tensor_map, encode_tensor_map, swizzled

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
N = 128  # threads; each copies 16 bytes of the 2048-byte tile out
TILE = 2048

# Thread 0 loads the box at (c0, c1) through the tensor map; every thread
# waits for phase 0 and copies 16 bytes of the shared tile, as laid out, to out.
LOAD = """
.visible .entry load(.param .align 64 .b8 tmap[128], .param .s32 c0, .param .s32 c1, .param .u64 out)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  .shared .align 8 .b8 bar[8];
  .shared .align 1024 .b8 tile[2048];
  ld.param.u64 %rd1, [out];
  ld.param.s32 %r5, [c0];
  ld.param.s32 %r6, [c1];
  MAP
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r2, bar;
  mov.u32 %r3, tile;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p1 EXPECT
  @%p1 cp.async.bulk.tensor.2d.SPACE.global.tile.mbarrier::complete_tx::bytes [%r3], [OPERAND, {%r5, %r6}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], PARITY;
  @!%p2 bra WAIT;
  shl.b32 %r4, %r1, 4;
  add.u32 %r7, %r3, %r4;
  ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r7];
  cvt.u64.u32 %rd3, %r4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.v4.u32 [%rd4], {%r8, %r9, %r10, %r11};
  ret;
}
"""

_LOAD = {"MAP": "", "OPERAND": "tmap", "SPACE": "shared::cluster", "PARITY": "0",
         "EXPECT": "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 2048;"}
SHAPES = {"none": (32, 16), "128B": (32, 16), "64B": (16, 32), "32B": (8, 64)}  # f32 boxes of 2048 bytes


def _tensor(rows=40, cols=72):
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 0.5


def _load(x, coords, swizzle="none", box=None, fill="zero", max_steps=100_000, **edits):
    body = LOAD
    for key, value in {**_LOAD, **edits}.items():
        body = body.replace(key, value)
    gpu = emulator.Device("sm_90", max_steps=max_steps)
    src, out = gpu.upload(x), gpu.alloc(TILE)
    tmap = encode_tensor_map(src.pointer, np.float32, x.shape[::-1], [x.strides[0]], box or SHAPES[swizzle],
                             swizzle=swizzle, fill=fill)
    gpu.load_ptx(HEADER + body).launch("load", (1, 1, 1), (N, 1, 1), [tmap, *coords, out])
    return gpu.download(out, np.uint8, (TILE,))


def _expected(x, coords, box, swizzle, fill=0.0):
    """The shared tile numpy expects: the box (zero or NaN outside x), its bytes swizzled."""
    c0, c1 = coords
    padded = np.full((x.shape[0] + 2 * 256, x.shape[1] + 2 * 256), fill, np.float32)
    padded[256:256 + x.shape[0], 256:256 + x.shape[1]] = x
    linear = padded[256 + c1:256 + c1 + box[1], 256 + c0:256 + c0 + box[0]].tobytes()
    span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    tile = np.empty(TILE, np.uint8)
    tile[swizzled(np.arange(TILE), span)] = np.frombuffer(linear, np.uint8)
    return tile


@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_a_tile_lands_in_the_swizzle_layout_of_its_tensor_map(swizzle):
    x = _tensor()
    np.testing.assert_array_equal(_load(x, (8, 4), swizzle), _expected(x, (8, 4), SHAPES[swizzle], swizzle))


def test_the_128B_swizzle_xors_16_byte_chunks_with_the_row():
    # Row r's chunk j lands at chunk j ^ (r % 8): CUTLASS's Swizzle<3,4,3>.
    tile = _load(_tensor(), (0, 0), "128B").view(np.float32).reshape(16, 32)
    for r in (0, 1, 5, 9):
        chunks = tile[r].reshape(8, 4)
        for j in range(8):
            np.testing.assert_array_equal(chunks[j ^ (r % 8)], _tensor()[r, 4 * j:4 * j + 4])


def test_a_swizzled_read_with_the_wrong_mode_mismatches():
    x = _tensor()
    assert not np.array_equal(_load(x, (0, 0), "64B", box=(16, 32)), _expected(x, (0, 0), (16, 32), "128B"))
    assert not np.array_equal(_load(x, (0, 0), "none"), _expected(x, (0, 0), (32, 16), "128B"))


@pytest.mark.parametrize("coords", [(56, 30), (-4, -3), (64, -10)])
def test_a_box_partly_outside_the_tensor_is_filled(coords):
    x = _tensor()
    np.testing.assert_array_equal(_load(x, coords, "128B"), _expected(x, coords, (32, 16), "128B"))
    nan = _load(x, coords, "none", fill="nan").view(np.float32)
    np.testing.assert_array_equal(nan, _expected(x, coords, (32, 16), "none", np.nan).view(np.float32))
    assert np.isnan(nan).any()


@pytest.mark.parametrize("edits", [
    {"MAP": "mov.b64 %rd5, tmap;\n  cvta.param.u64 %rd6, %rd5;", "OPERAND": "%rd6"},  # Triton's generic address
    {"SPACE": "shared::cta"},
    {"OPERAND": "tmap+0"},
])
def test_the_tensor_map_operand_and_destination_spellings(edits):
    x = _tensor()
    np.testing.assert_array_equal(_load(x, (8, 4), "128B", **edits), _expected(x, (8, 4), (32, 16), "128B"))


def test_a_tensor_map_in_global_memory():
    body = LOAD.replace(".param .align 64 .b8 tmap[128]", ".param .u64 tmap_ptr").replace(
        "MAP", "ld.param.u64 %rd5, [tmap_ptr];")
    for key, value in {**_LOAD, "MAP": "", "OPERAND": "%rd5"}.items():
        body = body.replace(key, value)
    gpu = emulator.Device("sm_90")
    x = _tensor()
    src, out = gpu.upload(x), gpu.alloc(TILE)
    tmap = gpu.upload(np.frombuffer(encode_tensor_map(src.pointer, np.float32, x.shape[::-1], [x.strides[0]],
                                                      (32, 16)), np.uint8))
    gpu.load_ptx(HEADER + body).launch("load", (1, 1, 1), (N, 1, 1), [tmap, 8, 4, out])
    np.testing.assert_array_equal(gpu.download(out, np.uint8, (TILE,)), _expected(x, (8, 4), (32, 16), "none"))


@pytest.mark.parametrize("edit,message", [
    # Without expect_tx the arrival completes phase 0 at once; the copy signals phase 1.
    ({"EXPECT": "mbarrier.arrive.shared::cta.b64 _, [%r2];"},
     "shared load reads a bulk-copy destination before its mbarrier phase completed"),
    ({"PARITY": "1"}, "every thread waits on an mbarrier phase nothing can complete"),
    ({"OPERAND": "tmap+64"}, "reads past the kernel's parameters"),
    ({"OPERAND": "tmap+16"}, "not 64-byte aligned"),
    ({"EXPECT": "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 2048;\n  add.u32 %r3, %r3, 16;"},
     "cp.async.bulk.tensor destination at shared address 0x410 is not 128-byte aligned"),
])
def test_broken_tensor_copies_are_errors(edit, message):
    with pytest.raises(tessel.RuntimeError, match=message):
        _load(_tensor(), (0, 0), "128B", max_steps=3000, **edit)


@pytest.mark.parametrize("text,message", [
    ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [tmap, {%r5, %r6}], "
     "[%r2];", "a .3d copy takes 3 coordinates, got 2"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r3], [tmap, {%r5, %r6}], "
     "[%r2];", "only the .tile mode"),
    ("cp.async.bulk.tensor.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [tmap, {%r5, %r6}], [%r2];",
     r"the tensor's dimension, \.1d to \.5d"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [tmap], [%r2];",
     r"expects the tensor operand \[tensorMap, \{coordinates\}\]"),
])
def test_malformed_tensor_copies_are_refused(text, message):
    body = LOAD.replace("@%p1 cp.async.bulk.tensor.2d.SPACE.global.tile.mbarrier::complete_tx::bytes [%r3], "
                        "[OPERAND, {%r5, %r6}], [%r2];", text)
    for key, value in _LOAD.items():
        body = body.replace(key, value)
    with pytest.raises(tessel.RuntimeError, match=message):
        emulator.Device("sm_90").load_ptx(HEADER + body).launch(
            "load", (1, 1, 1), (N, 1, 1), [bytes(128), 0, 0, emulator.Device("sm_90").alloc(TILE)])


# Every thread writes 16 bytes of the shared tile; thread 0 stores the box
# at (c0, c1) through the tensor map once the writes are visible to the
# async proxy, and waits for the store to finish reading shared memory.
STORE = """
.visible .entry store(.param .align 64 .b8 tmap[128], .param .s32 c0, .param .s32 c1, .param .u64 in)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  .shared .align 1024 .b8 tile[2048];
  ld.param.u64 %rd1, [in];
  ld.param.s32 %r5, [c0];
  ld.param.s32 %r6, [c1];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r3, tile;
  shl.b32 %r4, %r1, 4;
  cvt.u64.u32 %rd3, %r4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd4];
  add.u32 %r7, %r3, %r4;
  st.shared.v4.u32 [%r7], {%r8, %r9, %r10, %r11};
  FENCE
  bar.sync 0;
  @%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap, {%r5, %r6}], [%r3];
  @%p1 cp.async.bulk.commit_group;
  @%p1 cp.async.bulk.wait_group.read 0;
  ret;
}
"""


def _store(tile: np.ndarray, coords, swizzle: str, fence: str = "fence.proxy.async.shared::cta;") -> np.ndarray:
    gpu = emulator.Device("sm_90")
    x = np.full((40, 72), -1.0, np.float32)
    dst, src = gpu.upload(x), gpu.upload(tile)
    tmap = encode_tensor_map(dst.pointer, np.float32, x.shape[::-1], [x.strides[0]], SHAPES[swizzle],
                             swizzle=swizzle)
    gpu.load_ptx(HEADER + STORE.replace("FENCE", fence)).launch("store", (1, 1, 1), (N, 1, 1),
                                                                [tmap, *coords, src])
    return gpu.download(dst, np.float32, x.shape)


@pytest.mark.parametrize("swizzle,coords", [("none", (8, 4)), ("128B", (8, 4)), ("64B", (60, 30)),
                                            ("32B", (-4, -2))])
def test_a_tensor_store_writes_the_unswizzled_box_clipped_to_the_tensor(swizzle, coords):
    box = np.arange(TILE // 4, dtype=np.float32).reshape(SHAPES[swizzle][::-1]) + 0.25
    tile = np.empty(TILE, np.uint8)
    tile[swizzled(np.arange(TILE), {"none": 0, "32B": 32, "64B": 64, "128B": 128}[swizzle])] = \
        np.frombuffer(box.tobytes(), np.uint8)
    expected = np.full((40 + 512, 72 + 512), -1.0, np.float32)
    c0, c1 = coords
    expected[256 + c1:256 + c1 + box.shape[0], 256 + c0:256 + c0 + box.shape[1]] = box
    np.testing.assert_array_equal(_store(tile, coords, swizzle), expected[256:296, 256:328])


@pytest.mark.parametrize("fence,thread", [
    ("", 0),  # none: the tensor store (the async proxy) may read the tile before the threads' stores reach it
    ("fence.proxy.async.global;", 0),  # of global memory: it orders nothing in shared memory
    # The writers fence after the barrier, and nothing orders their fences before thread 0's store.
    ("bar.sync 0;\n  @!%p1 fence.proxy.async.shared::cta;", 0),
    ("@%p1 fence.proxy.async.shared::cta;", 1),  # thread 0 fences its own write only
])
def test_a_tensor_store_of_generic_writes_needs_a_proxy_fence_between(fence, thread):
    with pytest.raises(tessel.RuntimeError, match=r"PTX line \d+ \(cp.async.bulk.tensor.2d.global.shared::cta.tile."
                                                   r"bulk_group\): cp.async.bulk source reads shared memory at shared "
                                                   rf"address {16 * thread:#x} that thread \({thread}, 0, 0\) wrote at "
                                                   r"line \d+ \(st.shared.v4.u32\) through the generic proxy, with no "
                                                   r"fence.proxy.async between"):
        _store(np.arange(TILE // 4, dtype=np.float32).view(np.uint8), (0, 0), "none", fence=fence)


def test_a_proxy_fence_by_the_issuing_thread_after_the_barrier_orders_every_write_before_it():
    # The fence is on the causality path from each thread's write (then bar.sync) to thread 0's tensor store.
    tile = np.arange(TILE // 4, dtype=np.float32)
    got = _store(tile.view(np.uint8), (0, 0), "none",
                 fence="bar.sync 0;\n  @%p1 fence.proxy.async.shared::cta;")
    np.testing.assert_array_equal(got[:16, :32], tile.reshape(16, 32))


# A kernel builds the map itself, as Triton's device-side descriptors do: warp 0 zeroes 128 bytes of shared
# memory, thread 0 sets each field with tensormap.replace, warp 0 copies the map to global scratch with
# tensormap.cp_fenceproxy (and an acquire fence), then the LOAD kernel's copy uses it.
BUILD = """
  ld.param.u64 %rd5, [scratch];
  ld.param.u64 %rd6, [src];
  mov.u32 %r12, %tid.x;
  setp.lt.u32 %p3, %r12, 32;
  mov.u32 %r13, map;
  shl.b32 %r14, %r12, 2;
  add.u32 %r14, %r13, %r14;
  mov.u32 %r15, 0;
  @%p3 st.shared.b32 [%r14], %r15;
  bar.warp.sync -1;
  setp.eq.u32 %p2, %r12, 0;
  FIELDS
  @%p3 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd5], [map], 128;
  @%p3 fence.proxy.tensormap::generic.acquire.gpu [%rd5], 128;
  bar.sync 0;"""
FIELDS = {"global_address": ".b64 [map], %rd6", "rank": ".b32 [map], 1", "elemtype": ".b32 [map], 7",
          "global_dim0": ".b32 [map], 0, 72", "global_dim1": ".b32 [map], 1, 40", "global_stride": ".b64 [map], 0, 288",
          "box_dim0": ".b32 [map], 0, 32", "box_dim1": ".b32 [map], 1, 16", "element_stride0": ".b32 [map], 0, 1",
          "element_stride1": ".b32 [map], 1, 1", "swizzle_mode": ".b32 [map], 3"}


def _built(fields: dict[str, str], coords=(8, 4)) -> np.ndarray:
    lines = "\n  ".join(f"@%p2 tensormap.replace.tile.{field.rstrip('01')}.shared::cta.b1024{operands};"
                         for field, operands in fields.items())
    body = LOAD.replace(".param .align 64 .b8 tmap[128]", ".param .u64 scratch, .param .u64 src").replace(
        ".shared .align 8 .b8 bar[8];", ".shared .align 128 .b8 map[128];\n  .shared .align 8 .b8 bar[8];")
    for key, value in {**_LOAD, "MAP": BUILD.replace("FIELDS", lines), "OPERAND": "%rd5"}.items():
        body = body.replace(key, value)
    gpu = emulator.Device("sm_90")
    x = _tensor()
    scratch, out = gpu.alloc(128), gpu.alloc(TILE)
    gpu.load_ptx(HEADER + body).launch("load", (1, 1, 1), (N, 1, 1), [scratch, gpu.upload(x), *coords, out])
    return gpu.download(out, np.uint8, (TILE,))


def test_a_tensor_map_built_by_the_kernel_field_by_field():
    np.testing.assert_array_equal(_built(FIELDS), _expected(_tensor(), (8, 4), (32, 16), "128B"))
    # A field never replaced reads as zero: no swizzle.
    unswizzled = {field: operands for field, operands in FIELDS.items() if field != "swizzle_mode"}
    np.testing.assert_array_equal(_built(unswizzled), _expected(_tensor(), (8, 4), (32, 16), "none"))


@pytest.mark.parametrize("edit,message", [
    ({"box_dim1": None}, r"the tensor map at generic address 0x[0-9a-f]+: box dim 1 is 0, outside 1..256"),
    ({"box_dim0": ".b32 [map], 0, 300"}, "box dim 0 is 300, outside 1..256"),
    ({"box_dim0": ".b32 [map], 0, 70000"}, r"\.box_dim of 70000 does not fit the map's field"),
    ({"elemtype": ".b32 [map], 8"}, r"element type \.f32\.ftz .* is not supported by the emulator"),
    ({"global_address": ".b32 [map], %r15"}, r"\.global_address takes a \.b64 value"),
    ({"rank": ".b32 [map+16], 1"}, r"the tensor map at shared address 0x[0-9a-f]+ is not 64-byte aligned"),
    ({"rank": ".b32 [map], 0"}, r"a \.2d copy of a rank-1 tensor map"),
])
def test_a_tensor_map_built_wrong_is_an_error(edit, message):
    fields = {**FIELDS, **edit}
    with pytest.raises(tessel.RuntimeError, match=message):
        _built({k: v for k, v in fields.items() if v is not None})


def test_encode_tensor_map_writes_the_fields_and_checks_them_as_the_driver():
    raw = encode_tensor_map(1 << 44, np.float16, (72, 40, 3), [160, 160 * 40], (64, 16, 1), swizzle="128B", fill="nan")
    tmap = decode_tensor_map(raw)
    assert (tmap.address, tmap.element, tmap.dims, tmap.strides, tmap.box, tmap.swizzle, tmap.nan) == \
        (1 << 44, 2, (72, 40, 3), (2, 160, 6400), (64, 16, 1), 128, True)
    assert raw[:4] == b"TTM2" and raw[4] == 2 and raw[5] == 6  # rank - 1, PTX's .f16
    for kwargs, message in [({"box": (128, 16, 1)}, "more than the 128B swizzle's span"),
                            ({"strides": [150, 6000]}, "global stride 1 is 150 bytes"),
                            ({"dtype": np.int16, "fill": "nan"}, "floating-point elements only"),
                            ({"dtype": np.bool_}, "dtype bool is not an integer or floating-point type")]:
        args = {"dtype": np.float16, "strides": [160, 6400], "box": (64, 16, 1), "swizzle": "128B", **kwargs}
        with pytest.raises(tessel.RuntimeError, match=message):
            encode_tensor_map(1 << 44, args.pop("dtype"), (72, 40, 3), args.pop("strides"), args.pop("box"), **args)
