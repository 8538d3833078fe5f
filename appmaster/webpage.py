"""The job's page and JSON, served read-only from the AppMaster behind YARN's tracking URL.

skein's own web UI (what the ResourceManager's proxy shows at the tracking URL) forwards
``/pages/tfyarn/...`` to this server, so users reach it through YARN's usual link.
Writes to the registry stay on skein's TLS-authenticated gRPC; nothing here writes.
"""

from __future__ import annotations

import html
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("tfyarn.webpage")

PAGE_ROUTE = "tfyarn"  # the page lives at <tracking URL>/pages/tfyarn/
FINAL_VIEW_MARKER = "tfyarn-final-view "  # prefixes the last task table in the AM's log
TASK_COLUMNS = ("role", "index", "state", "address", "container", "yarn_container_id", "node",
                "restarts", "exit_code")


def slider_exports(view: dict, role: str) -> dict:
    """One role's exports in the shape of Slider's /ws/v1/slider/publisher/exports/<role>."""
    entries = [
        {"value": task["address"], "containerId": task["yarn_container_id"],
         "tag": str(task["index"]), "level": "component", "updatedTime": view["updated"]}
        for task in view["tasks"] if task["role"] == role and task["address"]
    ]
    return {"description": f"{role} host:port exports", "updated": view["updated"],
            "entries": {role: entries}}


def tensorboard_link(view: dict) -> str:
    if not view.get("tensorboard_url"):
        return ""
    return ('<p>TensorBoard: <a href="../tensorboard/">through YARN\'s proxy</a> or '
            f'<a href="{html.escape(view["tensorboard_url"])}">directly</a></p>')


def render_page(view: dict) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in TASK_COLUMNS) + "<th>logs</th>"
    rows = []
    for task in view["tasks"]:
        cells = "".join(f"<td>{esc(str(task.get(c) if task.get(c) is not None else ''))}</td>"
                        for c in TASK_COLUMNS)
        link = f'<a href="{esc(task["log_url"])}">logs</a>' if task.get("log_url") else ""
        rows.append(f"<tr>{cells}<td>{link}</td></tr>")
    restarts = "".join(f"<li>{esc(line)}</li>" for line in view["restarts"]) or "<li>none</li>"
    phases = "".join(f"<li>{esc(name)}: {seconds:.3f} s</li>"
                     for name, seconds in view["phases"].items())
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="5"><title>{esc(view['name'])}</title>
<style>body{{font-family:sans-serif}} td,th{{padding:2px 8px;text-align:left}}
tr:nth-child(even){{background:#f2f2f2}}</style></head><body>
<h1>{esc(view['name'])} <small>{esc(view['app_id'])}</small></h1>
<p>State: <b>{esc(view['state'])}</b> &middot; generation {view['generation']}
&middot; <a href="tasks.json">tasks.json</a></p>
<table><tr>{head}</tr>{''.join(rows)}</table>
{tensorboard_link(view)}
<h2>Cluster spec</h2><pre>{esc(json.dumps(view['cluster_spec'], indent=2))}</pre>
<h2>Restarts</h2><ul>{restarts}</ul>
<h2>Start-up phases (this generation)</h2><ul>{phases}</ul>
</body></html>"""


def serve(view: Callable[[], dict]) -> ThreadingHTTPServer:
    """Start serving on an ephemeral port in a daemon thread; returns the server."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0].rstrip("/")
            current = view()
            if path in ("", "/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", render_page(current))
            elif path == "/tasks.json":
                self._send(200, "application/json", json.dumps(current))
            elif path.startswith("/ws/v1/slider/publisher/exports/"):
                role = path.rsplit("/", 1)[1]
                self._send(200, "application/json", json.dumps(slider_exports(current, role)))
            else:
                self._send(404, "text/plain", f"no such page: {path}\n")

        def _send(self, code: int, content_type: str, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.debug(format, *args)

    server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="webpage").start()
    return server
