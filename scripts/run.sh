#!/usr/bin/env bash
# Fresh machine -> main job: makes .venv, builds and installs tessel, then
# compiles the example transformer encoder block for this machine's NVIDIA
# GPU (run through tessel.runtime) or, without one, for sm_90 run on the PTX
# emulator, and checks it against numpy (arguments go to
# examples/transformer_block.py; --target cpu for the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --upgrade --quiet pip
# With an NVIDIA driver, also the CUDA driver bindings the runtime uses.
extras=""
if command -v nvidia-smi > /dev/null 2>&1; then extras="[cuda]"; fi
.venv/bin/python -m pip install -e ".$extras"

.venv/bin/python examples/transformer_block.py "$@"
