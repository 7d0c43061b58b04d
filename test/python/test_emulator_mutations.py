"""The emulator's checks catch what ptxas does not: broken copies of
tessel's own kernels (an f16 GEMM with a multi-stage cp.async pipeline on
mma.sync, ones with a TMA + mbarrier ring on sm_90a's wgmma, with and
without a producer warpgroup, a softmax)
assemble without complaint, yet each fails on the emulator, with
an error or with results that no longer match numpy, while the unbroken
kernels pass.
"""

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import tessel
from tessel import ops, schedules
from tessel.backends.cuda import assemble

RNG = np.random.default_rng(0)


def _loop(lines: list[str], marker: str) -> range:
    """The lines of the first loop (a label and the branch back to it) that holds ``marker``: LLVM's
    block labels ($L__BB...), not those of inline PTX in braces (LAB_WAIT), which repeat."""
    for start, line in enumerate(lines):
        label = re.match(r"^(\$\w+):", line.strip())
        if label is None:
            continue
        for end in range(start + 1, len(lines)):
            if re.search(rf"bra(\.uni)?\s+{re.escape(label.group(1))};", lines[end]):
                if any(marker in lines[i] for i in range(start, end)):
                    return range(start, end + 1)
                break
    raise AssertionError(f"no loop with {marker}")


def _edit_ptx(edit: Callable[[list[str]], None]) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        [file] = (path / "kernels").glob("*.ptx")
        lines = file.read_text().splitlines()
        before = list(lines)
        edit(lines)
        assert lines != before, "the mutation changed nothing"
        file.write_text("\n".join(lines) + "\n")
    return mutate


def _rewrite_first(lines: list[str], indices, pattern: str, replace: Callable[[str], str | None]) -> None:
    """Rewrites the first of ``lines`` at ``indices`` (in their order) matching ``pattern`` (None deletes it)."""
    for i in indices:
        if re.search(pattern, lines[i]):
            new = replace(lines[i])
            if new is None:
                del lines[i]
            else:
                lines[i] = new
            return


def _in_loop(pattern: str, replace: Callable[[str], str | None], marker: str = "mma.sync"):
    """Rewrites the first line of the loop matching ``pattern`` (None deletes it)."""
    return _edit_ptx(lambda lines: _rewrite_first(lines, _loop(lines, marker), pattern, replace))


def _swap_a_fragment(lines):
    # The second line of the first mma.sync is its A vector {a0, a1, a2, a3}.
    i = next(i for i, line in enumerate(lines) if "mma.sync" in line) + 2
    registers = re.findall(r"%r\d+", lines[i])
    lines[i] = lines[i].replace(registers[0], "TMP").replace(registers[1], registers[0]).replace("TMP", registers[1])


def _drop_reduction_barrier(lines):
    # The barrier between the partial results' shared stores and their reads.
    load = next(i for i, line in enumerate(lines) if "ld.shared" in line)
    barrier = max(i for i in range(load) if "bar.sync" in lines[i])
    del lines[barrier]


def _manifest(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        manifest = json.loads((path / "manifest.json").read_text())
        edit(manifest["kernels"][0])
        (path / "manifest.json").write_text(json.dumps(manifest))
    return mutate


GEMM_MUTANTS = {
    "no_wait_in_loop": _in_loop(r"cp\.async\.wait_group", lambda line: None),
    "wait_one_group_less": _in_loop(r"cp\.async\.wait_group",
                                    lambda line: re.sub(r"(\d+);", lambda m: f"{int(m.group(1)) + 1};", line)),
    "no_barrier_in_loop": _in_loop(r"bar\.sync", lambda line: None),
    "b_ldmatrix_not_transposed": _in_loop(r"ldmatrix.*\.trans", lambda line: line.replace(".trans", "")),
    "a_fragment_registers_swapped": _edit_ptx(_swap_a_fragment),
    "grid_one_block_larger": _manifest(lambda k: k["grid"].__setitem__(0, k["grid"][0] + 1)),
    "half_the_dynamic_shared_memory": _manifest(lambda k: k.__setitem__("dynamic_shared_bytes",
                                                                        k["dynamic_shared_bytes"] // 2)),
}
SOFTMAX_MUTANTS = {"no_barrier_before_the_partials_are_read": _edit_ptx(_drop_reduction_barrier)}


def _descriptors(change: Callable[[int], int]) -> Callable[[Path], None]:
    """Changes every constant of the wgmma descriptors' fixed bits (the
    swizzle mode, bit 62, set) by ``change``."""
    def edit(lines):
        for i, line in enumerate(lines):
            lines[i] = re.sub(r"\b\d{19}\b",
                              lambda m: str(change(int(m.group()))) if int(m.group()) >> 62 == 1 else m.group(), line)
    return _edit_ptx(edit)


def _drop_last(pattern: str) -> Callable[[Path], None]:
    def edit(lines):
        del lines[max(i for i, line in enumerate(lines) if re.search(pattern, line))]
    return _edit_ptx(edit)


def _drop_first(pattern: str) -> Callable[[Path], None]:
    def edit(lines):
        del lines[min(i for i, line in enumerate(lines) if re.search(pattern, line))]
    return _edit_ptx(edit)


def _producers_last(pattern: str, replace: Callable[[str], str | None]) -> Callable[[Path], None]:
    """Rewrites (None deletes) the last line matching ``pattern`` of the producer's code: before a TMA
    copy with no wgmma between (LLVM unrolls the producer's short loop)."""
    def edit(lines):
        last_copy = max(i for i, line in enumerate(lines) if "cp.async.bulk.tensor" in line)
        producer = itertools.takewhile(lambda i: "wgmma" not in lines[i], reversed(range(last_copy)))
        _rewrite_first(lines, list(producer), pattern, replace)
    return _edit_ptx(edit)


def _wgmma_lines(replace: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(lines):
        for i, line in enumerate(lines):
            if "wgmma.mma_async" in line:
                lines[i] = replace(line)
    return _edit_ptx(edit)


def _flip_parity(line: str) -> str:
    """The try_wait of an mbarrier's other phase: its parity operand XORed with 1."""
    parity = re.search(r"\], (%r\d+),", line).group(1)
    return (".reg .b32 flipped; xor.b32 flipped, " + parity + ", 1; " +
            line.replace(f"], {parity},", "], flipped,"))


def _tensor_maps(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        manifest = json.loads((path / "manifest.json").read_text())
        for tensor_map in manifest["tensor_maps"]:
            edit(tensor_map)
        (path / "manifest.json").write_text(json.dumps(manifest))
    return mutate


# The warp-specialized wgmma GEMM (sm_90a's default): a producer warpgroup's
# loop starts TMA copies into stages the consumers released; the consumers'
# loop waits for full stages, runs wgmma and releases the stage before.
WGMMA_MUTANTS = {
    "no_wgmma_wait_in_loop": _in_loop(r"wgmma\.wait_group", lambda line: None, marker="wgmma.mma_async"),
    "no_wgmma_wait_before_the_epilogue": _drop_last(r"wgmma\.wait_group"),
    "no_wgmma_fence_before_the_first_wgmma": _drop_first(r"wgmma\.fence"),
    "consumers_wait_for_the_wrong_phase": _in_loop(r"mbarrier\.try_wait\.parity", _flip_parity,
                                                   marker="wgmma.mma_async"),
    "consumers_release_nothing": _in_loop(r"mbarrier\.arrive\.shared", lambda line: None, marker="wgmma.mma_async"),
    "producer_counts_no_bytes": _producers_last(r"mbarrier\.arrive\.expect_tx", lambda line: None),
    "producer_waits_for_the_wrong_release": _producers_last(r"mbarrier\.try_wait\.parity", _flip_parity),
    "tensor_maps_unswizzled": _tensor_maps(lambda m: m.__setitem__("swizzle", "none")),
    "b_not_transposed": _wgmma_lines(lambda line: re.sub(r"1;$", "0;", line)),
    "descriptors_without_swizzle": _descriptors(lambda bits: bits - (1 << 62)),
    "descriptors_one_row_of_128_bytes_off": _descriptors(lambda bits: bits + 8),
}
# Without a producer warpgroup: thread 0 starts the copies between the
# steps that every warpgroup (two here) computes.
ONE_ROLE_MUTANTS = {
    "no_expect_tx_in_loop": _in_loop(r"mbarrier\.arrive\.expect_tx", lambda line: None, marker="wgmma.mma_async"),
    "wrong_phase_parity": _in_loop(r"mbarrier\.try_wait\.parity", _flip_parity, marker="wgmma.mma_async"),
    "no_barrier_before_the_refill": _in_loop(r"bar\.sync", lambda line: None, marker="wgmma.mma_async"),
}
MUTANTS = {"gemm": GEMM_MUTANTS, "wgmma_gemm": WGMMA_MUTANTS, "wgmma_gemm_one_role": ONE_ROLE_MUTANTS,
           "softmax": SOFTMAX_MUTANTS}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Saved artifacts, with their inputs and expected outputs."""
    root = tmp_path_factory.mktemp("mutants")
    a, b = RNG.standard_normal((128, 256)).astype(np.float16), RNG.standard_normal((256, 128)).astype(np.float16)
    x = RNG.standard_normal((32, 300)).astype(np.float32)
    spec = tessel.TensorSpec
    gemm = tessel.compile(tessel.trace(lambda a, b: a @ b, spec(a.shape, np.float16), spec(b.shape, np.float16),
                                       name="gemm"), target="cuda:sm_80")
    softmax = tessel.compile(tessel.trace(lambda x: ops.softmax(x, axis=-1), spec(x.shape, np.float32),
                                          name="softmax"), target="cuda:sm_80")
    # Long enough a K that LLVM keeps the main loop a loop.
    a2, b2 = RNG.standard_normal((128, 1024)).astype(np.float16), RNG.standard_normal((1024, 128)).astype(np.float16)
    wgmma_module = tessel.trace(lambda a, b: a @ b, spec(a2.shape, np.float16), spec(b2.shape, np.float16),
                                name="gemm")
    wgmma = tessel.compile(wgmma_module, target="cuda:sm_90a")
    scheduled = schedules.default_schedules(wgmma_module, "sm_90a")
    knobs = {k.name: k.key for k in schedules.knobs(scheduled)}
    one_role = tessel.compile(schedules.with_knobs(scheduled, {knobs["producers"]: 0, knobs["block_m"]: 128}),
                              target="cuda:sm_90a")
    e = np.exp(x - x.max(-1, keepdims=True))
    return {
        "gemm": (gemm.save(root / "gemm"), (a, b), a.astype(np.float32) @ b.astype(np.float32), 2e-2),
        "wgmma_gemm": (wgmma.save(root / "wgmma_gemm"), (a2, b2), a2.astype(np.float32) @ b2.astype(np.float32),
                       5e-2),
        "wgmma_gemm_one_role": (one_role.save(root / "wgmma_gemm_one_role"), (a2, b2),
                                a2.astype(np.float32) @ b2.astype(np.float32), 5e-2),
        "softmax": (softmax.save(root / "softmax"), (x,), e / e.sum(-1, keepdims=True), 1e-5),
    }


def _outcome(path: Path, inputs, want, tolerance) -> str:
    try:
        got = tessel.load(path, emulate=True)(*inputs)
    except tessel.RuntimeError as e:
        return f"error: {e}"
    return "match" if np.allclose(got.astype(np.float32), want, rtol=tolerance, atol=tolerance) else "mismatch"


def test_the_pipeline_has_the_stages_the_mutants_break(kernels):
    ptx = next((kernels["gemm"][0] / "kernels").glob("*.ptx")).read_text()
    body = "\n".join(ptx.splitlines()[i] for i in _loop(ptx.splitlines(), "mma.sync"))
    assert re.search(r"cp\.async\.wait_group\s+[1-9]", body) and "bar.sync" in body and ".trans" in body
    assert ".extern .shared .align 1024 .b8 __dynamic_shmem__0[];" in ptx
    for name in ("wgmma_gemm", "wgmma_gemm_one_role"):
        ptx = next((kernels[name][0] / "kernels").glob("*.ptx")).read_text()
        lines = ptx.splitlines()
        consumer = "\n".join(lines[i] for i in _loop(lines, "wgmma.mma_async"))
        assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+1;", consumer) and "wgmma.fence" in consumer
        assert "mbarrier.try_wait.parity" in consumer and re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", ptx)
        # Specialized, consumers release stages and start no copies; else one loop does both, between barriers.
        assert ("mbarrier.arrive.shared" in consumer) == (name == "wgmma_gemm")
        assert ("cp.async.bulk.tensor" in consumer and "bar.sync" in consumer) == (name == "wgmma_gemm_one_role")
        manifest = json.loads((kernels[name][0] / "manifest.json").read_text())
        assert [m["swizzle"] for m in manifest["tensor_maps"]] == ["128B", "128B"]
        assert manifest["kernels"][0]["block"][0] == 256  # one warpgroup and a producer, or two


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_unbroken_kernels_match_numpy(kernels, name):
    assert _outcome(*kernels[name]) == "match"


@pytest.mark.parametrize("kernel,mutant", [(kernel, m) for kernel, mutants in MUTANTS.items() for m in mutants])
def test_a_broken_kernel_that_ptxas_accepts_fails_on_the_emulator(kernels, kernel, mutant, tmp_path):
    path, inputs, want, tolerance = kernels[kernel]
    broken = shutil.copytree(path, tmp_path / mutant)
    MUTANTS[kernel][mutant](broken)
    [ptx] = (broken / "kernels").glob("*.ptx")
    assemble(ptx.read_text(), "sm_90a" if kernel.startswith("wgmma") else "sm_80", mutant)  # raises if ptxas rejects it
    assert _outcome(broken, inputs, want, tolerance) != "match"
