"""The persistent compile cache (tessel.cache): across processes, under
concurrent compiles, after a writer killed mid-write, with damaged or
foreign entries, bounded in size, and for both backends."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import ops
from tessel.cache import MAGIC, CompileCache, key, pack, unpack

# A small module whose compile has a weight (a constant) and two kernels.
PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np, tessel
    from tessel import ops

    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    w = (np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 64) * scale
    module = tessel.trace(lambda x: ops.softmax(ops.relu(x @ w), axis=-1),
                          tessel.TensorSpec((4, 8), np.float32))
    exe = tessel.compile(module, target="cpu")
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    h = np.maximum(x @ w, 0)
    e = np.exp(h - h.max(-1, keepdims=True))
    error = float(np.abs(exe(x) - e / e.sum(-1, keepdims=True)).max())
    print(json.dumps({"cache": exe.cache, "stages": sorted(exe.stage_seconds), "error": error}))
""")


def _compile_in_process(folder: Path, *args: str) -> dict:
    run = subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True,
                         env={**os.environ, "TESSEL_CACHE_DIR": str(folder)}, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_a_second_process_links_the_cached_code_and_makes_none(tmp_path):
    first = _compile_in_process(tmp_path)
    assert first["cache"] == "miss" and "jit" in first["stages"] and first["error"] < 1e-5
    second = _compile_in_process(tmp_path)
    # No stage ran: not the passes, not LLVM.
    assert second == {"cache": "hit", "stages": ["cache"], "error": second["error"]}
    assert second["error"] < 1e-5
    other_weights = _compile_in_process(tmp_path, "2.0")
    assert other_weights["cache"] == "miss" and other_weights["error"] < 1e-5
    assert len(_entries(tmp_path)) == 2


def test_concurrent_compiles_of_one_module_share_one_whole_entry(tmp_path):
    env = {**os.environ, "TESSEL_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env) for _ in range(3)]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        results.append(json.loads(out.splitlines()[-1]))
    assert all(r["error"] < 1e-5 and r["cache"] in ("hit", "miss") for r in results)
    (entry,) = _entries(tmp_path)  # no temporaries left, one entry
    assert _compile_in_process(tmp_path)["cache"] == "hit"
    assert entry.read_bytes().startswith(MAGIC)


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from tessel.cache import CompileCache
    cache = CompileCache(sys.argv[1])
    where = sys.argv[2]
    if where == "before-rename":
        os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
    else:  # half the entry written, then killed
        real_fdopen = os.fdopen
        class Half:
            def __init__(self, f): self.f = f
            def __enter__(self): return self
            def __exit__(self, *a): return False
            def write(self, data):
                self.f.write(data[: len(data) // 2]); self.f.flush()
                os.kill(os.getpid(), signal.SIGKILL)
        os.fdopen = lambda *a, **k: Half(real_fdopen(*a, **k))
    cache.put("cpu", sys.argv[3], b"x" * 100000)
""")


@pytest.mark.parametrize("where", ["before-rename", "mid-write"])
def test_a_writer_killed_mid_write_leaves_no_entry(tmp_path, where):
    k = key("killed", where)
    run = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path), where, k], timeout=120)
    assert run.returncode == -signal.SIGKILL
    (temporary,) = _entries(tmp_path)
    assert temporary.name.endswith(".tmp")
    cache = CompileCache(tmp_path)
    assert cache.get("cpu", k) is None
    assert cache.info().entries == {}
    # A later write stores the entry; the killed writer's file goes once it is stale.
    os.utime(temporary, (0, 0))
    cache.put("cpu", k, b"payload")
    assert cache.get("cpu", k) == b"payload"
    assert not temporary.exists()


def test_a_damaged_or_foreign_entry_is_a_miss_and_is_removed(tmp_path):
    cache = CompileCache(tmp_path)
    a, b = key("a"), key("b")
    cache.put("cpu", a, b"payload of a")
    path_a = tmp_path / "cpu" / a[:2] / a
    data = path_a.read_bytes()
    # Copied under another key: the digest covers the key.
    path_b = tmp_path / "cpu" / b[:2] / b
    path_b.parent.mkdir(parents=True, exist_ok=True)
    path_b.write_bytes(data)
    assert cache.get("cpu", b) is None and not path_b.exists()
    for damaged in (data[:-1], data[:-1] + bytes([data[-1] ^ 1]), b"", b"not an entry at all"):
        path_a.write_bytes(damaged)
        assert cache.get("cpu", a) is None and not path_a.exists()


def test_a_damaged_entry_is_rebuilt_by_the_next_compile(tmp_path):
    assert _compile_in_process(tmp_path)["cache"] == "miss"
    (entry,) = _entries(tmp_path)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    rebuilt = _compile_in_process(tmp_path)
    assert rebuilt["cache"] == "miss" and rebuilt["error"] < 1e-5
    assert _compile_in_process(tmp_path)["cache"] == "hit"


def _weight(scale: float = 1.0) -> np.ndarray:
    return np.arange(32, dtype=np.float32).reshape(8, 4) * scale


def _module(scale: float = 1.0):
    w = _weight(scale)
    return tessel.trace(lambda x: ops.relu(x @ w), tessel.TensorSpec((2, 8), np.float32))


def test_an_entry_whose_payload_does_not_link_warns_and_compiles_again(tmp_path):
    cache = CompileCache(tmp_path)
    exe = tessel.compile(_module(), cache=cache)
    assert exe.cache == "miss"
    # A whole entry (right digest) whose objects are not objects.
    cache.put("cpu", exe.cache_key, pack({"entry": exe.name, "symbols": []}, [b"\x7fELF not really"]))
    with pytest.warns(UserWarning, match="is unusable"):
        again = tessel.compile(_module(), cache=cache)
    assert again.cache == "miss"
    np.testing.assert_array_equal(again(np.ones((2, 8), np.float32)), np.ones((2, 8), np.float32) @ _weight())
    assert tessel.compile(_module(), cache=cache).cache == "hit"


def test_the_folder_keeps_to_its_size_dropping_the_least_recently_used(tmp_path):
    cache = CompileCache(tmp_path, max_bytes=3 * 1100)
    keys = [key(str(i)) for i in range(4)]
    for i, k in enumerate(keys[:3]):
        cache.put("cpu", k, bytes(1000))
        os.utime(tmp_path / "cpu" / k[:2] / k, (1000 + i, 1000 + i))
    assert cache.get("cpu", keys[0]) is not None  # used: now the most recent
    cache.put("cpu", keys[3], bytes(1000))
    assert [cache.get("cpu", k) is not None for k in keys] == [True, False, True, True]
    assert sum(cache.info().bytes.values()) <= cache.max_bytes


def test_an_unwritable_folder_warns_and_the_compile_goes_on(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    with pytest.warns(UserWarning, match="cannot store an entry"):
        exe = tessel.compile(_module(), cache=CompileCache(blocked / "cache"))
    np.testing.assert_array_equal(exe(np.ones((2, 8), np.float32)), np.ones((2, 8), np.float32) @ _weight())


def test_debugging_a_compile_does_not_use_the_cache(tmp_path, capfd):
    cache = CompileCache(tmp_path)
    tessel.compile(_module(), cache=cache)
    exe = tessel.compile(_module(), cache=cache, timing=True)
    assert exe.cache == "off" and "jit" in exe.stage_seconds
    assert tessel.compile(_module(), cache=False).cache == "off"


def test_the_cuda_artifact_comes_back_whole(tmp_path):
    cache = CompileCache(tmp_path)
    made = tessel.compile(_module(), target="cuda:sm_90", cache=cache)
    hit = tessel.compile(_module(), target="cuda:sm_90", cache=cache)
    assert (made.cache, hit.cache, list(hit.stage_seconds)) == ("miss", "hit", ["cache"])
    assert hit.manifest() == made.manifest() and len(made.constants) == 1
    assert [k.ptx for k in hit.kernels] == [k.ptx for k in made.kernels]
    assert all(np.array_equal(hit.constants[i], made.constants[i]) for i in made.constants)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    np.testing.assert_allclose(hit.emulate()(x), np.maximum(x @ _weight(), 0), rtol=1e-6)
    other = tessel.compile(_module(2.0), target="cuda:sm_90", cache=cache)
    assert other.cache == "miss" and other.cache_key != made.cache_key


def test_pack_round_trips_and_refuses_what_it_did_not_make():
    assert unpack(pack({"a": [1]}, [b"", b"xyz"])) == ({"a": [1]}, [b"", b"xyz"])
    for junk in (b"", b"\x01", pack({}, [b"x"])[:-1], pack({}, []) + b"extra"):
        with pytest.raises(ValueError, match="not a packed payload"):
            unpack(junk)


def test_the_command_line_shows_and_empties_the_cache(tmp_path):
    env = {**os.environ, "TESSEL_CACHE_DIR": str(tmp_path)}
    CompileCache(tmp_path).put("cpu", key("x"), bytes(2048))

    def tessel_cache(action: str) -> str:
        run = subprocess.run([sys.executable, "-m", "tessel.cli", "cache", action], capture_output=True,
                             text=True, env=env, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert f"{tmp_path}: 1 entries" in tessel_cache("info") and "cpu: 1 entries, 2.1 KiB" in tessel_cache("info")
    assert tessel_cache("clear") == f"removed 1 entries from {tmp_path}\n"
    assert f"{tmp_path}: 0 entries" in tessel_cache("info")


def test_weights_held_as_resources_are_part_of_the_key(tmp_path):
    # A dense_resource constant's values live outside the op, in the
    # module's resources: two modules differing only there are two entries.
    text = textwrap.dedent("""
        func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
          %c = graph.constant dense_resource<blob> : tensor<8xf32>
          %0 = graph.add %x, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
          return %0 : tensor<8xf32>
        }
    """)
    cache = CompileCache(tmp_path)
    for scale in (1.0, 2.0):
        values = np.arange(8, dtype=np.float32) * scale
        blob = "0x04000000" + values.tobytes().hex()
        module = tessel.parse(text + f'{{-# dialect_resources: {{ builtin: {{ blob: "{blob}" }} }} #-}}')
        exe = tessel.compile(module, cache=cache)
        assert exe.cache == "miss"
        np.testing.assert_array_equal(exe(np.zeros(8, np.float32)), values)
