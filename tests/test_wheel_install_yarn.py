"""tfyarn installed on an edge node: the wheel built from this checkout, installed into a fresh
venv (not this one, not the checkout), drives the local cluster.

- The thin client (no TensorFlow) on an edge node with no JDK (no javac on PATH or in
  JAVA_HOME) and no route to a package index: `submit --wait` of a light job (its tasks
  need no TensorFlow; the venv itself is packed and shipped, as for any job naming no
  interpreter) with a STRICT placement policy, run by the patched AppMaster the wheel
  carries, to SUCCEEDED; `status` and `list` of it; with skein's stock AppMaster chosen, a
  job asking for anti-affinity is refused before anything is submitted.
- A running job: `status` and `list` from the thin client, then from one on Python 3.13,
  which kills it. Each command exits 0, with no traceback. About 2 min (the installs ~15 s
  each with pip's cache).
- With `[tf]`: the seed job (README's main job) submitted from that venv to SUCCEEDED. A
  fresh TensorFlow install (~600 MB, pip's cache helps), its pack and its upload: several
  minutes, so it runs on demand (TFYARN_LONG=1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from jobtools import (
    REPO,
    SUBMIT_TIMEOUT_S,
    ReleaseFile,
    app_state,
    prepare_light_job,
    wait_for,
)
from wheeltools import build_wheel, fresh_venv, pip_install, without_a_compiler

import tfyarn
from tfyarn.hadoop import amjar

pytestmark = pytest.mark.yarn


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


class EdgeNode:
    """A fresh venv with the wheel installed, and the cluster's client environment."""

    def __init__(self, bin_dir: Path, cluster_env: dict[str, str]) -> None:
        self.bin = bin_dir
        # The cluster's client settings (HADOOP_CONF_DIR, JAVA_HOME, PATH with hadoop/yarn),
        # nothing that would import tfyarn from the checkout.
        self.env = {k: v for k, v in cluster_env.items()
                    if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        self.env["PATH"] = f"{bin_dir}:{self.env.get('PATH', '')}"

    def tfyarn(self, *args: str, timeout_s: float = 120, cwd: Path = REPO
               ) -> subprocess.CompletedProcess:
        """The venv's console script (its directory, not the checkout, is first on sys.path)."""
        result = subprocess.run([str(self.bin / "tfyarn"), *args], env=self.env, cwd=cwd,
                                capture_output=True, text=True, timeout=timeout_s)
        assert "Traceback" not in result.stdout + result.stderr, result.stderr
        assert result.returncode == 0, f"tfyarn {' '.join(args)}:\n{result.stdout}{result.stderr}"
        return result

    def imports_tfyarn_from_the_venv(self, tmp_path: Path) -> None:
        where = subprocess.run(
            [str(self.bin / "python"), "-c",
             "import tfyarn, importlib.metadata as m; print(tfyarn.__file__); "
             "print(m.version('tfyarn')); print(m.distribution('tfyarn').read_text("
             "'direct_url.json') or '')"],
            env=self.env, cwd=tmp_path, capture_output=True, text=True, check=True,
        ).stdout.splitlines()
        assert where[0].startswith(str(self.bin.parent)), where  # installed, not the checkout
        assert where[1] == tfyarn.__version__
        assert '"editable": true' not in "".join(where[2:])


def _edge_node(wheel: Path, venv: Path, cluster_env: dict[str, str], *extras: str) -> EdgeNode:
    bin_dir = fresh_venv(venv)
    spec = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    pip_install(bin_dir, spec, timeout_s=900)
    return EdgeNode(bin_dir, cluster_env)


@pytest.fixture(scope="module")
def thin_client(yarn_cluster, wheel: Path, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[EdgeNode]:
    edge = _edge_node(wheel, tmp_path_factory.mktemp("edge") / "venv", yarn_cluster.env)
    has_tf = subprocess.run([str(edge.bin / "python"), "-c", "import tensorflow"],
                            capture_output=True).returncode == 0
    assert not has_tf, "the thin client must not bring TensorFlow"
    yield edge


def test_the_thin_client_without_a_jdk_or_an_index_runs_a_strict_job(
        thin_client: EdgeNode, tmp_path: Path) -> None:
    """The job ends by itself: submitted and followed (`submit --wait`, `status`, `list`)
    from an edge node without javac and without a package index."""
    thin_client.imports_tfyarn_from_the_venv(tmp_path)
    assert thin_client.tfyarn("--version").stdout.strip().endswith(tfyarn.__version__)
    edge = EdgeNode(thin_client.bin, {})
    edge.env = without_a_compiler(thin_client.env, tmp_path / "no-jdk")
    edge.env["PIP_INDEX_URL"] = "http://127.0.0.1:9/"  # nothing answers there
    edge.env["PIP_FIND_LINKS"] = ""
    edge.env.pop(amjar.OFF_ENV, None)
    assert subprocess.run(["bash", "-c", "command -v javac || ls \"$JAVA_HOME/bin/javac\""],
                          env=edge.env, capture_output=True).returncode != 0
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "1"], settings={"app.name": "tfyarn-wheel-test"},
        components={"ps": {"yarn.component.placement.policy": "1"}})
    args = ["submit", "--resources", str(resources), "--app-config", str(app_config)]
    planned = edge.tfyarn(*args, "--dry-run", "--skip-preflight").stdout
    assert f"tfyarn's patched skein AppMaster ({amjar.jar_name()})" in planned, planned
    submitted = edge.tfyarn(*args, "--wait", timeout_s=SUBMIT_TIMEOUT_S)
    assert "SUCCEEDED" in submitted.stdout + submitted.stderr, submitted.stdout
    finished_id = re.search(r"Submitted (application_\d+_\d+)",
                            submitted.stdout + submitted.stderr).group(1)
    status = json.loads(edge.tfyarn("status", finished_id, "--json").stdout)
    assert status["application"]["final_status"] == "SUCCEEDED", status["application"]
    listed = json.loads(edge.tfyarn("list", "--all", "--json").stdout)
    assert finished_id in {job["id"] for job in listed}, listed

    # skein's own AppMaster (chosen here, as where the package has none): refused, unsent
    (tmp_path / "apart").mkdir()
    resources, app_config = prepare_light_job(
        tmp_path / "apart", ["--sleep", "1"],
        components={"ps": {"yarn.component.placement.policy": "4"}})
    refused = subprocess.run(
        [str(edge.bin / "tfyarn"), "submit", "--resources", str(resources), "--app-config",
         str(app_config), "--detach"], env={**edge.env, amjar.OFF_ENV: "1"}, cwd=REPO,
        capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "Submitted" not in refused.stdout, refused.stdout
    assert refused.stderr.startswith(
        "Error: nothing was submitted:\nthe job asks for what only tfyarn's patched skein "
        "AppMaster does:\n"), refused.stderr
    assert 'components.ps."yarn.component.placement.policy" = 4 (ANTI_AFFINITY_REQUIRED' in \
        refused.stderr, refused.stderr
    assert f"skein's stock AppMaster ({amjar.OFF_ENV} is set). Fix: unset {amjar.OFF_ENV}" \
        in refused.stderr


@pytest.mark.skipif(not os.environ.get("TFYARN_LONG"),
                    reason="installs TensorFlow into a fresh venv: TFYARN_LONG=1 runs it")
def test_the_seed_job_from_an_installed_wheel_with_tf(yarn_cluster, wheel: Path,
                                                      tmp_path: Path) -> None:
    edge = _edge_node(wheel, tmp_path / "venv", yarn_cluster.env, "tf")
    edge.imports_tfyarn_from_the_venv(tmp_path)
    result = edge.tfyarn("submit", "--resources", str(REPO / "resources.json"), "--app-config",
                         str(REPO / "appConfig.json"), "--wait",
                         timeout_s=SUBMIT_TIMEOUT_S + 600)  # + the fresh env's pack and upload
    assert "SUCCEEDED" in result.stdout + result.stderr


def newest_python(minor: str) -> str | None:
    """pyenv's newest 3.X interpreter on this machine, or python3.X on PATH; None: none."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in sorted(root.glob(f"{minor}.*"), reverse=True):
        if re.fullmatch(rf"{re.escape(minor)}\.\d+", version.name):
            return str(version / "bin" / f"python{minor}")
    on_path = shutil.which(f"python{minor}")
    ok = on_path and subprocess.run([on_path, "-c", ""], capture_output=True).returncode == 0
    return on_path if ok else None


def test_thin_clients_operate_a_running_job(yarn_cluster, thin_client: EdgeNode, wheel: Path,
                                           tmp_path: Path) -> None:
    """A job submitted from the thin client, shown and listed by it, then by a thin client
    on Python 3.13 (skein 0.8.2 imports distutils, gone in 3.12: the wheel brings setuptools
    for it), which kills it; without a 3.13 on the machine, the first kills it."""
    release = ReleaseFile.fresh(yarn_cluster.layout)
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "240", "--release_file", release.url],
        settings={"app.name": "tfyarn-wheel-test"})
    detached = json.loads(thin_client.tfyarn(
        "submit", "--resources", str(resources), "--app-config", str(app_config), "--detach",
        "--json", timeout_s=SUBMIT_TIMEOUT_S).stdout)
    app_id = detached["application_id"]
    try:
        wait_for(f"{app_id} RUNNING", lambda: app_state(yarn_cluster, app_id) == "RUNNING")
        for client in (thin_client, *python_3_13_client(yarn_cluster, wheel, tmp_path)):
            client.tfyarn("status", app_id)
            listed = json.loads(client.tfyarn("list", "--json").stdout)
            assert app_id in {job["id"] for job in listed}, listed
        client.tfyarn("kill", app_id)
        wait_for(f"{app_id} KILLED", lambda: app_state(yarn_cluster, app_id) == "KILLED", 60)
        client.tfyarn("status", app_id)  # a killed job is a finished one too
    finally:
        if app_state(yarn_cluster, app_id) not in ("FINISHED", "FAILED", "KILLED"):
            subprocess.run(["yarn", "application", "-kill", app_id], env=yarn_cluster.env,
                           capture_output=True, timeout=60)


def python_3_13_client(yarn_cluster, wheel: Path, tmp_path: Path) -> list[EdgeNode]:
    """The wheel in a fresh venv of Python 3.13, which refuses the seed job for want of
    TensorFlow in the env it would ship; none without a 3.13 on this machine."""
    python = newest_python("3.13")
    if python is None:
        print("no Python 3.13 on this machine: the thin client on 3.13 is not tried")
        return []
    bin_dir = fresh_venv(tmp_path / "venv-3.13", python)
    pip_install(bin_dir, str(wheel), timeout_s=900)
    edge = EdgeNode(bin_dir, yarn_cluster.env)
    assert "3.13" in subprocess.run([str(bin_dir / "python"), "--version"], capture_output=True,
                                    text=True).stdout
    # The seed job imports TensorFlow, which this env (the one tfyarn would ship) lacks.
    refused = subprocess.run([str(bin_dir / "tfyarn"), "submit", "--dry-run"], env=edge.env,
                             cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[:2] == [
        "Error: nothing was submitted:",
        f"the job's script needs TensorFlow ({REPO / 'examples' / 'mnist1.py'} imports "
        f"tensorflow), but the Python env tfyarn would ship to the containers, this "
        f"interpreter's ({bin_dir.parent}), has no TensorFlow installed. Fix: one of: install "
        "tfyarn's [tf] extra in this env (pip install \"<tfyarn's wheel>[tf]\"); give a packed "
        "env that has TensorFlow (--python-env env.tar.gz, made with venv-pack or conda-pack); "
        "or name an interpreter every node has, with TensorFlow ('\"site.global.python\": "
        "\"/usr/bin/python3\"' in appConfig.json)."], refused.stderr
    return [edge]
