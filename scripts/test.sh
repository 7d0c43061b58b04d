#!/usr/bin/env bash
# Fresh machine -> every test: makes .venv, builds and installs tessel with its
# test extras from PyPI, then runs the lit/FileCheck tests and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --upgrade --quiet pip
.venv/bin/python -m pip install -e ".[test]"

.venv/bin/lit -sv test
.venv/bin/python -m pytest
