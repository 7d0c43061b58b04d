"""tessel.runtime's tensor maps (TMA, issue 29): an artifact whose manifest
describes maps as data, a launch passing them, run on the PTX emulator
(encoded there by the emulator's encode_tensor_map), dry-run (every field
and address checked), hostile manifests refused naming the field, and the
arguments the CUDA driver gives cuTensorMapEncodeTiled (checked against
cuda.bindings without a GPU).

The kernel is hand-written sm_90a PTX: each block loads a 32 x 32 f32 tile
of X through map 0 (128B swizzle) into shared memory, its threads transpose
it into a second tile, which thread 0 stores through map 1 into X.T; X's
shape is ragged, so boxes are filled past its edges and clipped when stored.
"""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import runtime, targets
from tessel.runtime import tensormaps
from tessel.runtime.emulator import EmulatorDriver
from tessel.runtime.tensormaps import TensorMapInfo

M, N = 40, 72  # X is M x N f32: tiles of 32 x 32, the last ones ragged both ways
TILE = 32
THREADS = 128

ELEMENT = """
  add.u32 %r10, %r1, {offset};
  shr.u32 %r11, %r10, 5;
  and.b32 %r12, %r10, 31;
  shl.b32 %r13, %r11, 7;
  shl.b32 %r14, %r12, 2;
  and.b32 %r15, %r11, 7;
  shl.b32 %r15, %r15, 4;
  xor.b32 %r16, %r14, %r15;
  add.u32 %r17, %r13, %r16;
  add.u32 %r17, %r17, %r7;
  ld.shared.f32 %f1, [%r17];
  shl.b32 %r18, %r12, 7;
  shl.b32 %r19, %r11, 2;
  add.u32 %r18, %r18, %r19;
  add.u32 %r18, %r18, %r8;
  st.shared.f32 [%r18], %f1;"""

# Element e = tid + 128 i of the input tile is (r, c) = (e / 32, e % 32), at byte r * 128 + 4 c with the
# 16-byte chunk XORed by r % 8 (the 128B swizzle); it goes to (c, r) of the unswizzled output tile. The
# threads' generic stores are made visible to the async proxy (fence.proxy.async) before the bar.sync after
# which thread 0's tensor store reads them.
PTX = """.version 8.0
.target sm_90a
.address_size 64

.visible .entry transpose(.param .u64 in_map, .param .u64 out_map)
{
  .reg .pred %p<4>; .reg .b32 %r<24>; .reg .b64 %rd<4>; .reg .f32 %f<2>;
  .shared .align 8 .b8 bar[8];
  .shared .align 1024 .b8 tile_in[4096];
  .shared .align 1024 .b8 tile_out[4096];
  ld.param.u64 %rd1, [in_map];
  ld.param.u64 %rd2, [out_map];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ctaid.y;
  shl.b32 %r4, %r2, 5;
  shl.b32 %r5, %r3, 5;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r6, bar;
  mov.u32 %r7, tile_in;
  mov.u32 %r8, tile_out;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], 4096;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r7], [%rd1, {%r4, %r5}], [%r6];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r6], 0;
  @!%p2 bra WAIT;
ELEMENTS
  FENCE
  bar.sync 0;
  @%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r5, %r4}], [%r8];
  @%p1 cp.async.bulk.commit_group;
  @%p1 cp.async.bulk.wait_group.read 0;
  ret;
}
""".replace("ELEMENTS", "".join(ELEMENT.format(offset=THREADS * i) for i in range(TILE * TILE // THREADS)))


def _ptx(fence: str = "fence.proxy.async.shared::cta;") -> str:
    return PTX.replace("FENCE", fence)


def _map(buffer: int, shape: tuple[int, int], swizzle: str) -> dict:
    """The manifest's record of a map of the row-major f32 matrix ``shape`` in ``buffer``, 32 x 32 boxes."""
    rows, cols = shape
    return {"buffer": buffer, "dtype": "float32", "dims": [cols, rows], "strides": [4 * cols], "box": [TILE, TILE],
            "element_strides": [1, 1], "swizzle": swizzle, "fill": "zero", "interleave": "none",
            "l2_promotion": "128B"}


def _manifest() -> dict:
    """X (input 0) -> a temporary (X.T, through the maps) -> output 0 (a copy)."""
    grid = [-(-N // TILE), -(-M // TILE), 1]
    return {
        "format": runtime.artifact.FORMAT, "version": runtime.artifact.VERSION, "target": "sm_90",
        "target_description": targets.get("sm_90").to_json(), "entry": "transpose", "dims": {},
        "inputs": [{"shape": [M, N], "dtype": "float32"}], "outputs": [{"shape": [N, M], "dtype": "float32"}],
        "buffers": [
            {"id": 0, "kind": "input", "shape": [M, N], "dtype": "float32", "index": 0, "view_of": None},
            {"id": 1, "kind": "output", "shape": [N, M], "dtype": "float32", "index": 0, "view_of": None},
            {"id": 2, "kind": "temporary", "shape": [N, M], "dtype": "float32", "index": None, "view_of": None},
        ],
        "kernels": [{"name": "transpose", "file": "kernels/0-transpose.ptx", "grid": grid, "block": [THREADS, 1, 1],
                     "dynamic_shared_bytes": 0, "ptxas": None}],
        "tensor_maps": [_map(0, (M, N), "128B"), _map(2, (N, M), "none")],
        "steps": [{"op": "alloc", "buffer": 2},
                  {"op": "launch", "kernel": 0, "args": [{"tensor_map": 0}, {"tensor_map": 1}]},
                  {"op": "copy", "source": 2, "target": 1}, {"op": "free", "buffer": 2}],
    }


def _save(folder: Path, manifest: dict | None = None, ptx: str | None = None) -> Path:
    (folder / "kernels").mkdir(parents=True)
    (folder / "kernels" / "0-transpose.ptx").write_text(_ptx() if ptx is None else ptx)
    (folder / "manifest.json").write_text(json.dumps(_manifest() if manifest is None else manifest))
    return folder


@pytest.fixture
def saved(tmp_path):
    return _save(tmp_path / "transpose")


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32)


def test_the_manifests_maps_are_read_as_data(saved):
    artifact = runtime.read(saved)
    assert artifact.tensor_maps == (
        TensorMapInfo("float32", (N, M), (4 * N,), (TILE, TILE), (1, 1), "128B", "zero", "none", "128B", 0),
        TensorMapInfo("float32", (M, N), (4 * M,), (TILE, TILE), (1, 1), "none", "zero", "none", "128B", 2))
    assert artifact.steps[1]["args"] == [runtime.artifact.MapArgument(0), runtime.artifact.MapArgument(1)]
    assert artifact.tensor_maps[0].extent == M * N * 4


class _Counting(EmulatorDriver):
    """The emulator driver, noting each map it encodes (its buffer and address)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.encoded: list[tuple[int, int]] = []

    def encode_tensor_map(self, tensor_map, address):
        self.encoded.append((tensor_map.buffer, address))
        return super().encode_tensor_map(tensor_map, address)


def test_a_tma_transpose_runs_on_the_emulator_through_the_manifests_maps(saved):
    x = _x()
    np.testing.assert_array_equal(tessel.load(saved, emulate=True)(x), x.T)
    # Maps are encoded for their buffer's address in the call, again only when it changed (the pool hands
    # the input's, the output's and the temporary's memory, all the same size, out in another order).
    artifact = runtime.read(saved)
    driver = _Counting(artifact.target_description)
    executable = runtime.Executable(artifact, driver)
    for seed in range(4):
        x = _x(seed)
        np.testing.assert_array_equal(executable(x), x.T)
    for buffer in (0, 2):
        addresses = [a for b, a in driver.encoded if b == buffer]
        assert addresses and all(a != b for a, b in zip(addresses, addresses[1:])), driver.encoded
    executable.close()
    assert not driver.device.memory.sizes, "constants, maps and the pool are all freed"


def test_a_missing_proxy_fence_in_the_artifacts_kernel_is_caught(tmp_path):
    case = _save(tmp_path / "unfenced", ptx=_ptx(fence=""))
    with pytest.raises(tessel.RuntimeError, match=r"cp.async.bulk.tensor.*reads shared memory at shared address "
                                                   r"0x[0-9a-f]+ that thread \(\d+, 0, 0\) wrote at line \d+ "
                                                   r"\(st.shared.f32\) through the generic proxy"):
        tessel.load(case, emulate=True)(_x())


def _symbolic_manifest(multiple: int = 4) -> dict:
    """The transpose over X of m x n (size symbols): grid, buffers and both maps' dims and strides as size
    expressions. A row's stride, 4 n (4 m) bytes, is a multiple of 16 when n (m) is a multiple of 4."""
    manifest = _manifest()
    manifest["dims"] = {"m": {"min": 4, "max": 80, "multiple_of": 4},
                        "n": {"min": 4, "max": 100, "multiple_of": multiple}}
    for record in manifest["inputs"] + manifest["buffers"][:1]:
        record["shape"] = ["m", "n"]
    for record in manifest["outputs"] + manifest["buffers"][1:]:
        record["shape"] = ["n", "m"]
    manifest["kernels"][0]["grid"] = [{"ceildiv": ["n", TILE]}, {"ceildiv": ["m", TILE]}, 1]
    manifest["tensor_maps"][0].update(dims=["n", "m"], strides=[{"mul": [4, "n"]}])
    manifest["tensor_maps"][1].update(dims=["m", "n"], strides=[{"mul": [4, "m"]}])
    return manifest


def test_tensor_maps_of_symbolic_sizes_are_encoded_at_each_calls_sizes(tmp_path):
    case = _save(tmp_path / "symbolic", _symbolic_manifest())
    artifact = runtime.read(case)
    assert artifact.tensor_maps[0].dims == ("n", "m") and artifact.tensor_maps[0].strides == ({"mul": [4, "n"]},)
    driver = _Counting(artifact.target_description)
    executable = runtime.Executable(artifact, driver)
    for m, n in ((4, 4), (40, 72), (80, 100), (36, 8), (40, 72)):
        x = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
        np.testing.assert_array_equal(executable(x), x.T)
    # Each call's maps were encoded for its sizes, and again for any other sizes at the same address.
    assert len(driver.encoded) == 2 * 5
    executable.close()
    dry = tessel.load(case, dry=True)
    assert dry(np.ones((12, 20), np.float32)).shape == (20, 12)
    assert dry.driver.launch_shapes == [((1, 1, 1), (THREADS, 1, 1))]


def test_a_symbolic_tensor_map_is_checked_by_the_drivers_rules_at_each_call(tmp_path):
    # With n a multiple of 2, not 4, a row of X may be 24 bytes: not a stride a map may have. Both
    # corners (n = 4, n = 100) are fine, so the reader takes it; the call at n = 6 does not.
    executable = tessel.load(_save(tmp_path / "odd", _symbolic_manifest(multiple=2)), dry=True)
    assert executable(np.ones((8, 8), np.float32)).shape == (8, 8)
    with pytest.raises(tessel.RuntimeError, match=r"manifest.json: with m = 8, n = 6: tensor_maps\[0\].strides\[0\] "
                                                   r"is 24 bytes: it must be a positive multiple of 16"):
        executable(np.ones((8, 6), np.float32))
    # What holds at no size is refused when read: a dim over the bounds of the driver, a map past its buffer.
    manifest = _symbolic_manifest()
    manifest["tensor_maps"][0]["dims"] = ["n", {"sub": ["m", 4]}]
    assert "tensor_maps[0].dims[1] ((m - 4)) ranges over 0..76, outside 1..4294967296" in _refusal(
        tmp_path, lambda m: m.update(manifest))
    manifest = _symbolic_manifest()
    manifest["tensor_maps"][0]["dims"] = ["n", {"add": ["m", 1]}]
    assert ("malformed manifest: with m = 4, n = 4: tensor_maps[0] reaches 80 bytes from the start of buffer 0, "
            "which has 64") in _refusal(tmp_path, lambda m: m.update(manifest))


def test_a_dry_run_checks_each_map_with_its_address(saved):
    executable = tessel.load(saved, dry=True)
    driver = executable.driver
    assert executable(_x()).shape == (N, M)
    assert [name for name, _ in driver.launches] == ["transpose"]
    # The kernel gets the 128 bytes of each map in device memory of their own.
    pointers = driver.launches[0][1]
    assert len(pointers) == 2 and all(driver.live[p] == tensormaps.SIZE for p in pointers)
    info = executable.artifact.tensor_maps[0]
    base = driver.alloc(info.extent)
    assert len(driver.encode_tensor_map(info, base)) == tensormaps.SIZE
    with pytest.raises(tessel.RuntimeError, match=r"dry run: the global address of the tensor map of buffer 0 "
                                                   r"\(0x[0-9a-f]+\) is not 16-byte aligned"):
        driver.encode_tensor_map(info, base + 8)
    with pytest.raises(tessel.RuntimeError, match=r"dry run: the tensor map of buffer 0 touches 11520 bytes at "
                                                   r"0x[0-9a-f]+, which is not inside a live allocation"):
        driver.encode_tensor_map(info, base + 16)
    executable.close()


def _refusal(tmp_path: Path, edit, ptx: str | None = None) -> str:
    manifest = copy.deepcopy(_manifest())
    edit(manifest)
    case = _save(tmp_path / f"case{len(list(tmp_path.iterdir()))}", manifest, ptx)
    with pytest.raises(tessel.RuntimeError) as error:
        runtime.read(case)
    assert "manifest.json" in str(error.value)
    return str(error.value)


def _set(path: str, value):
    """An edit of the manifest that sets field ``path`` (``tensor_maps.0.box``) to ``value``."""
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]

    def edit(manifest):
        node = manifest
        for key in parents:
            node = node[key]
        node[last] = value
    return edit


@pytest.mark.parametrize("path,value,message", [
    ("tensor_maps.0.swizzle", "256B", "tensor_maps[0].swizzle must be one of none, 32B, 64B, 128B, not '256B'"),
    ("tensor_maps.0.box", [300, 32], r"tensor_maps[0].box[0] is 300, outside 1..256"),
    ("tensor_maps.0.box", [64, 32], r"the box's inner dim (tensor_maps[0].box[0]: 64 elements of 4 bytes) is 256 "
                                    "bytes, more than the 128B swizzle's span"),
    ("tensor_maps.1.box", [6, 32], "the box's inner dim (tensor_maps[1].box[0]: 6 elements of 4 bytes) is 24 bytes, "
                                   "not a multiple of 16"),
    ("tensor_maps.0.strides", [290], "tensor_maps[0].strides[0] is 290 bytes: it must be a positive multiple of 16"),
    ("tensor_maps.0.buffer", 7, "tensor_maps[0].buffer is 7, which is no buffer of the manifest"),
    ("tensor_maps.0.dims", [N, M + 1], "tensor_maps[0] reaches 11808 bytes from the start of buffer 0, which has "
                                       "11520"),
    ("tensor_maps.0.dims", [N, 0], "tensor_maps[0].dims[1] is 0, outside 1..2^32"),
    ("tensor_maps.0.dims", [1] * 6, "tensor_maps[0].dims has 6 values; a tensor map has 1 to 5 dims"),
    ("tensor_maps.0.strides", [], "tensor_maps[0].strides has 0 values; a rank-2 tensor map has 1"),
    ("tensor_maps.0.element_strides", [2, 1], "tensor_maps[0].element_strides[0] is 2: TMA has no stride in the "
                                              "innermost dim"),
    ("tensor_maps.0.element_strides", [1, 9], r"tensor_maps[0].element_strides[1] is 9, outside 1..8"),
    ("tensor_maps.0.dtype", "int8", "tensor_maps[0].dtype must be one of uint8, uint16"),
    ("tensor_maps.0.interleave", "32B", "tensor_maps[0].interleave must be one of none, not '32B'"),
    ("tensor_maps.0.l2_promotion", "512B", "tensor_maps[0].l2_promotion must be one of none, 64B, 128B, 256B"),
    ("tensor_maps.0", [], "tensor_maps[0] must be an object, not []"),
    ("steps.1.args", [{"tensor_map": 2}, {"tensor_map": 1}],
     "steps[1].args[0].tensor_map is 2, but the manifest has 2 tensor maps"),
    ("steps.1.args", [{"tensor_map": 0, "offset": 16}, {"tensor_map": 1}],
     'steps[1].args[0] must be {"tensor_map": index} and nothing more'),
    ("steps.1.args", ["0", {"tensor_map": 1}],
     'steps[1].args[0] must be a buffer id, {"tensor_map": index} or {"size": expression}'),
])
def test_hostile_tensor_maps_are_refused_naming_the_field(tmp_path, path, value, message):
    assert "malformed manifest: " + message in _refusal(tmp_path, _set(path, value))


def test_a_nan_fill_is_for_floating_point_maps(tmp_path):
    manifest = _manifest()
    manifest["tensor_maps"][0]["fill"] = "nan"
    assert runtime.read(_save(tmp_path / "nan", manifest)).tensor_maps[0].fill == "nan"
    assert "malformed manifest: tensor_maps[0].fill 'nan' is for floating-point elements only, not int32" in \
        _refusal(tmp_path, lambda m: m["tensor_maps"][0].update(dtype="int32", fill="nan"))


def test_map_arguments_must_meet_a_pointer_parameter_and_a_live_buffer(tmp_path):
    # The kernel takes the map as a grid-constant .param (its 128 bytes), not the device pointer tessel passes.
    grid_constant = _ptx().replace(".param .u64 in_map", ".param .align 64 .b8 in_map[128]")
    text = _refusal(tmp_path, lambda m: None, ptx=grid_constant)
    assert ("step 1 passes tensor map 0 as argument 0 of kernel transpose, whose PTX declares "
            "'.param .align 64 .b8 in_map[128]', not a 64-bit device pointer (.u64)") in text
    assert "step 1 passes buffer 0 as argument 0" in _refusal(
        tmp_path, _set("steps.1.args", [0, {"tensor_map": 1}]), ptx=grid_constant)
    # The temporary's map launched before the temporary is allocated.
    assert "step 0 uses a buffer that is not allocated" in _refusal(
        tmp_path, lambda m: m["steps"].insert(0, m["steps"].pop(1)))
    assert "passes 1 arguments to kernel transpose, whose PTX takes 2" in _refusal(
        tmp_path, _set("steps.1.args", [{"tensor_map": 0}]))


def test_the_encoders_share_the_drivers_rules():
    # The emulator's encode_tensor_map refuses what the manifest reader does, its fields named its way.
    from tessel.runtime.emulator import encode_tensor_map

    with pytest.raises(tessel.RuntimeError, match=r"encode_tensor_map: box dim 0 is 300, outside 1..256"):
        encode_tensor_map(1 << 44, np.float32, (72, 40), [288], (300, 16))
    with pytest.raises(tessel.RuntimeError, match=r"encode_tensor_map: element stride 0 is 2: TMA has no stride"):
        encode_tensor_map(1 << 44, np.float32, (72, 40), [288], (32, 16), (2, 1))
    with pytest.raises(tessel.RuntimeError, match=r"encode_tensor_map: the global address \(0x100000000008\) is not "
                                                   "16-byte aligned"):
        encode_tensor_map((1 << 44) + 8, np.float32, (72, 40), [288], (32, 16))
    with pytest.raises(tessel.RuntimeError, match="encode_tensor_map: L2 promotion must be one of none, 64B"):
        encode_tensor_map(1 << 44, np.float32, (72, 40), [288], (32, 16), l2_promotion="1KB")
    # A type the driver has but the emulator cannot copy is the emulator's error, not a wrong answer.
    with pytest.raises(tessel.RuntimeError, match=r"element type \.tf32\.ftz .* not supported by the emulator"):
        encode_tensor_map(1 << 44, "tfloat32_ftz", (72, 40), [288], (32, 16))


def test_cuTensorMapEncodeTiled_gets_the_drivers_enums():
    cu = pytest.importorskip("cuda.bindings.driver")
    from tessel.runtime.cuda_driver import tensor_map_arguments

    # Every name of the manifest's vocabulary is a member of cuda.bindings' enums.
    for element in tensormaps.ELEMENT_TYPES.values():
        assert hasattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{element.driver}"), element
    for fill in tensormaps.FILLS.values():
        assert hasattr(cu.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{fill}")
    for interleave in tensormaps.INTERLEAVES.values():
        assert hasattr(cu.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{interleave}")
    for promotion in tensormaps.L2_PROMOTIONS.values():
        assert hasattr(cu.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{promotion}")
    for swizzle in tensormaps.SWIZZLES:
        assert hasattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle.upper()}")
    # TOOLCHAIN.md's row-major A (M x K f16): globalDim {K, M}, globalStrides {2K}, boxDim {64, 128}.
    info = TensorMapInfo("float16", (4096, 2048), (8192,), (64, 128), (1, 1), "128B", "zero", "none", "none", 3)
    args = tensor_map_arguments(cu, info, 1 << 32)
    (dtype, rank, address, dims, strides, box, element_strides, interleave, swizzle, promotion, fill) = args
    assert dtype == cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 and (rank, address) == (2, 1 << 32)
    assert [int(d) for d in dims] == [4096, 2048] and [int(s) for s in strides] == [8192]
    assert all(isinstance(d, cu.cuuint64_t) for d in dims + strides)
    assert [int(b) for b in box] == [64, 128] and all(isinstance(b, cu.cuuint32_t) for b in box + element_strides)
    assert (interleave, swizzle, promotion, fill) == (
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    # The rules run first: the driver's bare CUDA_ERROR_INVALID_VALUE would not say what is wrong.
    with pytest.raises(tessel.RuntimeError, match=r"the global address of the tensor map of buffer 3 \(0x100000008\)"
                                                   " is not 16-byte aligned"):
        tensor_map_arguments(cu, info, (1 << 32) + 8)


def test_a_saved_cuda_artifact_writes_and_packs_its_maps(tmp_path):
    from tessel.backends.cuda import CudaArtifact
    from tessel.backends.signature import TensorSpec
    from tessel.runtime.artifact import BufferInfo, KernelInfo

    manifest = _manifest()
    buffers = [BufferInfo(b["id"], b["kind"], tuple(b["shape"]), np.dtype(np.float32), b["index"], None, None)
               for b in manifest["buffers"]]
    kernel = KernelInfo("transpose", _ptx(), tuple(manifest["kernels"][0]["grid"]), (THREADS, 1, 1), 0)
    maps = runtime.read(_save(tmp_path / "by-hand")).tensor_maps
    built = CudaArtifact("sm_90", "transpose", [TensorSpec((M, N), np.dtype(np.float32))],
                         [TensorSpec((N, M), np.dtype(np.float32))], [kernel], buffers, {}, manifest["steps"], {},
                         maps)
    assert built.manifest()["tensor_maps"] == manifest["tensor_maps"]
    assert CudaArtifact.unpacked(built.packed(), {}).tensor_maps == maps
    x = _x()
    np.testing.assert_array_equal(tessel.load(built.save(tmp_path / "saved"), emulate=True)(x), x.T)


REPLACEMENTS = [None, "1", "", -1, 0, 2**64, 1.5, True, [], {}, [1, 2], [[1]], {"tensor_map": 0}, "x" * 5000]


def _nodes(value, path=()):
    """Every (path, value) below ``value`` in a JSON tree."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield path + (key,), child
        yield from _nodes(child, path + (key,))


def test_mutated_tensor_maps_load_or_fail_with_a_tessel_error(tmp_path):
    # Every field of the maps and of the launch passing them replaced by values of every type and range:
    # reading the artifact and dry-running it either works or is a tessel.RuntimeError, never another
    # exception (the reader's own checks, not a crash in the drivers).
    manifest = _manifest()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "0-transpose.ptx").write_text(_ptx())
    outcomes = {"ok": 0, "refused": 0}
    for root in (("tensor_maps",), ("steps", 1)):
        top = manifest
        for key in root:
            top = top[key]
        for path, value in [((), top), *_nodes(top)]:
            for replacement in REPLACEMENTS + ([value + 16, value - 16] if type(value) is int else []):
                mutated = copy.deepcopy(manifest)
                node = mutated
                for key in (root + path)[:-1]:
                    node = node[key]
                node[(root + path)[-1]] = replacement
                (tmp_path / "manifest.json").write_text(json.dumps(mutated))
                try:
                    executable = tessel.load(tmp_path, dry=True)
                    executable(_x())
                    executable.close()
                    outcomes["ok"] += 1
                except tessel.RuntimeError:
                    outcomes["refused"] += 1
    assert outcomes["refused"] > 200 and outcomes["ok"] > 0, outcomes
