"""Jobs on bare nodes (issue 26): the interpreter every node has, one no node has, one some
nodes lack, and the shipped env's upload when two submits race. The default mode (the
client's env packed and shipped) runs in every other job test, and the session's warm-up
checks each node is bare (tests/barenodes.py)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from barenodes import node_python
from jobtools import (
    prepare_light_job,
    read_json,
    run_tfyarn,
    status_json,
    submit_and_wait,
)

from tfyarn.localyarn import localfs
from tfyarn.localyarn.layout import GPU_LABEL
from tfyarn.localyarn.proctable import scan_processes
from tfyarn.submission import environments, layership

pytestmark = pytest.mark.yarn

LAUNCH_FAILURE = "tfyarn: cannot start"


def test_an_interpreter_every_node_has_ships_nothing(yarn_cluster, tmp_path: Path) -> None:
    """site.global.python: an administrator's Python at one path on every node (here with
    skein and hdfs-native, no TensorFlow: the light task needs none)."""
    python = node_python(yarn_cluster.layout)
    res, app = prepare_light_job(tmp_path, ["--sleep", "1"], settings={"python": str(python)})
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert "Python env:" not in run.output  # nothing packed or uploaded
    records = [read_json(p) for p in run.files.glob("light/*.json")]
    assert len(records) == 4 and {r["executable"] for r in records} == {str(python)}, records


def test_an_appmaster_without_its_interpreter_is_named(yarn_cluster, tmp_path: Path) -> None:
    """No node has it: the AppMaster cannot start. Not skein's "exit code 127, see logs"
    alone: the interpreter, the node and both fixes, in `submit --wait` and `status`."""
    res, app = prepare_light_job(tmp_path, ["--sleep", "1"],
                                 settings={"python": "/opt/nowhere/bin/python3"})
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode != 0, run.output
    line = next((x for x in run.output.splitlines() if x.startswith(LAUNCH_FAILURE)), None)
    assert line, run.output
    assert "cannot start the AppMaster: the interpreter /opt/nowhere/bin/python3 does not " \
           "exist on node 127.0.0." in line
    assert "remove site.global.python" in line and "--python-env" in line
    status = run_tfyarn(yarn_cluster, "status", run.app_id)
    assert line in status.stdout, status.stdout
    # `tfyarn logs`: no task wrote a log; the diagnosis, the AppMaster log's tail, the fix
    logs = run_tfyarn(yarn_cluster, "logs", run.app_id)
    assert logs.returncode == 1, logs.stdout + logs.stderr
    assert logs.stdout.splitlines()[0] == (
        f"{run.app_id} left no task logs. YARN's diagnosis: Application driver failed with "
        "exit code 127, see logs for more information."), logs.stdout
    assert line in logs.stdout.splitlines(), logs.stdout
    assert logs.stderr.startswith(f"Error: no task of {run.app_id} wrote a log: the job ended "
                                  "before its tasks started"), logs.stderr
    assert f"`tfyarn logs {run.app_id} --role appmaster`" in logs.stderr
    whole = run_tfyarn(yarn_cluster, "logs", run.app_id, "--role", "appmaster")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.startswith("==> application.driver.log (container_"), whole.stdout
    assert line in whole.stdout.splitlines()
    every = run_tfyarn(yarn_cluster, "logs", run.app_id, "--all", "--json")
    assert every.returncode == 0, every.stderr
    assert {"application.driver.log", "application.master.log", "launch_container.sh"} <= {
        entry.get("file") for entry in json.loads(every.stdout)}


def test_a_task_on_a_node_without_the_interpreter_is_named(yarn_cluster,
                                                           tmp_path: Path) -> None:
    """The interpreter is on the default partition's nodes (in each one's own HOME) but not
    on the gpu node, where the workers go: they fail with the message, which reaches YARN's
    diagnostics through the container's own (its stderr tail) and the AppMaster's."""
    layout = yarn_cluster.layout
    python = node_python(layout)
    home = Path.home()
    at = home / f"tfyarn-test-python-{tmp_path.name}"
    copies = []
    for nm in layout.node_managers:
        if nm.partition != GPU_LABEL:  # the node's private HOME, as seen from the client
            copy = layout.host_view_dir(nm) / at.relative_to("/")
            shutil.copytree(python.parent.parent, copy, symlinks=True)
            copies.append(copy)
    try:
        res, app = prepare_light_job(tmp_path, ["--sleep", "1"],
                                     settings={"python": str(at / "bin" / "python")})
        run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    finally:
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)
    assert run.returncode != 0, run.output
    gpu_host = next(nm.host for nm in layout.node_managers if nm.partition == GPU_LABEL)
    expected = (f"{LAUNCH_FAILURE} this task: the interpreter {at}/bin/python does not exist "
                f"on node {gpu_host}")
    diagnostics = status_json(yarn_cluster, run.app_id)["application"]["diagnostics"]
    assert "worker" in diagnostics and expected in diagnostics, diagnostics
    assert expected in run.output, run.output


def test_racing_uploads_leave_one_whole_archive(yarn_cluster, tmp_path: Path) -> None:
    """Two submits upload one env at once: each writes a name of its own and renames it into
    place; one wins, and the archive under the final name is whole (never half-written)."""
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(bytes(range(256)) * 40_000)  # 10 MB: the uploads overlap
    url = environments.cache_url(f"env-race-{tmp_path.name}.tar.gz")
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(
        environments.upload_once(archive, url))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(results) == [False, True]
    from appmaster.common.storage import RemoteDir

    directory, name = url.rsplit("/", 1)
    remote = RemoteDir(directory)
    try:
        assert remote.read_bytes(name) == archive.read_bytes()
        assert not [n for n in remote.list_files() if name in n and n != name]
        assert environments.is_on_cluster(url)
    finally:
        remote.delete(name)


def test_each_node_localized_the_env_with_yarns_modes(yarn_cluster) -> None:
    """The NodeManagers set localized files' modes through java.nio (NioLocalFs, a real
    node's libhadoop.so does it with chmod(2)), as YARN wants them: for a public resource
    0555 for a file, 0755 for a directory; for a private one 0500 and 0700; on every node
    that unpacked the shipped env's layers."""
    layout = yarn_cluster.layout
    for nm in layout.node_managers:
        classpath = next(arg for p in scan_processes() for arg in p.argv
                         if arg.startswith(f"{layout.node_conf_dir(nm)}:"))
        assert str(localfs.class_dir(layout)) in classpath.split(":"), classpath
        node = layout.node_dir(nm)
        for kind, expected in (("filecache", {"0o555", "0o755"}),
                               ("usercache/*/filecache", {"0o500", "0o700"})):
            for layer in node.glob(f"local/{kind}/*/layer-python-*{layership.SUFFIX}"):
                modes = {}
                for path in layer.rglob("*"):
                    if not path.is_symlink():
                        modes.setdefault(oct(path.stat().st_mode & 0o7777), path)
                assert set(modes) == expected, modes
        assert list(node.glob("local/*/*/layer-python-*")) + list(
            node.glob("local/usercache/*/filecache/*/layer-python-*")), (
                f"{nm.name} holds no unpacked env")
