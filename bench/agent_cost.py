"""Issue 14's per-container and AppMaster costs, in a real job on the local YARN.

N light tasks (tests/apps/light_task.py: no TensorFlow), submitted with `tfyarn submit
--detach` to the cluster of TFYARN_CLUSTER_DIR/TFYARN_CLUSTER_PORT_OFFSET (64 vcores per
NodeManager are needed for N = 64: bench/private_cluster.py's kind). While the job runs,
/proc is read every 0.1 s:

- every agent (`python -m appmaster.agent.main` in one of the job's containers): its CPU seconds,
  RSS, private memory and PSS at the first reading where it has a child (the script's
  wrapper), i.e. container
  start -> exported port -> spec -> script spawned; the spec wait is event-driven and costs
  no CPU, so this is the agent's cost up to its export plus a spawn;
- skein's Java AppMaster and master.py: peak RSS (VmHWM), RSS at the end, CPU seconds, and
  the CPU per registry event (the master hears ~6 per task: started, export, registered,
  running, exited, container end);
- what each task container runs beside its script while the script runs (issue 56): YARN's
  launch shells and the agent, per process RSS, private memory and PSS, at the reading where
  they held the most RSS (YARN's memory check adds their RSS to the script's).

--floor runs floor (b) after each tfyarn job (bench/floors.py: the same light containers as a
plain skein application, skein's own launch of the script with nothing beside it but the
shells) and reads its containers the same way, side by side in the same conditions.

    python -m bench.agent_cost --n 64 --runs 3 [--out bench/results/issue14/agents.json]
    python -m bench.agent_cost --n 4 --runs 2 --floor --out bench/results/issue56/beside.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench import floors
from bench.cluster import Cluster, kill_app, wait_for_room
from bench.common import FINAL_STATES, LIGHT_APPS, REPO, G, log, write_job_files
from bench.processes import proc_private_pss, proc_usage
from bench.rendezvous import light_resources, needs, sleep_for
from tfyarn.localyarn.proctable import Proc, scan_processes

Usage = tuple[float, int, int]  # proc_usage's (CPU s, peak RSS kB, RSS kB)
EVENTS_PER_TASK = 6
SAMPLE_S = 0.1
SCRIPT = "light_task.py"


def light_job(run_dir: Path, n: int) -> tuple[Path, Path]:
    """resources.json/appConfig.json of N light tasks (bench/rendezvous.py's layout)."""
    app = {"global": {G + "user.scripts.dir": str(LIGHT_APPS),
                      G + "user.scripts.entry": SCRIPT,
                      G + "user.scripts.args": ["--sleep", str(sleep_for(n))],
                      G + "app.name": f"tfyarn-bench-agents-{n}"}}
    return write_job_files(run_dir, light_resources(n), app)


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class JobSampler:
    """The job's agents (until each spawns its script) and its AppMaster's two processes."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self.agents: dict[int, Usage] = {}  # pid -> reading when its child was first seen
        self.agent_memory: dict[int, tuple[int, int]] = {}  # pid -> (private, PSS) kB then
        self.watching: set[int] = set()
        self.am: dict[str, int] = {}
        self.am_last: dict[str, Usage] = {}
        self.am_peak_rss: dict[str, int] = {}
        self.am_peak_private: dict[str, int] = {}

    def poll(self, procs: list[Proc]) -> None:
        for p in procs:
            if self.app_id not in p.cwd and not any(self.app_id in a for a in p.argv):
                continue
            if "appmaster.agent.main" in p.argv and p.pid not in self.agents:
                self.watching.add(p.pid)
            elif "appmaster.master.main" in p.argv:
                self.am.setdefault("python", p.pid)
            elif "com.anaconda.skein.ApplicationMaster" in p.argv:
                self.am.setdefault("java", p.pid)
        for pid in list(self.watching):
            reading = proc_usage(pid)
            if reading is None:
                self.watching.discard(pid)
            elif children(pid):
                self.agents[pid] = reading
                self.agent_memory[pid] = proc_private_pss(pid) or (0, 0)
                self.watching.discard(pid)
        for name, pid in self.am.items():
            reading = proc_usage(pid)
            if reading:
                self.am_last[name] = reading
                self.am_peak_rss[name] = max(self.am_peak_rss.get(name, 0), reading[2])
                private, _ = proc_private_pss(pid) or (0, 0)
                self.am_peak_private[name] = max(self.am_peak_private.get(name, 0), private)


def process_name(p: Proc) -> str:
    if "appmaster.agent.main" in p.argv:
        return "agent"
    return "launch shell" if p.argv[0].endswith("bash") else Path(p.argv[0]).name


def is_script(p: Proc) -> bool:
    return len(p.argv) > 1 and p.argv[1].endswith(SCRIPT)


class BesideScript:
    """Each task container's processes beside its script (the light script starts none),
    while the script runs: per container, the reading where they held the most RSS."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self.peak_rss: dict[tuple[int, int], int] = {}  # (attempt, container) -> kB
        self.peak: dict[tuple[int, int], dict] = {}  # -> the processes at that reading
        self.running = 0  # scripts running at the last reading

    def poll(self, procs: list[Proc]) -> None:
        containers: dict[tuple[int, int], list[Proc]] = {}
        for p in procs:
            if self.app_id in p.cwd and p.container_number is not None:
                containers.setdefault((p.am_attempt or 0, p.container_number), []).append(p)
        self.running = 0
        for key, members in containers.items():
            script = next((p for p in members if is_script(p)), None)
            script_usage = proc_usage(script.pid) if script else None
            if script_usage is None:
                continue
            self.running += 1
            readings = []
            for p in members:
                usage, memory = proc_usage(p.pid), proc_private_pss(p.pid)
                if p is not script and usage and memory:
                    readings.append((process_name(p), usage[2], *memory))
            rss = sum(r[1] for r in readings)
            if rss >= self.peak_rss.get(key, 0):
                self.peak_rss[key] = rss
                self.peak[key] = {"script_rss_mb": round(script_usage[2] / 1024, 1),
                                  "processes": [[name, *(round(kb / 1024, 1) for kb in kbs)]
                                                for name, *kbs in readings]}

    def started(self) -> int:
        return len(self.peak)


def follow(samplers: list[JobSampler | BesideScript], done: Callable[[], bool],
           timeout_s: float) -> None:
    """Read /proc every SAMPLE_S until done() (or timeout_s)."""
    t0 = time.time()
    while time.time() - t0 < timeout_s and not done():
        procs = scan_processes()
        for sampler in samplers:
            sampler.poll(procs)
        time.sleep(SAMPLE_S)


def run_floor(cluster: Cluster, n: int, run_dir: Path, timeout_s: float = 600) -> dict:
    """Floor (b)'s light application: each container's processes beside its script until
    the chief and workers end (its ps would run on), then it is killed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    desc = floors.light_floor_spec(light_resources(n), sleep_for(n))
    app_id, _, _ = floors.submit_floor(cluster, desc, run_dir / "skein-spec.json")
    beside = BesideScript(app_id)
    try:
        follow([beside], lambda: beside.started() >= n and beside.running < n,
               timeout_s)
    finally:
        kill_app(cluster, app_id)
    return {"kind": "skein", "n": n, "app_id": app_id, "load": os.getloadavg()[0],
            "scripts_seen": beside.started(), "beside": list(beside.peak.values())}


def run_once(cluster: Cluster, n: int, run_dir: Path, timeout_s: float = 600) -> dict:
    env = {**os.environ, **cluster.env}
    res_path, app_path = light_job(run_dir, n)
    out = subprocess.run([sys.executable, "-m", "tfyarn.cli.main", "submit", "--resources",
                          str(res_path), "--app-config", str(app_path), "--detach", "--json"],
                         capture_output=True, text=True, env=env, cwd=run_dir)
    if out.returncode != 0:
        raise RuntimeError(f"tfyarn submit failed:\n{out.stdout}\n{out.stderr[-2000:]}")
    app_id = json.loads(out.stdout.strip().splitlines()[-1])["application_id"]
    sampler, beside, state = JobSampler(app_id), BesideScript(app_id), ["NEW"]

    def ended() -> bool:
        if time.time() % 1 < SAMPLE_S:  # YARN's state once a second
            state[0] = cluster.app(app_id)["state"]
        return state[0] in FINAL_STATES

    follow([sampler, beside], ended, timeout_s)
    agents = list(sampler.agents.values())
    result = {"kind": "tfyarn", "n": n, "app_id": app_id, "state": state[0],
              "load": os.getloadavg()[0], "agents_seen": len(agents),
              "beside": list(beside.peak.values()),
              "agent_cpu_s": [round(cpu, 3) for cpu, _, _ in agents],
              "agent_rss_mb": [round(rss / 1024, 1) for _, _, rss in agents],
              "agent_peak_rss_mb": [round(hwm / 1024, 1) for _, hwm, _ in agents],
              "agent_private_mb": [round(private / 1024, 1)
                                   for private, _ in sampler.agent_memory.values()],
              "agent_pss_mb": [round(pss / 1024, 1) for _, pss in sampler.agent_memory.values()]}
    for name, (cpu, hwm, _) in sampler.am_last.items():
        result[f"{name}_am_cpu_s"] = round(cpu, 2)
        result[f"{name}_am_peak_rss_mb"] = round(hwm / 1024, 1)
        result[f"{name}_am_max_rss_mb"] = round(sampler.am_peak_rss[name] / 1024, 1)
        result[f"{name}_am_max_private_mb"] = round(sampler.am_peak_private[name] / 1024, 1)
    am_cpu = sum(cpu for cpu, _, _ in sampler.am_last.values())
    result["am_cpu_ms_per_event"] = round(1000 * am_cpu / (n * EVENTS_PER_TASK), 2)
    return result


def summary(runs: list[dict]) -> str:
    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.3g}" if values else "-"

    lines = ["| N | runs | agent CPU s to script spawn | agent RSS MB (peak) | agent private "
             "MB | agent PSS MB | Java AM peak RSS MB | master.py peak RSS MB | AM total MB | "
             "AM CPU s (java+py) | AM CPU ms per event | load |", "|" + "---|" * 12]
    for n in sorted({r["n"] for r in runs}):
        rs = [r for r in runs if r["n"] == n]
        cpu = [c for r in rs for c in r["agent_cpu_s"]]
        hwm = [c for r in rs for c in r["agent_peak_rss_mb"]]
        java = [r.get("java_am_peak_rss_mb", 0) for r in rs]
        py = [r.get("python_am_peak_rss_mb", 0) for r in rs]
        am_cpu = [r.get("java_am_cpu_s", 0) + r.get("python_am_cpu_s", 0) for r in rs]
        private = [c for r in rs for c in r.get("agent_private_mb", [])]
        pss = [c for r in rs for c in r.get("agent_pss_mb", [])]
        lines.append(f"| {n} | {len(rs)} | {med(cpu)} | {med(hwm)} | {med(private)} | "
                     f"{med(pss)} | {med(java)} | {med(py)} "
                     f"| {med([j + p for j, p in zip(java, py, strict=True)])} | {med(am_cpu)} | "
                     f"{med([r['am_cpu_ms_per_event'] for r in rs])} | "
                     f"{min(r['load'] for r in rs):.1f}–{max(r['load'] for r in rs):.1f} |")
    return "\n".join(lines)


def beside_summary(runs: list[dict]) -> str:
    """Per container (medians): the launch shells, the agent and all of them beside the script,
    RSS / private / PSS MB each."""
    def part(containers: list[dict], names: tuple[str, ...]) -> str:
        sums = [[sum(p[i] for p in c["processes"] if p[0] in names) for i in (1, 2, 3)]
                for c in containers]
        if not any(any(s) for s in sums):
            return "-"
        return " / ".join(f"{statistics.median(s[i] for s in sums):.1f}" for i in range(3))

    lines = ["| launch | N | runs | containers | launch shells | agent | all beside the script | "
             "the script's RSS MB | load |", "|" + "---|" * 9]
    for kind, name in (("skein", "skein's own (floor (b))"), ("tfyarn", "tfyarn")):
        for n in sorted({r["n"] for r in runs if r.get("kind") == kind}):
            rs = [r for r in runs if r.get("kind") == kind and r["n"] == n and r.get("beside")]
            if not rs:
                continue
            containers = [c for r in rs for c in r["beside"]]
            every = tuple({p[0] for c in containers for p in c["processes"]})
            script_rss = statistics.median(c["script_rss_mb"] for c in containers)
            lines.append(f"| {name} | {n} | {len(rs)} | {len(containers)} | "
                         f"{part(containers, ('launch shell',))} | {part(containers, ('agent',))} "
                         f"| {part(containers, every)} | {script_rss:.1f} | "
                         f"{min(r['load'] for r in rs):.1f}–{max(r['load'] for r in rs):.1f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="64")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--label", default="current", help="names the variant in the output")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/issue14/agents.json")
    parser.add_argument("--floor", action="store_true",
                        help="floor (b) after each tfyarn job, its containers read the same way")
    opts = parser.parse_args(argv)
    cluster = Cluster.default()
    data = json.loads(opts.out.read_text()) if opts.out.exists() else {"runs": []}
    for rep in range(opts.runs):
        for n in (int(x) for x in opts.n.split(",")):
            kinds: dict[str, Callable[[Cluster, int, Path], dict]] = {"tfyarn": run_once}
            if opts.floor:
                kinds["skein"] = run_floor
            for kind, run_kind in kinds.items():
                conditions = wait_for_room(cluster, needs(n), 600)
                log(f"N={n} run {rep + 1}/{opts.runs} {kind} ({opts.label}; {conditions})")
                run = {"label": opts.label, **run_kind(
                    cluster, n, Path(f"/tmp/tfyarn-bench-agents/{n}-{rep}-{kind}"))}
                log(json.dumps({k: v for k, v in run.items() if not isinstance(v, list)}))
                data["runs"].append(run)
                opts.out.parent.mkdir(parents=True, exist_ok=True)
                opts.out.write_text(json.dumps(data, indent=1))
    runs = [r for r in data["runs"] if r["label"] == opts.label]
    print(summary([r for r in runs if r.get("kind", "tfyarn") == "tfyarn"]))
    print(beside_summary(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
