"""tfyarn installed on an edge node: the wheel built from this checkout, installed into a fresh
venv (not this one, not the checkout), drives the local cluster.

- The thin client (no TensorFlow): `submit --wait` of a light job (its tasks need no
  TensorFlow; the venv itself is packed and shipped, as for any job naming no interpreter),
  `list`, `status` of the finished job, `status` and `kill` of a running one. Each exits 0,
  with no traceback. About 1.5 min (the install ~15 s with pip's cache).
- The same client on an edge node with no JDK (no javac on PATH or in JAVA_HOME) and no
  route to a package index: a job with a STRICT placement policy runs with the patched
  AppMaster the wheel carries, to SUCCEEDED; with skein's stock one chosen, a job asking
  for anti-affinity is refused before anything is submitted.
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
    submit_detached,
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


def test_the_thin_client_operates_jobs(yarn_cluster, thin_client: EdgeNode,
                                       tmp_path: Path) -> None:
    thin_client.imports_tfyarn_from_the_venv(tmp_path)
    assert thin_client.tfyarn("--version").stdout.strip().endswith(tfyarn.__version__)

    # A job that ends by itself: submitted and followed from the edge node.
    done_dir = tmp_path / "done"
    done_dir.mkdir()
    resources, app_config = prepare_light_job(done_dir, ["--sleep", "1"],
                                              settings={"app.name": "tfyarn-wheel-test"})
    submitted = thin_client.tfyarn("submit", "--resources", str(resources), "--app-config",
                                   str(app_config), "--wait", timeout_s=SUBMIT_TIMEOUT_S)
    finished_id = re.search(r"Submitted (application_\d+_\d+)",
                            submitted.stdout + submitted.stderr).group(1)
    status = json.loads(thin_client.tfyarn("status", finished_id, "--json").stdout)
    assert status["application"]["final_status"] == "SUCCEEDED", status["application"]

    # A running job: status, then kill.
    release = ReleaseFile.fresh(yarn_cluster.layout)
    running_dir = tmp_path / "running"
    running_dir.mkdir()
    resources, app_config = prepare_light_job(
        running_dir, ["--sleep", "240", "--release_file", release.url],
        settings={"app.name": "tfyarn-wheel-test"})
    detached = json.loads(thin_client.tfyarn(
        "submit", "--resources", str(resources), "--app-config", str(app_config), "--detach",
        "--json", timeout_s=SUBMIT_TIMEOUT_S).stdout)
    app_id = detached["application_id"]
    try:
        wait_for(f"{app_id} RUNNING", lambda: app_state(yarn_cluster, app_id) == "RUNNING")
        thin_client.tfyarn("status", app_id)
        listed = json.loads(thin_client.tfyarn("list", "--all", "--json").stdout)
        assert {finished_id, app_id} <= {job["id"] for job in listed}, listed
        thin_client.tfyarn("kill", app_id)
        wait_for(f"{app_id} KILLED", lambda: app_state(yarn_cluster, app_id) == "KILLED", 60)
        thin_client.tfyarn("status", app_id)  # a killed job is a finished one too
    finally:
        if app_state(yarn_cluster, app_id) not in ("FINISHED", "FAILED", "KILLED"):
            subprocess.run(["yarn", "application", "-kill", app_id], env=yarn_cluster.env,
                           capture_output=True, timeout=60)


def test_the_thin_client_without_a_jdk_or_an_index_runs_a_strict_job(
        thin_client: EdgeNode, tmp_path: Path) -> None:
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


@pytest.mark.skipif(newest_python("3.13") is None, reason="no Python 3.13 on this machine")
def test_the_thin_client_on_python_3_13(yarn_cluster, wheel: Path, tmp_path: Path) -> None:
    """skein 0.8.2 imports distutils, gone in 3.12: the wheel brings setuptools for it. A job
    submitted from the checkout is listed, shown and killed from a 3.13 thin client."""
    bin_dir = fresh_venv(tmp_path / "venv", newest_python("3.13"))
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
    release = ReleaseFile.fresh(yarn_cluster.layout)
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "240", "--release_file", release.url],
        settings={"app.name": "tfyarn-py313-test"})
    app_id = submit_detached(yarn_cluster, resources, app_config)
    try:
        wait_for(f"{app_id} RUNNING", lambda: app_state(yarn_cluster, app_id) == "RUNNING")
        listed = json.loads(edge.tfyarn("list", "--json").stdout)
        assert app_id in {job["id"] for job in listed}, listed
        edge.tfyarn("status", app_id)
        edge.tfyarn("kill", app_id)
        wait_for(f"{app_id} KILLED", lambda: app_state(yarn_cluster, app_id) == "KILLED", 60)
    finally:
        if app_state(yarn_cluster, app_id) not in ("FINISHED", "FAILED", "KILLED"):
            subprocess.run(["yarn", "application", "-kill", app_id], env=yarn_cluster.env,
                           capture_output=True, timeout=60)
