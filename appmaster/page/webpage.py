"""The job's page and JSON, served read-only from the AppMaster behind YARN's tracking URL.

skein's own web UI (what the ResourceManager's proxy shows at the tracking URL) forwards
``/pages/tfyarn/...`` to this server, so users reach it through YARN's usual link.
skein's AppMaster runs in this process's container, so the server listens on loopback only,
answers only loopback peers, and only under a random path that just skein's proxy is given
(other processes on the node, other users' tasks included, cannot guess it). Who may see
the page is decided in front of skein's UI: the RM's proxy and skein's AmIpFilter.
Writes to the registry stay on skein's TLS-authenticated gRPC; nothing here writes.
The page's HTML is appmaster/page/jobpage.py's.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from appmaster.common.pageguard import send_text
from appmaster.page.jobpage import render_page, render_parts

log = logging.getLogger("tfyarn.webpage")

PAGE_ROUTE = "tfyarn"  # the page lives at <tracking URL>/pages/tfyarn/
FINAL_VIEW_MARKER = "tfyarn-final-view "  # prefixes the last task table in the AM's log


def job_page_url(tracking_url: str) -> str:
    """Where the job page is, behind YARN's tracking URL (skein's overview links it too)."""
    return tracking_url.rstrip("/") + f"/pages/{PAGE_ROUTE}/"


def slider_exports(view: dict, role: str) -> dict:
    """One role's exports in the shape of Slider's /ws/v1/slider/publisher/exports/<role>."""
    entries = [
        {"value": task["address"], "containerId": task["yarn_container_id"],
         "tag": str(task["index"]), "level": "component", "updatedTime": view["updated"]}
        for task in view["tasks"] if task["role"] == role and task["address"]
    ]
    return {"description": f"{role} host:port exports", "updated": view["updated"],
            "entries": {role: entries}}


LOOPBACK = "127.0.0.1"


class PageServer(ThreadingHTTPServer):
    secret: str  # the first path segment every request must carry

    @property
    def target(self) -> str:
        """What skein's proxy forwards ``/pages/tfyarn/<rest>`` to (``<target>/<rest>``). The
        trailing slash makes skein link ``/pages/tfyarn/``, where the page's relative URLs
        resolve."""
        return f"http://{LOOPBACK}:{self.server_address[1]}/{self.secret}/"


def serve(view: Callable[[], dict]) -> PageServer:
    """Start serving on an ephemeral loopback port in a daemon thread; returns the server."""
    secret = secrets.token_urlsafe(24)

    class PageRequestHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            # skein's Java AM, in this container, connects from 127.0.0.1 (what a process
            # on this host gets for a loopback target unless it picks another source).
            if self.client_address[0] != LOOPBACK:
                self._send(403, "text/plain", "only through the ResourceManager's proxy\n")
                return
            # skein's proxy keeps the target's trailing slash: /<secret>//parts.json
            head, _, rest = self.path.split("?", 1)[0].lstrip("/").partition("/")
            if not secrets.compare_digest(head, secret):
                self._send(404, "text/plain", "no such page\n")
                return
            path = "/" + rest.strip("/")
            current = view()
            if path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", render_page(current))
            elif path == "/tasks.json":
                self._send(200, "application/json", json.dumps(current))
            elif path == "/parts.json":  # what the page fetches to refresh itself
                self._send(200, "application/json", json.dumps(render_parts(current)))
            elif path.startswith("/ws/v1/slider/publisher/exports/"):
                role = path.rsplit("/", 1)[1]
                self._send(200, "application/json", json.dumps(slider_exports(current, role)))
            else:
                self._send(404, "text/plain", f"no such page: {path}\n")

        def _send(self, code: int, content_type: str, body: str) -> None:
            send_text(self, code, content_type, body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.debug(format, *args)

    server = PageServer((LOOPBACK, 0), PageRequestHandler)
    server.secret = secret
    threading.Thread(target=server.serve_forever, daemon=True, name="webpage").start()
    return server
