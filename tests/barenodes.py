"""The local cluster's nodes are bare: what the tests install on them, and how they check it.

A node has the machine's system Python (/usr/bin/python3) and nothing of the client's
(tfyarn/localyarn/hostview.py). Jobs ship the client's environment (tfyarn/submission/envpack.py);
tests that run a raw skein application, or test the "every node has this interpreter"
mode, use a Python installed on every node by the administrator: here a venv made from the
system Python under the cluster's node-software directory, which every node sees.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from tfyarn.localyarn.gpunode import SYSTEM_PYTHON
from tfyarn.localyarn.layout import Layout

# What tfyarn's AppMaster and agents import in a container, pinned to this client's versions.
NODE_PACKAGES = ("skein", "grpcio", "protobuf", "cryptography", "pyyaml", "hdfs-native")
REPO = Path(__file__).resolve().parent.parent


def pins() -> list[str]:
    return [f"{name}=={metadata.version(name)}" for name in NODE_PACKAGES]


def make_venv(root: Path, packages: list[str], *, timeout_s: float = 600) -> Path:
    """A venv of the system Python at ``root`` with ``packages``; returns its python. Kept
    while its packages are the same (a marker file lists them)."""
    marker = root / ".tfyarn-test-packages"
    python = root / "bin" / "python"
    if marker.is_file() and marker.read_text() == "\n".join(packages) and python.exists():
        return python
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(root)], check=True, timeout=120)
    if packages:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *packages], check=True, timeout=timeout_s)
    marker.write_text("\n".join(packages))
    return python


def node_python(layout: Layout) -> Path:
    """A Python every node has at one path (an administrator's install), with what tfyarn's
    own code in a container needs and no TensorFlow."""
    return make_venv(layout.node_software_dir / "python-skein", pins())


def venv_without(layout: Layout, name: str, leave_out: tuple[str, ...]) -> Path:
    """A node-wide venv of the system Python holding this interpreter's site-packages but
    the distributions named in ``leave_out``; hard links (quick, no space), so that nodes,
    which do not see this interpreter, see its files. Returns its python."""
    python = make_venv(layout.node_software_dir / name, [])
    ours = Path(next(p for p in sys.path if p.endswith("site-packages")))
    theirs = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    shutil.rmtree(theirs)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    shutil.copytree(ours, theirs, copy_function=link, ignore=lambda d, names: [
        n for n in names if Path(d) == ours and n.split("-")[0] in leave_out])
    return python


# What a container checks on a bare node: none of the client's Python or checkout, a system
# Python without TensorFlow, and the shipped env importing what jobs need.
BARE_NODE_CHECK = """set -eu
test ! -e {client_python} || {{ echo "the client's {client_python} is on this node"; exit 1; }}
test ! -e {checkout}/tfyarn/__init__.py || {{ echo "the checkout is on this node"; exit 1; }}
if {system_python} -c 'import tensorflow' 2>/dev/null; then
  echo "the system Python has TensorFlow"; exit 1
fi
./pyenv/bin/python -c 'import sys, tensorflow, skein, hdfs_native; print("env ok", sys.prefix)'
"""


def ship_env_to_every_node(layout: Layout, timeout_s: float = 600) -> str:
    """Pack and upload this interpreter's environment as a job does by default, then have
    every NodeManager localize it and run it once (a node's first localization of a packed
    env takes a minute or more here: without libhadoop.so, YARN forks a chmod per file).
    Checks on the way that every node is bare. Returns the env's URL."""
    import skein

    from tfyarn.hadoop.driver import skein_client
    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS
    from tfyarn.submission import jobenv
    from tfyarn.submission.environments import ENV_DIR, env_file

    url = jobenv.ship_this_env(echo=print)
    nodes = layout.node_managers
    script = BARE_NODE_CHECK.format(client_python=shlex.quote(os.path.realpath(sys.executable)),
                                    checkout=shlex.quote(str(REPO)), system_python=SYSTEM_PYTHON)
    services = {nm.name: skein.Service(
        resources=skein.Resources(memory=1024, vcores=1), files={ENV_DIR: env_file(url)},
        script=script, nodes=[nm.host], relax_locality=False,
        node_label=nm.partition or "", max_restarts=0) for nm in nodes}
    spec = skein.ApplicationSpec(
        name="tfyarn-test-warm-up", queue="default", max_attempts=1, services=services,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}))
    with skein_client() as client:
        app_id = client.submit(spec)
        deadline = time.monotonic() + timeout_s
        while str((report := client.application_report(app_id)).state) not in (
                "FINISHED", "FAILED", "KILLED"):
            if time.monotonic() > deadline:
                client.kill_application(app_id)
                raise AssertionError(f"{app_id}: the env did not run on every node in "
                                     f"{timeout_s:.0f} s")
            time.sleep(1)
    assert str(report.final_status) == "SUCCEEDED", (
        f"{app_id} (the shipped env on every bare node): {report.final_status}: "
        f"{report.diagnostics}; see `yarn logs -applicationId {app_id}`")
    return url


@contextmanager
def client_environ(env: Mapping[str, str]) -> Iterator[None]:
    """os.environ as after `eval "$(tfyarn cluster env)"` for this cluster, then as before:
    skein's driver, hdfs-native and `yarn` read it."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
