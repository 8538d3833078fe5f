"""The guard in front of a job's TensorBoard (appmaster/common/pageguard.py): a real upstream server
on loopback, real requests; who gets through and who gets 403 with the proxy's URL."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from appmaster.common.hadoopxml import proxy_base
from appmaster.common.pageguard import GuardedPage, Peers, refusal_page

APP = "application_1700000000000_0042"
BIG = b"x" * (3 * 1024 * 1024 + 17)  # more than one chunk: streamed, whole


def yarn_site(tmp_path: Path, **props: str) -> str:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>"
                   for k, v in props.items())
    (tmp_path / "yarn-site.xml").write_text(f"<configuration>{body}</configuration>")
    return str(tmp_path)


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[GuardedPage, str, list[str]]]:
    """A guard for an AppMaster on this host, in front of an upstream that records paths."""
    conf = yarn_site(tmp_path, **{"yarn.resourcemanager.webapp.address": "rm.example:8088"})
    page = GuardedPage("tensorboard", APP, "127.0.0.1", conf)
    seen: list[str] = []

    class Upstream(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            if self.path.endswith("/moved"):
                self.send_response(302)
                self.send_header("Location", f"/{page.secret}/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = BIG if self.path.endswith("/big") else b'["train"]'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    upstream = ThreadingHTTPServer((page.upstream.getsockname()), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    exported = socket.socket()
    exported.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    exported.bind(("0.0.0.0", 0))
    page.start(exported)
    try:
        yield page, f"http://127.0.0.1:{exported.getsockname()[1]}", seen
    finally:
        page.close()
        upstream.shutdown()
        upstream.server_close()


def test_the_secret_path_from_the_appmaster_host_goes_through(guarded) -> None:
    page, url, seen = guarded
    # skein's UI keeps its target's trailing slash: /<secret>//data/runs
    answer = requests.get(f"{url}/{page.secret}//data/runs?x=1", timeout=10)
    assert answer.status_code == 200 and answer.json() == ["train"]
    assert seen == [f"/{page.secret}/data/runs?x=1"]
    big = requests.get(f"{url}/{page.secret}/big", timeout=30)
    assert big.status_code == 200 and big.content == BIG
    moved = requests.get(f"{url}/{page.secret}/moved", timeout=10, allow_redirects=False)
    assert moved.headers["Location"] == (f"http://rm.example:8088/proxy/{APP}/pages/"
                                         "tensorboard/elsewhere")


def test_anything_else_is_refused_with_the_proxy_url(guarded) -> None:
    page, url, seen = guarded
    for path in ("/", "/data/runs", f"/{page.secret[:-1]}/data/runs", "/x" + page.secret):
        refused = requests.get(url + path, timeout=10)
        assert refused.status_code == 403, path
        assert f"http://rm.example:8088/proxy/{APP}/pages/tensorboard/" in refused.text
        assert page.secret not in refused.text
    assert seen == []


def test_a_peer_other_than_the_appmaster_host_is_refused_even_with_the_secret() -> None:
    # An AppMaster on another host (a TEST-NET-1 address: never this machine's)
    peers = Peers("192.0.2.7")
    assert peers.addresses == {"192.0.2.7"} and not peers.loopback
    assert peers.allow("192.0.2.7")
    assert not peers.allow("127.0.0.1") and not peers.allow("192.0.2.8")
    assert not Peers("").allow("127.0.0.1")  # an unknown AppMaster host: nobody
    local = Peers("127.0.0.3")  # the local cluster's hosts: loopback addresses of this one
    assert local.loopback and local.allow("127.0.0.1")


def test_the_proxy_url_comes_from_yarn_site(tmp_path: Path) -> None:
    assert proxy_base(None, APP) is None
    conf = yarn_site(tmp_path, **{"yarn.resourcemanager.webapp.address": "rm:8088"})
    assert proxy_base(conf, APP) == f"http://rm:8088/proxy/{APP}"
    conf = yarn_site(tmp_path, **{"yarn.web-proxy.address": "proxy:9046",
                                  "yarn.resourcemanager.webapp.address": "rm:8088"})
    assert proxy_base(conf, APP) == f"http://proxy:9046/proxy/{APP}"
    conf = yarn_site(tmp_path, **{"yarn.http.policy": "HTTPS_ONLY",
                                  "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
                                  "yarn.resourcemanager.webapp.https.address.rm1": "a:8090"})
    assert proxy_base(conf, APP) == f"https://a:8090/proxy/{APP}"
    assert "the job's tracking URL" in refusal_page(None)


def test_tensorboard_gets_its_prefix_from_a_private_file(tmp_path: Path) -> None:
    page = GuardedPage("tensorboard", APP, "127.0.0.1")
    flags = Path(page.write_flags(tmp_path))
    assert flags.read_text() == f"--path_prefix=/{page.secret}\n"
    assert flags.stat().st_mode & 0o777 == 0o600
    page.close()
