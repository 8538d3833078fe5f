"""High availability's pure parts: the client configuration's checks (haconf.py), the choice
of the active ResourceManager (rmrest.py) and the HA local cluster's configuration
(hasite.py). The failovers themselves: tests/test_ha_yarn.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import requests

from tfyarn.hadoop import haconf, rmrest
from tfyarn.localyarn import hasite, secure, siteconf
from tfyarn.localyarn.layout import NAMESERVICE, Layout

NS_CONF = {
    "fs.defaultFS": "hdfs://ns1",
    "dfs.nameservices": "ns1",
    "dfs.ha.namenodes.ns1": "nn1,nn2",
    "dfs.namenode.rpc-address.ns1.nn1": "a.example:8020",
    "dfs.namenode.rpc-address.ns1.nn2": "b.example:8020",
}
RM_CONF = {
    "yarn.resourcemanager.ha.enabled": "true",
    "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
    "yarn.resourcemanager.hostname.rm1": "a.example",
    "yarn.resourcemanager.hostname.rm2": "b.example",
}


def unresolvable(host: str) -> bool:
    return False


def test_a_defined_nameservice_and_plain_namenode_addresses_pass() -> None:
    assert haconf.nameservice_problem(NS_CONF, "hdfs://ns1") is None
    assert haconf.nameservice_problem({}, "hdfs://nn.example:8020", unresolvable) is None
    assert haconf.nameservice_problem({}, "hdfs://nn.example", lambda host: True) is None
    assert haconf.nameservice_problem({}, "file:///tmp", unresolvable) is None


def test_a_nameservice_the_configuration_does_not_define_is_named() -> None:
    problem = haconf.nameservice_problem({"dfs.nameservices": "other"}, "hdfs://ns1",
                                         unresolvable)
    assert problem is not None
    assert "'ns1'" in problem and "dfs.nameservices = other" in problem


def test_a_nameservice_without_namenodes_or_their_addresses_is_named() -> None:
    no_namenodes = {"dfs.nameservices": "ns1"}
    assert "dfs.ha.namenodes.ns1 is not set" in haconf.nameservice_problem(
        no_namenodes, "hdfs://ns1")
    no_address = {k: v for k, v in NS_CONF.items() if not k.endswith(".nn2")}
    problem = haconf.nameservice_problem(no_address, "hdfs://ns1")
    assert problem is not None and "dfs.namenode.rpc-address.ns1.nn2" in problem
    assert "nn1" not in problem.split("have no address")[0].split("NameNode(s)")[1]


def test_rm_ids_without_an_address_are_named() -> None:
    assert haconf.rm_ids_problem(RM_CONF) is None
    assert haconf.rm_ids_problem({"yarn.resourcemanager.ha.rm-ids": ""}) is None  # no HA
    empty = {**RM_CONF, "yarn.resourcemanager.ha.rm-ids": " "}
    assert "lists no ResourceManager" in haconf.rm_ids_problem(empty)
    third = {**RM_CONF, "yarn.resourcemanager.ha.rm-ids": "rm1,rm2,rm3"}
    assert "yarn.resourcemanager.hostname.rm3" in haconf.rm_ids_problem(third)


def test_check_client_names_every_problem_and_where_to_fix_it() -> None:
    haconf.check_client({**NS_CONF, **RM_CONF}, "/etc/hadoop/conf")
    bad = {**RM_CONF, "fs.defaultFS": "hdfs://ns9", "yarn.resourcemanager.ha.rm-ids": "rm1,x"}
    with pytest.raises(haconf.HaConfigError) as raised:
        haconf.check_client(bad, "/etc/hadoop/conf", unresolvable)
    text = str(raised.value)
    assert "'ns9'" in text and "yarn.resourcemanager.hostname.x" in text
    assert "/etc/hadoop/conf" in text


def failures(**by_rm: Exception) -> dict[str, Exception]:
    urls = rmrest.web_urls_by_id(RM_CONF)
    return {urls[rm]: exc for rm, exc in by_rm.items()}


def test_both_rms_standby_is_named_before_anything_is_submitted() -> None:
    error = rmrest.no_active_rm(RM_CONF, failures(
        rm1=rmrest.StandbyError("standby"), rm2=rmrest.StandbyError("standby")))
    assert error is not None and "none is active" in str(error)
    assert "rm1 at http://a.example:8088" in str(error)


def test_rm_ids_whose_addresses_do_not_answer_are_named() -> None:
    refused = requests.ConnectionError("refused")
    error = rmrest.no_active_rm(RM_CONF, failures(rm1=refused, rm2=refused))
    assert error is not None and "No ResourceManager of yarn.resourcemanager.ha.rm-ids" in str(
        error)
    assert "rm2 at http://b.example:8088: refused" in str(error)


def test_an_rm_that_answered_or_no_ha_leaves_the_preflight_to_its_usual_course() -> None:
    refused = requests.ConnectionError("refused")
    assert rmrest.no_active_rm(RM_CONF, failures(rm1=refused)) is None  # rm2 answered
    login = rmrest.RestError("401: login")  # a Kerberos web UI: pre-flight is skipped
    assert rmrest.no_active_rm(RM_CONF, failures(rm1=refused, rm2=login)) is None
    plain = {"yarn.resourcemanager.webapp.address": "rm:8088"}
    assert rmrest.no_active_rm(plain, {"http://rm:8088": refused}) is None


@contextmanager
def rm_server(standby_of: str | None) -> Iterator[str]:
    """A web server answering as an RM: a standby redirecting to ``standby_of``, or active."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if standby_of:
                self.send_response(307)
                self.send_header("Location", f"{standby_of}{self.path}")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"apps": null}')

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def test_reports_skip_the_standby_and_read_the_active_rm(tmp_path: Path, monkeypatch) -> None:
    with rm_server(None) as active, rm_server(f"http://{'127.0.0.1:1'}") as standby:
        (tmp_path / "yarn-site.xml").write_text(siteconf.xml_document({
            **RM_CONF, "yarn.resourcemanager.webapp.address.rm1": standby,
            "yarn.resourcemanager.webapp.address.rm2": active}))
        monkeypatch.delenv("YARN_CONF_DIR", raising=False)
        monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
        reader = rmrest.reports_reader(failover_wait_s=0)
        assert reader is not None and reader.base_url == f"http://{active}"
        with pytest.raises(rmrest.StandbyError):
            rmrest.RestReports(f"http://{standby}").get("scheduler")


# ---------------------------------------------------------------- the HA local cluster

def ha_layout(tmp_path: Path, offset: int = 0) -> Layout:
    return Layout(tmp_path, port_offset=offset, ha=True)


def test_the_ha_cluster_remembers_it_is_one_and_its_file_system_is_the_nameservice(
        tmp_path: Path) -> None:
    assert not Layout(tmp_path, port_offset=0).is_ha
    (tmp_path / "ha").write_text("true\n")
    layout = Layout(tmp_path, port_offset=0)
    assert layout.is_ha and layout.default_fs == f"hdfs://{NAMESERVICE}"
    assert layout.hdfs_dir == tmp_path / "hdfs-ha"


def test_the_ha_configuration_is_what_clients_and_checks_read(tmp_path: Path) -> None:
    layout = ha_layout(tmp_path, offset=600)
    conf = {key: str(value) for key, value in
            {**siteconf.yarn_site(layout), **siteconf.hdfs_site(layout),
             **siteconf.core_site(layout, tmp_path)}.items()}
    assert rmrest.web_urls(conf) == ["http://127.0.0.1:8688", "http://127.0.0.1:8689"]
    assert "yarn.resourcemanager.address" not in conf  # each RM's own, by id
    assert conf["yarn.resourcemanager.recovery.enabled"] == "true"
    assert conf["yarn.resourcemanager.store.class"].endswith("ZKRMStateStore")
    assert conf["fs.defaultFS"] == f"hdfs://{NAMESERVICE}"
    haconf.check_client(conf, str(tmp_path), unresolvable)
    nm = siteconf.node_manager_site(layout, layout.node_managers[0])
    assert nm["yarn.nodemanager.recovery.enabled"] == "true"


def test_the_non_ha_configuration_has_no_ha_key(tmp_path: Path) -> None:
    layout = Layout(tmp_path, port_offset=0, ha=False)
    conf = {**siteconf.yarn_site(layout), **siteconf.hdfs_site(layout)}
    assert not any(".ha." in key or key == "dfs.nameservices" for key in conf)
    assert conf["yarn.resourcemanager.recovery.enabled"] == "false"


def test_the_ha_ports_fit_the_cluster_window() -> None:
    """8034-8087 and 8089-8139: clear of the RM's, HDFS's and the NodeManagers' (8140+), so
    clusters at offsets of 300 never collide."""
    for what, port in hasite.ports(Layout(Path("/x"), port_offset=0, ha=True)).items():
        assert 8034 <= port <= 8087 or 8089 <= port <= 8139, what
    assert len(set(hasite.ports(Layout(Path("/x"), port_offset=0, ha=True)).values())) == len(
        hasite.ports(Layout(Path("/x"), port_offset=0, ha=True)))


def test_each_rm_and_namenode_is_told_its_own_id(tmp_path: Path) -> None:
    layout = ha_layout(tmp_path)
    assert hasite.own_id_site(layout, "rm2") == {"yarn.resourcemanager.ha.id": "rm2"}
    nn = hasite.own_id_site(layout, "nn2")
    assert nn["dfs.ha.namenode.id"] == "nn2"
    assert nn["dfs.namenode.name.dir"] == f"file://{tmp_path / 'hdfs-ha' / 'nn2'}"


def test_the_secure_ha_cluster_names_its_services_by_host(tmp_path: Path) -> None:
    """`up --ha --secure`: the RMs', NameNodes' and JournalNode's principals with `_HOST`, as
    production writes one configuration for every host; the plain secure cluster keeps its
    fixed ones; the KDC knows HTTP/127.0.0.1, the name Hadoop's web client asks for."""
    layout = ha_layout(tmp_path / "ha")
    secure.set_secure(layout, True)
    conf = {**siteconf.yarn_site(layout), **siteconf.hdfs_site(layout)}
    for key in ("yarn.resourcemanager.principal", "dfs.namenode.kerberos.principal",
                "dfs.journalnode.kerberos.principal"):
        assert str(conf[key]).split("@")[0].endswith("/_HOST"), key
    assert conf["dfs.journalnode.keytab.file"] == conf["dfs.namenode.keytab.file"]
    assert conf["dfs.datanode.kerberos.principal"] == secure.service_principal("hdfs")
    assert "HTTP/127.0.0.1" in secure.web_principals(layout)
    # hdfs-native offers no token within 60 s of its end: HA's jobs live through failovers.
    assert conf["dfs.namenode.delegation.token.max-lifetime"] == \
        secure.HA_TOKEN_MAX_LIFETIME_S * 1000
    plain = Layout(tmp_path / "plain", port_offset=0, ha=False)
    secure.set_secure(plain, True)
    assert siteconf.yarn_site(plain)["yarn.resourcemanager.principal"] == \
        secure.service_principal("yarn")
    assert "HTTP/127.0.0.1" not in secure.web_principals(plain)

