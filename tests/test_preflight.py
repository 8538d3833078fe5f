"""Pre-flight checks as pure functions of the RM's answers (recorded from the local cluster).

tests/test_preflight_rm.json holds what an idle local ResourceManager answered to
/ws/v1/cluster/scheduler and /ws/v1/cluster/nodes; each test changes the job, or the
recording where the cluster must look different (a busy node, a stopped queue).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from jobtools import prepare_job

from tfyarn.hadoop.driver import plain_diagnosis
from tfyarn.jobconfig import load_job
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.plan import AppSpecExtras, build_plan
from tfyarn.submission.preflight import (
    ClusterView,
    ContainerAsk,
    PreflightFindings,
    PriorityAsk,
    Resources,
    UnsupportedHadoop,
    check,
    cluster_view,
    job_requests,
    needs_acl_answer,
    run_preflight,
)

RECORDING = Path(__file__).with_name("test_preflight_rm.json")
QUEUE_KEY = ("appConfig.json", 'global."site.global.queue"')


@cache
def _recording() -> dict[str, Any]:
    return json.loads(RECORDING.read_text())


def recorded() -> dict[str, Any]:
    return copy.deepcopy(_recording())


def view(doc: dict[str, Any] | None = None) -> ClusterView:
    doc = doc or recorded()
    return cluster_view(doc["scheduler"], doc["nodes"])


def scheduler_info(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["scheduler"]["scheduler"]["schedulerInfo"]


def leaf(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(q for q in scheduler_info(doc)["queues"]["queue"]
                if q["queueName"] == name)


def node(doc: dict[str, Any], label: str) -> dict[str, Any]:
    rows = doc["nodes"]["nodes"]["node"]
    return next(n for n in rows if (n.get("nodeLabels") or [""])[0] == label)


def resource_json(memory: int, vcores: int, gpus: int = 0) -> dict[str, Any]:
    info = [{"name": "memory-mb", "value": memory}, {"name": "vcores", "value": vcores},
            {"name": "yarn.io/gpu", "value": gpus}]
    return {"memory": memory, "vCores": vcores, "resourceInformations": {
        "resourceInformation": info}}


def job(tmp_path: Path, components: dict[str, dict[str, str]] | None = None,
        am_label: str | None = None, am_memory_mb: int | None = None,
        sets: tuple[str, ...] = ()) -> list[ContainerAsk]:
    """The containers of the seed job (ps, chief on the default partition, 2 gpu workers);
    ``sets``: --set's KEY=VALUE."""
    resources, app_config = prepare_job(tmp_path, components=components)
    options = SubmitOptions(am_label=am_label, am_memory=am_memory_mb, sets=sets)
    config = load_job(resources, app_config, overrides=options.overrides())
    return job_requests(config, build_plan(config), AppSpecExtras())


def verdict(tmp_path: Path, queue: str = "default", doc: dict[str, Any] | None = None,
            **job_changes: Any) -> PreflightFindings:
    return check(view(doc), job(tmp_path, **job_changes), queue, QUEUE_KEY)


def texts(v: PreflightFindings) -> list[str]:
    return [str(p) for p in v.problems]


# ---- reading the answers ----

def test_the_recording_reads_as_the_local_cluster_is() -> None:
    cluster = view()
    assert cluster.scheduler == "capacityScheduler"
    assert cluster.labels == {"gpu"}
    assert cluster.max_allocation == Resources(8192, 8, 2)
    assert cluster.gpus_declared
    assert cluster.leaves() == ["root.default", "root.small"]
    default, small = cluster.find_queue("default"), cluster.find_queue("root.small")
    assert default is not None and small is not None
    assert default.leaf and default.state == "RUNNING" and default.may_use("gpu")
    assert not small.may_use("gpu") and small.may_use("")
    assert small.max_by_label[""] == Resources(4096, 4)
    assert default.max_by_label["gpu"] == Resources(16384, 16, 2)
    assert [n.label for n in cluster.active_nodes("gpu")] == ["gpu"]
    assert cluster.active_nodes("")[0].total == Resources(16384, 16, 0)


def test_hadoop_3_3s_answer_reads_as_later_releases_do(tmp_path: Path) -> None:
    """3.3.x writes neither queuePath nor queueType for a queue (3.4.0 added both): paths
    come from the tree, leaves from their having no children. Recorded from the local
    cluster on 3.3.6 (TFYARN_HADOOP_VERSION), its three queues as configured now."""
    doc = json.loads(RECORDING.with_name("test_preflight_rm_3.3.6.json").read_text())
    assert "queuePath" not in json.dumps(doc["scheduler"])
    cluster = view(doc)
    assert cluster.leaves() == ["root.default", "root.small", "root.urgent"]
    assert not cluster.queues["root"].leaf
    assert cluster.find_queue("small") is cluster.queues["root.small"]
    assert cluster.labels == {"gpu"} and cluster.max_allocation == Resources(8192, 8, 2)
    assert cluster.queues["root.small"].max_capacity_by_label[""] == 25.0
    assert cluster.queues["root.default"].may_use("gpu")
    assert texts(verdict(tmp_path, queue="nosuchqueue", doc=doc)) == [
        'appConfig.json: global."site.global.queue" = "nosuchqueue": no such queue in the '
        "cluster. Fix: use one of its running leaf queues: root.default, root.small, "
        "root.urgent."]


def test_the_seed_job_passes(tmp_path: Path) -> None:
    assert verdict(tmp_path) == PreflightFindings([], [])


# ---- the table: each refused with file, key, fix and what the cluster offers ----

def test_an_unknown_label(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, components={"worker": {"yarn.label.expression": "tpu"}}))
    assert len(found) == 1
    assert found[0].startswith(f'{tmp_path}/job/resources.json: components.worker.'
                               '"yarn.label.expression" = "tpu": no node label "tpu"')
    assert 'the cluster has "gpu" (1 active node)' in found[0] and "Fix: " in found[0]


def test_more_memory_than_the_maximum_allocation(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, components={"worker": {"yarn.memory": "20000"}}))
    assert len(found) == 1
    assert 'components.worker."yarn.memory" = 20000' in found[0]
    assert "maximum allocation per container, 8192" in found[0]
    assert "yarn.scheduler.maximum-allocation-mb" in found[0]
    assert "Fix: at most 8192" in found[0]


def test_a_value_given_with_set_is_named_by_its_option(tmp_path: Path) -> None:
    """The same refusals, of values the command line gave: each names --set, not the file;
    every component's key names the option that set it for each component."""
    found = texts(verdict(tmp_path, sets=("components.worker.yarn.memory=20000",
                                          "worker.yarn.label.expression=tpu")))
    assert len(found) == 2, found
    assert found[0].startswith('command line: --set worker.yarn.label.expression = "tpu": '
                               'no node label "tpu"'), found
    assert found[1].startswith("command line: --set components.worker.yarn.memory = 20000: "
                               ), found
    assert "Fix: at most 8192" in found[1]
    (tmp_path / "again").mkdir()
    found = texts(verdict(tmp_path / "again",
                          sets=("yarn.vcores=9", "slider-appmaster.yarn.vcores=9")))
    assert len(found) == 4 and all(line.startswith("command line: --set ") for line in found)
    assert found[-1].startswith("command line: --set slider-appmaster.yarn.vcores = 9: "), found
    assert "--set yarn.vcores = 9" in found[0], found


def test_a_value_for_every_component_names_global(tmp_path: Path) -> None:
    """A component's value written in "global" (for every component) is named there; a
    component's own value at its own key."""
    resources, app_config = prepare_job(tmp_path, components={"ps": {"yarn.vcores": "9"}})
    document = json.loads(resources.read_text())
    document["global"] = {"yarn.memory": "20000"}
    for own in document["components"].values():
        own.pop("yarn.memory", None)
    resources.write_text(json.dumps(document))
    config = load_job(resources, app_config)
    found = texts(check(view(), job_requests(config, build_plan(config), AppSpecExtras()),
                        "default", QUEUE_KEY))
    assert found and all(line.startswith(f'{resources}: global."yarn.memory" = 20000: ')
                         for line in found if "yarn.memory" in line), found
    assert any(f'{resources}: components.ps."yarn.vcores" = 9' in line for line in found)


def test_an_unknown_queue(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, queue="nosuchqueue"))
    assert found == ['appConfig.json: global."site.global.queue" = "nosuchqueue": no such queue '
                     "in the cluster. Fix: use one of its running leaf queues: root.default, "
                     "root.small."]


def test_more_gpus_than_any_container_may_have(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, components={"worker": {"yarn.gpus": "3"}}))
    assert len(found) == 1  # not also "the whole job is too big"
    assert 'components.worker."yarn.gpus" = 3' in found[0] and "Fix: at most 2" in found[0]


def test_more_gpus_than_the_partition_holds_at_once(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, components={"worker": {"yarn.gpus": "2"}}))
    assert len(found) == 1
    assert "needs 2048 MB, 2 vcore(s), 4 GPU(s) in label \"gpu\" at once" in found[0]
    assert "can never hold more than 16384 MB, 16 vcore(s), 2 GPU(s)" in found[0]


def test_a_job_larger_than_its_queue_can_ever_hold(tmp_path: Path) -> None:
    components = {"worker": {"yarn.label.expression": "", "yarn.memory": "2048",
                             "yarn.component.instances": "4"}}
    found = texts(verdict(tmp_path, queue="small", components=components))
    assert len(found) == 1
    assert f"{tmp_path}/job/resources.json: components: the whole job needs 10752 MB" in found[0]
    assert "queue root.small can never hold more than 4096 MB, 4 vcore(s)" in found[0]
    assert "maximum capacity 25%" in found[0] and "wait forever" in found[0]


def test_a_stopped_queue(tmp_path: Path) -> None:
    doc = recorded()
    leaf(doc, "default")["state"] = "STOPPED"
    found = texts(verdict(tmp_path, doc=doc))
    assert found == ['appConfig.json: global."site.global.queue" = "default": queue root.default '
                     "is STOPPED and takes no new applications. Fix: use a running queue "
                     "(root.small), or ask the cluster's administrators to start it."]


def test_a_parent_queue(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, queue="root"))
    assert len(found) == 1 and "root is a parent queue" in found[0]
    assert "root.default, root.small" in found[0]


def test_a_label_the_queue_may_not_use(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, queue="small"))
    assert len(found) == 1
    assert 'queue root.small may not use node label "gpu" (its labels: none)' in found[0]


def test_a_label_without_an_active_node(tmp_path: Path) -> None:
    doc = recorded()
    node(doc, "gpu")["state"] = "LOST"
    found = texts(verdict(tmp_path, doc=doc))
    assert len(found) == 1
    assert 'label "gpu" has no active node (localhost:8454 LOST)' in found[0]


def test_an_unhealthy_node_says_why(tmp_path: Path) -> None:
    """The node's own health report is the cause a user (or a CI log) needs."""
    doc = recorded()
    gpu = node(doc, "gpu")
    gpu["state"], gpu["healthReport"] = "UNHEALTHY", "1/1 local-dirs usable space is below 0.1%"
    found = texts(verdict(tmp_path, doc=doc))
    assert ('label "gpu" has no active node (localhost:8454 UNHEALTHY (1/1 local-dirs usable '
            'space is below 0.1%))') in found[0]


def test_a_container_larger_than_every_node(tmp_path: Path) -> None:
    doc = recorded()
    node(doc, "")["totalResource"] = resource_json(4096, 16)
    found = texts(verdict(tmp_path, components={"ps": {"yarn.memory": "6000"}}, doc=doc))
    assert len(found) == 1
    assert 'components.ps."yarn.memory" = 6000: no active node in the default partition' in (
        found[0])
    assert "the largest node there has 4096 MB, 16 vcore(s) (localhost:8444)" in found[0]


def test_every_problem_at_once(tmp_path: Path) -> None:
    doc = recorded()
    leaf(doc, "small")["state"] = "STOPPED"
    components = {"worker": {"yarn.label.expression": "tpu"},
                  "ps": {"yarn.memory": "20000"}, "chiefworker": {"yarn.vcores": "9"}}
    found = texts(verdict(tmp_path, queue="small", doc=doc, components=components,
                          am_memory_mb=9000))
    assert len(found) == 5, found
    assert "is STOPPED" in found[0]
    assert 'no node label "tpu"' in found[1]
    assert 'components.ps."yarn.memory" = 20000' in found[2]
    assert 'components.chiefworker."yarn.vcores" = 9' in found[3]
    assert found[4].startswith("command line: --am-memory = 9000: one AppMaster container")


def test_the_appmaster_label_names_the_option(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, am_label="tpu"))
    # the AppMaster and the two roles without their own label get --am-label's label
    assert len(found) == 3 and all(": --am-label = \"tpu\"" in line for line in found)


# ---- waiting is not an error ----

def test_a_busy_cluster_is_a_note(tmp_path: Path) -> None:
    doc = recorded()
    gpu = node(doc, "gpu")
    gpu["availableResource"] = resource_json(1024, 15, 2)
    for usage in leaf(doc, "default")["resources"]["resourceUsagesByPartition"]:
        if usage["partitionName"] == "gpu":
            usage["used"] = resource_json(15360, 1)
    found = verdict(tmp_path, doc=doc)
    assert found.problems == []
    assert len(found.notes) == 1 and found.notes[0].startswith(
        'the cluster is busy: label "gpu" has 1024 MB, 15 vcore(s), 2 GPU(s) free for queue '
        "root.default now, the job needs 2048 MB, 2 vcore(s)")


def test_an_appmaster_above_the_queues_share_is_a_note(tmp_path: Path) -> None:
    small_tasks = {role: {"yarn.memory": "256"} for role in ("ps", "chiefworker")}
    small_tasks["worker"] = {"yarn.memory": "256", "yarn.label.expression": "",
                             "yarn.component.instances": "1"}
    found = verdict(tmp_path, queue="small", am_memory_mb=3000, components=small_tasks)
    assert found.problems == []
    assert any("larger than queue root.small's share for AppMasters (2048 MB, 2 vcore(s)"
               in note for note in found.notes)


# ---- ACLs ----

def test_acls_are_asked_for_only_where_one_may_forbid() -> None:
    doc = recorded()
    cluster = view(doc)
    assert not needs_acl_answer(cluster, cluster.find_queue("default"))  # root's "*"
    for acl in scheduler_info(doc)["queueAcls"]["queueAcl"]:
        acl["accessControlList"] = "alice admins"
    cluster = view(doc)
    assert needs_acl_answer(cluster, cluster.find_queue("default"))
    assert not needs_acl_answer(cluster, None)


def test_a_queue_the_user_may_not_submit_to(tmp_path: Path) -> None:
    found = check(view(), job(tmp_path), "default", QUEUE_KEY, submit_allowed=False, user="bob")
    assert [str(p) for p in found.problems] == [
        'appConfig.json: global."site.global.queue" = "default": user bob may not submit to '
        "queue root.default (its SUBMIT_APP and ADMINISTER_QUEUE ACLs). Fix: use a queue you "
        "may submit to, or ask the cluster's administrators to add you to the queue's ACL."]


# ---- when the RM cannot be asked, pre-flight steps aside ----

def write_conf(directory: Path, properties: dict[str, str]) -> None:
    rows = "".join(f"<property><name>{k}</name><value>{v}</value></property>"
                   for k, v in properties.items())
    (directory / "yarn-site.xml").write_text(f"<configuration>{rows}</configuration>")


@pytest.mark.parametrize(("properties", "reason"), [
    ({}, "names no ResourceManager web address"),
    ({"yarn.resourcemanager.webapp.address": "127.0.0.1:9"}, "REST API did not answer"),
], ids=["no-address", "no-answer"])
def test_skipped_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               properties: dict[str, str], reason: str) -> None:
    write_conf(tmp_path, properties)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    outcome = run_preflight([], "default", QUEUE_KEY)
    assert not outcome.checked and reason in (outcome.skipped_reason or "")
    assert outcome.lines() == [f"Pre-flight check skipped: {outcome.skipped_reason}."]


@contextmanager
def fake_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: dict[str, str],
            kerberos: bool = False) -> Iterator[list[str]]:
    """An HTTP server answering each path (query left out) with the text given for it, named
    as the RM's web address in HADOOP_CONF_DIR; yields the paths asked for, in order. With
    ``kerberos`` it wants SPNEGO, as a secure cluster's RM does."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            paths.append(self.path.split("?")[0])
            if kerberos and "Authorization" not in self.headers:
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Negotiate")
                self.end_headers()
                return
            body = answers[paths[-1]]
            self.send_response(200)
            self.send_header("Content-Type", "application/xml" if body.startswith("<")
                             else "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    write_conf(tmp_path, {"yarn.resourcemanager.webapp.address":
                          f"127.0.0.1:{server.server_port}"})
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    try:
        yield paths
    finally:
        server.shutdown()


def test_skipped_where_no_ticket_opens_a_kerberos_rm(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A secure cluster's RM wants SPNEGO; without a ticket the check steps aside saying so."""
    (tmp_path / "krb5.conf").write_text("[libdefaults]\n default_realm = EXAMPLE.COM\n")
    monkeypatch.setenv("KRB5_CONFIG", str(tmp_path / "krb5.conf"))
    monkeypatch.setenv("KRB5CCNAME", str(tmp_path / "no-tickets"))
    with fake_rm(tmp_path, monkeypatch, rm_answers(recorded()), kerberos=True) as paths:
        outcome = run_preflight([], "default", QUEUE_KEY)
    assert paths == ["/ws/v1/cluster/scheduler"]
    assert not outcome.checked
    assert "no ticket for HTTP@127.0.0.1 could be had from" in outcome.skipped_reason


def rm_answers(doc: dict[str, Any], hadoop: str | None = "3.5.0") -> dict[str, str]:
    """The recording's scheduler and nodes, every NodeManager of release ``hadoop`` (None: the
    nodes do not say)."""
    nodes = json.loads(json.dumps(doc["nodes"]))
    for node in nodes["nodes"]["node"]:
        node.pop("version", None)
        if hadoop is not None:
            node["version"] = hadoop
    return {"/ws/v1/cluster/scheduler": json.dumps(doc["scheduler"]),
            "/ws/v1/cluster/nodes": json.dumps(nodes)}


def test_asks_the_rm_over_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a server answering with the recording: two requests, and a verdict."""
    with fake_rm(tmp_path, monkeypatch, rm_answers(recorded())) as paths:
        outcome = run_preflight(job(tmp_path, components={"worker": {"yarn.memory": "20000"}}),
                                "default", QUEUE_KEY)
    assert paths == ["/ws/v1/cluster/scheduler", "/ws/v1/cluster/nodes"]
    assert outcome.checked and len(outcome.problems) == 1
    assert outcome.to_json()["problems"] == [str(outcome.problems[0])]


@pytest.mark.parametrize("hadoop", ["3.2.4", "3.1.1.7.1.7.1000-141", "2.10.2"])
def test_a_cluster_older_than_hadoop_3_3_is_refused(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    hadoop: str) -> None:
    """tfyarn's AppMaster, built against Hadoop 3.3.6's API, would die at its start there:
    refused before anything is submitted, the cluster's release named (a vendor's too)."""
    with (fake_rm(tmp_path, monkeypatch, rm_answers(recorded(), hadoop)) as paths,
          pytest.raises(UnsupportedHadoop) as refused):
        run_preflight(job(tmp_path), "default", QUEUE_KEY)
    assert paths == ["/ws/v1/cluster/scheduler", "/ws/v1/cluster/nodes"]
    assert str(refused.value) == (
        f"the cluster ({refused.value.rm_url}) runs Hadoop {hadoop}; tfyarn supports Hadoop "
        "3.3 and later: its AppMaster is built against Hadoop 3.3.6's API. "
        "Fix: submit to a cluster of Hadoop 3.3 or later (ask its administrators to "
        "upgrade this one).")


@pytest.mark.parametrize("hadoop", ["3.3.0", "3.3.6", "3.4.3", "3.5.0", "3.6.0-SNAPSHOT"])
def test_hadoop_3_3_and_later_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   hadoop: str) -> None:
    with fake_rm(tmp_path, monkeypatch, rm_answers(recorded(), hadoop)):
        outcome = run_preflight(job(tmp_path), "default", QUEUE_KEY)
    assert outcome.checked and outcome.problems == []


def test_an_rm_that_does_not_say_its_release_is_checked_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_rm(tmp_path, monkeypatch, rm_answers(recorded(), None)):
        outcome = run_preflight(job(tmp_path), "default", QUEUE_KEY)
    assert outcome.checked and outcome.problems == []


# What Hadoop 3.5's RM answers to /conf?name=yarn.acl.enable and (as XML: it fails to write
# this one as JSON) to /ws/v1/cluster/queues/<queue>/access.
ACLS_ON = ('{"property":{"key":"yarn.acl.enable","value":"true","isFinal":false,'
           '"resource":"yarn-site.xml"}}')
ACCESS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><rmQueueAclInfo><allowed>'
          "{allowed}</allowed><user>{user}</user><diagnostics></diagnostics></rmQueueAclInfo>")


@pytest.mark.parametrize("allowed", [True, False])
def test_asks_the_rm_where_an_acl_may_forbid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             allowed: bool) -> None:
    doc = recorded()
    for acl in scheduler_info(doc)["queueAcls"]["queueAcl"]:
        acl["accessControlList"] = "alice admins"
    monkeypatch.setenv("HADOOP_USER_NAME", "bob")
    answers = {**rm_answers(doc), "/conf": ACLS_ON,
               "/ws/v1/cluster/queues/root.default/access":
                   ACCESS.format(allowed=str(allowed).lower(), user="bob")}
    with fake_rm(tmp_path, monkeypatch, answers) as paths:
        outcome = run_preflight(job(tmp_path), "default", QUEUE_KEY)
    assert paths[2:] == ["/conf", "/ws/v1/cluster/queues/root.default/access"]
    assert outcome.checked
    assert [p.message for p in outcome.problems] == ([] if allowed else [
        "user bob may not submit to queue root.default (its SUBMIT_APP and ADMINISTER_QUEUE "
        "ACLs)"])


PRIORITY_KEY = ("appConfig.json", 'global."site.global.application.priority"')


@pytest.mark.parametrize(("asked", "highest", "found"), [
    (10, 10, []),
    (11, 10, ['appConfig.json: global."site.global.application.priority" = 11: the '
              "cluster's application priorities go from 0 to 10 "
              "(yarn.cluster.max-application-priority). Fix: at most 10."]),
    (1, 0, ['appConfig.json: global."site.global.application.priority" = 1: the cluster '
            "has application priorities off (yarn.cluster.max-application-priority is 0): "
            "every job runs at 0. Fix: remove the key, or ask the cluster's administrators "
            "to set yarn.cluster.max-application-priority."]),
    (5, None, []),  # the RM did not say: YARN decides
])
def test_a_priority_the_cluster_does_not_allow_is_refused(
        tmp_path: Path, asked: int, highest: int | None, found: list[str]) -> None:
    """YARN lowers a priority above yarn.cluster.max-application-priority without a word:
    pre-flight says so first."""
    outcome = check(view(), job(tmp_path), "default", QUEUE_KEY,
                    priority=PriorityAsk(asked, PRIORITY_KEY, highest))
    assert texts(outcome) == found


MAX_PRIORITY_10 = ('{"property":{"key":"yarn.cluster.max-application-priority","value":"10",'
                   '"isFinal":false,"resource":"yarn-site.xml"}}')


def test_asks_the_rm_its_highest_priority_only_for_a_job_that_asks_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {**rm_answers(recorded()), "/conf": MAX_PRIORITY_10}
    with fake_rm(tmp_path, monkeypatch, answers) as paths:
        outcome = run_preflight(job(tmp_path), "default", QUEUE_KEY,
                                PriorityAsk(12, PRIORITY_KEY))
    assert paths == ["/ws/v1/cluster/scheduler", "/ws/v1/cluster/nodes",
                     "/conf"]
    assert [p.message for p in outcome.problems] == [
        "the cluster's application priorities go from 0 to 10 "
        "(yarn.cluster.max-application-priority)"]


# ---- YARN's own refusals, in plain words ----

FRAMES = "".join(f"\tat org.apache.hadoop.yarn.server.Some{i}.call(Some{i}.java:{i})\n"
                 for i in range(28))


def test_java_stack_frames_are_left_out() -> None:
    diagnosis = ("Failure in container allocator:\nInvalid resource request, queue=default "
                 "doesn't have permission to access all labels in resource request. "
                 "labelExpression of resource request=tpu. Queue labels=gpu\n" + FRAMES)
    assert plain_diagnosis(diagnosis) == diagnosis.split("\n\tat")[0]


def test_a_message_pasted_into_itself_is_said_once() -> None:
    message = ("Failed to submit application, exception:\nFailed to submit application_1_0002 "
               "to YARN : Application application_1_0002 submitted by user rootApplication "
               "application_1_0002 submitted by user root to unknown queue: nosuchqueue")
    assert plain_diagnosis(message) == ("Application application_1_0002 submitted by user root "
                                        "to unknown queue: nosuchqueue")


def test_the_full_text_goes_to_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    text = "Too big\n" + FRAMES
    with caplog.at_level(logging.DEBUG, logger="tfyarn"):
        assert plain_diagnosis(text) == "Too big"
    assert FRAMES.strip() in caplog.text


def test_exception_class_names_and_causes_repeating_it_go() -> None:
    text = ("org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException: Too big\n"
            + FRAMES + "Caused by: java.io.IOException: Too big\n\t... 12 more")
    assert plain_diagnosis(text) == "Too big"


# ---- placement: ANTI_AFFINITY_REQUIRED needs a host per container ----

def two_default_nodes(busy: bool = False) -> dict[str, Any]:
    doc = recorded()
    other = copy.deepcopy(node(doc, ""))
    other["id"] = "otherhost:8444"
    if busy:
        other["availableResource"] = resource_json(0, 0)
    doc["nodes"]["nodes"]["node"].append(other)
    return doc


def anti_affine_ps(count: int) -> dict[str, dict[str, str]]:
    return {"ps": {"yarn.component.instances": str(count),
                   "yarn.component.placement.policy": "4"}}


def test_anti_affinity_with_a_host_per_container_passes(tmp_path: Path) -> None:
    found = verdict(tmp_path, doc=two_default_nodes(), components=anti_affine_ps(2))
    assert found.problems == []
    assert found.notes == []  # YARN keeps them apart (the AppMaster's placement constraints)


def test_anti_affinity_with_more_containers_than_hosts_is_refused(tmp_path: Path) -> None:
    found = texts(verdict(tmp_path, doc=two_default_nodes(), components=anti_affine_ps(3)))
    assert len(found) == 1, found
    assert 'resources.json: components.ps."yarn.component.placement.policy" = "4": 3 ps ' \
        "containers, no two on one host (ANTI_AFFINITY_REQUIRED), but the default " \
        "partition (no label) has 2 active node(s)" in found[0]
    assert "Fix: at most 2 yarn.component.instances" in found[0]


def test_anti_affinity_waiting_for_a_busy_host_is_a_note(tmp_path: Path) -> None:
    found = verdict(tmp_path, doc=two_default_nodes(busy=True), components=anti_affine_ps(2))
    assert found.problems == []
    assert any(n.startswith("ps: 2 containers on as many hosts") for n in found.notes)
