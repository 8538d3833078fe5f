#!/usr/bin/env bash
# The test suite: set up, then pytest. Integration tests start the local YARN themselves
# (or reuse a running one) and stop what they started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for tests  # also the browser, kinit, the test tools
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -raR "$@"
