"""The PTX emulator against another compiler: Triton's kernels, written in
the style of its tutorials, compiled for sm_80 and sm_90a without a GPU as
``triton.jit`` compiles them at launch (pointers and sizes marked
divisible by 16, unit strides as constants, so that matmuls are
pipelined), run on the emulator and compared with numpy. Triton's PTX runs
correctly on real GPUs, so this checks the emulator independently of
tessel's code generator; Hopper's kernels broken on purpose (a wait
dropped, a descriptor or a tensor map changed) must fail.
"""

import functools
import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

from tessel.dtypes import BFLOAT16
from tessel.runtime import emulator

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

RNG = np.random.default_rng(0)
BENCH_GPU = Path(__file__).resolve().parents[2] / "bench" / "gpu"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.).to(tl.float32)
        x = tl.where(cols < n_cols, x - mean, 0.)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.).to(tl.float32)
        tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)


@functools.cache
def peer_matmul_kernel():
    """The Triton matmul that bench/gpu/run.py times as tessel's peer (the
    tutorial's, grouped tile order; its jit function under the autotuner):
    one kernel that both the emulator's checks here and the GPU bench use."""
    spec = importlib.util.spec_from_file_location("bench_gpu_run", BENCH_GPU / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    return run._triton_kernel().fn


def _compile(fn, signature, constexprs, *, capability=80, aligned=(), **options):
    """Triton's PTX for ``fn``, specialized as triton.jit does at launch."""
    source = ASTSource(fn=fn, signature={**signature, **{k: "constexpr" for k in constexprs}},
                       constexprs=constexprs,
                       attrs={(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned})
    return triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)


def _launch(compiled, grid, args, ptx: str | None = None):
    """Runs ``compiled`` (or its PTX edited, ``ptx``) on an emulator of its
    chip. Triton's two hidden trailing pointers are its global and profile
    scratch, the sizes its metadata gives per CTA (null when none: the TMA
    kernels build their tensor maps in the global one)."""
    gpu = emulator.Device(f"sm_{compiled.metadata.target.arch}")
    buffers = [gpu.upload(a) if isinstance(a, np.ndarray) else a for a in args]
    scratch = [gpu.alloc(size * math.prod(grid)) if size else None
               for size in (getattr(compiled.metadata, f"{kind}_scratch_size", 0) for kind in ("global", "profile"))]
    gpu.load_ptx(ptx or compiled.asm["ptx"]).launch(compiled.metadata.name, grid=grid,
                                                    block=(32 * compiled.metadata.num_warps, 1, 1),
                                                    args=buffers + scratch, shared_bytes=compiled.metadata.shared)
    return gpu, buffers


def test_vector_add():
    n = 3000
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    compiled = _compile(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 256}, num_warps=4)
    gpu, buffers = _launch(compiled, (-(-n // 256), 1, 1), [x, y, np.zeros(n, np.float32), n])
    np.testing.assert_array_equal(gpu.download(buffers[2], np.float32, (n,)), x + y)


def test_fused_row_softmax():
    rows, cols = 6, 300
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    compiled = _compile(softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                                         "out_stride": "i32", "n_cols": "i32"}, {"BLOCK": 512}, num_warps=4)
    assert "shfl.sync.bfly.b32" in compiled.asm["ptx"] and "bar.sync" in compiled.asm["ptx"]
    gpu, buffers = _launch(compiled, (rows, 1, 1), [np.zeros_like(x), x, cols, cols, cols])
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(gpu.download(buffers[0], np.float32, x.shape), want / want.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


def test_layer_norm():
    rows, cols = 4, 700
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w, b = RNG.standard_normal(cols).astype(np.float32), RNG.standard_normal(cols).astype(np.float32)
    compiled = _compile(layer_norm_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32",
                                            "stride": "i32", "n_cols": "i32", "eps": "fp32"}, {"BLOCK": 256},
                        num_warps=4)
    gpu, buffers = _launch(compiled, (rows, 1, 1), [x, np.zeros_like(x), w, b, cols, cols, 1e-5])
    mean = x.mean(1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(gpu.download(buffers[1], np.float32, x.shape), want, rtol=1e-5, atol=1e-5)


# Pointers, sizes and row strides (unit column strides are constants).
_MATMUL_SIGNATURE = {"a": "*{t}", "b": "*{t}", "c": "*{t}", "M": "i32", "N": "i32", "K": "i32",
                     "sam": "i32", "sbk": "i32", "scm": "i32"}


@functools.cache
def _matmul(dtype: str, capability: int, num_warps: int = 4, blocks: tuple[int, int, int] = (64, 64, 32)):
    block_m, block_n, block_k = blocks
    return _compile(peer_matmul_kernel(), {k: v.format(t=dtype) for k, v in _MATMUL_SIGNATURE.items()},
                    {"sak": 1, "sbn": 1, "scn": 1, "BM": block_m, "BN": block_n, "BK": block_k, "GROUP": 8},
                    capability=capability, aligned=list(_MATMUL_SIGNATURE), num_warps=num_warps, num_stages=3)


NUMPY_TYPES = {"fp16": np.float16, "bf16": BFLOAT16}


def _check_matmul(got: np.ndarray, a: np.ndarray, b: np.ndarray, dtype: str) -> None:
    """One rounding of the f32 accumulator to the output type."""
    np.testing.assert_allclose(got.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               rtol=2 ** -7 if dtype == "bf16" else 2 ** -10, atol=1e-2)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_pipelined_tensor_core_matmul(dtype):
    compiled = _matmul(dtype, 80)
    ptx = compiled.asm["ptx"]
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    for instruction in ("cp.async.cg.shared.global", "cp.async.wait_group", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                        f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx_type}.{ptx_type}.f32"):
        assert instruction in ptx, instruction
    numpy_type = NUMPY_TYPES[dtype]
    m, n, k = 128, 192, 96  # several K steps through the three-stage ring, and a grouped pid order
    a, b = RNG.standard_normal((m, k)).astype(numpy_type), RNG.standard_normal((k, n)).astype(numpy_type)
    gpu, buffers = _launch(compiled, ((m // 64) * (n // 64), 1, 1), [a, b, np.zeros((m, n), numpy_type), m, n, k,
                                                                     k, n, n])
    _check_matmul(gpu.download(buffers[2], numpy_type, (m, n)), a, b, dtype)


# Hopper: tl.dot compiled for capability 90 is a wgmma from shared memory (A K-major with a 64B or 128B swizzle,
# B N-major with 128B) fed by the cp.async ring; 8 warps are two warpgroups, each with its 64 rows of the tile.
HOPPER = {4: ((64, 64, 32), (128, 128, 192)), 8: ((128, 128, 64), (256, 128, 256))}  # blocks, problem


def _hopper_matmul(dtype: str, num_warps: int, ptx: str | None = None) -> tuple[np.ndarray, ...]:
    """(result, A, B) of the sm_90a tl.dot matmul (its PTX edited: ``ptx``)."""
    blocks, (m, n, k) = HOPPER[num_warps]
    compiled = _matmul(dtype, 90, num_warps, blocks)
    numpy_type = NUMPY_TYPES[dtype]
    a, b = RNG.standard_normal((m, k)).astype(numpy_type), RNG.standard_normal((k, n)).astype(numpy_type)
    grid = ((m // blocks[0]) * (n // blocks[1]), 1, 1)
    gpu, buffers = _launch(compiled, grid, [a, b, np.zeros((m, n), numpy_type), m, n, k, k, n, n], ptx)
    return gpu.download(buffers[2], numpy_type, (m, n)), a, b


@pytest.mark.parametrize("dtype,num_warps", [("fp16", 4), ("bf16", 4), ("fp16", 8), ("bf16", 8)])
def test_hopper_matmul_runs_wgmma_from_shared_memory(dtype, num_warps):
    blocks, _ = HOPPER[num_warps]
    ptx = _matmul(dtype, 90, num_warps, blocks).asm["ptx"]
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert ".target sm_90a" in ptx
    for instruction in ("cp.async.cg.shared.global", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                        "wgmma.wait_group.sync.aligned 1", f"k16.f32.{ptx_type}.{ptx_type}"):
        assert instruction in ptx, instruction
    _check_matmul(*_hopper_matmul(dtype, num_warps), dtype)


@triton.jit
def descriptor_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


@functools.cache
def _descriptor_matmul(dtype: str, num_warps: int):
    return _compile(descriptor_matmul_kernel, {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}",
                                               "M": "i32", "N": "i32", "K": "i32"},
                    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, capability=90,
                    aligned=["a_ptr", "b_ptr", "c_ptr"], num_warps=num_warps, num_stages=3)


def _run_descriptor_matmul(dtype: str, num_warps: int, shape: tuple[int, int, int], ptx: str | None = None):
    """(result, A, B) of the tensor-descriptor matmul (its PTX edited: ``ptx``)."""
    m, n, k = shape
    numpy_type = NUMPY_TYPES[dtype]
    a, b = RNG.standard_normal((m, k)).astype(numpy_type), RNG.standard_normal((k, n)).astype(numpy_type)
    gpu, buffers = _launch(_descriptor_matmul(dtype, num_warps), (-(-m // 64), -(-n // 64), 1),
                           [a, b, np.zeros((m, n), numpy_type), m, n, k], ptx)
    return gpu.download(buffers[2], numpy_type, (m, n)), a, b


@pytest.mark.parametrize("dtype,num_warps,shape", [("fp16", 4, (128, 128, 64)), ("bf16", 4, (96, 80, 72)),
                                                   ("fp16", 8, (96, 80, 72))])
def test_tensor_descriptor_matmul(dtype, num_warps, shape):
    # Device-side tensor maps: each CTA builds three from zeroed shared memory with tensormap.replace, copies
    # them to its 384 bytes of global scratch (tensormap.cp_fenceproxy), then a TMA + mbarrier ring feeds the
    # wgmma and stmatrix and a tensor store write C. The ragged shape has boxes past the tensor's edges:
    # filled with zeros when loaded, clipped when stored.
    compiled = _descriptor_matmul(dtype, num_warps)
    ptx = compiled.asm["ptx"]
    assert compiled.metadata.global_scratch_size >= 3 * 128  # three maps (Triton 3.8: exactly)
    for instruction in ("tensormap.replace.tile.global_address.shared::cta.b1024.b64", "tensormap.cp_fenceproxy",
                        "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes",
                        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "mbarrier.try_wait.parity",
                        "stmatrix.sync.aligned.m8n8.x4.shared.b16", "wgmma.mma_async"):
        assert instruction in ptx, instruction
    _check_matmul(*_run_descriptor_matmul(dtype, num_warps, shape), dtype)


def _edit(ptx: str, pattern: str, replace, count: int = 1) -> str:
    """``ptx`` with the first ``count`` lines matching ``pattern`` replaced by ``replace(line)``."""
    lines, done = ptx.splitlines(), 0
    for i, line in enumerate(lines):
        if done < count and re.search(pattern, line):
            lines[i], done = replace(line), done + 1
    assert done == count, f"the mutation found {done} of {count} lines matching {pattern}"
    return "\n".join(lines) + "\n"


def _descriptor(ptx: str, operand: int, change) -> str:
    """``ptx`` with the constant part of the first wgmma's descriptor of A (``operand`` 0) or B (1) changed."""
    mma = next(line for line in ptx.splitlines() if "wgmma.mma_async" in line)
    register = re.search(r"\}, (%rd\d+), (%rd\d+),", mma).group(1 + operand)

    def replace(line):
        constant = int(line.split(",")[-1].strip(" ;"))
        return line.replace(str(constant), str((change(constant % 2 ** 64) + 2 ** 63) % 2 ** 64 - 2 ** 63))
    return _edit(ptx, rf"or.b64\s+{register},", replace)


def _flip_parity(ptx: str) -> str:
    """``ptx`` whose mbarrier wait (Triton's spin loop in a { } scope) waits on the other phase parity."""
    wait = re.search(r"mbarrier.try_wait.parity.shared::cta.b64 complete, \[%r\d+\], (%r\d+);", ptx)
    flipped = wait.group(0).replace(f"], {wait.group(1)};", "], flipped;")
    return ptx.replace(".reg .pred complete;", ".reg .pred complete;\n\t.reg .b32 flipped;", 1).replace(
        wait.group(0), f"xor.b32 flipped, {wait.group(1)}, 1;\n\t{flipped}")


def _assert_caught(run, message: str | None) -> None:
    """The broken kernel fails with ``message``, or (None) gives results numpy does not."""
    if message is None:
        got, a, b = run()
        with pytest.raises(AssertionError):
            _check_matmul(got, a, b, "fp16")
    else:
        with pytest.raises(emulator.EmulationError, match=message):
            run()


@pytest.mark.parametrize("mutation,message", [
    # The last wait_group dropped: the epilogue reads the accumulators in flight.
    (lambda p: _edit(p, r"wgmma.wait_group.sync.aligned 0;", lambda line: ""),
     r"\(cvt.rn.f16x2.f32\).*accesses %r\d+, an accumulator of the wgmma.mma_async at line \d+, still in flight"),
    # The loop's wait_group 1 dropped: a cp.async lands in a stage a wgmma in flight still reads.
    (lambda p: _edit(p, r"wgmma.wait_group.sync.aligned 1;", lambda line: ""),
     r"cp.async overwrites an operand of a wgmma.mma_async in flight"),
    # The fence before the wgmmas dropped: they read accumulators the initialisation wrote.
    (lambda p: _edit(p, r"wgmma.fence.sync.aligned;", lambda line: ""), "since its last wgmma.fence"),
    # The proxy fence dropped: the wgmmas (the async proxy) read the tiles cp.async wrote (the generic proxy).
    (lambda p: _edit(p, r"fence.proxy.async.shared::cta;", lambda line: ""),
     r"wgmma.mma_async's [AB] reads shared memory at shared address 0x[0-9a-f]+ that thread \(\d+, 0, 0\) wrote at "
     r"line \d+ \(cp.async.cg.shared.global\) through the generic proxy, with no fence.proxy.async between"),
    # B's descriptor one 128-byte row of the tile on: each k step multiplies the next rows of B.
    (lambda p: _descriptor(p, 1, lambda bits: bits + (128 >> 4)), None),
    # B's descriptor with the 64B swizzle, the data in 128B.
    (lambda p: _descriptor(p, 1, lambda bits: bits ^ 3 << 62), None),
])
def test_a_broken_hopper_matmul_is_caught(mutation, message):
    compiled = _matmul("fp16", 90, 4, HOPPER[4][0])
    _assert_caught(lambda: _hopper_matmul("fp16", 4, mutation(compiled.asm["ptx"])), message)


@pytest.mark.parametrize("mutation,message", [
    # No expect_tx: the arrival completes the phase before the copies land.
    (lambda p: _edit(p, r"mbarrier.arrive.expect_tx", lambda line: re.sub(
        r"arrive.expect_tx(.*), \d+;", r"arrive\1;", line), count=3),
     "reads a bulk-copy destination before its mbarrier phase completed"),
    # The consumer waits on the wrong phase parity: for the phase after the one its copies complete (they land
    # when issued here), which nothing completes.
    (lambda p: _flip_parity(p), "every thread waits on an mbarrier phase nothing can complete"),
    # The proxy fences dropped: the tensor store (the async proxy) reads the C tile stmatrix wrote.
    (lambda p: _edit(p, r"fence.proxy.async.shared::cta;", lambda line: "", count=2),
     r"cp.async.bulk source reads shared memory at shared address 0x[0-9a-f]+ that thread \(\d+, 0, 0\) wrote at "
     r"line \d+ \(stmatrix.sync.aligned.m8n8.x4.shared.b16\) through the generic proxy"),
    # A's tensor map with the 128B swizzle (A is written and read in 64B).
    (lambda p: _edit(p, r"tensormap.replace.tile.swizzle_mode.*0x2;", lambda line: line.replace("0x2", "0x3")),
     None),
])
def test_a_broken_tensor_descriptor_matmul_is_caught(mutation, message):
    ptx = _descriptor_matmul("fp16", 4).asm["ptx"]
    _assert_caught(lambda: _run_descriptor_matmul("fp16", 4, (128, 128, 64), mutation(ptx)), message)
