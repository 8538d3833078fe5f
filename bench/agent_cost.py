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
  running, exited, container end).

    python -m bench.agent_cost --n 64 --runs 3 [--out bench/results/issue14/agents.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import LIGHT_APPS, REPO, log, write_job_files
from bench.processes import proc_private_pss, proc_usage
from tfyarn.localyarn.cluster import client_environment, rest
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.proctable import scan_processes

Usage = tuple[float, int, int]  # proc_usage's (CPU s, peak RSS kB, RSS kB)
EVENTS_PER_TASK = 6
SAMPLE_S = 0.1
G = "site.global."


def light_job(run_dir: Path, n: int, sleep_s: float) -> tuple[Path, Path]:
    """resources.json/appConfig.json of N light tasks: N/2-1 ps and the chief in the default
    partition, N/2 workers in `gpu`, 128 MB and 1 vcore each."""
    workers = max(1, n // 2)
    counts = {"ps": n - 1 - workers, "chiefworker": 1, "worker": workers}
    res = json.loads((REPO / "resources.json").read_text())
    for role, count in counts.items():
        res["components"][role].update({"yarn.component.instances": str(count),
                                        "yarn.memory": "128", "yarn.vcores": "1"})
    app = {"global": {G + "user.scripts.dir": str(LIGHT_APPS),
                      G + "user.scripts.entry": "light_task.py",
                      G + "user.scripts.args": ["--sleep", str(sleep_s)],
                      G + "app.name": f"tfyarn-bench-agents-{n}"}}
    return write_job_files(run_dir, res, app)


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

    def poll(self) -> None:
        for p in scan_processes():
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


def run_once(layout: Layout, n: int, run_dir: Path, timeout_s: float = 600) -> dict:
    env = {**os.environ, **client_environment(layout)}
    res_path, app_path = light_job(run_dir, n, sleep_s=5.0 + n / 4)
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "tfyarn.cli.main", "submit", "--resources",
                          str(res_path), "--app-config", str(app_path), "--detach", "--json"],
                         capture_output=True, text=True, env=env, cwd=run_dir, check=True)
    app_id = json.loads(out.stdout.strip().splitlines()[-1])["application_id"]
    sampler, state = JobSampler(app_id), "NEW"
    while time.time() - t0 < timeout_s:
        sampler.poll()
        if time.time() % 1 < SAMPLE_S:  # YARN's state once a second
            state = rest(layout, f"apps/{app_id}")["app"]["state"]
            if state in ("FINISHED", "FAILED", "KILLED"):
                break
        time.sleep(SAMPLE_S)
    agents = list(sampler.agents.values())
    result = {"n": n, "app_id": app_id, "state": state, "load": os.getloadavg()[0],
              "agents_seen": len(agents),
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="64")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--label", default="current", help="names the variant in the output")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/issue14/agents.json")
    opts = parser.parse_args(argv)
    layout = Layout(Path(os.environ["TFYARN_CLUSTER_DIR"]))
    data = json.loads(opts.out.read_text()) if opts.out.exists() else {"runs": []}
    for rep in range(opts.runs):
        for n in (int(x) for x in opts.n.split(",")):
            log(f"N={n} run {rep + 1}/{opts.runs} ({opts.label})")
            run = {"label": opts.label, **run_once(layout, n, Path(f"/tmp/tfyarn-bench-agents/"
                                                                   f"{n}-{rep}"))}
            log(json.dumps({k: v for k, v in run.items() if not isinstance(v, list)}))
            data["runs"].append(run)
            opts.out.parent.mkdir(parents=True, exist_ok=True)
            opts.out.write_text(json.dumps(data, indent=1))
    print(summary([r for r in data["runs"] if r["label"] == opts.label]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
