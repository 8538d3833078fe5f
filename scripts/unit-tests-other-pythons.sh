#!/usr/bin/env bash
# The unit tests (pytest -m "not yarn") on every supported Python this machine has besides
# .venv's: each in its own venv, .venv-3.X, with tfyarn and `.[unit]`, without TensorFlow (the
# thin client; the tests that need TensorFlow skip). An interpreter is python3.X on PATH, or
# pyenv's newest 3.X. None found: nothing to do, exit 0. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE  # compiled as they are imported (below), as scripts/run-tests.sh

supported=(3.10 3.11 3.12 3.13)  # pyproject.toml's requires-python and classifiers
own=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}

find_python() {  # the interpreter for minor version $1, or nothing
  local minor=$1 candidate
  # pyenv's shims answer for versions pyenv does not select with an error: run it to know.
  if candidate=$(command -v "python$minor") && "$candidate" -c '' >/dev/null 2>&1; then
    echo "$candidate"; return
  fi
  for candidate in $(ls -d "$pyenv_root/versions/$minor".* 2>/dev/null | sort -V -r); do
    [[ $candidate =~ /$minor\.[0-9]+$ ]] || continue  # 3.12.1, not 3.12-dev or 3.12.1t
    if "$candidate/bin/python$minor" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      echo "$candidate/bin/python$minor"; return
    fi
  done
}

failed=()
for minor in "${supported[@]}"; do
  [ "$minor" = "$own" ] && continue
  python=$(find_python "$minor")
  if [ -z "$python" ]; then
    echo "Python $minor: not on this machine, skipped."
    continue
  fi
  venv=.venv-$minor
  echo "Python $minor ($python): unit tests in $venv"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  stamp=$venv/.tfyarn-installed-unit
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # An editable pyproject needs pip 21.3 or newer: a venv's own is upgraded only where older
    # (a distribution's python3.10 may bring 21 or 22). Modules are compiled as the tests
    # import them rather than all at install.
    "$venv/bin/python" -m pip install -q "pip>=21.3"
    "$venv/bin/python" -m pip install -q --no-compile -e ".[unit]"
    touch "$stamp"
  fi
  "$venv/bin/python" -m pytest -m "not yarn" -q -p no:cacheprovider "$@" || failed+=("$minor")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "The unit tests failed on Python ${failed[*]}." >&2
  exit 1
fi
