#!/usr/bin/env bash
# Fresh machine -> main job: makes .venv and builds tessel into it
# (scripts/setup.sh; a second run rebuilds nothing), then
# compiles the example transformer encoder block for this machine's NVIDIA
# GPU (run through tessel.runtime) or, without one, for sm_90 run on the PTX
# emulator, and checks it against numpy (arguments go to
# examples/transformer_block.py; --target cpu for the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

# [cuda]: ptxas assembles the kernels; with a GPU, cuda-bindings runs them.
bash scripts/setup.sh "[cuda]"

.venv/bin/python examples/transformer_block.py "$@"
