"""The floors tfyarn is measured against, run in the same session as tfyarn itself.

(a) local: examples/run_local.py starts the same TensorFlow processes by hand on 127.0.0.1
    with the same flags: no YARN, no launcher. The least any launcher can take.
(b) skein: a plain skein application with the same containers (same resources, labels and
    shipped files) and no rendezvous: each container runs the task script directly with
    addresses the bench picked beforehand (possible only because every node is this machine:
    the NodeManagers are hosts of their own for files, but share its network), and a work
    dir of its own in its container dir, as a tfyarn task has. The nodes are bare (no
    .venv: tfyarn/localyarn/hostview.py), so it runs the script with the Python environment
    tfyarn ships, the same archive (./pyenv, localized once per node) a tfyarn job uses.
    What YARN and skein cost by themselves. It has no driver script, so its AppMaster asks for
    every container as soon as it registers, and its JVMs (skein's driver and AppMaster) start
    with the quick-start options (JVM_OPTIONS): the least YARN and skein can take here.

`python -m bench.floors submit SPEC.json` is the floor's `submit`: a fresh process that starts
skein's driver and submits, as `tfyarn submit` does.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.cluster import Cluster, kill_app
from bench.common import EXAMPLES, LIGHT_APPS, REPO, log
from bench.jobs import AppFollower
from bench.logs import RmLog
from bench.watch import LogWatch, mtimes
from tfyarn.submission import jobenv
from tfyarn.submission.environments import SHIPPED_MEMBER, python_in_env

STEP = r"^step \d+ loss"
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # client compiler, serial GC
START = r"^start global_step (\d+)"


# ---------------------------------------------------------------- (a) by hand on 127.0.0.1


def run_local_seed(run_dir: Path, args: list[str], ps: int = 1, workers: int = 2,
                   timeout_s: float = 600) -> dict:
    """examples/run_local.py on mnist1.py; the same milestones as a tfyarn run, where they exist."""
    work = run_dir / "work"
    logs = work / "logs"
    command = [sys.executable, str(EXAMPLES / "run_local.py"), str(EXAMPLES / "mnist1.py"),
               "--ps", str(ps), "--workers", str(workers), "--work-dir", str(work),
               "--timeout", str(timeout_s), "--", *args]
    watch = LogWatch(lambda: sorted(logs.glob("*.log")), {"start": START, "step": STEP})
    t0 = time.time()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=REPO)
    while proc.poll() is None:
        watch.poll()
        time.sleep(0.05)
    watch.poll()
    out = proc.stdout.read() if proc.stdout else ""
    wall = next((float(line.split()[1]) for line in out.splitlines()
                 if line.startswith("wall ")), None)
    trainers = [t for p, t in watch.first("step") if not p.name.startswith("ps")]
    flags = mtimes((work / "flags").glob("*.json"))
    result = work / "result.json"
    t = {
        "submit": t0,
        "scripts_started": max(flags.values()) if len(flags) == ps + 1 + workers else None,
        "training": max(trainers) if len(trainers) == 1 + workers else None,
        "chief_done": result.stat().st_mtime if result.exists() else None,
        "job_end": t0 + wall if wall is not None else None,
    }
    return {"kind": "local", "t": t, "meta": {"exit": proc.returncode, "tail": out[-400:]}}


# ---------------------------------------------------------------- (b) plain skein


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def task_index_expr(offset: int) -> str:
    """The container's index within its service (skein's <service>_<n>), plus offset."""
    return f"$(( ${{SKEIN_CONTAINER_ID##*_}} + {offset} ))"


# Each floor container's own local work dir, as tfyarn gives its tasks (Cluster.task_files).
CONTAINER_WORK_DIR = '--work_dir="$PWD/work"'
# The interpreter of the environment tfyarn ships (the nodes have no .venv), as its tasks run.
FLOOR_PYTHON = python_in_env(SHIPPED_MEMBER)


def seed_floor_spec(resources: dict, args: list[str]) -> dict:
    """mnist1.py in plain skein containers, with the seed job's roles and resources."""
    comps = resources["components"]
    count = {role: int(comps[role]["yarn.component.instances"])
             for role in ("ps", "chiefworker", "worker")}
    ports = iter(free_ports(sum(count.values())))
    hosts = {role: [f"127.0.0.1:{next(ports)}" for _ in range(n)] for role, n in count.items()}
    ps_hosts = ",".join(hosts["ps"])
    worker_hosts = ",".join(hosts["chiefworker"] + hosts["worker"])
    job = {"ps": ("ps", 0), "chiefworker": ("worker", 0), "worker": ("worker", 1)}
    services = {}
    for role in ("ps", "chiefworker", "worker"):
        job_name, offset = job[role]
        command = " ".join([
            FLOOR_PYTHON, "app/mnist1.py", f"--ps_hosts={ps_hosts}",
            f"--worker_hosts={worker_hosts}", f"--job_name={job_name}",
            f"--task_index={task_index_expr(offset)}", CONTAINER_WORK_DIR,
            *map(shlex.quote, args)])
        services[role] = service(comps[role], count[role], f"exec {command}")
    return floor_spec("bench-floor-skein-mnist1", comps, services, EXAMPLES)


def light_floor_spec(resources: dict, sleep_s: float) -> dict:
    """light_task.py in plain skein containers: the rendezvous benchmark's floor."""
    comps = resources["components"]
    job = {"ps": ("ps", 0), "chiefworker": ("worker", 0), "worker": ("worker", 1)}
    services = {}
    for role, values in comps.items():
        if role not in job or int(values["yarn.component.instances"]) == 0:
            continue
        job_name, offset = job[role]
        command = " ".join([
            FLOOR_PYTHON, "app/light_task.py", f"--job_name={job_name}",
            f"--task_index={task_index_expr(offset)}", CONTAINER_WORK_DIR,
            f"--sleep={sleep_s}"])
        services[role] = service(values, int(values["yarn.component.instances"]),
                                 f"exec {command}")
    return floor_spec("bench-floor-skein-light", comps, services, LIGHT_APPS)


def service(values: dict, instances: int, script: str) -> dict:
    return {"instances": instances, "memory": int(values["yarn.memory"]),
            "vcores": int(values["yarn.vcores"]), "gpus": int(values.get("yarn.gpus", 0)),
            "label": values.get("yarn.label.expression", ""),
            "script": f"export PYTHONUNBUFFERED=1\n{script}\n"}


def floor_spec(name: str, comps: dict, services: dict, scripts_dir: Path) -> dict:
    am = comps.get("slider-appmaster", {})
    return {"name": name, "am_memory": int(am.get("yarn.memory", 512)),
            "am_vcores": int(am.get("yarn.vcores", 1)), "scripts_dir": str(scripts_dir),
            "services": services}


def build_skein_spec(desc: dict, env_files: dict):
    import skein

    files = {"app": skein.File(desc["scripts_dir"], type="file"),
             # What tfyarn ships too, so that localization costs the same.
             "appmaster": skein.File(str(REPO / "appmaster"), type="file"),
             **env_files}
    services = {
        name: skein.Service(
            instances=s["instances"],
            resources=skein.Resources(memory=s["memory"], vcores=s["vcores"], gpus=s["gpus"]),
            node_label=s["label"], max_restarts=0, allow_failures=True, files=files,
            script=s["script"])
        for name, s in desc["services"].items()
    }
    return skein.ApplicationSpec(
        name=desc["name"], queue="default",
        master=skein.Master(resources=skein.Resources(memory=desc["am_memory"],
                                                      vcores=desc["am_vcores"]),
                            env={"JAVA_TOOL_OPTIONS": JVM_OPTIONS}),
        services=services, tags={"tfyarn-bench"})


def submit_floor(cluster: Cluster, desc: dict, spec_path: Path) -> tuple[str, float, float]:
    """Submit in a fresh process (skein's driver starts there, as in `tfyarn submit`)."""
    spec_path.write_text(json.dumps(desc, indent=1))
    t0 = time.time()
    result = subprocess.run([sys.executable, "-m", "bench.floors", "submit", str(spec_path)],
                            capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**cluster.env, "SKEIN_DRIVER_JAVA_OPTIONS": JVM_OPTIONS})
    t1 = time.time()
    lines = [x for x in result.stdout.splitlines() if x.startswith("application_")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"skein floor submit failed:\n{result.stdout}\n{result.stderr[-2000:]}")
    return lines[-1].strip(), t0, t1


class SkeinClient:
    """One skein driver per cluster for the whole bench, to watch and end floor applications."""

    _clients: dict[str, object] = {}

    @classmethod
    def get(cls, cluster: Cluster):
        key = str(cluster.layout.state_dir)
        if key not in cls._clients:
            import skein

            saved = dict(os.environ)
            os.environ.update(cluster.env)  # skein's driver finds YARN through these
            try:
                cls._clients[key] = skein.Client(log=False)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        return cls._clients[key]

    @classmethod
    def close(cls) -> None:
        for client in cls._clients.values():
            client.close()
        cls._clients.clear()


def run_skein_seed(cluster: Cluster, run_dir: Path, resources: dict, args: list[str],
                   timeout_s: float = 600) -> dict:
    """Floor (b) for the seed job: the same milestones as a tfyarn run, where they exist."""
    run_dir.mkdir(parents=True, exist_ok=True)
    desc = seed_floor_spec(resources, args)
    n_trainers = sum(int(resources["components"][r]["yarn.component.instances"])
                     for r in ("chiefworker", "worker"))
    n_tasks = n_trainers + int(resources["components"]["ps"]["yarn.component.instances"])
    rm = RmLog(cluster)
    app_id, t0, t1 = submit_floor(cluster, desc, run_dir / "skein-spec.json")
    log(f"  skein floor {app_id}")
    watch = LogWatch(lambda: [d / name for d in cluster.app_log_dirs(app_id)
                              for name in ("chiefworker.log", "worker.log")],
                     {"start": START, "step": STEP})
    follower = AppFollower(cluster, app_id, watch, sample_am=False)
    client = SkeinClient.get(cluster)
    try:
        follower.until("every worker's first step",
                       lambda: len(watch.first("step")) >= n_trainers, timeout_s)
        app = client.connect(app_id, wait=False)
        follower.until("the chief's end", lambda: app.get_containers(
            services=["chiefworker"], states=["SUCCEEDED", "FAILED", "KILLED"]), timeout_s)
        app.shutdown("SUCCEEDED")
        report = follower.wait_end(120)
    except Exception:
        client.kill_application(app_id)
        raise
    events = rm.events(app_id)
    flags = mtimes(cluster.task_files(app_id, "flags/*.json"))
    result = next(iter(cluster.task_files(app_id, "result.json")), None)
    trainers = [t for _, t in watch.first("step")]
    t = {
        "submit": t0, "cli_returned": t1,
        "rm_accepted": report["startedTime"] / 1000,
        "am_container_launched": report["launchTime"] / 1000,
        "am_running": events.am_running[0] if events.am_running else None,
        "allocated": events.last("ALLOCATED"), "acquired": events.last("ACQUIRED"),
        "containers_running": events.last("RUNNING"),
        "scripts_started": max(flags.values()) if len(flags) == n_tasks else None,
        "training": max(trainers) if len(trainers) >= n_trainers else None,
        "chief_done": result.stat().st_mtime if result else None,
        "job_end": report["finishedTime"] / 1000,
    }
    return {"kind": "skein", "app_id": app_id, "t": t,
            "meta": {"final": f"{report['state']}/{report['finalStatus']}"}}


def run_skein_light(cluster: Cluster, run_dir: Path, resources: dict, n_tasks: int,
                    sleep_s: float, timeout_s: float = 600) -> dict:
    """Floor (b) at scale: N light tasks in plain skein containers, submit -> all started."""
    run_dir.mkdir(parents=True, exist_ok=True)
    desc = light_floor_spec(resources, sleep_s)
    rm = RmLog(cluster)
    app_id, t0, t1 = submit_floor(cluster, desc, run_dir / "skein-spec.json")
    log(f"  skein floor {app_id} ({n_tasks} light tasks)")
    follower = AppFollower(cluster, app_id, sample_am=False)
    try:
        follower.until(f"{n_tasks} light tasks started",
                       lambda: len(cluster.task_files(app_id, "light/*.json")) >= n_tasks,
                       timeout_s)
    finally:
        kill_app(cluster, app_id)
    report = follower.wait_end(120)
    events = rm.events(app_id)
    times = mtimes(cluster.task_files(app_id, "light/*.json"))
    t = {
        "submit": t0, "cli_returned": t1,
        "rm_accepted": report["startedTime"] / 1000,
        "am_running": events.am_running[0] if events.am_running else None,
        "allocated": events.last("ALLOCATED"), "containers_running": events.last("RUNNING"),
        "tasks_started": max(times.values()) if len(times) >= n_tasks else None,
    }
    containers = events.task_containers()
    return {"kind": "skein", "app_id": app_id, "n": n_tasks, "t": t,
            "meta": {"allocated": sum("ALLOCATED" in s for s in containers.values()),
                     "released_unused": sum("RELEASED" in s for s in containers.values())}}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "submit":
        print("usage: python -m bench.floors submit SPEC.json", file=sys.stderr)
        return 2
    import skein

    desc = json.loads(Path(argv[1]).read_text())
    # As tfyarn's submit does: this environment's layers, uploaded once per content.
    env = jobenv.ship_this_env(lambda line: print(line, file=sys.stderr))
    with skein.Client() as client:  # as tfyarn's submit does
        print(client.submit(build_skein_spec(desc, env.files())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
