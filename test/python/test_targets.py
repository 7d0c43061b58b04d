"""Targets as data (tessel.targets): the table's facts, the host's, and a
target registered from this file that schedules, compiles and runs (on the
PTX emulator) like a built-in one."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import tessel
from tessel import ops, schedules, targets


def _cpuinfo_flags() -> set[str] | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return None


def test_the_table_holds_each_chip_once_with_its_limits():
    assert targets.names() == ("cpu", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a") + targets.names()[6:]
    assert targets.names("cuda")[:5] == ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
    a100, h100 = targets.get("sm_80"), targets.get("sm_90")
    assert (a100.multiprocessors, a100.shared_per_block, a100.ptx_features) == (108, 163 * 1024, "+ptx70")
    assert (h100.multiprocessors, h100.shared_per_block, h100.ptx_features) == (132, 227 * 1024, "+ptx80")
    assert h100.max_grid == (2**31 - 1, 65535, 65535) and h100.max_threads_per_block == 1024
    assert h100.has("tma") and not h100.has("wgmma") and targets.get("sm_90a").has("wgmma")
    assert not a100.has("tma") and a100.has("cp_async") and a100.has("mma_sync_bf16")
    assert (a100.chip, h100.chip, targets.get("sm_90a").chip) == ("sm_80", "sm_90", "sm_90a")
    assert targets.TargetDescription.from_json(h100.to_json()) == h100
    with pytest.raises(ValueError, match="unknown instruction 'wmma'"):
        h100.has("wmma")
    with pytest.raises(tessel.UnsupportedError, match="unknown target 'sm_75'; available: cpu, sm_80"):
        targets.get("sm_75")


def test_the_cpu_entry_describes_this_machine():
    cpu = targets.get("cpu")
    assert cpu.kind == "cpu" and cpu.cores == os.cpu_count()
    flags = _cpuinfo_flags()
    if flags is not None:
        import platform
        assert cpu.vector_bits == targets.vector_bits_of(flags, platform.machine())
        assert cpu.has("non_temporal_stores") == (platform.machine() in ("x86_64", "AMD64"))
    assert cpu.vector_bytes * 8 == cpu.vector_bits
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert all(size > 0 for size in cpu.cache_bytes[:2])


# An Ampere-class chip without tensor cores or cp.async, at most 256
# threads and 32 KiB of shared memory per block: what a new target is.
SMALL = dataclasses.replace(
    targets.get("sm_80"), name="test_small_sm80", multiprocessors=8, max_threads_per_block=256,
    static_shared_per_block=32 * 1024, shared_per_block=32 * 1024, shared_per_multiprocessor=64 * 1024,
    instructions=("ldmatrix",))


def _matmul_bias_relu(m: int, k: int, n: int):
    def fn(x, w, b):
        return ops.relu(ops.matmul(x, w) + b)
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16),
            rng.standard_normal(n).astype(np.float16))
    return fn, args


def test_a_registered_target_schedules_compiles_and_runs_within_its_limits():
    targets.register(SMALL)
    targets.register(SMALL)  # the same description again: nothing changes
    assert "test_small_sm80" in targets.names("cuda") and targets.get("test_small_sm80") == SMALL
    fn, args = _matmul_bias_relu(48, 64, 40)
    module = tessel.trace(fn, *args)
    scheduled = schedules.default_schedules(module, "test_small_sm80")
    text = str(scheduled)
    # No mma.sync on this chip: SIMT schedules, blocks of at most 256 threads.
    assert 'target "test_small_sm80"' in text and "loop.mma" not in text
    assert all(k.value <= 256 for k in schedules.knobs(scheduled) if k.name == "threads")
    artifact = tessel.compile(module, "cuda:test_small_sm80")
    assert artifact.manifest()["target_description"] == SMALL.to_json()
    assert all(np.prod(k.block) <= 256 for k in artifact.kernels)
    assert all(".target sm_80" in k.ptx for k in artifact.kernels)
    x, w, b = (a.astype(np.float32) for a in args)
    np.testing.assert_allclose(artifact.emulate()(*args).astype(np.float32), np.maximum(x @ w + b, 0),
                               rtol=2e-2, atol=2e-2)


def test_a_registered_target_refuses_what_it_lacks():
    targets.register(SMALL)
    fn, args = _matmul_bias_relu(64, 64, 64)
    scheduled = str(schedules.default_schedules(tessel.trace(fn, *args), "sm_80"))
    # sm_80's tensor-core schedule, pointed at the small chip.
    assert "loop.mma" in scheduled
    small = tessel.parse(scheduled.replace('target "sm_80"', 'target "test_small_sm80"'))
    with pytest.raises(tessel.CompileError, match="target 'test_small_sm80' has no mma_sync_f16 instructions"):
        tessel.compile(small, "cuda:test_small_sm80")


def test_registering_contradictory_facts_is_an_error():
    with pytest.raises(ValueError, match="a different target named 'sm_90' is already registered"):
        targets.register(dataclasses.replace(targets.get("sm_90"), multiprocessors=1))
    with pytest.raises(ValueError, match="max_threads_per_block must be a multiple of warp_size"):
        targets.register(dataclasses.replace(SMALL, name="test_bad_threads", max_threads_per_block=100))
    with pytest.raises(ValueError, match="shared memory must grow"):
        targets.register(dataclasses.replace(SMALL, name="test_bad_shared", shared_per_block=1024))
    with pytest.raises(ValueError, match="instructions must be names among"):
        targets.register(dataclasses.replace(SMALL, name="test_bad_isa", instructions=("wmma",)))
    assert "test_bad_threads" not in targets.names()


def test_a_schedule_naming_an_unknown_target_lists_the_known_ones():
    with pytest.raises(tessel.CompileError, match="unknown target 'sm_70'; expected one of: cpu, sm_80, sm_86"):
        tessel.parse('func.func @k() { return }\nloop.schedule @k target "sm_70" {\n}\n')
