#!/usr/bin/env bash
# Makes .venv (once) and builds tessel into it, editable, with the extras in
# $1 (e.g. "[test]"). The build requirements are installed into .venv and pip
# builds without isolation, so the CMake cache in build/<wheel tag>/ points
# at .venv, which outlives the build: a second run rebuilds only what changed
# (nothing, if nothing did). run.sh and test.sh call this; developers can too.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --upgrade --quiet pip
fi
# pyproject.toml's [build-system] requirements, then what the backend asks for
# on this machine (cmake and ninja when there are none on PATH), as pip's
# isolated build would install them.
.venv/bin/python - <<'PY'
import importlib, subprocess, sys, tomllib

def install(requirements):
    if requirements:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *requirements])

with open("pyproject.toml", "rb") as f:
    install(tomllib.load(f)["build-system"]["requires"])
importlib.invalidate_caches()  # scikit-build-core was just installed
from scikit_build_core.build import get_requires_for_build_editable
install(get_requires_for_build_editable())
PY
# -v shows CMake's configure and ninja's [done/total] progress.
.venv/bin/python -m pip install -v --no-build-isolation -e ".$extras"
