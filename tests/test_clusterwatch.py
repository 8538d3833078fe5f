"""What a waiting AppMaster reads of the cluster (appmaster/master/clusterwatch.py): the RM's
nodes and the job's queue, from the web address its node's yarn-site.xml names, over a
server answering as the local cluster's RM did (tests/test_preflight_rm.json); and the
client's own reading of the queue from the same answers, before the AppMaster runs."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from appmaster.master.clusterwatch import ClusterWatch
from tfyarn.cli.jobs import LiveProgress
from tfyarn.watch.queuestanding import standing_line

RECORDING = json.loads(Path(__file__).with_name("test_preflight_rm.json").read_text())
APP = {"id": "application_1_0003", "queue": "default", "state": "RUNNING", "priority": 0,
       "startedTime": 3000}
OLDER = {**APP, "id": "application_1_0001", "startedTime": 1000}


@pytest.fixture
def rm(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """A yarn-site.xml naming a server that answers as the RM; the paths it was asked."""
    asked: list[str] = []
    answers = {"/ws/v1/cluster/nodes": RECORDING["nodes"],
               "/ws/v1/cluster/scheduler": RECORDING["scheduler"],
               f"/ws/v1/cluster/apps/{APP['id']}": {"app": APP},
               "/ws/v1/cluster/apps": {"apps": {"app": [APP, OLDER]}}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?")[0]
            asked.append(path)
            body = json.dumps(answers[path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
        f"<value>127.0.0.1:{server.server_port}</value></property></configuration>")
    try:
        yield tmp_path, asked
    finally:
        server.shutdown()


def test_the_nodes_and_the_queue_as_the_rm_says(rm: tuple[Path, list[str]]) -> None:
    conf_dir, asked = rm
    facts = ClusterWatch(APP["id"], str(conf_dir)).facts()
    assert facts is not None and facts.standing is not None
    assert {n.label for n in facts.nodes.nodes} == {"", "gpu"}
    assert (facts.standing.path, facts.standing.ahead) == ("root.default", 1)
    assert len(asked) == 4
    # where a replacement may be steered: the default partition's running hosts, no port
    # (the gpu node, not among them, here shares the other's host: both localhost)
    assert ClusterWatch(APP["id"], str(conf_dir)).partition_hosts() == {"localhost"}
    assert asked[-1] == "/ws/v1/cluster/nodes" and len(asked) == 5  # the nodes alone


def test_without_an_rm_to_ask_the_job_waits_without_and_says_so_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
        "<value>127.0.0.1:9</value></property></configuration>")
    watch = ClusterWatch(APP["id"], str(tmp_path))
    with caplog.at_level(logging.INFO, logger="tfyarn.master"):
        assert watch.facts() is None and watch.facts() is None  # the second: quiet
        watch.quiet_until = 0.0
        assert watch.facts() is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "cannot be asked from here" in said[0]


def test_submit_wait_shows_the_queue_while_the_appmaster_waits_for_its_container(
        rm: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before the AppMaster runs, the client asks the RM where the job stands itself."""
    conf_dir, _ = rm
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir))
    standing = standing_line(APP["id"])
    assert standing is not None and standing.startswith("Queue root.default (fifo): ")
    assert "1 application(s) ahead of this one" in standing
    LiveProgress(APP["id"], tty=False)(SimpleNamespace(id=APP["id"], state="ACCEPTED",
                                                       tracking_url=""))
    assert capsys.readouterr().out.endswith(
        f"{APP['id']} ACCEPTED | waiting for its AppMaster's container | {standing}\n")
