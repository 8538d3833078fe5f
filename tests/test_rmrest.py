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
