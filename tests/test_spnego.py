"""tfyarn's SPNEGO client (tfyarn/security/spnego.py) against loopback HTTP servers and MIT's real
libgssapi. A whole login, ticket to 200, is proved on the secure local cluster
(tests/test_secure_yarn.py); here, what it does when a server does not ask, and when no
ticket can be had."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tfyarn.security import spnego


@contextmanager
def server(wants_negotiate: bool) -> Iterator[tuple[str, list[str | None]]]:
    """A server on 127.0.0.1; yields its URL and the Authorization header of each request."""
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(self.headers.get("Authorization"))
            if wants_negotiate:
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Negotiate")
            else:
                self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/", seen
    finally:
        httpd.shutdown()


@pytest.fixture
def no_tickets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "krb5.conf").write_text("[libdefaults]\n default_realm = EXAMPLE.COM\n")
    monkeypatch.setenv("KRB5_CONFIG", str(tmp_path / "krb5.conf"))
    monkeypatch.setenv("KRB5CCNAME", str(tmp_path / "no-tickets"))
    return tmp_path / "no-tickets"


def test_a_server_without_kerberos_gets_one_plain_request(no_tickets: Path) -> None:
    with server(wants_negotiate=False) as (url, seen):
        assert spnego.get(url, timeout=5).text == "ok"
    assert seen == [None]


def test_no_ticket_is_named_with_the_cache_and_the_fix(no_tickets: Path) -> None:
    with server(wants_negotiate=True) as (url, seen), \
            pytest.raises(spnego.SpnegoError) as raised:
        spnego.get(url, timeout=5)
    assert seen == [None]  # the challenge came; no token could be made to answer it
    message = str(raised.value)
    assert f"no ticket for HTTP@127.0.0.1 could be had from {no_tickets}" in message
    assert "Fix: run kinit" in message
