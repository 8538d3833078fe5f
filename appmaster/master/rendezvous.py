"""The agents' rendezvous, served by the master: a small authenticated HTTP key-value store.

The agents' side is appmaster/common/agentlink.py (standard library only): with it an agent needs
neither skein nor gRPC (~55 MB and ~0.3 CPU-s per container, issue 14). What the agents
write and read here is what they wrote and read in skein's registry (appmaster/common/registry.py
names the keys): their exports, status, tails, mirror and progress reports; their task, the
cluster spec and the end of training (the evaluator's cue); their heartbeats. What only
YARN can tell, a container's end, stays with skein: the master writes ``task/<container>``
there with owner=container and watches its deletion, which needs nothing from the agent.

Who may talk to it: every request must carry the job's token (``X-Tfyarn-Token``), a random
secret made by `tfyarn submit` and given to the job's containers only, as a private YARN
local resource (like skein's own certificate and key). The server can also speak TLS with
skein's per-application certificate, which the agents then pin: the token and the reports
never cross the network in clear. Nothing here depends on how the cluster authenticates
users; on a Kerberos cluster YARN localizes the token with the job's delegation tokens, as
it does skein's key (see docs/benchmarks.md, "The lean agent transport").

Waiting is event-driven: a GET with ``after=<version>`` is answered the moment the key gets a
newer version (a long poll); ``wait`` bounds one such request, after which the agent asks
again, so a dead peer holds a server thread for at most that long.
"""

from __future__ import annotations

import logging
import secrets
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from appmaster.common import registry
from appmaster.common.agentlink import TOKEN_HEADER, VERSION_HEADER, candidate_ports

log = logging.getLogger("tfyarn.rendezvous")

# What agents may write and read: nothing else of the master's state is reachable.
AGENT_WRITABLE = ("exports/", "status/", "tail/", "mirror/", "progress/", "steps/")
# training/done: the evaluator's cue; tokens/: new HDFS tokens (appmaster/common/hdfstokens.py);
# stacks/: the stall watchdog's request for every process's stacks; stop/ and settled/: a
# healthy task ended by tfyarn, and when the next generation may restore
AGENT_READABLE = ("task/", "spec/", "training/", "tokens/", "notice/", "stacks/", "stop/",
                  "settled/")
MAX_BODY = 1 << 20  # a status, a mirror report, 20 stderr lines: far less than this
MAX_WAIT_S = 60.0


class Store:
    """Keys to (value, version), versions rising across the store; waiters wake on change.

    ``on_put(key, value)`` runs for every agent write, in the writer's server thread: the
    master queues it as an event, as it did skein's watch events.

    A write wakes only the waiters of its own key: while N agents wait for the spec, their
    N exports and statuses must not wake all N each time (issue 28: N² wake-ups).
    """

    def __init__(self, on_put: Callable[[str, bytes], None] | None = None) -> None:
        self._values: dict[str, tuple[bytes, int]] = {}
        self._beats: dict[str, int] = {}
        self._version = 0
        self._lock = threading.Lock()
        # key -> its waiters' condition (on the one lock); a key's stays once waited on: few
        # keys are (each task's, the specs, the end of training), all kept in _values too
        self._changed: dict[str, threading.Condition] = {}
        self.on_put = on_put

    def put(self, key: str, value: bytes) -> int:
        with self._lock:
            self._version += 1
            self._values[key] = (value, self._version)
            if key in self._changed:
                self._changed[key].notify_all()
            return self._version

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)

    def get(self, key: str) -> tuple[bytes, int] | None:
        with self._lock:
            return self._values.get(key)

    def wait(self, key: str, after: int, timeout_s: float) -> tuple[bytes, int] | None:
        """The key's value once its version is above ``after``; None after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            changed = self._changed.get(key)
            if changed is None:
                changed = self._changed[key] = threading.Condition(self._lock)
            while True:
                found = self._values.get(key)
                if found is not None and found[1] > after:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or not changed.wait(left):
                    return None

    def beat(self, container: str) -> bool:
        """One heartbeat of ``container``; whether it still holds its task (its fence)."""
        with self._lock:
            self._beats[container] = self._beats.get(container, 0) + 1
            return f"task/{container}" in self._values

    def beats(self) -> dict[str, int]:
        """Every agent's heartbeat counter, read at once (the master's liveness check)."""
        with self._lock:
            return dict(self._beats)


class RendezvousServer(ThreadingHTTPServer):
    daemon_threads = True  # a long poll never holds up the master's exit
    store: Store
    token: bytes

    def finish_request(self, request, client_address) -> None:
        # The TLS handshake runs here, in the connection's own thread: a slow or silent
        # peer never holds up accept() for the others.
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(RendezvousRequestHandler.timeout)
            try:
                request.do_handshake()
            except (OSError, ssl.SSLError) as exc:
                log.debug("TLS handshake with %s failed: %s", client_address, exc)
                return
        super().finish_request(request, client_address)

    @property
    def url(self) -> str:
        scheme = "https" if isinstance(self.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://{self.server_name}:{self.server_address[1]}"


class RendezvousRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: an agent holds one connection per thread
    timeout = MAX_WAIT_S + 30  # an idle connection is dropped; the agent dials again
    server: RendezvousServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        key, query = self._authorized(AGENT_READABLE)
        if key is None:
            return
        if "after" not in query:
            found = self.server.store.get(key)
        else:
            try:
                after = int(query["after"][0])
                wait = min(float(query.get("wait", [MAX_WAIT_S])[0]), MAX_WAIT_S)
            except ValueError:
                self._send(400)
                return
            found = self.server.store.wait(key, after, wait)
        if found is None:
            self._send(204 if "after" in query else 404)
        else:
            self._send(200, found[0], found[1])

    def do_PUT(self) -> None:  # noqa: N802
        key, _ = self._authorized(AGENT_WRITABLE)
        if key is None:
            return
        value = self._body()
        if value is None:
            return
        version = self.server.store.put(key, value)
        if self.server.store.on_put:
            self.server.store.on_put(key, value)
        self._send(204, version=version)

    def do_POST(self) -> None:  # noqa: N802 (POST /alive/<container>: a heartbeat)
        """Answers whether the container still holds its task, and the version of the newest
        HDFS tokens, which the agent fetches when it has older ones."""
        key, _ = self._authorized(("alive/",))
        if key is None or self._body() is None:
            return
        holds = self.server.store.beat(key.split("/", 1)[1])
        tokens = self.server.store.get(registry.TOKENS_KEY)
        self._send(200 if holds else 410, version=tokens[1] if tokens else None)

    def _authorized(self, prefixes: tuple[str, ...]) -> tuple[str | None, dict]:
        """The request's key, or None once it was answered with an error."""
        given = self.headers.get(TOKEN_HEADER, "").encode()
        if not secrets.compare_digest(given, self.server.token):
            self._send(401)
            self.close_connection = True
            return None, {}
        parts = urlsplit(self.path)
        key = unquote(parts.path.removeprefix("/v1/kv/").removeprefix("/v1/"))
        if not key.startswith(prefixes) or ".." in key:
            self._send(403)
            return None, {}
        return key, parse_qs(parts.query)

    def _body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length", "0"))
        if length > MAX_BODY:
            self._send(413)
            self.close_connection = True
            return None
        return self.rfile.read(length)

    def _send(self, code: int, body: bytes = b"", version: int | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        if version is not None:
            self.send_header(VERSION_HEADER, str(version))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def send_response(self, code: int, message: str | None = None) -> None:
        """The status line alone. http.server's adds a Server and a Date header, which no
        agent reads, and formats an access-log line even when debug logging is off: ~15-20 %
        of the server's CPU per heartbeat, at 200 heartbeats a second for 1,000 tasks (issue
        28, bench/simulated_am.py)."""
        if log.isEnabledFor(logging.DEBUG):
            self.log_request(code)
        self.send_response_only(code, message)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        log.debug(format, *args)


def server_tls(cert_file: str, key_file: str) -> ssl.SSLContext:
    """TLS with skein's per-application certificate and key (in the AppMaster's directory)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


def serve(store: Store, token: str, host: str = "0.0.0.0", port: int = 0,
          tls: ssl.SSLContext | None = None, advertised: str | None = None) -> RendezvousServer:
    """Start serving in a daemon thread; ``advertised`` is the host name agents dial."""
    server = RendezvousServer((host, port), RendezvousRequestHandler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    server.store, server.token = store, token.encode()
    if advertised:
        server.server_name = advertised
    threading.Thread(target=server.serve_forever, daemon=True, name="rendezvous").start()
    return server


def serve_on_candidates(store: Store, token: str, host: str = "0.0.0.0",
                        tls: ssl.SSLContext | None = None,
                        advertised: str | None = None) -> RendezvousServer:
    """Serve on the first free of the token's candidate ports, where agents that were told
    no URL look (agentlink.AgentLink.discover)."""
    for port in candidate_ports(token):
        try:
            return serve(store, token, host, port, tls, advertised)
        except OSError:  # taken on this host: the next one
            continue
    raise OSError(f"every candidate port is taken: {candidate_ports(token)}")
