"""The agent's line to the master's rendezvous (appmaster/master/rendezvous.py): standard
library only.

An agent that talks to the master through this imports neither skein nor gRPC: a Python
start, a socket, and (on a TLS rendezvous) ssl. HTTP/1.1 is written by hand over one
keep-alive connection per caller: http.client would pull in the email package for headers
the server never sends. Every request carries the job's token (read from the private file
YARN localized) and, over TLS, checks the server against skein's own certificate of this
application: only the job's own AppMaster can answer, only the job's containers can ask.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit

TOKEN_FILE = ".tfyarn-token"  # the token's file name in every container's directory


def new_token() -> str:
    """A job's secret for the rendezvous: written at submit into the file YARN localizes."""
    return secrets.token_urlsafe(32)
TOKEN_HEADER = "X-Tfyarn-Token"
VERSION_HEADER = "X-Version"
URL_ENV = "TFYARN_RENDEZVOUS"  # where the agents find the server
CERT_FILE = ".skein.crt"  # skein's per-application certificate, in every container
WAIT_S = 50.0  # one long poll; the server answers at once when the key changes
CALL_TIMEOUT_S = 30.0
# Where the master listens, when nothing told the container: the first of these ports that
# was free on the AppMaster's host. Both sides derive them from the token, below Linux's
# ephemeral range, so no extra channel (and no skein import) is needed to find the server.
CANDIDATE_PORTS = 8
PORT_RANGE = (20000, 32000)


def candidate_ports(token: str) -> list[int]:
    low, high = PORT_RANGE
    return [low + int.from_bytes(hmac.new(token.encode(), b"port%d" % i, hashlib.sha256)
                                 .digest()[:4], "big") % (high - low)
            for i in range(CANDIDATE_PORTS)]


def listening(host: str, ports: list[int]) -> list[int]:
    """Those of ``ports`` that accept a connection. Agents look for the master while it
    starts (every 0.2 s): a refused connect costs microseconds, a TLS context for each port
    4 ms of CPU per look here, which 64 waiting agents on one node turned into more than
    a core."""
    found = []
    for port in ports:
        try:
            socket.create_connection((host, port), CALL_TIMEOUT_S).close()
        except OSError:
            continue
        found.append(port)
    return found


class LinkError(OSError):
    """The rendezvous refused a request or could not be reached."""


class Connection:
    """One keep-alive HTTP/1.1 connection, dialled again when the server dropped it."""

    def __init__(self, host: str, port: int, tls=None) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.sock: socket.socket | None = None
        self.reader = None

    def request(self, method: str, path: str, headers: dict[str, str], body: bytes,
                timeout_s: float) -> tuple[int, dict[str, str], bytes]:
        for attempt in (1, 2):  # a kept connection may have been closed by the server
            fresh = self.sock is None
            try:
                if fresh:
                    self._dial()
                self.sock.settimeout(timeout_s)
                return self._exchange(method, path, headers, body)
            except (ConnectionError, EOFError, OSError) as exc:
                self.close()
                if fresh or attempt == 2 or isinstance(exc, TimeoutError):
                    raise LinkError(f"the rendezvous at {self.host}:{self.port}: {exc}") from exc
        raise AssertionError("unreachable")

    def _dial(self) -> None:
        sock = socket.create_connection((self.host, self.port), CALL_TIMEOUT_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        self.sock, self.reader = sock, sock.makefile("rb")

    def _exchange(self, method: str, path: str, headers: dict[str, str],
                  body: bytes) -> tuple[int, dict[str, str], bytes]:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        status_line = self.reader.readline()
        if not status_line:
            raise EOFError("connection closed")
        code = int(status_line.split()[1])
        answer: dict[str, str] = {}
        while (line := self.reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            answer[name.strip().lower()] = value.strip()
        data = self.reader.read(int(answer.get("content-length", "0")))
        if answer.get("connection", "").lower() == "close":
            self.close()
        return code, answer, data

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = self.reader = None


class AgentLink:
    """Put, get, wait for and beat on the master's rendezvous; thread-safe."""

    def __init__(self, url: str, token: str, cafile: str | None = None) -> None:
        parts = urlsplit(url)
        tls = None
        if parts.scheme == "https":
            import ssl  # only a TLS rendezvous pays for it

            tls = ssl.create_default_context(cafile=cafile)
            tls.check_hostname = False  # skein's certificate names no host: it is pinned
        self._address = (parts.hostname or "127.0.0.1", parts.port or 80, tls)
        self._headers = {TOKEN_HEADER: token}
        self._calls = Connection(*self._address)  # puts, gets and beats
        self._calls_lock = threading.Lock()
        self._local = threading.local()  # each waiting thread has its own connection

    @classmethod
    def from_container(cls, directory: str | Path = ".") -> AgentLink:
        """The link YARN set up for this container: the token in a private file; the URL in
        the environment, or else found on the AppMaster's host (skein names it in every
        container) among the token's candidate ports, over TLS with skein's certificate."""
        directory = Path(directory)
        token = (directory / TOKEN_FILE).read_text().strip()
        url = os.environ.get(URL_ENV)
        if url is None:
            host = os.environ["SKEIN_APPMASTER_ADDRESS"].rpartition(":")[0]
            return cls.discover(host, token, str(directory / CERT_FILE))
        cafile = str(directory / CERT_FILE) if url.startswith("https:") else None
        return cls(url, token, cafile)

    @classmethod
    def discover(cls, host: str, token: str, cafile: str | None,
                 probe_key: str = "spec/0") -> AgentLink:
        """The master among the token's candidate ports: the first that answers this job's
        token. Over TLS a server without this application's key fails the handshake, before
        the token is sent."""
        scheme = "https" if cafile else "http"
        for port in listening(host, candidate_ports(token)):
            link = cls(f"{scheme}://{host}:{port}", token, cafile)
            try:
                link.get(probe_key)
            except LinkError:
                link.close()
                continue
            return link
        raise LinkError(f"no rendezvous for this job on {host} (ports {candidate_ports(token)})")

    def put(self, key: str, value: bytes) -> None:
        self._call("PUT", f"/v1/kv/{quote(key)}", value, (204,))

    def get(self, key: str) -> bytes | None:
        found = self.get_versioned(key)
        return found[0] if found else None

    def get_versioned(self, key: str) -> tuple[bytes, int] | None:
        code, answer, data = self._call("GET", f"/v1/kv/{quote(key)}", b"", (200, 404))
        return (data, int(answer[VERSION_HEADER.lower()])) if code == 200 else None

    def beat(self, container: str) -> tuple[bool, int]:
        """One heartbeat: whether this container still holds its task, and the version of
        the master's newest HDFS tokens (0: none)."""
        code, answer, _ = self._call("POST", f"/v1/alive/{quote(container)}", b"", (200, 410))
        return code == 200, int(answer.get(VERSION_HEADER.lower(), "0"))

    def wait(self, key: str, after: int = 0) -> tuple[bytes, int]:
        """Block until ``key`` has a version above ``after``: (value, version). Event-driven:
        the server answers the moment the key is written; each request is bounded only so
        that a lost peer is noticed."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = Connection(*self._address)
        path = f"/v1/kv/{quote(key)}?after={after}&wait={WAIT_S:g}"
        while True:
            code, answer, data = connection.request("GET", path, self._headers, b"",
                                                    WAIT_S + CALL_TIMEOUT_S)
            if code == 200:
                return data, int(answer[VERSION_HEADER.lower()])
            if code != 204:
                raise LinkError(f"the rendezvous answered {code} for {key}")

    def _call(self, method: str, path: str, body: bytes,
              expected: tuple[int, ...]) -> tuple[int, dict[str, str], bytes]:
        with self._calls_lock:
            code, answer, data = self._calls.request(method, path, self._headers, body,
                                                     CALL_TIMEOUT_S)
        if code not in expected:
            raise LinkError(f"the rendezvous answered {code} to {method} {path}")
        return code, answer, data

    def close(self) -> None:
        with self._calls_lock:
            self._calls.close()
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
