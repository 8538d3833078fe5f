#!/usr/bin/env bash
# The test suite: set up, then pytest in lanes (pytest-xdist workers, TFYARN_TEST_WORKERS,
# 2 by default, at most 3; 1 runs it in this process). Each lane has a local YARN of its own,
# which it starts (lane 0 reuses a running one) and stops: a test has its lane's cluster to
# itself (tests/lanes.py, tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for tests  # also the browser, kinit, the test tools
# Compiled modules are kept, as on a user's machine: with PYTHONDONTWRITEBYTECODE (set on
# some CI images) every tfyarn command and pytest process compiled tfyarn and the tests
# anew (0.3 CPU-s a command), and __pycache__ files a user's env has went untested.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/ruff check .
workers=${TFYARN_TEST_WORKERS:-2}
if [ "$workers" -gt 1 ]; then
  lanes=(-n "$workers" --dist loadgroup)
else
  lanes=(-p no:xdist)
fi
exec .venv/bin/python -m pytest -raR --rerun-show-tracebacks "${lanes[@]}" "$@"
