"""tessel.runtime with size symbols (issue 30 item 4): a version-4 manifest
declares its symbols (``dims``) and gives shapes, launch shapes and kernel
size arguments as size expressions over them; each call binds the symbols
from the inputs' shapes and evaluates everything with them.

The artifacts are written by hand (hand-written PTX, manifest.json as data):
(a) an elementwise kernel over n elements, grid ceildiv(n, 128), which
checks i < n with its .u64 size argument; (b) two kernels with a
temporary of shape [batch * seq, 64] between them (scale, then a row sum
plus a second input, with an .s64 size argument), a view of an output and
a copy. They run on the PTX emulator at several sizes against numpy and
dry, hostile manifests are refused naming the field, and calls outside
the ranges are ValueErrors.
"""

import copy
import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import runtime, targets
from tessel.runtime.artifact import SizeArgument, SizeValue
from tessel.shapes import DimRange

THREADS = 128
ROW = 64  # the row length of program (b)

# y[i] = 2 x[i] + 1 for i < n: one thread per element, the last block partly idle.
SCALE = """.version 7.0
.target sm_80
.address_size 64

.visible .entry scale(.param .u64 x, .param .u64 y, .param .u64 n)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  BOUNDS
  shl.b64 %rd6, %rd4, 2;
  add.u64 %rd7, %rd1, %rd6;
  ld.global.f32 %f1, [%rd7];
  fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
  add.u64 %rd7, %rd2, %rd6;
  st.global.f32 [%rd7], %f2;
DONE:
  ret;
}
"""
CHECKED = "setp.ge.u64 %p1, %rd4, %rd3;\n  @%p1 bra DONE;"

# y[r] = mask[r] + sum of row r of t (64 floats), for r < rows (an .s64 parameter).
ROWSUM = """.version 7.0
.target sm_80
.address_size 64

.visible .entry rowsum(.param .u64 t, .param .u64 mask, .param .u64 y, .param .s64 rows)
{
  .reg .pred %p<3>; .reg .b32 %r<5>; .reg .b64 %rd<10>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [t];
  ld.param.u64 %rd8, [mask];
  ld.param.u64 %rd2, [y];
  ld.param.s64 %rd3, [rows];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.s64 %rd4, %rd4, %rd5;
  setp.ge.s64 %p1, %rd4, %rd3;
  @%p1 bra DONE;
  shl.b64 %rd7, %rd4, 2;
  add.s64 %rd9, %rd8, %rd7;
  ld.global.f32 %f1, [%rd9];
  shl.b64 %rd6, %rd4, 8;
  add.s64 %rd6, %rd1, %rd6;
  mov.u32 %r4, 0;
LOOP:
  ld.global.f32 %f2, [%rd6];
  add.f32 %f1, %f1, %f2;
  add.s64 %rd6, %rd6, 4;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p2, %r4, 64;
  @%p2 bra LOOP;
  add.s64 %rd7, %rd2, %rd7;
  st.global.f32 [%rd7], %f1;
DONE:
  ret;
}
"""


def _scale_ptx(checked: bool = True, n: str = ".param .u64 n") -> str:
    return SCALE.replace("BOUNDS", CHECKED if checked else "").replace(".param .u64 n", n)


def _header(dims: dict) -> dict:
    return {"format": runtime.artifact.FORMAT, "version": runtime.artifact.VERSION, "target": "sm_80",
            "target_description": targets.get("sm_80").to_json(), "dims": dims}


def _buffer(id: int, kind: str, shape: list, index=None, view_of=None) -> dict:
    return {"id": id, "kind": kind, "shape": shape, "dtype": "float32", "index": index, "view_of": view_of}


def _elementwise() -> dict:
    """(a): y = 2 x + 1 over [n]."""
    return {**_header({"n": {"min": 1, "max": 1000, "multiple_of": 1}}), "entry": "scale",
            "inputs": [{"shape": ["n"], "dtype": "float32"}], "outputs": [{"shape": ["n"], "dtype": "float32"}],
            "buffers": [_buffer(0, "input", ["n"], 0), _buffer(1, "output", ["n"], 0)],
            "kernels": [{"name": "scale", "file": "kernels/0-scale.ptx", "grid": [{"ceildiv": ["n", THREADS]}, 1, 1],
                         "block": [THREADS, 1, 1], "dynamic_shared_bytes": 0, "ptxas": None}],
            "tensor_maps": [],
            "steps": [{"op": "launch", "kernel": 0, "args": [0, 1, {"size": "n"}]}]}


ROWS = {"mul": ["batch", "seq"]}
ELEMENTS = {"mul": [ROWS, ROW]}


def _two_kernels() -> dict:
    """(b): t = 2 x + 1 as [batch * seq, 64]; y = mask + row sums of t as [batch, seq] (through a view of
    [batch * seq]); z = t, copied into a [batch, seq, 64] output."""
    return {**_header({"batch": {"min": 1, "max": 8, "multiple_of": 1},
                       "seq": {"min": 1, "max": 40, "multiple_of": 1}}), "entry": "block",
            "inputs": [{"shape": ["batch", "seq", ROW], "dtype": "float32"},
                       {"shape": ["batch", "seq"], "dtype": "float32"}],
            "outputs": [{"shape": ["batch", "seq"], "dtype": "float32"},
                        {"shape": ["batch", "seq", ROW], "dtype": "float32"}],
            "buffers": [_buffer(0, "input", ["batch", "seq", ROW], 0), _buffer(1, "input", ["batch", "seq"], 1),
                        _buffer(2, "output", ["batch", "seq"], 0), _buffer(3, "output", ["batch", "seq", ROW], 1),
                        _buffer(4, "temporary", [ROWS, ROW]), _buffer(5, "view", [ROWS], view_of=2)],
            "kernels": [{"name": "scale", "file": "kernels/0-scale.ptx",
                         "grid": [{"ceildiv": [ELEMENTS, THREADS]}, 1, 1], "block": [THREADS, 1, 1],
                         "dynamic_shared_bytes": 0, "ptxas": None},
                        {"name": "rowsum", "file": "kernels/1-rowsum.ptx", "grid": [{"ceildiv": [ROWS, 64]}, 1, 1],
                         "block": [64, 1, 1], "dynamic_shared_bytes": 0, "ptxas": None}],
            "tensor_maps": [],
            "steps": [{"op": "alloc", "buffer": 4},
                      {"op": "launch", "kernel": 0, "args": [0, 4, {"size": ELEMENTS}]},
                      {"op": "launch", "kernel": 1, "args": [4, 1, 5, {"size": ROWS}]},
                      {"op": "copy", "source": 4, "target": 3},
                      {"op": "free", "buffer": 4}]}


def _save(folder: Path, manifest: dict, ptx: dict[str, str] | None = None) -> Path:
    """``manifest`` and its kernels' PTX (by file; the hand-written kernels by default) in ``folder``."""
    (folder / "kernels").mkdir(parents=True)
    texts = {"kernels/0-scale.ptx": _scale_ptx(), "kernels/1-rowsum.ptx": ROWSUM, **(ptx or {})}
    for k in manifest.get("kernels", []):
        if isinstance(k, dict) and k.get("file") in texts:
            (folder / k["file"]).write_text(texts[k["file"]])
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def elementwise(tmp_path):
    return _save(tmp_path / "elementwise", _elementwise())


@pytest.fixture
def two_kernels(tmp_path):
    return _save(tmp_path / "two", _two_kernels())


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_the_manifests_symbols_and_expressions_are_read_as_data(two_kernels):
    artifact = runtime.read(two_kernels)
    assert artifact.dims == {"batch": DimRange(1, 8), "seq": DimRange(1, 40)}
    assert artifact.buffers[4].shape == (ROWS, ROW) and not artifact.buffers[4].static
    assert artifact.kernels[1].grid == ({"ceildiv": [ROWS, 64]}, 1, 1)
    assert artifact.steps[2]["args"] == [4, 1, 5, SizeArgument(ROWS)]
    # Pooled memory is sized for the largest sizes.
    assert artifact.largest_nbytes[4] == 8 * 40 * ROW * 4
    sized = artifact.sized({"batch": 3, "seq": 5})
    assert sized.shapes[4] == (15, ROW) and sized.nbytes[5] == 15 * 4
    assert [k.grid for k in sized.kernels] == [(-(-15 * ROW // THREADS), 1, 1), (1, 1, 1)]
    assert sized.arguments[1] == (0, 4, SizeValue(15 * ROW, False))
    assert sized.arguments[2] == (4, 1, 5, SizeValue(15, True))
    with pytest.raises(TypeError, match=r"buffer 4 has shape \[\(batch \* seq\), 64\]"):
        artifact.buffers[4].nbytes


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 257, 997, 1000])
def test_an_elementwise_kernel_runs_emulated_at_each_size(elementwise, n):
    x = _x(n, seed=n)
    np.testing.assert_array_equal(tessel.load(elementwise, emulate=True)(x), 2 * x + 1)


def test_one_executable_runs_every_size_and_keeps_one_evaluation_per_binding(elementwise):
    executable = tessel.load(elementwise, emulate=True)
    for n in (5, 300, 5, 1, 300):
        x = _x(n, seed=n)
        np.testing.assert_array_equal(executable(x), 2 * x + 1)
    assert list(executable._sized) == [(("n", 5),), (("n", 1),), (("n", 300),)]  # least recently used first
    executable.close()
    assert not executable.driver.device.memory.sizes


def test_the_emulator_sees_each_calls_sizes(tmp_path):
    # Without its bounds check the kernel's last block reads and writes past n: the emulator allocates
    # the call's bytes (not the largest), so that is its error, not a silent access to pooled memory.
    case = _save(tmp_path / "unchecked", _elementwise(), {"kernels/0-scale.ptx": _scale_ptx(checked=False)})
    executable = tessel.load(case, emulate=True)
    np.testing.assert_array_equal(executable(np.ones(256, np.float32)), np.full(256, 3, np.float32))
    with pytest.raises(tessel.RuntimeError, match=r"kernel scale, block \(2, 0, 0\), thread \(1, 0, 0\), .*"
                                                   r"ld.global.f32.* is outside every live allocation"):
        executable(np.ones(257, np.float32))


@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 7), (3, 13), (8, 40)])
def test_two_kernels_with_a_symbolic_temporary_run_emulated(two_kernels, batch, seq):
    x, mask = _x(batch, seq, ROW, seed=seq), _x(batch, seq, seed=batch)
    y, z = tessel.load(two_kernels, emulate=True)(x, mask)
    assert y.shape == (batch, seq) and z.shape == (batch, seq, ROW)
    np.testing.assert_array_equal(z, 2 * x + 1)
    np.testing.assert_allclose(y, mask + (2 * x + 1).sum(-1), rtol=1e-5, atol=1e-5)


def test_dry_runs_check_every_size_and_reuse_the_memory_of_the_largest(two_kernels):
    executable = tessel.load(two_kernels, dry=True)
    driver = executable.driver
    live = None
    for batch, seq in ((2, 7), (8, 40), (1, 1), (5, 3)):
        rows = batch * seq
        y, z = executable(_x(batch, seq, ROW), _x(batch, seq))
        assert (y.shape, z.shape) == ((batch, seq), (batch, seq, ROW))
        assert driver.launch_shapes[-2:] == [((-(-rows * ROW // THREADS), 1, 1), (THREADS, 1, 1)),
                                             ((-(-rows // 64), 1, 1), (64, 1, 1))]
        (_, scale), (_, rowsum) = driver.launches[-2:]
        assert scale[2] == SizeValue(rows * ROW, False) and rowsum[3] == SizeValue(rows, True)
        # Every buffer is pooled at its bytes at the largest sizes: the first call allocated all the
        # memory any call needs.
        assert live is None or set(driver.live) == live
        live = set(driver.live)
    assert sorted(driver.live.values()) == sorted(executable.artifact.largest_nbytes[b] for b in (0, 1, 2, 3, 4))
    devices = executable(_x(2, 3, ROW), _x(2, 3), device_outputs=True)
    assert devices[0].shape == (2, 3) and devices[1].shape == (2, 3, ROW)
    del devices  # back to the pool at the bytes they were allocated with
    assert set(driver.live) == live and executable(_x(1, 2, ROW), _x(1, 2))[0].shape == (1, 2)
    assert set(driver.live) == live
    executable.close()
    assert driver.live == {}


def test_calls_outside_the_ranges_or_with_disagreeing_sizes_are_value_errors(two_kernels, elementwise):
    executable = tessel.load(elementwise, dry=True)
    for n in (0, 1001):
        with pytest.raises(ValueError, match=rf"scale: argument 0 has {n} as dim 0 \(n\), outside the range "
                                             r"\[1, 1000\] declared for n"):
            executable(np.ones(n, np.float32))
    executable = tessel.load(two_kernels, dry=True)
    with pytest.raises(ValueError, match=r"block: argument 1 has 8 as dim 1, but it is seq = 7 with seq = 7 "
                                         r"\(from argument 0 dim 1\)"):
        executable(_x(2, 7, ROW), _x(2, 8))
    with pytest.raises(ValueError, match=r"argument 0 has 9 as dim 0 \(batch\), outside the range \[1, 8\]"):
        executable(_x(9, 7, ROW), _x(9, 7))
    # A static dim, the rank and the dtype are the signature's, as for an artifact without symbols.
    with pytest.raises(tessel.RuntimeError, match=r"block: argument 0 must be float32\[batch, seq, 64\], got "
                                                  r"float32\[2, 7, 32\]"):
        executable(_x(2, 7, 32), _x(2, 7))
    with pytest.raises(tessel.RuntimeError, match=r"argument 1 must be float32\[batch, seq\], got float32\[14\]"):
        executable(_x(2, 7, ROW), _x(14))
    assert not executable.driver.launches, "nothing ran"


def test_a_declared_multiple_is_checked_at_each_call(tmp_path):
    manifest = _elementwise()
    manifest["dims"]["n"] = {"min": 3, "max": 1000, "multiple_of": 4}
    executable = tessel.load(_save(tmp_path / "multiple", manifest), emulate=True)
    x = _x(8)
    np.testing.assert_array_equal(executable(x), 2 * x + 1)
    with pytest.raises(ValueError, match=r"has 6 as dim 0 \(n\), outside the range \[3, 1000\], a multiple of 4"):
        executable(np.ones(6, np.float32))


def _refusal(tmp_path: Path, manifest: dict, ptx: dict[str, str] | None = None) -> str:
    case = _save(tmp_path / f"case{len(list(tmp_path.iterdir()))}", manifest, ptx)
    with pytest.raises(tessel.RuntimeError) as error:
        runtime.read(case)
    assert "manifest.json" in str(error.value)
    return str(error.value)


def _edited(base, path: str, value) -> dict:
    """``base()`` with field ``path`` (``kernels.0.grid.0``) set to ``value``, or deleted when it is ``...``."""
    manifest = base()
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = manifest
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return manifest


def _nested(depth: int):
    tree = "n"
    for _ in range(depth):
        tree = {"add": [tree, 1]}
    return tree


@pytest.mark.parametrize("base,path,value,message", [
    # Symbols named and declared.
    (_elementwise, "buffers.1.shape.0", "m", "buffers[1].shape[0] names 'm', which the manifest's dims do not "
                                             "declare"),
    (_two_kernels, "buffers.4.shape.0", {"mul": ["batch", "sq"]},
     "buffers[4].shape[0].mul[1] names 'sq', which the manifest's dims do not declare"),
    (_elementwise, "dims", ..., "the manifest has no 'dims'"),
    (_two_kernels, "dims.seq", ..., "inputs[0].shape[1] names 'seq', which the manifest's dims do not declare"),
    (_elementwise, "dims.n.max", ..., "dims.n has no 'max'"),
    (_elementwise, "dims.n", {"min": 5, "max": 4, "multiple_of": 1}, "dims.n.min is 5, over its max 4"),
    (_elementwise, "dims.n", {"min": 5, "max": 7, "multiple_of": 8}, "dims.n admits no size: no multiple of 8 lies "
                                                                     "in [5, 7]"),
    (_elementwise, "dims.n.multiple_of", 0, "dims.n.multiple_of must be 1..1099511627776, not 0"),
    (_elementwise, "dims.n.max", 2**41, "dims.n.max must be 0..1099511627776"),
    (_elementwise, "dims.n.min", "1", "dims.n.min must be an integer, not '1'"),
    (_elementwise, "dims", {"n": {"min": 1, "max": 9, "multiple_of": 1}, "2x": {"min": 1, "max": 9, "multiple_of": 1}},
     "dims declares '2x', which is not a symbol's name"),
    (_elementwise, "dims.m", {"min": 1, "max": 9, "multiple_of": 1},
     "dims.m: no input has a dim that is m alone, so no call can bind it"),
    # Trees.
    (_elementwise, "kernels.0.grid.0", {"ceildiv": ["n"]}, "kernels[0].grid[0] must be a size expression "
                                                           "{op: [a, b]} with op one of add, sub, mul"),
    (_elementwise, "kernels.0.grid.0", {"pow": ["n", 2]}, "kernels[0].grid[0] must be a size expression"),
    (_elementwise, "kernels.0.grid.0", {"add": ["n", 1], "mul": ["n", 2]}, "kernels[0].grid[0] must be a size "
                                                                           "expression"),
    (_elementwise, "kernels.0.grid.0", {"ceildiv": ["n", 1.5]}, "kernels[0].grid[0].ceildiv[1] must be an integer "
                                                                "or a size expression"),
    (_elementwise, "kernels.0.grid.0", {"ceildiv": ["n", 0]}, "kernels[0].grid[0].ceildiv[1] (0) ranges over 0..0: "
                                                              "a divisor must be at least 1"),
    (_elementwise, "kernels.0.grid.0", {"floordiv": [1000, {"sub": ["n", 1]}]},
     "kernels[0].grid[0].floordiv[1] ((n - 1)) ranges over 0..999: a divisor must be at least 1"),
    (_elementwise, "kernels.0.grid.0", _nested(40), "a size expression of more than 256 nodes or 32 levels"),
    (_elementwise, "kernels.0.grid.0", True, "kernels[0].grid[0] must be an integer or a size expression"),
    (_elementwise, "steps.0.args.2", {"size": "n", "of": 1}, 'steps[0].args[2] must be {"size": expression} and '
                                                             "nothing more"),
    (_elementwise, "steps.0.args.2", {"size": [1]}, "steps[0].args[2].size must be an integer or a size "
                                                    "expression"),
    # Sizes at the largest (and least) sizes of the ranges.
    (_two_kernels, "buffers.4.shape.1", 2**31, "buffers[4] of shape [(batch * seq), 2147483648] is over "
                                               "1099511627776 bytes at the largest sizes ([320, 2147483648])"),
    (_elementwise, "buffers.1.shape.0", {"sub": ["n", 2]}, "buffers[1].shape[0] ((n - 2)) ranges over -1..998: a dim "
                                                           "cannot be negative"),
    (_elementwise, "kernels.0.grid", [1, {"mul": ["n", 100]}, 1],
     "kernel scale (kernels[0]) has an invalid launch shape (1, (n * 100), 1) x (128, 1, 1), "
     "(1, 100000, 1) x (128, 1, 1) at the largest sizes: the grid is over sm_80's max_grid"),
    (_elementwise, "kernels.0.block", [{"mul": ["n", 2]}, 1, 1],
     "(2000, 1, 1) at the largest sizes: 2000 threads, over sm_80's max_threads_per_block 1024"),
    (_elementwise, "kernels.0.grid.0", {"floordiv": ["n", 128]}, "(0, 1, 1) x (128, 1, 1) at the least sizes: every "
                                                                 "dimension must be at least 1"),
    (_elementwise, "steps.0.args.2", {"size": {"sub": ["n", 2]}},
     "steps[0].args[2] ((n - 2)) ranges over -1..998, which kernel scale's .u64 parameter cannot hold"),
    # What intervals cannot bound, at the least and the largest sizes.
    (_two_kernels, "buffers.5.shape", [{"add": [ROWS, 1]}], "with batch = 1, seq = 1: view 5 of shape [2] has 8 "
                                                            "bytes, buffer 2 of shape [1, 1] 4: a view must alias a "
                                                            "buffer of the same size"),
    (_two_kernels, "buffers.3.shape", ["batch", "seq", 32], "the output buffers do not match the signature"),
    (_two_kernels, "outputs.1.shape.2", {"mul": [32, {"min": ["seq", 2]}]},
     "with batch = 1, seq = 1: step 3 copies buffer 4 (256 bytes) to buffer 3 (128 bytes): a copy is between "
     "buffers of one size"),
])
def test_hostile_symbolic_manifests_are_refused_naming_the_field(tmp_path, base, path, value, message):
    manifest = _edited(base, path, value)
    if path == "outputs.1.shape.2":  # the output's signature and its buffer together
        manifest["buffers"][3]["shape"][2] = value
    assert message in _refusal(tmp_path, manifest)


def test_a_constant_of_symbolic_shape_is_refused(tmp_path):
    manifest = _two_kernels()
    manifest["buffers"].append({**_buffer(6, "constant", ["seq"]), "file": "constants/6.npy"})
    case = _save(tmp_path / "constant", manifest)
    (case / "constants").mkdir()
    np.save(case / "constants" / "6.npy", np.zeros(3, np.float32))
    with pytest.raises(tessel.RuntimeError, match=r"buffers\[6\].shape must be static for a constant \(its .npy has "
                                                  r"one shape\), not \[seq\]"):
        runtime.read(case)


def test_size_arguments_must_meet_a_64_bit_integer_parameter(tmp_path):
    pointer = ".param .u64 .ptr .global .align 4 n"
    assert ("steps[0].args[2] passes size n to kernel scale, whose PTX declares '.param .u64 .ptr .global .align 4 "
            "n', a pointer, not a 64-bit integer (.u64 or .s64)") in _refusal(
        tmp_path, _elementwise(), {"kernels/0-scale.ptx": _scale_ptx(n=pointer)})
    assert ("steps[0].args[2] passes size n to kernel scale, whose PTX declares '.param .u32 n', not a 64-bit "
            "integer (.u64 or .s64)") in _refusal(tmp_path, _elementwise(),
                                                  {"kernels/0-scale.ptx": _scale_ptx(n=".param .u32 n")})
    # And a buffer where the kernel takes a size is the pointer check's error, as before.
    text = _refusal(tmp_path, _edited(_elementwise, "steps.0.args", [0, 1, {"size": "n"}, 0]))
    assert "step 0 passes 4 arguments to kernel scale, whose PTX takes 3" in text
    # An .s64 parameter takes a size that may be negative.
    manifest = _edited(_elementwise, "steps.0.args.2", {"size": {"sub": ["n", 2]}})
    signed = _scale_ptx(n=".param .s64 n").replace("ld.param.u64 %rd3", "ld.param.s64 %rd3")
    case = _save(tmp_path / "signed", manifest, {"kernels/0-scale.ptx": signed})
    assert runtime.read(case).sized({"n": 1}).arguments[0][2] == SizeValue(-1, True)


REPLACEMENTS = [None, "n", "batch", "", -1, 0, 2**64, 1.5, True, [], {}, [1, 2], {"mul": ["batch", 0]},
                {"ceildiv": ["seq", "batch"]}, {"size": "seq"}, {"min": 1, "max": 2, "multiple_of": 1}]


def _nodes(value, path=()):
    """Every (path, value) below ``value`` in a JSON tree."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield path + (key,), child
        yield from _nodes(child, path + (key,))


def test_mutated_symbolic_manifests_load_or_fail_with_a_tessel_error(tmp_path):
    # Every field but the target description replaced by values of every type and range: reading the
    # artifact and dry-running it at a few sizes either works, or is a tessel.RuntimeError (the manifest)
    # or a ValueError (the call's sizes against a mutated signature), never another exception.
    manifest = _two_kernels()
    _save(tmp_path, manifest)
    outcomes = {"ok": 0, "refused": 0, "value": 0}
    for path, value in _nodes({k: v for k, v in manifest.items() if k != "target_description"}):
        for replacement in REPLACEMENTS + ([value + 1, value - 1] if type(value) is int else []):
            mutated = copy.deepcopy(manifest)
            node = mutated
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = replacement
            (tmp_path / "manifest.json").write_text(json.dumps(mutated))
            try:
                executable = tessel.load(tmp_path, dry=True)
                for batch, seq in ((1, 1), (3, 5)):
                    executable(_x(batch, seq, ROW), _x(batch, seq))
                executable.close()
                outcomes["ok"] += 1
            except tessel.RuntimeError:
                outcomes["refused"] += 1
            except ValueError:
                outcomes["value"] += 1
    print(outcomes)
    assert outcomes["refused"] > 500 and outcomes["ok"] > 0, outcomes


class _Result:
    CUDA_SUCCESS = 0


class _FakeCu:
    """What CudaDriver.launch uses of cuda.bindings.driver, recording each
    launch's parameters as the driver would read them: an array of
    addresses, each of an 8-byte value."""

    CUresult = _Result

    def __init__(self):
        self.launches = []

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        count = 4
        addresses = (ctypes.c_void_p * count).from_address(params)
        self.launches.append(((gx, gy, gz), (bx, by, bz),
                              [ctypes.c_uint64.from_address(a).value for a in addresses[:count]]))
        return (0,)


def test_the_cuda_driver_passes_sizes_as_64_bit_parameters():
    from tessel.runtime.cuda_driver import CudaDriver, _parameter

    assert isinstance(_parameter(SizeValue(-1, True)), ctypes.c_int64)
    assert isinstance(_parameter(SizeValue(5, False)), ctypes.c_uint64)
    assert isinstance(_parameter(1 << 40), ctypes.c_uint64)
    with pytest.raises(tessel.RuntimeError, match=r"a kernel parameter of type .u64 cannot hold -1"):
        _parameter(SizeValue(-1, False))
    with pytest.raises(tessel.RuntimeError, match=r"of type .s64 cannot hold 9223372036854775808"):
        _parameter(SizeValue(1 << 63, True))
    driver = object.__new__(CudaDriver)  # no GPU here: the launch's packing alone, against a fake driver API
    driver._cu, driver.stream = _FakeCu(), None
    kernel = runtime.artifact.KernelInfo("rowsum", ROWSUM, (3, 1, 1), (64, 1, 1), 0)
    driver.launch("function", kernel, [0x7000_0000, 0x7000_1000, 0x7000_2000, SizeValue(-2, True)])
    assert driver._cu.launches == [((3, 1, 1), (64, 1, 1), [0x7000_0000, 0x7000_1000, 0x7000_2000, 2**64 - 2])]
