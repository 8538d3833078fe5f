#!/usr/bin/env bash
# Prepare this checkout from nothing: JDK 17 and Maven (for the local YARN), Chromium (for the
# browser tests), a virtualenv in .venv with tfyarn, TensorFlow and the test tools. Safe to run
# again: quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# A JDK, not only a JRE: `tfyarn cluster up` compiles one class for its NodeManagers.
ls /usr/lib/jvm/*17*/bin/javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# Headless Chromium and its driver for the browser tests of the job page (tests/test_page_yarn.py).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
# The system Python's venv (with pip): the tests install a node-wide Python on the local
# cluster's bare nodes from it (tests/barenodes.py), as an administrator would.
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
# MIT Kerberos' kinit/klist: the secure local cluster's ticket caches (tfyarn cluster up --secure).
command -v kinit >/dev/null 2>&1 || need_apt+=(krb5-user)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${need_apt[*]} with apt-get..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" \
      >/dev/null
  else
    echo "Missing: ${need_apt[*]}. Install them (JDK 17, Maven, Chromium, krb5-user, python3-venv), then run this again." >&2
    exit 1
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.tfyarn-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
  touch "$stamp"
fi
# tf-keras (Keras 2) for the Keras examples: on TF 2.21 only it runs model.fit with the
# ParameterServer and MultiWorkerMirrored strategies. --no-deps: it requires the full
# `tensorflow` wheel (572 MB), which would clash with tensorflow-cpu in one venv; its code
# runs on either. 1.7 MB. Checked without importing TensorFlow, so a second run stays quick.
tf_keras=2.21.0
.venv/bin/python -c "import importlib.metadata as m; assert m.version('tf-keras') == '$tf_keras'" \
  2>/dev/null || .venv/bin/python -m pip install -q --no-deps "tf-keras==$tf_keras"
