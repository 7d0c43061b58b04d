"""tessel's async runtime (python/runtime/AsyncRuntime.cpp): the ABI that
JIT-compiled parallel loops call, driven directly through ctypes, and
executables that use it from several threads and from a forked child."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

import numpy as np
import pytest

import tessel
from tessel import _tessel, ops

P, I64 = ctypes.c_void_p, ctypes.c_int64
Resume = ctypes.CFUNCTYPE(None, P)

SIGNATURES = {
    "mlirAsyncRuntimeAddRef": (None, P, I64),
    "mlirAsyncRuntimeDropRef": (None, P, I64),
    "mlirAsyncRuntimeCreateToken": (P,),
    "mlirAsyncRuntimeCreateValue": (P, I64),
    "mlirAsyncRuntimeCreateGroup": (P, I64),
    "mlirAsyncRuntimeAddTokenToGroup": (I64, P, P),
    "mlirAsyncRuntimeEmplaceToken": (None, P),
    "mlirAsyncRuntimeEmplaceValue": (None, P),
    "mlirAsyncRuntimeSetTokenError": (None, P),
    "mlirAsyncRuntimeSetValueError": (None, P),
    "mlirAsyncRuntimeIsTokenError": (ctypes.c_bool, P),
    "mlirAsyncRuntimeIsValueError": (ctypes.c_bool, P),
    "mlirAsyncRuntimeIsGroupError": (ctypes.c_bool, P),
    "mlirAsyncRuntimeAwaitToken": (None, P),
    "mlirAsyncRuntimeAwaitValue": (None, P),
    "mlirAsyncRuntimeAwaitAllInGroup": (None, P),
    "mlirAsyncRuntimeGetValueStorage": (P, P),
    "mlirAsyncRuntimeExecute": (None, P, Resume),
    "mlirAsyncRuntimeAwaitTokenAndExecute": (None, P, P, Resume),
    "mlirAsyncRuntimeAwaitValueAndExecute": (None, P, P, Resume),
    "mlirAsyncRuntimeAwaitAllInGroupAndExecute": (None, P, P, Resume),
    "mlirAsyncRuntimGetNumWorkerThreads": (I64,),
    # The compiled code's heap (BufferCache.cpp).
    "malloc": (P, ctypes.c_size_t),
    "calloc": (P, ctypes.c_size_t, ctypes.c_size_t),
    "aligned_alloc": (P, ctypes.c_size_t, ctypes.c_size_t),
    "free": (None, P),
}


class Runtime:
    """The runtime's functions as ctypes callables, by their names minus
    the ``mlirAsyncRuntime`` prefix."""

    def __init__(self) -> None:
        symbols = _tessel.async_runtime_symbols()
        assert set(symbols) == set(SIGNATURES)
        for name, (result, *args) in SIGNATURES.items():
            short = name.replace("mlirAsyncRuntime", "").replace("mlirAsyncRuntim", "")
            setattr(self, short, ctypes.CFUNCTYPE(result, *args)(symbols[name]))


@pytest.fixture(scope="module")
def rt() -> Runtime:
    return Runtime()


def test_tasks_run_on_workers_and_a_group_waits_for_all(rt):
    threads = rt.GetNumWorkerThreads()
    assert threads == len(os.sched_getaffinity(0))
    group = rt.CreateGroup(16)
    tokens = [rt.CreateToken() for _ in range(16)]
    assert [rt.AddTokenToGroup(t, group) for t in tokens] == list(range(16))
    ran, lock = [], threading.Lock()

    @Resume
    def task(handle):
        index = handle - 1  # a null handle would arrive as None
        try:
            time.sleep(0.002)
            with lock:
                ran.append((index, threading.get_ident()))
        finally:  # an exception here would be printed, and the await hang
            rt.EmplaceToken(tokens[index])

    for i in range(16):
        rt.Execute(i + 1, task)
    rt.AwaitAllInGroup(group)  # runs queued tasks itself meanwhile
    assert sorted(i for i, _ in ran) == list(range(16))
    if threads > 1:
        assert len({thread for _, thread in ran}) > 1
    assert not rt.IsGroupError(group)
    for t in tokens:
        assert not rt.IsTokenError(t)
        rt.DropRef(t, 1)
    rt.DropRef(group, 1)


def test_continuations_run_once_ready_and_errors_propagate(rt):
    resumed = []

    @Resume
    def resume(handle):
        resumed.append(handle)

    token, value, group = rt.CreateToken(), rt.CreateValue(8), rt.CreateGroup(2)
    rt.AddTokenToGroup(token, group)
    rt.AddTokenToGroup(value, group)
    rt.AwaitTokenAndExecute(token, 1, resume)
    rt.AwaitValueAndExecute(value, 2, resume)
    rt.AwaitAllInGroupAndExecute(group, 3, resume)
    assert resumed == []
    ctypes.c_int64.from_address(rt.GetValueStorage(value)).value = 42
    rt.EmplaceValue(value)
    assert resumed == [2]
    rt.SetTokenError(token)  # releases its awaiter and the group's
    assert sorted(resumed) == [1, 2, 3]
    assert rt.IsTokenError(token) and not rt.IsValueError(value) and rt.IsGroupError(group)
    rt.AwaitToken(token)  # ready: returns at once
    rt.AwaitValue(value)
    assert ctypes.c_int64.from_address(rt.GetValueStorage(value)).value == 42
    # Awaiting what is ready runs the continuation at once.
    rt.AwaitAllInGroupAndExecute(group, 4, resume)
    assert resumed[-1] == 4
    failed = rt.CreateValue(4)
    rt.SetValueError(failed)
    assert rt.IsValueError(failed)
    for obj in (token, value, group, failed):
        rt.DropRef(obj, 1)


def test_a_blocked_await_returns_when_another_thread_emplaces(rt):
    token = rt.CreateToken()
    rt.AddRef(token, 1)  # the other thread's
    emplacer = threading.Timer(0.05, lambda: (rt.EmplaceToken(token), rt.DropRef(token, 1)))
    emplacer.start()
    start = time.monotonic()
    rt.AwaitToken(token)
    assert time.monotonic() - start >= 0.04
    emplacer.join()
    rt.DropRef(token, 1)


def _parallel_exe():
    x = np.random.default_rng(0).standard_normal((512, 1024), dtype=np.float32)
    return x, tessel.compile(tessel.trace(lambda x: ops.softmax(x * 2.0, axis=-1), x))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(2.0 * x - (2.0 * x).max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_executables_run_from_several_threads_at_once():
    x, exe = _parallel_exe()
    expected = _softmax(x)
    errors: list[BaseException] = []

    def run(offset: float) -> None:
        try:
            for _ in range(20):
                np.testing.assert_allclose(exe(x + offset), expected, rtol=1e-5, atol=1e-6)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(float(i),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_parallel_loops_with_its_own_threads():
    x, exe = _parallel_exe()
    expected = _softmax(x)
    exe(x)  # the parent's workers exist before the fork
    pid = os.fork()
    if pid == 0:  # the child: no worker threads were copied into it
        ok = False
        try:
            ok = all(np.allclose(exe(x), expected, rtol=1e-5, atol=1e-6) for _ in range(5))
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_allclose(exe(x), expected, rtol=1e-5, atol=1e-6)


def test_buffer_addresses_are_the_data_pointers_and_other_objects_are_refused():
    """The CPU executables read an argument's address through the buffer
    protocol: that of a numpy array's data, of a view's first element too;
    an object with no buffer, or a strided one, is an error, not an address."""
    x = np.arange(16, dtype=np.float32)
    assert _tessel.buffer_address(x) == x.ctypes.data
    assert _tessel.buffer_address(x[4:]) == x.ctypes.data + 16
    with pytest.raises(TypeError):
        _tessel.buffer_address(object())
    with pytest.raises(ValueError, match="not C-contiguous"):
        _tessel.buffer_address(x[::2])


def test_freed_blocks_serve_the_next_allocation_they_hold(rt):
    _tessel.buffer_cache_release()  # none of the other tests' blocks
    assert _tessel.buffer_cache_bytes() == 0
    size = (3 << 20) + 12345  # over 256 KiB: rounded up to 64 KiB
    first = rt.malloc(size)
    assert first and first % 64 == 0
    ctypes.memset(first, 1, size)  # all of it usable
    second = rt.malloc(2 << 20)
    rt.free(first)
    kept = _tessel.buffer_cache_bytes()
    assert size <= kept < size + (64 << 10)  # rounded up to 64 KiB
    rt.free(second)
    # A block larger than any kept one, or under an eighth of the smallest
    # that holds it, is another block.
    bigger = rt.malloc(size + (1 << 20))
    small = rt.malloc(200 << 10)
    assert bigger not in (first, second) and small not in (first, second)
    # Others get the smallest kept block that holds them: the 2 MiB one for
    # 1.5 MiB, then the 3 MiB one for 1 MiB, and a kept block's capacity
    # stays its own.
    assert rt.aligned_alloc(64, 3 << 19) == second
    assert rt.malloc(1 << 20) == first
    for pointer in (first, second, bigger, small):
        rt.free(pointer)
    assert _tessel.buffer_cache_bytes() >= kept + (2 << 20)
    _tessel.buffer_cache_release()
    assert _tessel.buffer_cache_bytes() == 0


def test_a_thread_gets_back_the_block_it_freed_before_another_threads(rt):
    """Freed blocks are kept per thread: of two threads' blocks of one size,
    each takes its own again, though the other's was freed last."""
    size, got = 300_000, {}
    a_freed, b_freed = threading.Event(), threading.Event()
    a_allocated = threading.Event()

    def a():
        got["a"] = rt.malloc(size)
        a_allocated.set()
        assert b_freed.wait(10)
        rt.free(got["a"])
        a_freed.set()

    def b():
        assert a_allocated.wait(10)
        got["b"] = rt.malloc(size)
        rt.free(got["b"])
        b_freed.set()
        assert a_freed.wait(10)  # a's block is now the last freed
        got["b again"] = rt.malloc(size)
        rt.free(got["b again"])

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["a"] != got["b"]
    assert got["b again"] == got["b"]


def test_allocations_keep_their_alignment_and_small_blocks_go_back(rt):
    for alignment, size in [(16, 24), (64, 300_000), (4096, 1 << 20), (128, 100)]:
        pointer = rt.aligned_alloc(alignment, size)
        assert pointer and pointer % alignment == 0
        ctypes.memset(pointer, 0, size)
        rt.free(pointer)
    before = _tessel.buffer_cache_bytes()
    rt.free(rt.malloc(1000))
    assert _tessel.buffer_cache_bytes() == before
    assert not rt.aligned_alloc(48, 64)  # not a power of two, as C's
    rt.free(None)


def test_a_model_reuses_its_large_intermediates_across_calls():
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32) / 16
    exe = tessel.compile(tessel.trace(lambda x: ops.relu(ops.relu(x @ x) @ x), x), cache=False)
    expected = np.maximum(np.maximum(x @ x, 0) @ x, 0)
    _tessel.buffer_cache_release()
    np.testing.assert_allclose(exe(x), expected, rtol=1e-4, atol=1e-4)
    kept = _tessel.buffer_cache_bytes()
    assert kept >= 512 * 512 * 4  # the 1 MiB x @ x, freed
    for _ in range(10):
        np.testing.assert_allclose(exe(x), expected, rtol=1e-4, atol=1e-4)
    # Each call takes its blocks from the cache and gives them back. Tiles'
    # blocks, taken on two threads in either order, may take a block that
    # a later allocation then lacks (a block serves any size it holds), so
    # a few more may be made; calls do not each add theirs.
    assert kept <= _tessel.buffer_cache_bytes() <= 2 * kept


def test_calloc_zeroes_a_kept_block(rt):
    # LLVM turns a malloc whose block is then zeroed into calloc, which must
    # come from the same heap as the free that follows.
    size = 1 << 20
    first = rt.malloc(size)
    ctypes.memset(first, 0xAB, size)
    rt.free(first)
    again = rt.calloc(size // 4, 4)
    assert again == first  # the kept block, zeroed
    assert ctypes.string_at(again, size) == bytes(size)
    rt.free(again)
    assert not rt.calloc(1 << 62, 1 << 8)  # count x size overflows
