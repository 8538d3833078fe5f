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
from tfyarn.localyarn.layout import Layout, NodeManagerSpec

# What tfyarn's AppMaster and agents import in a container, pinned to this client's versions.
NODE_PACKAGES = ("skein", "grpcio", "protobuf", "cryptography", "pyyaml", "hdfs-native")
REPO = Path(__file__).resolve().parent.parent


def pins() -> list[str]:
    return [f"{name}=={metadata.version(name)}" for name in NODE_PACKAGES]


def make_venv(root: Path, packages: list[str], *, timeout_s: float = 600,
              base: str = SYSTEM_PYTHON, links_without: tuple[str, ...] | None = None) -> Path:
    """A venv of the system Python (or ``base``) at ``root`` with ``packages``; returns its
    python. With ``links_without``, it first holds this interpreter's site-packages as hard
    links (quick, no space) but the distributions named there, and pip fetches only what is
    not there yet. Kept while all of that is the same (a marker file lists it)."""
    ours = Path(next(p for p in sys.path if p.endswith("site-packages")))
    wanted = "\n".join(packages) if links_without is None else "\n".join([
        f"links of {ours}", *sorted(f"{d.metadata['Name']}=={d.version}"
                                    for d in metadata.distributions()),
        "without", *links_without, "with", *packages])
    marker = root / ".tfyarn-test-packages"
    python = root / "bin" / "python"
    if marker.is_file() and marker.read_text() == wanted and python.exists():
        return python
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(root)], check=True, timeout=120)
    if links_without is not None:
        link_site_packages(ours, next((root / "lib").glob("python3*/site-packages")),
                           links_without)
    if packages:  # pip replaces a linked file by unlinking it: this interpreter's stays
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *packages], check=True, timeout=timeout_s)
    marker.write_text(wanted)
    return python


def node_python(layout: Layout) -> Path:
    """A Python every node has at one path (an administrator's install), with what tfyarn's
    own code in a container needs and no TensorFlow."""
    return make_venv(layout.node_software_dir / "python-skein", pins())


def venv_without(layout: Layout, name: str, leave_out: tuple[str, ...]) -> Path:
    """A node-wide venv of the system Python holding this interpreter's site-packages but
    the distributions named in ``leave_out``, so that nodes, which do not see this
    interpreter, see its files. Returns its python."""
    return make_venv(layout.node_software_dir / name, [], links_without=leave_out)


def link_site_packages(ours: Path, theirs: Path, leave_out: tuple[str, ...]) -> None:
    """``theirs`` becomes ``ours`` as hard links, but the distributions named in ``leave_out``."""
    shutil.rmtree(theirs)
    left_out = {path.parts[0] for name in leave_out
                for path in metadata.distribution(name).files or () if path.parts[0] != ".."}

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    shutil.copytree(ours, theirs, copy_function=link, ignore=lambda d, names: [
        n for n in names if Path(d) == ours and n in left_out])


# What a container checks on a bare node: none of the client's Python or checkout, a system
# Python without TensorFlow, and the shipped env importing tfyarn's own needs and holding
# TensorFlow (found, not imported: 6 CPU-s a node, and the first job on it imports it).
BARE_NODE_CHECK = """set -eu
test ! -e {client_python} || {{ echo "the client's {client_python} is on this node"; exit 1; }}
for path in {absent}; do
  test ! -e "$path" || {{ echo "$path is on this node"; exit 1; }}
done
if {system_python} -c 'import tensorflow' 2>/dev/null; then
  echo "the system Python has TensorFlow"; exit 1
fi
./pyenv/bin/python -c 'import sys, importlib.util, skein, hdfs_native
assert importlib.util.find_spec("tensorflow"), "no tensorflow in the env"
print("env ok", sys.prefix)'
"""

# A file in each place a real node does not share with the client (made here if missing).
CLIENT_ONLY_FILES = (Path("/var/tmp/tfyarn-client-only"), Path("/data/tfyarn-client-only"))


def checkouts() -> list[Path]:
    """This checkout and every other worktree of its repository (none is on a node)."""
    listed = subprocess.run(["git", "-C", str(REPO), "worktree", "list", "--porcelain"],
                            capture_output=True, text=True).stdout
    return sorted({REPO, *(Path(line.split(" ", 1)[1]) for line in listed.splitlines()
                           if line.startswith("worktree "))})


def absent_from(layout: Layout, nm: NodeManagerSpec) -> list[Path]:
    """What node ``nm`` must not see: the other nodes' dirs and the rest of the state dir,
    the client's /var/tmp and /data, and any checkout."""
    for path in CLIENT_ONLY_FILES:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    others = [layout.node_dir(other) / part for other in layout.node_managers if other != nm
              for part in ("local", "containers", "conf", "host")]
    return [*others, layout.hdfs_dir, layout.run_dir, layout.log_dir / "rm.log",
            *CLIENT_ONLY_FILES, *(checkout / "pyproject.toml" for checkout in checkouts())]


def ship_env_to_every_node(layout: Layout, timeout_s: float = 600):
    """Pack and upload this interpreter's environment as a job does by default, then have
    every NodeManager localize it and run it once (a node's first localization of a packed
    env takes a minute or more here: without libhadoop.so, YARN forks a chmod per file).
    Checks on the way that every node is bare and sees none of what other nodes and the
    client have (absent_from). Returns the env's layers on the cluster."""
    from tfyarn.submission import jobenv

    env = jobenv.ship_this_env(echo=print)
    services = {nm.name: pinned_service(nm, env.files(), BARE_NODE_CHECK.format(
        client_python=shlex.quote(os.path.realpath(sys.executable)),
        absent=" ".join(shlex.quote(str(p)) for p in absent_from(layout, nm)),
        system_python=SYSTEM_PYTHON), memory_mb=1024) for nm in layout.node_managers}
    app_id, report = run_services("tfyarn-test-warm-up", services, timeout_s,
                                  "the env did not run on every node")
    assert str(report.final_status) == "SUCCEEDED", (
        f"{app_id} (the shipped env on every bare node): {report.final_status}: "
        f"{report.diagnostics}; see `yarn logs -applicationId {app_id}`")
    return env


def pinned_service(nm, files: dict, script: str, memory_mb: int = 512):
    """A one-container skein service that runs on ``nm`` and nowhere else, never restarted."""
    import skein

    return skein.Service(
        resources=skein.Resources(memory=memory_mb, vcores=1), files=files, script=script,
        nodes=[nm.host], relax_locality=False, node_label=nm.partition or "", max_restarts=0)


def run_services(name: str, services: dict, timeout_s: float, late: str):
    """A plain skein application of ``services`` (a light master), run to its end; killed
    and failed with ``late`` past ``timeout_s``. Returns (application id, its report)."""
    import skein

    from tfyarn.hadoop.driver import skein_client
    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS

    spec = skein.ApplicationSpec(
        name=name, queue="default", max_attempts=1, services=services,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}))
    with skein_client() as client:
        app_id = client.submit(spec)
        deadline = time.monotonic() + timeout_s
        while str((report := client.application_report(app_id)).state) not in (
                "FINISHED", "FAILED", "KILLED"):
            if time.monotonic() > deadline:
                client.kill_application(app_id)
                raise AssertionError(f"{app_id}: {late} in {timeout_s:.0f} s")
            time.sleep(1)
    return app_id, report


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
