"""Finding the ResourceManager's REST address in a client configuration (pure logic)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tfyarn.hadoop.hadoopconf import client_configuration
from tfyarn.hadoop.rmrest import AppReport, reports_reader, web_urls


def test_plain_address_and_the_hostname_default() -> None:
    assert web_urls({"yarn.resourcemanager.webapp.address": "rm.example:8088"}) == [
        "http://rm.example:8088"]
    assert web_urls({"yarn.resourcemanager.hostname": "rm.example"}) == ["http://rm.example:8088"]


def test_variables_are_expanded() -> None:
    conf = {"yarn.resourcemanager.hostname": "rm.example",
            "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:18088"}
    assert web_urls(conf) == ["http://rm.example:18088"]


def test_high_availability_lists_every_rm() -> None:
    conf = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
            "yarn.resourcemanager.hostname.rm1": "a.example",
            "yarn.resourcemanager.webapp.address.rm2": "b.example:8088"}
    assert web_urls(conf) == ["http://a.example:8088", "http://b.example:8088"]


def test_https_only() -> None:
    conf = {"yarn.http.policy": "HTTPS_ONLY", "yarn.resourcemanager.hostname": "rm.example"}
    assert web_urls(conf) == ["https://rm.example:8090"]


@pytest.mark.parametrize("conf", [
    {},  # no configuration: skein's driver finds the cluster its own way
    {"yarn.resourcemanager.webapp.address": "0.0.0.0:8088"},  # a bind address
], ids=["nothing", "bind-address"])
def test_no_rest_where_it_cannot_work(conf: dict[str, str]) -> None:
    assert web_urls(conf) == []


def test_a_kerberos_cluster_is_asked_too() -> None:
    """Its web UI is answered with the user's tickets (tfyarn/security/spnego.py)."""
    conf = {"hadoop.security.authentication": "kerberos", "yarn.resourcemanager.hostname": "rm"}
    assert web_urls(conf) == ["http://rm:8088"]


def test_configuration_files_are_read(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "core-site.xml").write_text(
        "<configuration><property><name>hadoop.security.authentication</name>"
        "<value>simple</value></property></configuration>")
    (tmp_path / "yarn-site.xml").write_text(
        "<?xml version='1.0'?><configuration><property><name>yarn.resourcemanager.hostname"
        "</name><value> rm.example </value></property></configuration>")
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert web_urls(client_configuration()) == ["http://rm.example:8088"]


def test_report_from_the_rm_json() -> None:
    report = AppReport.from_json({
        "id": "application_1_0001", "name": "job", "user": "ann", "queue": "root.default",
        "state": "RUNNING", "finalStatus": "UNDEFINED", "applicationTags": "tfyarn,team-a",
        "trackingUrl": "http://rm:8088/proxy/application_1_0001/", "diagnostics": "",
        "startedTime": 1700000000000, "finishedTime": 0})
    assert report.tags == {"tfyarn", "team-a"}
    assert report.start_time is not None and report.start_time.timestamp() == 1700000000
    assert report.finish_time is None and str(report.state) == "RUNNING"


def test_an_rm_web_ui_that_wants_a_login_is_not_used(tmp_path: Path, monkeypatch) -> None:
    """A web UI that answers 401 for applications (SPNEGO, no anonymous reads) leaves reports
    to skein, even when its cluster info is open to all."""

    class LoginRequired(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.startswith("/ws/v1/cluster/info"):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"clusterInfo": {"state": "STARTED"}}')
                return
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Negotiate")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), LoginRequired)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "yarn-site.xml").write_text(
            "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
            f"<value>127.0.0.1:{server.server_port}</value></property></configuration>")
        monkeypatch.delenv("YARN_CONF_DIR", raising=False)
        monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
        assert web_urls(client_configuration()) == [f"http://127.0.0.1:{server.server_port}"]
        assert reports_reader() is None
    finally:
        server.shutdown()


class PriorityRM(BaseHTTPRequestHandler):
    """An RM whose apps resource answers, and whose priority update refuses an unknown
    caller (a web UI that knows users by its static user only) or gives what was asked."""

    refuse = False
    puts: list[tuple[str, bytes]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.answer(200, b'{"apps": null}')

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).puts.append((self.path, body))
        if type(self).refuse:
            self.answer(403, b'{"RemoteException": {"message": "User dr.who is not allowed"}}')
        else:
            self.answer(200, body)

    def answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def priority_rm(tmp_path: Path, monkeypatch):
    PriorityRM.refuse, PriorityRM.puts = False, []
    server = HTTPServer(("127.0.0.1", 0), PriorityRM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
        f"<value>127.0.0.1:{server.server_port}</value></property></configuration>")
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    yield PriorityRM
    server.shutdown()


def test_the_priority_is_set_over_rest(priority_rm) -> None:
    from tfyarn.submission.launch import set_priority

    assert set_priority("application_1_0002", 5, "alice") == (
        "application_1_0002 has YARN application priority 5 in its queue.")
    assert priority_rm.puts == [("/ws/v1/cluster/apps/application_1_0002/priority?"
                                 "user.name=alice", b'{"priority": 5}')]


def test_where_rest_refuses_yarns_own_command_sets_the_priority(
        priority_rm, tmp_path: Path, monkeypatch) -> None:
    from tfyarn.submission.launch import set_priority

    priority_rm.refuse = True
    bin_dir, said = tmp_path / "bin", tmp_path / "yarn-args"
    bin_dir.mkdir()
    (bin_dir / "yarn").write_text(f'#!/bin/sh\necho "$@" > {said}\n')
    (bin_dir / "yarn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert set_priority("application_1_0002", 5, "alice").endswith("priority 5 in its queue.")
    assert said.read_text().split() == ["application", "-appId", "application_1_0002",
                                        "-updatePriority", "5"]
    (bin_dir / "yarn").write_text("#!/bin/sh\necho 'Permission denied for user alice' >&2\n"
                                  "exit 1\n")
    assert set_priority("application_1_0002", 5, "alice") == (
        "Warning: application_1_0002 runs at its queue's default priority, not "
        "site.global.application.priority 5: the REST API refused (403: User dr.who is not "
        "allowed); `yarn application -updatePriority` failed: Permission denied for user "
        "alice.")
