#!/usr/bin/env bash
# Prepare this checkout from nothing, for the main job or for the tests:
#   setup.sh --for main    JDK 17 and Maven (for the local YARN), a virtualenv in .venv with
#                          tfyarn and TensorFlow (`.[tf]`): what scripts/run-main-job.sh needs
#   setup.sh --for tests   (the default) that, plus Chromium (the browser tests), MIT Kerberos'
#                          client (the secure cluster), the system Python's venv (the bare
#                          nodes' interpreter) and the test tools (`.[test]`, tf-keras)
# Safe to run again, in either order: quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."

purpose=tests
while [ $# -gt 0 ]; do
  case "$1" in
    --for) purpose=${2:-}; shift 2 || shift ;;
    --for=*) purpose=${1#--for=}; shift ;;
    *) echo "usage: $0 [--for main|tests]" >&2; exit 2 ;;
  esac
done
case "$purpose" in
  main) extra=tf ;;
  tests) extra=test ;;
  *) echo "usage: $0 [--for main|tests]" >&2; exit 2 ;;
esac

# What the build needs (a JDK, Maven) comes first; what only the tests use is installed while
# pip installs the venv (each of the two keeps one core busy at most).
need_build=() need_tests=()
# A JDK, not only a JRE: `tfyarn cluster up` compiles one class for its NodeManagers.
ls /usr/lib/jvm/*17*/bin/javac >/dev/null 2>&1 || need_build+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_build+=(maven)
if [ "$purpose" = tests ]; then
  # Headless Chromium and its driver for the browser tests of the job page (tests/test_page_yarn.py).
  command -v chromium >/dev/null 2>&1 || need_tests+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need_tests+=(chromium-driver)
  # The system Python's venv (with pip): the tests install a node-wide Python on the local
  # cluster's bare nodes from it (tests/barenodes.py), as an administrator would.
  /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_tests+=(python3-venv)
  # MIT Kerberos' kinit/klist: the secure local cluster's ticket caches (tfyarn cluster up --secure).
  command -v kinit >/dev/null 2>&1 || need_tests+=(krb5-user)
fi
missing=("${need_build[@]}" "${need_tests[@]}")
if [ ${#missing[@]} -gt 0 ] && { [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; }; then
  echo "Missing: ${missing[*]}. Install them, then run this again." >&2
  exit 1
fi
apt_install() {
  echo "Installing $* with apt-get..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
[ ${#need_build[@]} -eq 0 ] || apt_install "${need_build[@]}"
tests_apt=
if [ ${#need_tests[@]} -gt 0 ]; then
  tests_apt_log=$(mktemp)
  apt_install "${need_tests[@]}" > "$tests_apt_log" 2>&1 &
  tests_apt=$!
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# One stamp per extra: `.[test]` includes `.[tf]`, so the tests' set-up serves the main job too.
stamp=.venv/.tfyarn-installed-$extra
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$extra]"
  touch "$stamp"
  if [ "$extra" = test ]; then touch .venv/.tfyarn-installed-tf; fi
fi
# tfyarn's patched skein AppMaster, in the package (an editable install built it, unless that
# happened before; quick when built: a copy from ~/.cache/tfyarn/amjar).
.venv/bin/python -m tfyarn.amjarbuild >/dev/null
[ "$purpose" = tests ] || exit 0
if [ -n "$tests_apt" ]; then
  wait "$tests_apt" || { cat "$tests_apt_log" >&2; exit 1; }
  cat "$tests_apt_log"; rm -f "$tests_apt_log"
fi
# tf-keras (Keras 2) for the Keras examples (tests/test_keras_yarn.py): on TF 2.21 only it runs
# model.fit with the ParameterServer and MultiWorkerMirrored strategies. --no-deps: it requires
# the full `tensorflow` wheel (572 MB), which would clash with tensorflow-cpu in one venv; its
# code runs on either. 1.7 MB. Checked without importing TensorFlow, so a second run stays quick.
tf_keras=2.21.0
.venv/bin/python -c "import importlib.metadata as m; assert m.version('tf-keras') == '$tf_keras'" \
  2>/dev/null || .venv/bin/python -m pip install -q --no-deps "tf-keras==$tf_keras"
