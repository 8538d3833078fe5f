"""The master's rendezvous (appmaster/master/rendezvous.py) and the agent's link to it
(appmaster/common/agentlink.py), run against each other over real sockets, plain and TLS."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import skein

from appmaster.common import agentlink, registry
from appmaster.common.agentlink import AgentLink, LinkError
from appmaster.master import rendezvous

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def served():
    """A store, its server on loopback and the events the master would hear."""
    heard: list[tuple[str, bytes]] = []
    store = rendezvous.Store(on_put=lambda key, value: heard.append((key, value)))
    token = agentlink.new_token()
    server = rendezvous.serve(store, token, host="127.0.0.1", advertised="127.0.0.1")
    yield store, server, token, heard
    stop_now(server)


def stop_now(server) -> None:
    """server.shutdown() without its wait: serve_forever looks at the stop request every
    0.5 s, or at once when a connection comes, so connections come until it has stopped."""
    stopping = threading.Thread(target=server.shutdown)
    stopping.start()
    while stopping.is_alive():
        with contextlib.suppress(OSError):
            socket.create_connection(server.server_address[:2], timeout=1).close()
        stopping.join(0.05)
    server.server_close()


def credentials(tmp_path: Path, name: str) -> tuple[str, str]:
    """skein's own kind of per-application certificate and key, as files."""
    security = skein.Security.new_credentials()
    cert, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.pem"
    cert.write_bytes(security._get_bytes("cert"))
    key.write_bytes(security._get_bytes("key"))
    return str(cert), str(key)


def waiting(link: AgentLink, key: str, after: int = 0):
    """A thread blocked in ``link.wait``, and the list its answer lands in."""
    got: list[tuple[bytes, int]] = []
    waiter = threading.Thread(target=lambda: got.append(link.wait(key, after)))
    waiter.start()
    return waiter, got


def test_agent_writes_reach_the_master_as_events(served):
    store, server, token, heard = served
    link = AgentLink(server.url, token)
    link.put("exports/worker/0", b'{"address": "h:1"}')
    link.put("status/worker_0", b'{"state": "registered"}')
    assert heard == [("exports/worker/0", b'{"address": "h:1"}'),
                     ("status/worker_0", b'{"state": "registered"}')]
    assert store.get("status/worker_0")[0] == b'{"state": "registered"}'


def test_the_evaluator_waits_for_the_end_of_training_and_reports_progress(served):
    store, server, token, heard = served
    link = AgentLink(server.url, token)
    waiter, got = waiting(link, "training/done")
    link.put("progress/evaluator_0", b'{"step": 10}')
    store.put("training/done", b"1")
    waiter.join(10)
    assert got and got[0][0] == b"1"
    assert heard == [("progress/evaluator_0", b'{"step": 10}')]


def test_agent_reads_its_task_and_a_missing_key_is_none(served):
    store, server, token, _ = served
    store.put("task/worker_0", b'{"role": "worker", "index": 0}')
    link = AgentLink(server.url, token)
    assert link.get("task/worker_0") == b'{"role": "worker", "index": 0}'
    assert link.get("task/worker_1") is None


def test_wait_returns_when_the_spec_is_published(served):
    store, server, token, _ = served
    link = AgentLink(server.url, token)
    waiter, got = waiting(link, "spec/0")
    waiter.join(0.3)
    assert waiter.is_alive() and not got  # nothing published yet: still waiting
    version = store.put("spec/0", b'{"worker": ["h:1"]}')
    waiter.join(10)
    assert got == [(b'{"worker": ["h:1"]}', version)]


def test_wait_after_a_version_sees_only_a_newer_one(served):
    store, server, token, _ = served
    first = store.put("spec/0", b"old")
    link = AgentLink(server.url, token)
    assert link.wait("spec/0") == (b"old", first)
    waiter, got = waiting(link, "spec/0", after=first)
    waiter.join(0.3)
    assert waiter.is_alive()
    second = store.put("spec/0", b"new")
    waiter.join(10)
    assert got == [(b"new", second)]


def test_beat_counts_and_fences(served):
    store, server, token, _ = served
    store.put("task/worker_0", b"{}")
    link = AgentLink(server.url, token)
    assert link.beat("worker_0") == (True, 0) and link.beat("worker_0")[0]
    assert store.beats() == {"worker_0": 2}
    store.delete("task/worker_0")  # the master gave the task to another container
    assert link.beat("worker_0") == (False, 0)


def test_beat_tells_the_version_of_new_hdfs_tokens_which_an_agent_can_read(served):
    store, server, token, _ = served
    store.put("task/worker_0", b"{}")
    link = AgentLink(server.url, token)
    version = store.put(registry.TOKENS_KEY, b"HDTS...")
    assert link.beat("worker_0") == (True, version)
    assert link.get_versioned(registry.TOKENS_KEY) == (b"HDTS...", version)
    with pytest.raises(LinkError):  # agents read tokens, never write them
        link.put(registry.TOKENS_KEY, b"forged")


def test_a_beat_is_answered_with_only_the_headers_agents_read(served, caplog):
    """No Server or Date header (issue 28: with the access-log line, ~15-20 % of the
    server's CPU per heartbeat); the access log is still there at debug level."""
    store, server, token, _ = served
    store.put("task/worker_0", b"{}")
    version = store.put(registry.TOKENS_KEY, b"HDTS...")
    connection = agentlink.Connection("127.0.0.1", server.server_address[1])
    try:
        with caplog.at_level(logging.DEBUG, logger=rendezvous.log.name):
            code, answer, _ = connection.request(
                "POST", "/v1/alive/worker_0", {agentlink.TOKEN_HEADER: token}, b"", 5.0)
    finally:
        connection.close()
    assert code == 200
    assert answer == {"content-length": "0", agentlink.VERSION_HEADER.lower(): str(version)}
    # This request's lines only: a server thread of the test before may log its own late.
    assert [r.getMessage() for r in caplog.records if "/v1/alive/" in r.getMessage()] == [
        '"POST /v1/alive/worker_0 HTTP/1.1" 200 -']


def test_wrong_token_is_refused_and_writes_nothing(served):
    store, server, _, heard = served
    intruder = AgentLink(server.url, agentlink.new_token())
    with pytest.raises(LinkError, match="401"):
        intruder.put("exports/worker/0", b"evil:1")
    with pytest.raises(LinkError, match="401"):
        intruder.get("task/worker_0")
    assert heard == [] and store.get("exports/worker/0") is None


@pytest.mark.parametrize("method, key", [
    ("put", "spec/0"), ("put", "task/worker_0"), ("put", "alive/x"), ("get", "exports/ps/0"),
    ("get", "status/worker_0"), ("put", "exports/../spec/0")])
def test_agents_reach_only_their_keys(served, method, key):
    _, server, token, heard = served
    link = AgentLink(server.url, token)
    with pytest.raises(LinkError, match="403"):
        link.put(key, b"x") if method == "put" else link.get(key)
    assert heard == []


def test_a_malformed_wait_is_refused_and_the_connection_stays_usable(served):
    store, server, token, _ = served
    link = AgentLink(server.url, token)
    with pytest.raises(LinkError, match="400"):
        link._call("GET", "/v1/kv/spec/0?after=x&wait=1", b"", (200, 204))
    store.put("task/ps_0", b"t")
    assert link.get("task/ps_0") == b"t"


def test_oversized_report_is_refused(served):
    _, server, token, heard = served
    link = AgentLink(server.url, token)
    with pytest.raises(LinkError, match="413"):
        link.put("tail/worker_0", b"x" * (rendezvous.MAX_BODY + 1))
    link.put("tail/worker_0", b"short")  # a fresh connection works after the refusal
    assert heard == [("tail/worker_0", b"short")]


def test_link_dials_again_after_the_server_dropped_it(served):
    store, server, token, _ = served
    link = AgentLink(server.url, token)
    link.put("status/worker_0", b"1")
    port = server.server_address[1]
    server.shutdown()
    server.server_close()  # the kept connection dies with it
    again = rendezvous.serve(store, token, host="127.0.0.1", port=port)
    try:
        link.put("status/worker_0", b"2")
        assert store.get("status/worker_0")[0] == b"2"
    finally:
        again.shutdown()
        again.server_close()


def test_tls_pins_the_applications_certificate(tmp_path):
    cert, key = credentials(tmp_path, "app")
    other_cert, _ = credentials(tmp_path, "other")
    store, token = rendezvous.Store(), agentlink.new_token()
    server = rendezvous.serve(store, token, host="127.0.0.1", advertised="127.0.0.1",
                              tls=rendezvous.server_tls(cert, key))
    try:
        assert server.url.startswith("https://")
        link = AgentLink(server.url, token, cafile=cert)
        link.put("exports/ps/0", b"h:2")
        store.put("spec/0", b"spec")
        assert link.wait("spec/0")[0] == b"spec"
        # A server holding another application's key is not ours: the agent refuses it.
        with pytest.raises(LinkError):
            AgentLink(server.url, token, cafile=other_cert).get("spec/0")
        # Plain HTTP to the TLS port gets nothing through.
        plain = AgentLink(server.url.replace("https:", "http:"), token)
        with pytest.raises(LinkError):
            plain.put("exports/ps/0", b"evil:1")
        assert store.get("exports/ps/0")[0] == b"h:2"
    finally:
        server.shutdown()
        server.server_close()


def test_from_container_reads_the_url_and_the_token_file(served, tmp_path, monkeypatch):
    store, server, token, _ = served
    (tmp_path / agentlink.TOKEN_FILE).write_text(token + "\n")
    monkeypatch.setenv(agentlink.URL_ENV, server.url)
    store.put("task/ps_0", b"t")
    assert AgentLink.from_container(tmp_path).get("task/ps_0") == b"t"


def imported_of(module: str, candidates: tuple[str, ...]) -> list[str]:
    """Which of ``candidates`` importing ``module`` loads, in a fresh interpreter."""
    code = (f"import sys, {module}; "
            f"print([m for m in {candidates!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.replace("'", '"'))


def test_the_link_imports_neither_skein_nor_grpc():
    assert imported_of("appmaster.common.agentlink",
                       ("skein", "grpc", "http.client", "email", "ssl")) == []


def test_a_training_tasks_agent_imports_no_web_server():
    """Only TensorBoard's task guards a page (appmaster/common/pageguard.py): every other
    agent, one beside each training script, holds no HTTP server, client or e-mail parser
    (3 MB of its private memory)."""
    assert imported_of("appmaster.agent.main", ("http.server", "http.client", "email",
                                                "socketserver",
                                                "appmaster.common.pageguard")) == []


def test_an_agent_told_no_url_finds_the_master_past_a_taken_port(tmp_path, monkeypatch):
    cert, key = credentials(tmp_path, "app")
    store, token = rendezvous.Store(), agentlink.new_token()
    first = agentlink.candidate_ports(token)[0]
    squatter = rendezvous.serve(rendezvous.Store(), agentlink.new_token(), host="127.0.0.1",
                                port=first, tls=rendezvous.server_tls(*credentials(tmp_path,
                                                                                   "other")))
    server = rendezvous.serve_on_candidates(store, token, host="127.0.0.1",
                                            tls=rendezvous.server_tls(cert, key))
    try:
        assert server.server_address[1] == agentlink.candidate_ports(token)[1]
        (tmp_path / agentlink.TOKEN_FILE).write_text(token)
        (tmp_path / agentlink.CERT_FILE).write_bytes(Path(cert).read_bytes())
        monkeypatch.delenv(agentlink.URL_ENV, raising=False)
        monkeypatch.setenv("SKEIN_APPMASTER_ADDRESS", "127.0.0.1:1")
        AgentLink.from_container(tmp_path).put("exports/ps/0", b"h:3")
        assert store.get("exports/ps/0")[0] == b"h:3"
    finally:
        for s in (squatter, server):
            s.shutdown()
            s.server_close()


def test_an_agent_waits_for_the_spec_that_lists_its_own_address(served):
    """agent.wait_for_spec: a spec of its generation without its address (an old export)
    does not start it; the one listing its own address does. The evaluator takes the first
    spec of its generation or a later one (spec/latest), never an older one."""
    from appmaster.agent.main import wait_for_any_spec, wait_for_spec
    from appmaster.common.cluster_spec import ClusterSpec

    store, server, token, _ = served
    link = AgentLink(server.url, token)
    old = ClusterSpec(ps=("h:1",), workers=("old:2",)).to_json()
    new = ClusterSpec(ps=("h:1",), workers=("new:2",)).to_json()
    got: list[ClusterSpec] = []
    waiter = threading.Thread(target=lambda: got.append(
        wait_for_spec(link, 0, "new:2", "worker", 0)))
    waiter.start()
    store.put("spec/0", old.encode())
    waiter.join(0.5)
    assert waiter.is_alive() and not got
    store.put("spec/0", new.encode())
    waiter.join(5)
    assert got and got[0].addresses("worker") == ("new:2",)

    latest = '{"generation": %d, "spec": %s}'
    store.put("spec/latest", (latest % (0, json.dumps(old))).encode())
    evaluator: list[ClusterSpec] = []
    waiter = threading.Thread(target=lambda: evaluator.append(wait_for_any_spec(link, 1)))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not evaluator
    store.put("spec/latest", (latest % (2, json.dumps(new))).encode())
    waiter.join(5)
    assert evaluator and evaluator[0].addresses("worker") == ("new:2",)
