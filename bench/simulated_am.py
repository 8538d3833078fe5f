"""Issue 28: the AppMaster's own work at 64, 1,000 and 5,000 tasks on 100 simulated nodes.

A simulation of YARN's side and of the agents' side, in one process per task count: what
it measures is tfyarn's AppMaster code, not YARN. The real code runs:
appmaster/master/main.py's ``Master`` (its event handling, its actions: ``perform``,
``request``, ``publish_spec``), the job's rules (appmaster/model/job.py ``Job``), the agents'
rendezvous store (appmaster/master/rendezvous.py ``Store``; its HTTPS server for the
heartbeat's per-request cost), the views (appmaster/page/view.py ``JobView``, the page of
appmaster/page/jobpage.py, the JSON the page serves,
`tfyarn status`'s text). Simulated: skein's side (``add_container`` names containers as
skein does, ``kv.put`` keeps the value, nothing is allocated or launched) and the agents
(each writes what appmaster/agent/main.py writes, in the order it does: status started, its
export, status registered, status running; then heartbeats). Agents' events arrive in the
order their containers were asked for, shuffled within windows of 100 (seeded), their
containers spread round-robin over 100 node names. YARN's allocation, launch, localization
and the network are not here: the times below are the AppMaster's share of each phase.

Each task count runs in a child process of its own (a clean RSS), once for time and once
under tracemalloc for memory. Also measured: the rendezvous server's CPU per heartbeat over
TLS (one keep-alive connection, the server thread's own CPU clock), the store's cost per
write with long polls waiting (the spec's waiters during registration), and the dry run's
planning part at 3,000 workers.

    python -m bench.simulated_am [--n 64,1000,5000] [--out bench/results/issue28-simulated.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from appmaster.common import agentlink, registry
from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.registry import AgentState
from appmaster.common.vocabulary import JobState
from appmaster.master import rendezvous
from bench.common import REPO, RESULTS, log
from bench.stats import fmt

SIZES = (64, 1000, 5000)
NODES = 100
WINDOW = 100  # agents' events come in request order, shuffled within windows this long
WORK_DIR = "hdfs://nn:8020/user/sim/tfyarn/jobs/application_1_0001"
HEARTBEAT_ROUNDS = 5
VIEW_REPEATS = 3
BEATS_OVER_HTTP = 2000
WAITERS = (0, 64, 1000, 5000)  # long polls waiting while other keys are written
PUTS_WITH_WAITERS = 100
DRY_RUN_WORKERS = 3000
# The goals at 1,000 tasks (and the flatness from 64 to 5,000).
GOAL_SPEC_TO_RUNNING_S = 1.0
GOAL_RSS_MB = 300.0
GOAL_HEARTBEAT_CORE_PCT = 5.0
GOAL_STATUS_S = 1.0
GOAL_FLAT_RATIO = 1.5  # per-task cost at 5,000 within this factor of the one at 64


def layout_of(n: int) -> dict[str, int]:
    """A few ps (one per 100 tasks, at least 2), the chief, every other task a worker."""
    ps = max(2, n // 100)
    return {"ps": ps, "chiefworker": 1, "worker": n - ps - 1}


def job_plan(n: int) -> JobPlan:
    """The plan `tfyarn submit` would ship for such a job, with every default setting."""
    roles = tuple(RolePlan(role, count, priority, 2048, 1, failure_threshold=3)
                  for priority, (role, count) in enumerate(layout_of(n).items(), start=1))
    return JobPlan(name=f"simulated-{n}", entry="train.py", python="python3",
                   work_dir=WORK_DIR, roles=roles)


# ------------------------------------------------------------------ YARN's side, simulated


class SimulatedSkein:
    """What master.py calls on skein's ApplicationClient, answered in memory: containers
    are named as skein names them (``<service>_<n>``); nothing is allocated or launched."""

    def __init__(self, instances: dict[str, int] | None = None) -> None:
        """``instances``: what the spec gave each service, which skein asks for at its own
        start, before the master runs (tfyarn/submission/appspec.py)."""
        self.id = "application_1_0001"
        self.numbers: Counter[str] = Counter()
        self.values: dict[str, bytes] = {}
        self.killed: list[str] = []
        self.kv = SimpleNamespace(put=self._put, discard=self.values.pop)
        self.ui = SimpleNamespace(add_page=lambda *args, **kwargs: None)
        self.from_spec = [self._new(service) for service, count in (instances or {}).items()
                          for _ in range(count)]
        self.asks: list[tuple[str, int]] = []  # the master's calls: (service, containers)

    def _new(self, service: str) -> SimpleNamespace:
        number = self.numbers[service]
        self.numbers[service] += 1
        return SimpleNamespace(id=f"{service}_{number}")

    def add_container(self, service: str) -> SimpleNamespace:
        self.asks.append((service, 1))
        return self._new(service)

    def scale(self, service: str, delta: int) -> list[SimpleNamespace]:
        """skein's scale with a delta: the new containers, named in turn."""
        self.asks.append((service, delta))
        return [self._new(service) for _ in range(delta)]

    def kill_container(self, container: str) -> None:
        self.killed.append(container)

    def get_containers(self, states: list[str] | None = None,
                       services: list[str] | None = None) -> list:
        """Those skein asked for at its start, still waiting: what the master adopts (it
        asks for every service's); no reports of containers that ran or ended."""
        return list(self.from_spec) if services is None and "REQUESTED" in (states or []) else []

    def _put(self, key: str, value: bytes, owner: str | None = None) -> None:
        self.values[key] = value


class Simulation:
    """The real Master on a simulated skein, fed the agents' writes as master.run() is: each
    write lands in the store, then on the event queue, then in ``Master.handle``; the loop
    asks the job for its next deadline after every event, as master.run() does."""

    def __init__(self, n: int, seed: int = 28) -> None:
        from appmaster.master.main import Master  # imports skein: only where the AM is simulated

        self.n = n
        self.master = Master(SimulatedSkein(), job_plan(n), WORK_DIR)
        self.store = self.master.store
        self.queued: list[tuple[str, bytes]] = []
        self.store.on_put = lambda key, value: self.queued.append((key, value))
        self.events = 0
        self.order: list[str] = []  # containers, in the order their agents speak
        self.random = random.Random(seed)

    def node_of(self, position: int) -> str:
        return f"nm{position % NODES:03d}.sim:8042"

    def request_all(self) -> None:
        """The AppMaster's start: every task's container asked for, its task key written."""
        self.master.perform(self.master.job.start(time.monotonic()))
        containers = [t.container for t in self.master.job.tasks.values()]
        for start in range(0, len(containers), WINDOW):
            window = containers[start:start + WINDOW]
            self.random.shuffle(window)
            self.order += window

    def agent_put(self, key: str, value: bytes) -> None:
        """What the rendezvous server does with an agent's PUT
        (rendezvous.RendezvousRequestHandler.do_PUT), then the master's loop with the event it
        queued."""
        self.store.put(key, value)
        self.store.on_put(key, value)
        self.deliver()

    def deliver(self) -> None:
        import skein

        while self.queued:
            key, value = self.queued.pop(0)
            event = skein.kv.Event(key, skein.kv.ValueOwnerPair(value, None), "PUT", None)
            with self.master.lock:
                self.master.handle(event)
            self.master.seconds_to_next_deadline()
            self.events += 1

    def status(self, container: str, state: AgentState, **fields: Any) -> None:
        self.agent_put(registry.status_key(container),
                       registry.AgentStatus(state, **fields).to_json().encode())

    def started(self) -> None:
        for position, container in enumerate(self.order):
            self.status(container, AgentState.STARTED, node=self.node_of(position),
                        yarn_container_id=f"container_1_0001_01_{position + 2:06d}", user="sim")

    def registered(self) -> float:
        """Every agent reads its task, exports, says it registered; the wall seconds from
        the last export's write to the spec in the store."""
        last_export = 0.0
        for position, container in enumerate(self.order):
            task = registry.TaskAssignment.from_json(self.store.get(
                registry.task_key(container))[0])
            address = f"{self.node_of(position).split(':')[0]}:{20000 + position}"
            last_export = time.perf_counter()
            self.agent_put(registry.export_key(task.role, task.index), registry.Export(
                address, container, task.generation).to_json().encode())
            self.status(container, AgentState.REGISTERED, address=address)
        published = self.store.get(registry.spec_key(0))
        assert published is not None, "no spec after every export"
        return time.perf_counter() - last_export

    def running(self) -> None:
        """Every agent reads the spec (its long poll's answer) and starts its script."""
        for container in self.order:
            self.store.get(registry.spec_key(0))
            self.status(container, AgentState.RUNNING)
        assert self.master.job.state == JobState.RUNNING, self.master.job.state

    def beat_round(self) -> None:
        """One heartbeat of every agent, as the server's do_POST handles it."""
        for container in self.order:
            self.store.beat(container)
            self.store.get(registry.TOKENS_KEY)

    def liveness_check(self) -> None:
        """The master's check when heartbeats are due (Master.on_deadline)."""
        now = time.monotonic()
        with self.master.lock:
            self.master.perform(self.master.job.on_heartbeats(self.store.beats(), now))
            self.master.perform(self.master.job.on_tick(now))


# ------------------------------------------------------------------ measuring


def timed(step: Callable[[], Any]) -> tuple[Any, float, float]:
    """(its result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def rss_kb() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            name, value = line.split(":")
            fields[name] = int(value.split()[0])
    return fields


def start_up(sim: Simulation) -> dict[str, Any]:
    """Requests, then every agent's start-up words: each phase's wall and CPU seconds."""
    phases: dict[str, Any] = {}
    for name, step in (("request", sim.request_all), ("started", sim.started),
                       ("registered", sim.registered), ("running", sim.running)):
        events = sim.events
        result, wall, cpu = timed(step)
        phases[name] = {"wall_s": wall, "cpu_s": cpu, "events": sim.events - events}
        if name == "registered":
            phases[name]["last_export_to_spec_s"] = result
    return phases


def heartbeats(sim: Simulation) -> dict[str, float]:
    """The store's side of N beats, and the master's check of them, per round (medians)."""
    beats, checks = [], []
    for _ in range(HEARTBEAT_ROUNDS):
        beats.append(timed(sim.beat_round)[2])
        checks.append(timed(sim.liveness_check)[2])
    return {"store_cpu_s_per_round": statistics.median(beats),
            "check_cpu_s": statistics.median(checks),
            "interval_s": sim.master.plan.heartbeat_interval_s}


def views(sim: Simulation) -> dict[str, Any]:
    """The status JSON (tasks.json), the page, its refresh, and `tfyarn status`'s text."""
    from appmaster.page.jobpage import render_page, render_parts
    from appmaster.page.view import JobView
    from tfyarn.watch import jobview
    steps: dict[str, Callable[[], Any]] = {
        "view_dict": sim.master.view,
        "tasks_json": lambda: json.dumps(sim.master.view()),
        "page": lambda: render_page(sim.master.view()),
        "parts_json": lambda: json.dumps(render_parts(sim.master.view())),
    }
    figures: dict[str, Any] = {}
    for name, step in steps.items():
        runs = [timed(step) for _ in range(VIEW_REPEATS)]
        figures[f"{name}_s"] = statistics.median(wall for _, wall, _ in runs)
        if isinstance(runs[0][0], str):
            figures[f"{name}_bytes"] = len(runs[0][0].encode())
    read_back = JobView.from_dict(json.loads(json.dumps(sim.master.view())))
    for name, show in (("status_text", lambda: jobview.format_status(read_back)),
                       ("status_all_text", lambda: jobview.format_table(read_back))):
        text, wall, _ = timed(show)
        figures[f"{name}_s"], figures[f"{name}_lines"] = wall, len(text.splitlines())
    return figures


def one_size(n: int, memory: bool) -> dict[str, Any]:
    """One task count, in this (child) process."""
    import appmaster.master.main  # noqa: F401 (its imports, skein's and gRPC's: not the job's)

    if memory:  # what the job's state and the store hold, without the modules
        tracemalloc.start()
    before = rss_kb()
    sim = Simulation(n)
    record: dict[str, Any] = {"n": n, "layout": layout_of(n), "phases": start_up(sim)}
    record["events"] = sim.events
    if memory:
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        record["tracemalloc"] = {"current_mb": current / 2**20, "peak_mb": peak / 2**20}
    else:
        record["heartbeats"] = heartbeats(sim)
        record["views"] = views(sim)
    after = rss_kb()
    record["rss"] = {"before_mb": before["VmRSS"] / 1024, "after_mb": after["VmRSS"] / 1024,
                     "peak_mb": after["VmHWM"] / 1024}
    return record


def in_child(*args: str) -> dict[str, Any]:
    """A measurement in a fresh interpreter: its RSS and its caches its own."""
    out = subprocess.run([sys.executable, "-m", "bench.simulated_am", *args], cwd=REPO,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ the rendezvous itself


def beat_cost_over_tls(beats: int = BEATS_OVER_HTTP) -> dict[str, float]:
    """The server thread's CPU per heartbeat over TLS on one keep-alive connection (its
    own thread CPU clock: the client's side, in this process too, is not counted)."""
    import tempfile

    import skein

    from appmaster.common.agentlink import AgentLink

    security = skein.Security.new_credentials()
    with tempfile.TemporaryDirectory() as scratch:
        cert, key = Path(scratch) / "c.crt", Path(scratch) / "c.pem"
        cert.write_bytes(security._get_bytes("cert"))
        key.write_bytes(security._get_bytes("key"))
        store, token = rendezvous.Store(), agentlink.new_token()
        store.put(registry.task_key("worker_0"), b"{}")
        server = rendezvous.serve(store, token, host="127.0.0.1", advertised="127.0.0.1",
                                  tls=rendezvous.server_tls(str(cert), str(key)))
        try:
            link = AgentLink(server.url, token, cafile=str(cert))
            link.beat("worker_0")  # the handshake, and the connection's server thread
            handler = next(t for t in threading.enumerate()
                           if t.name.startswith("Thread-") and t.daemon)
            clock = time.pthread_getcpuclockid(handler.ident)
            cpu, wall = time.clock_gettime(clock), time.perf_counter()
            for _ in range(beats):
                link.beat("worker_0")
            return {"server_cpu_ms_per_beat": (time.clock_gettime(clock) - cpu) / beats * 1e3,
                    "round_trip_ms": (time.perf_counter() - wall) / beats * 1e3}
        finally:
            server.shutdown()
            server.server_close()


def put_cost_with_waiters(waiters: int, puts: int = PUTS_WITH_WAITERS) -> dict[str, float]:
    """CPU per store write while ``waiters`` long polls wait for the spec (as every agent
    does between its export and the spec): all of this process's threads counted."""
    threading.stack_size(256 * 1024)
    store = rendezvous.Store()
    threads = [threading.Thread(target=store.wait, args=(registry.spec_key(0), 0, 120.0),
                                daemon=True) for _ in range(waiters)]
    for thread in threads:
        thread.start()
    time.sleep(0.5 + waiters / 2000)  # every waiter inside its wait
    _, wall, cpu = timed(lambda: [store.put(f"status/worker_{i}", b"{}") for i in range(puts)])
    time.sleep(0.2)  # woken waiters finish their checks
    settled = time.process_time()
    store.put(registry.spec_key(0), b"{}")
    for thread in threads:
        thread.join()
    return {"waiters": waiters, "cpu_ms_per_put": cpu / puts * 1e3,
            "wall_ms_per_put": wall / puts * 1e3,
            "release_all_s": time.process_time() - settled}


def dry_run_planning(workers: int = DRY_RUN_WORKERS) -> dict[str, float]:
    """`tfyarn submit --dry-run`'s own part for a job of ``workers`` workers: read and check
    the two files, plan, the plan's document and text (no HDFS, no pre-flight)."""
    import tempfile

    from tfyarn.cli.jobs import format_plan
    from tfyarn.jobconfig import load_job
    from tfyarn.submission.plan import AppSpecExtras, build_plan, plan_document

    resources = json.loads((REPO / "resources.json").read_text())
    resources["components"]["worker"]["yarn.component.instances"] = str(workers)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "resources.json"
        path.write_text(json.dumps(resources))

        def plan_it() -> str:
            job = load_job(path, REPO / "appConfig.json")
            plan = build_plan(job)
            return format_plan(plan_document(job, plan, AppSpecExtras()))

        runs = [timed(plan_it) for _ in range(3)]
    return {"workers": workers, "planning_s": statistics.median(w for _, w, _ in runs),
            "plan_lines": len(runs[0][0].splitlines())}


# ------------------------------------------------------------------ the report


def per_task(record: dict) -> dict[str, float]:
    """The figures the goals and the table are made of, for one task count."""
    n, phases = record["n"], record["phases"]
    cpu = sum(p["cpu_s"] for p in phases.values())
    beats = record["heartbeats"]
    http_s = record.get("beat_server_cpu_ms", 0.0) / 1e3
    per_interval = beats["store_cpu_s_per_round"] + beats["check_cpu_s"] + n * http_s
    return {
        "cpu_ms_per_event": cpu / record["events"] * 1e3,
        "cpu_ms_per_task": cpu / n * 1e3,
        "spec_s": phases["registered"]["last_export_to_spec_s"],
        "spec_to_running_s": phases["running"]["wall_s"],
        "heartbeat_core_pct": per_interval / beats["interval_s"] * 100,
        "check_ms": beats["check_cpu_s"] * 1e3,
        "status_s": record["views"]["tasks_json_s"],
        "page_s": record["views"]["page_s"],
        "rss_mb": record["rss"]["after_mb"],
        "traced_peak_mb": record["memory"]["peak_mb"],
        "traced_kb_per_task": record["memory"]["current_mb"] * 1024 / n,
    }


def goals(figures: dict[int, dict[str, float]],
          wake_s: dict[int, float]) -> list[tuple[str, str, bool]]:
    """Each goal of the issue: (goal, what was measured, met). ``wake_s``: the store's
    seconds to wake that many long polls waiting for the spec, added to the events'."""
    at = figures.get(1000)
    results = []
    if at:
        wake = wake_s.get(1000, 0.0)
        spec_to_running = at["spec_to_running_s"] + wake
        results += [
            ("spec published → all running ≤ 1 s at 1,000",
             f"{spec_to_running:.3f} s ({at['spec_to_running_s']:.3f} s of events + "
             f"{wake:.3f} s waking 1,000 long polls)", spec_to_running <= GOAL_SPEC_TO_RUNNING_S),
            ("AM job-model RSS ≤ 300 MB at 1,000", f"{at['rss_mb']:.0f} MB",
             at["rss_mb"] <= GOAL_RSS_MB),
            ("heartbeats ≤ 5 % of a core at 1,000", f"{at['heartbeat_core_pct']:.2f} %",
             at["heartbeat_core_pct"] <= GOAL_HEARTBEAT_CORE_PCT),
            ("status ≤ 1 s at 1,000", f"{at['status_s']:.3f} s",
             at["status_s"] <= GOAL_STATUS_S)]
    low, high = min(figures), max(figures)
    if low != high:
        for key, label in (("cpu_ms_per_event", "CPU per event"),
                           ("traced_kb_per_task", "memory per task")):
            ratio = figures[high][key] / figures[low][key]
            results.append((f"{label} flat from {low:,} to {high:,} (≤ {GOAL_FLAT_RATIO}×)",
                            f"{ratio:.2f}×", ratio <= GOAL_FLAT_RATIO))
    return results


def table(data: dict) -> str:
    figures = {int(n): per_task(r) for n, r in data["sizes"].items()}
    columns = (("CPU ms / event", "cpu_ms_per_event", 3), ("CPU ms / task", "cpu_ms_per_task", 2),
               ("last export → spec s", "spec_s", 4),
               ("spec → all running s", "spec_to_running_s", 3),
               ("heartbeats % core", "heartbeat_core_pct", 2),
               ("liveness check ms", "check_ms", 2), ("status JSON s", "status_s", 3),
               ("page s", "page_s", 3), ("RSS MB", "rss_mb", 0),
               ("traced peak MB", "traced_peak_mb", 1),
               ("traced KB / task", "traced_kb_per_task", 1))
    lines = ["| tasks | " + " | ".join(label for label, _, _ in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for n, row in sorted(figures.items()):
        lines.append(f"| {n:,} | " + " | ".join(fmt(row[key], digits)
                                               for _, key, digits in columns) + " |")
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    waits = data.get("waiters", [])
    wake_s = {w["waiters"]: w["release_all_s"] for w in waits}
    lines += [f"| {goal} | {measured} | {'met' if met else 'NOT met'} |"
              for goal, measured, met in goals(figures, wake_s)]
    if waits:
        lines += ["", "| long polls waiting | CPU ms per store write | s to wake them all |",
                  "|---|---|---|"]
        lines += [f"| {w['waiters']:,} | {w['cpu_ms_per_put']:.3f} | {w['release_all_s']:.3f} |"
                  for w in waits]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default=",".join(map(str, SIZES)), help="task counts")
    parser.add_argument("--waiters", default=",".join(map(str, WAITERS)),
                        help="long polls waiting while the store is written")
    parser.add_argument("--out", type=Path, default=RESULTS / "issue28-simulated.json")
    parser.add_argument("--child", choices=("time", "memory", "waiters"), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--conditions", default="2 cores, quiet (nothing else running)",
                        help="what else ran on the machine, recorded with the results")
    opts = parser.parse_args(argv)
    if opts.child:  # one measurement, printed as JSON for the parent
        result = (put_cost_with_waiters(opts.size) if opts.child == "waiters"
                  else one_size(opts.size, opts.child == "memory"))
        print(json.dumps(result))
        return 0
    from bench.results import machine_info, save

    data: dict[str, Any] = {"experiment": "issue28-simulated", "machine": machine_info(),
                            "conditions": opts.conditions,
                            "sizes": {}}
    beat = beat_cost_over_tls()
    log(f"heartbeat over TLS: {beat['server_cpu_ms_per_beat']:.3f} ms server CPU per beat")
    for n in (int(x) for x in opts.n.split(",") if x):
        log(f"{n:,} tasks: timing")
        record = in_child("--child", "time", "--size", str(n))
        log(f"{n:,} tasks: memory")
        record["memory"] = in_child("--child", "memory", "--size", str(n))["tracemalloc"]
        record["beat_server_cpu_ms"] = beat["server_cpu_ms_per_beat"]
        data["sizes"][str(n)] = record
        save(opts.out, data)  # what was measured so far, if a later size is stopped
    data["beat_over_tls"] = beat
    data["waiters"] = []
    for waiters in (int(x) for x in opts.waiters.split(",") if x):
        log(f"store writes with {waiters:,} long polls waiting")
        data["waiters"].append(in_child("--child", "waiters", "--size", str(waiters)))
    data["dry_run"] = dry_run_planning()
    log(f"dry run planning, {DRY_RUN_WORKERS:,} workers: {data['dry_run']['planning_s']:.3f} s")
    data["machine"]["load_at_end"] = os.getloadavg()
    save(opts.out, data)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
