"""The lean agent's own cost up to its exported port, over the master's rendezvous.

The bench serves appmaster/master/rendezvous.py on loopback (plain HTTP, or TLS with a fresh
skein-style certificate), and starts bench/lean_agent_probe.py in a fresh interpreter per
run, as YARN starts an agent: the probe reports its CPU seconds (interpreter start included)
and peak RSS at the moment its port is exported. The same figures for today's skein agent
come from a real job (bench/agent_cost.py).

    python -m bench.link_cost --runs 20 [--tls]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import skein

from appmaster.common import agentlink, registry
from appmaster.common.vocabulary import Role
from appmaster.master import rendezvous
from bench.common import REPO


def serve(directory: Path, tls: bool) -> rendezvous.RendezvousServer:
    store, token = rendezvous.Store(), agentlink.new_token()
    (directory / agentlink.TOKEN_FILE).write_text(token)
    context = None
    if tls:
        security = skein.Security.new_credentials()
        cert, key = directory / agentlink.CERT_FILE, directory / ".skein.pem"
        cert.write_bytes(security._get_bytes("cert"))
        key.write_bytes(security._get_bytes("key"))
        context = rendezvous.server_tls(str(cert), str(key))
    server = rendezvous.serve(store, token, host="127.0.0.1", advertised="127.0.0.1",
                              tls=context)
    return server


def probe(server: rendezvous.RendezvousServer, directory: Path, container: str) -> dict:
    server.store.put(registry.task_key(container),
                     registry.TaskAssignment(Role.WORKER, 0, 0, 0).to_json().encode())
    env = {**os.environ, agentlink.URL_ENV: server.url, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(REPO / "bench/lean_agent_probe.py"), container],
                         cwd=directory, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


BEATS = """
import sys, time
from appmaster.common.agentlink import AgentLink
link = AgentLink.from_container()
for i in range(int(sys.argv[1])):
    link.beat("worker_0")
    link.put("status/worker_0", b'{"state": "running"}')
"""


def server_cost(server: rendezvous.RendezvousServer, directory: Path, requests: int) -> float:
    """The serving process's CPU milliseconds per request: beats and status puts from
    one agent on a kept connection (this process serves; the agent is a child)."""
    env = {**os.environ, agentlink.URL_ENV: server.url, "PYTHONPATH": str(REPO)}
    before = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    subprocess.run([sys.executable, "-c", BEATS, str(requests // 2)], cwd=directory, env=env,
                   check=True)
    return 1000 * (sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - before) / requests


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--requests", type=int, default=2000,
                        help="requests for the server's CPU per request")
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        server = serve(Path(tmp), opts.tls)
        runs = [probe(server, Path(tmp), f"worker_{i}") for i in range(opts.runs)]
        per_request_ms = server_cost(server, Path(tmp), opts.requests)
        server.shutdown()
    load = os.getloadavg()[0]
    cpu = statistics.median(r["cpu_s"] for r in runs)
    peak = statistics.median(r["peak_rss_mb"] for r in runs)
    print(json.dumps({"transport": "tls" if opts.tls else "http", "runs": opts.runs,
                      "cpu_s_median": round(cpu, 3),
                      "cpu_s_min": round(min(r["cpu_s"] for r in runs), 3),
                      "peak_rss_mb_median": round(peak, 1),
                      "server_cpu_ms_per_request": round(per_request_ms, 3),
                      "load": round(load, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
