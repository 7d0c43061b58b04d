"""Every snippet of README.md runs as written, in order, in one Python
namespace and one working folder (shell lines with ``.venv`` as the
installed environment), and the sample output of the main job has the
lines a real run prints. A fence preceded by ``<!-- readme-test: skip (why) -->``
is not run; one preceded by ``<!-- readme-test: needs-gpu -->`` runs only
with a GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FENCE = re.compile(r"(?:<!-- readme-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


def _blocks() -> list[tuple[str, str, str]]:
    """(mark, language, body) of each fenced block, in order."""
    return [(m["mark"] or "", m["lang"], m["body"]) for m in FENCE.finditer(README.read_text())]


def _has_gpu() -> bool:
    try:
        from tessel.runtime.cuda_driver import CudaDriver

        CudaDriver()
    except Exception:  # noqa: BLE001 - any failure means the GPU snippets cannot run
        return False
    return True


def test_every_readme_snippet_runs_in_order(tmp_path, monkeypatch):
    # The snippets run from the repository root, where .venv is.
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    monkeypatch.chdir(tmp_path)
    gpu = _has_gpu()
    namespace: dict = {"__name__": "__readme__"}
    ran = 0
    for mark, lang, body in _blocks():
        if mark.startswith("skip") or (mark == "needs-gpu" and not gpu) or lang not in ("python", "sh"):
            continue
        assert mark in ("", "needs-gpu"), f"unknown readme-test mark {mark!r}"
        if lang == "python":
            exec(compile(body, f"README.md snippet {ran}", "exec"), namespace)  # noqa: S102
        else:
            for line in body.splitlines():
                command = line.split("  #", 1)[0].strip()
                if command:
                    done = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True,
                                          text=True, timeout=900, env=dict(os.environ))
                    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        ran += 1
    assert ran >= 10


def test_the_sample_outputs_are_what_the_main_job_prints(tmp_path):
    # The README's CPU samples, a first run and a second (from the compile
    # cache): the same lines (labels), in the same order.
    samples = [body for _, lang, body in _blocks() if not lang and body.startswith("Transformer encoder block")]
    cold, warm = [s for s in samples if s.splitlines()[0].endswith("target cpu")]

    def labels(text: str) -> list[str]:
        return [re.split(r"\s{2,}|:|\s+[\d.]+ ms", line.strip())[0] for line in text.strip().splitlines()]

    for sample in (cold, warm):
        done = subprocess.run([sys.executable, str(ROOT / "examples" / "transformer_block.py"), "--target", "cpu"],
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "TESSEL_CACHE_DIR": str(tmp_path)})
        assert done.returncode == 0, done.stderr
        assert labels(done.stdout) == labels(sample)
