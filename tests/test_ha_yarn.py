"""High availability (issue 38): on a cluster of two ResourceManagers and two NameNodes
(`tfyarn cluster up --ha`, a cluster of its own beside the session's), a running job goes
on through a ResourceManager failover (the old active one then killed) and a NameNode
failover: the AppMaster re-registers with the new RM, no task restarts, `tfyarn status`
answers throughout, the job page answers through the new RM's proxy, the chief's mirror
keeps writing to the nameservice, the job SUCCEEDS.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from barenodes import client_environ
from conftest import LocalCluster
from jobtools import (
    JobFiles,
    ReleaseFile,
    prepare_light_job,
    run_tfyarn,
    submit_detached,
    wait_for,
)

from tfyarn.localyarn import cluster, daemons, ha, hasite
from tfyarn.localyarn.layout import NAMESERVICE, Layout

pytestmark = [pytest.mark.yarn, pytest.mark.xdist_group("offset-2700")]  # one lane: same ports
HA_PORT_OFFSET = 2700  # beside the session's cluster and the helpers' (offsets of 300)
WAIT_S = 240  # each step, on a loaded 2-core machine
EVENTS = "train/events.out.tfevents"  # the chief's (light_task.py --summaries), mirrored


@pytest.fixture(scope="module")
def ha_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """An HA cluster of its own (2 NodeManagers, to keep it light), down again after."""
    layout = Layout(tmp_path_factory.mktemp("ha-cluster"), port_offset=HA_PORT_OFFSET,
                    nodes=2, ha=True)
    try:
        cluster.up(layout, probe=False)  # its test's job follows at once
        env = {**cluster.client_environment(layout), "TFYARN_CLUSTER_DIR": str(layout.state_dir),
               "TFYARN_CLUSTER_PORT_OFFSET": str(HA_PORT_OFFSET)}
        with client_environ(env):
            yield LocalCluster(layout, env)
    finally:
        cluster.down(layout)


class StatusPoller:
    """`tfyarn status APP --json` over and over in a thread: every answer's exit code."""

    def __init__(self, ha_cluster: LocalCluster, app_id: str) -> None:
        self.ha_cluster, self.app_id = ha_cluster, app_id
        self.answers: list[tuple[float, int, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            out = run_tfyarn(self.ha_cluster, "status", self.app_id, "--json", timeout_s=60)
            self.answers.append((time.monotonic() - started, out.returncode, out.stderr[-500:]))

    def __enter__(self) -> StatusPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=90)


def job_view(ha_cluster: LocalCluster, app_id: str) -> dict:
    out = run_tfyarn(ha_cluster, "status", app_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def running_tasks(ha_cluster: LocalCluster, app_id: str) -> dict | None:
    view = job_view(ha_cluster, app_id)["job"]
    tasks = (view or {}).get("tasks") or []
    return view if tasks and all(t["state"].lower() == "running" for t in tasks) else None


def mirrored_events_size(files: JobFiles) -> int:
    return sum(f.length for name, f in files.remote().list_files().items()
               if name.startswith(EVENTS))


def test_a_job_trains_through_an_rm_and_a_namenode_failover(ha_cluster: LocalCluster,
                                                             tmp_path: Path) -> None:
    train_through_failovers(ha_cluster, tmp_path)


def train_through_failovers(ha_cluster: LocalCluster, tmp_path: Path, *options: str,
                            get_page: Callable[..., requests.Response] = requests.get) -> None:
    """The scenario: ``options`` go before `submit` (a secure cluster's --principal and
    --keytab), ``get_page`` asks the RM's proxy (with SPNEGO there)."""
    layout = ha_cluster.layout
    assert layout.default_fs == f"hdfs://{NAMESERVICE}"
    release = ReleaseFile.fresh(layout)
    resources, app_config = prepare_light_job(
        tmp_path, ["--release_file", release.url, "--sleep", "900", "--summaries"],
        settings={"checkpoint.mirror.interval": 2})
    app_id = submit_detached(ha_cluster, resources, app_config, before=options)
    files = JobFiles(layout, app_id)
    assert files.url.startswith(f"hdfs://{NAMESERVICE}/")
    try:
        before = wait_for("every task running", lambda: running_tasks(ha_cluster, app_id),
                          WAIT_S)
        wait_for("the chief's events mirrored", lambda: mirrored_events_size(files), WAIT_S)

        # The ResourceManager: the active one stops, ZooKeeper elects the standby, the old
        # one comes back as the standby and is then killed; the job never notices.
        old_rm = ha.active_rm(layout)
        started = time.monotonic()
        with StatusPoller(ha_cluster, app_id) as poller:
            out = run_tfyarn(ha_cluster, "cluster", "failover", "rm", timeout_s=WAIT_S)
            assert out.returncode == 0, out.stdout + out.stderr
            new_rm = ha.active_rm(layout)
            assert new_rm not in (None, old_rm), out.stdout
            assert f"ResourceManager {new_rm} is active now (was {old_rm})" in out.stdout
            daemons.send_signal(daemons.running_pid(layout, old_rm), signal.SIGKILL)
            registered = wait_for(
                "the AppMaster to re-register with the new active RM",
                lambda: f"AM registration appattempt_{app_id.removeprefix('application_')}"
                in layout.daemon_log(new_rm).read_text(errors="replace"), WAIT_S)
            rm_seconds = time.monotonic() - started
        assert registered
        assert poller.answers and all(rc == 0 for _, rc, _ in poller.answers), poller.answers
        print(f"RM failover: {rm_seconds:.1f} s to the AppMaster's re-registration; "
              f"`tfyarn status` answered {len(poller.answers)} times, slowest "
              f"{max(s for s, _, _ in poller.answers):.1f} s")
        app = job_view(ha_cluster, app_id)["application"]
        assert app["state"] == "RUNNING", app
        # The job page, through the new active RM's proxy.
        assert f":{layout.port(hasite.rm_ports(new_rm)['webapp.address'])}/" in app[
            "tracking_url"], app
        page = get_page(f"{app['tracking_url']}pages/tfyarn/", timeout=60)
        assert page.status_code == 200 and app_id in page.text, page.text[:500]

        # The NameNode: a graceful manual failover; the chief's mirror goes on writing.
        old_nn = ha.active_namenode(layout)
        out = run_tfyarn(ha_cluster, "cluster", "failover", "nn", timeout_s=WAIT_S)
        assert out.returncode == 0, out.stdout + out.stderr
        new_nn = ha.active_namenode(layout)
        assert new_nn not in (None, old_nn) and f"NameNode {new_nn} is active now" in out.stdout
        started, size = time.monotonic(), mirrored_events_size(files)
        wait_for("the mirror to write through the new active NameNode",
                 lambda: mirrored_events_size(files) > size, WAIT_S)
        print(f"NameNode failover: the mirror wrote again after {time.monotonic() - started:.1f} s")

        release.touch()
        final = wait_for("the job's end", lambda: (
            view := job_view(ha_cluster, app_id))["application"]["state"] in
            ("FINISHED", "FAILED", "KILLED") and view, WAIT_S)
        assert final["application"]["final_status"] == "SUCCEEDED", final
        after = final["job"]
        assert after["restarts"] == [] and all(t["restarts"] == 0 for t in after["tasks"]), after
        assert {(t["role"], t["index"]) for t in after["tasks"]} == {
            (t["role"], t["index"]) for t in before["tasks"]}
    finally:
        release.touch()
        release.remove()
