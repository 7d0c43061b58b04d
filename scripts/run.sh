#!/usr/bin/env bash
# Fresh machine -> main job: makes .venv, builds and installs tessel, then
# compiles the example transformer encoder block for the CPU and checks it
# against numpy (arguments go to examples/transformer_block.py).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --upgrade --quiet pip
.venv/bin/python -m pip install -e .

.venv/bin/python examples/transformer_block.py "$@"
