#!/usr/bin/env bash
# The test suite: set up, then pytest in lanes (pytest-xdist workers, TFYARN_TEST_WORKERS,
# 2 by default; 1 runs it in this process). The lanes share one local YARN, which the first
# to need it starts (or reuses a running one) and the last stops; tests marked `alone` have
# it to themselves, one after another in a lane of their own, beside the lane of the tests
# that need no cluster and the secure/HA cluster's lane (tests/conftest.py, tests/lanes.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for tests  # also the browser, kinit, the test tools
.venv/bin/ruff check .
workers=${TFYARN_TEST_WORKERS:-2}
if [ "$workers" -gt 1 ]; then
  lanes=(-n "$workers" --dist loadgroup)
else
  lanes=(-p no:xdist)
fi
exec .venv/bin/python -m pytest -raR "${lanes[@]}" "$@"
