"""A web server a task starts (TensorBoard), answered only through YARN's proxy.

YARN's ResourceManager proxy decides who may see an application (its view ACL; SPNEGO on a
secure cluster) and forwards to the AppMaster's web UI, skein's, whose AmIpFilter admits only
the proxy hosts. skein's UI forwards a page added with ``ui.add_page`` from the AppMaster's
container to the page's target. So a request for the job's TensorBoard that came through the
proxy arrives from the AppMaster's host and carries the target's path, which only skein's UI
is given. This guard listens on the task's exported port and forwards to TensorBoard (on
loopback, under that path) only such requests, streaming both ways; any other gets 403 and
the proxy's URL. The path is a random secret that goes from the agent to the master over
the rendezvous (the task's export) and on to skein's UI, and to TensorBoard in a private flag
file: never in a command line, a log or a view. On the local cluster, where every "host"
connects from 127.0.0.1, the secret is what sets the proxy's requests apart; on a real
cluster the peer's address must also be the AppMaster's host's.

Standard library only: this runs in the agent.
"""

from __future__ import annotations

import html
import http.client
import logging
import os
import secrets
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from appmaster.common.hadoopxml import proxy_base

log = logging.getLogger("tfyarn.pageguard")

LOOPBACK = "127.0.0.1"
FLAG_FILE = ".tfyarn-tensorboard.flags"  # in the container's directory, readable by us only
CHUNK = 64 * 1024
UPSTREAM_TIMEOUT_S = 120.0
# Headers of one hop, never passed on (RFC 9110 7.6.1).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"})


def reserve_loopback_port() -> socket.socket:
    """A loopback port held (bound, never listening, SO_REUSEADDR) for TensorBoard to bind:
    what agent.reserve_port does for a task's exported port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    return sock


def host_addresses(host: str) -> set[str]:
    """Every IP address ``host`` resolves to (none if it does not)."""
    try:
        return {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError:
        return set()


def is_local(address: str) -> bool:
    """Whether ``address`` is one of this machine's own (it can be bound here)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


def is_loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")


class Peers:
    """Who may connect: the AppMaster's host, where skein's UI runs. When that host is this
    one, its UI may connect from a loopback address too (Linux picks 127.0.0.1 as the source
    for any 127.x destination: the local cluster's case)."""

    def __init__(self, am_host: str) -> None:
        self.addresses = host_addresses(am_host) if am_host else set()
        self.loopback = any(is_local(a) for a in self.addresses)

    def allow(self, address: str) -> bool:
        return address in self.addresses or (self.loopback and is_loopback(address))


def refusal_page(proxy_url: str | None) -> str:
    where = (f'<a href="{html.escape(proxy_url)}">{html.escape(proxy_url)}</a>' if proxy_url
             else "the job's tracking URL, then TensorBoard")
    return ("<!doctype html><title>403 Forbidden</title><h1>403 Forbidden</h1>"
            "<p>This job's TensorBoard answers only through YARN's ResourceManager proxy, "
            f"which checks who may see the job: open {where}.</p>\n")


class GuardedPage:
    """TensorBoard's loopback port and path prefix, and the guard in front of it."""

    def __init__(self, route: str, app_id: str, am_host: str,
                 conf_dir: str | None = None) -> None:
        self.secret = secrets.token_urlsafe(24)
        self.upstream = reserve_loopback_port()
        base = proxy_base(conf_dir, app_id)
        self.proxy_url = f"{base}/pages/{route}/" if base else None
        self.peers = Peers(am_host)
        self.server: ThreadingHTTPServer | None = None

    @classmethod
    def in_container(cls, route: str) -> GuardedPage:
        """For this container: its application, its AppMaster's host (skein names it in
        every container), the node's Hadoop configuration (the proxy's address)."""
        return cls(route, os.environ.get("SKEIN_APPLICATION_ID", ""),
                   os.environ.get("SKEIN_APPMASTER_ADDRESS", "").rpartition(":")[0],
                   os.environ.get("HADOOP_CONF_DIR"))

    @property
    def upstream_port(self) -> int:
        return self.upstream.getsockname()[1]

    def write_flags(self, directory: str | Path = ".") -> str:
        """TensorBoard's path prefix in a flag file only we can read (``--flagfile``):
        a command line is every local user's to read."""
        path = Path(directory, FLAG_FILE).resolve()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as flags:
            flags.write(f"--path_prefix=/{self.secret}\n")
        return str(path)

    def start(self, listening: socket.socket) -> None:
        """Guard ``listening`` (the exported port, bound) in daemon threads."""
        self.server = serve(listening, self)
        if not self.peers.addresses:
            log.error("the AppMaster's host is unknown (SKEIN_APPMASTER_ADDRESS): every "
                      "request to TensorBoard is refused")

    def close(self) -> None:
        """Stop guarding (TensorBoard ended): the exported port is let go."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.upstream.close()


def send_text(handler: BaseHTTPRequestHandler, code: int, content_type: str, body: str) -> None:
    """A whole answer, never cached (the job page's server's too)."""
    data = body.encode()
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("Cache-Control", "no-store")
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)


def serve(listening: socket.socket, page: GuardedPage) -> ThreadingHTTPServer:
    class Guard(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # skein's Jetty keeps its connections

        def _guard(self) -> None:
            path, mark, query = self.path.partition("?")
            head, _, rest = path.lstrip("/").partition("/")
            self._answered = False
            if not (page.peers.allow(self.client_address[0])
                    and secrets.compare_digest(head.encode(), page.secret.encode())):
                log.warning("refused a request from %s: not through YARN's proxy",
                            self.client_address[0])  # its path may be a guess: not logged
                self._refuse()
                return
            # skein's proxy keeps the target's trailing slash (/<secret>//data/runs)
            upstream_path = f"/{page.secret}/{rest.lstrip('/')}" + (mark + query)
            try:
                self._forward(upstream_path)
            except (ConnectionError, TimeoutError, http.client.HTTPException) as exc:
                if not self._answered:
                    self._text(502, f"TensorBoard does not answer yet: {exc}\n")
                self.close_connection = True

        def _refuse(self) -> None:
            self._discard_body()
            self._text(403, refusal_page(page.proxy_url), "text/html; charset=utf-8")

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _guard

        def _forward(self, upstream_path: str) -> None:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                self._text(411, "a body needs a Content-Length\n")
                self.close_connection = True
                return
            upstream = http.client.HTTPConnection(LOOPBACK, page.upstream_port,
                                                  timeout=UPSTREAM_TIMEOUT_S)
            try:
                upstream.putrequest(self.command, upstream_path, skip_host=True,
                                    skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in HOP_BY_HOP:
                        upstream.putheader(name, value)
                upstream.endheaders()
                left = int(self.headers.get("Content-Length") or 0)
                while left > 0:
                    chunk = self.rfile.read(min(CHUNK, left))
                    if not chunk:
                        break
                    upstream.send(chunk)
                    left -= len(chunk)
                self._relay(upstream.getresponse())
            finally:
                upstream.close()

        def _relay(self, answer: http.client.HTTPResponse) -> None:
            self.send_response_only(answer.status, answer.reason)
            sized = answer.getheader("Content-Length") is not None
            for name, value in answer.getheaders():
                if name.lower() in HOP_BY_HOP:
                    continue
                if name.lower() == "location" and page.secret in value and page.proxy_url:
                    value = page.proxy_url + value.split(page.secret, 1)[1].lstrip("/")
                self.send_header(name, value)
            if not sized and self.command != "HEAD":  # its end is the connection's
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self._answered = True
            while chunk := answer.read1(CHUNK):
                self.wfile.write(chunk)

        def _discard_body(self) -> None:
            left = int(self.headers.get("Content-Length") or 0)
            while left > 0 and (chunk := self.rfile.read(min(CHUNK, left))):
                left -= len(chunk)

        def _text(self, code: int, body: str, content_type: str = "text/plain") -> None:
            send_text(self, code, content_type, body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.debug(format, *args)

    server = ThreadingHTTPServer(listening.getsockname(), Guard, bind_and_activate=False)
    server.socket.close()
    server.socket = listening
    server.daemon_threads = True
    server.server_activate()  # listen
    threading.Thread(target=server.serve_forever, daemon=True, name="pageguard").start()
    return server
