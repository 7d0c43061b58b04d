#!/usr/bin/env bash
# Fresh machine -> every test: makes .venv and builds tessel into it with its
# test extras (scripts/setup.sh; a second run rebuilds nothing), then runs the
# lit/FileCheck tests and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh "[test]"
.venv/bin/lit -sv test
.venv/bin/python -m pytest
