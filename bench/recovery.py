"""Experiment 3: recovery. kill -9 a task's TensorFlow process and time until it trains again.

- worker: the seed job with `yarn.container.failure.threshold` 1 for workers; worker 1's
  script (TF task worker:2) is killed once it trains. tfyarn replaces its container; done
  when the replacement's stdout shows its first `step` line.
- ps: threshold 1 for the ps; the ps is killed once a checkpoint at step >= 50 is in the
  job's work dir on HDFS (the chief's copy, mirrored there). tfyarn ends every container and
  starts the cluster again as generation 1; done when every worker of generation 1 printed
  its first step (the chief restores the checkpoint from HDFS first).

Milestones after the kill: the AppMaster heard the failure (its log), the new containers were
allocated and run (RM log), the tasks registered (AppMaster log), the scripts started (flags
file mtime, in the new container's local work dir) and trained (stdout). The floor is the
same recovery by hand on 127.0.0.1: the killed process started again at once with the same
flags (worker), or every process killed and started again (ps), timed to the same first
`step` lines.

    python -m bench.recovery --runs 3 [--victims worker,ps]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench import floors, tables
from bench.cluster import Cluster, kill_app, wait_for_room
from bench.common import EXAMPLES, REPO, RESULTS, SCRATCH, log
from bench.jobs import AppFollower, job_files, submit_tfyarn
from bench.logs import DriverLog, RmLog
from bench.processes import processes_of_app
from bench.results import kinds_to_run, machine_info, record_run, save
from bench.seed_job import trainer_files, trainer_watch
from bench.variants import VARIANTS, Variant, make_variant
from bench.watch import LogWatch

TRAIN_ARGS = ["--train_steps", "3000", "--step_sleep", "0.1"]  # never ends before recovery
MIN_CHECKPOINT_STEP = 50
CHECKPOINT = re.compile(r'^model_checkpoint_path: ".*model\.ckpt-(\d+)"$', re.MULTILINE)
VICTIM = {"worker": ("worker", 2, "worker-1.stdout"), "ps": ("ps", 0, None)}
TIMEOUT_S = 300
STUCK_S = 60.0  # a replacement that printed no step this long after its start is stuck


def checkpoint_step(work: Path) -> int | None:
    """The step of the latest checkpoint in a local work dir."""
    try:
        return checkpoint_of((work / "checkpoints" / "checkpoint").read_text())
    except OSError:
        return None


def checkpoint_of(text: str) -> int | None:
    match = CHECKPOINT.search(text)
    return int(match.group(1)) if match else None


class JobCheckpoint:
    """The latest checkpoint in a tfyarn job's work dir on HDFS (what a restart restores)."""

    def __init__(self, cluster: Cluster, app_id: str) -> None:
        from appmaster.common.storage import RemoteDir

        self.remote = RemoteDir(cluster.job_dir(app_id))

    def step(self) -> int | None:
        try:
            data = self.remote.read_bytes("checkpoints/checkpoint")
        except Exception:  # the NameNode busy or the dir not made yet: ask again
            return None
        return checkpoint_of(data.decode()) if data else None


def wait(what: str, probe, timeout_s: float, poll=None):
    deadline = time.monotonic() + timeout_s
    while True:
        if poll:
            poll()
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


# ---------------------------------------------------------------- tfyarn


def run_tfyarn_recovery(cluster: Cluster, run_dir: Path, victim: str, var: Variant) -> dict:
    resources = json.loads((REPO / "resources.json").read_text())
    names = trainer_files(resources)
    role = "worker" if victim == "worker" else "ps"
    res_path, app_path = job_files(
        run_dir, args=TRAIN_ARGS, components={role: {"yarn.container.failure.threshold": "1"}},
        settings={"app.name": f"tfyarn-bench-recovery-{victim}"})
    rm = RmLog(cluster)
    app_id, t0, _ = submit_tfyarn(cluster, res_path, app_path, var)
    log(f"  tfyarn ({var.name}) {app_id}: kill the {victim}")
    checkpoint = JobCheckpoint(cluster, app_id)
    watch = trainer_watch(cluster, resources)(app_id)
    follower = AppFollower(cluster, app_id, watch, sample_am=False)
    job_name, index, stdout = VICTIM[victim]
    try:
        if victim == "worker":
            follower.until(f"{stdout} training", lambda: watch.first("step", stdout), TIMEOUT_S)
        else:
            follower.until(f"a checkpoint at step >= {MIN_CHECKPOINT_STEP}",
                           lambda: (checkpoint.step() or 0) >= MIN_CHECKPOINT_STEP, TIMEOUT_S)
        step_at_kill = checkpoint.step()
        procs = [p for p in processes_of_app(app_id, "mnist1.py")
                 if (p.flag("job_name"), p.flag("task_index")) == (job_name, str(index))]
        if len(procs) != 1:
            raise RuntimeError(f"expected one {job_name}:{index} process, found {procs}")
        before = set(watch.marks)
        os.kill(procs[0].pid, signal.SIGKILL)
        t_kill = time.time()

        def new_firsts() -> list[tuple[Path, float]]:
            return [(p, t) for p, t in watch.first("step") if p not in before]

        if victim == "worker":
            replacement = f"flags/{job_name}_{index}.attempt1.json"

            def trained_or_stuck() -> bool:
                if any(p.name == stdout for p, _ in new_firsts()):
                    return True
                started = cluster.task_files(app_id, replacement)
                # started, but no step for STUCK_S: say so
                return bool(started) and time.time() - started[0].stat().st_mtime > STUCK_S

            follower.until("the replacement's first step", trained_or_stuck, TIMEOUT_S)
        else:
            follower.until("generation 1's first steps",
                           lambda: len(new_firsts()) >= len(names), TIMEOUT_S)
        follower.poll()
        refused = refused_lines(cluster, app_id, stdout or "chiefworker-0.stdout", set(before))
    finally:
        kill_app(cluster, app_id)
    follower.wait_end(120)
    events = rm.events(app_id)
    driver = DriverLog.parse(follower.driver_text)
    new = new_firsts()
    t = {"submit": t0, "kill": t_kill,
         "failure_heard": next((at for at, _ in driver.failures if at >= t_kill), None),
         "allocated": events.last("ALLOCATED", after=t_kill),
         "containers_running": events.last("RUNNING", after=t_kill)}
    if victim == "worker":
        t["registered"] = next((at for at, name in driver.registered
                                if at >= t_kill and name == "worker 1"), None)
        flags = cluster.task_files(app_id, f"flags/{job_name}_{index}.attempt1.json")
        t["scripts_started"] = flags[0].stat().st_mtime if flags else None
        t["training_again"] = next((at for p, at in new if p.name == stdout), None)
    else:
        g1 = driver.phases.get(1, {})
        t["registered"] = g1.get("all registered")
        attempt1 = cluster.task_files(app_id, "flags/*.attempt1.json")
        t["scripts_started"] = (max(p.stat().st_mtime for p in attempt1)
                                if len(attempt1) == len(names) + 1 else None)
        t["training_again"] = max(at for _, at in new) if len(new) >= len(names) else None
        t["chief_training_again"] = next((at for p, at in new
                                          if p.name == "chiefworker-0.stdout"), None)
    stuck = None
    if t["training_again"] is None:
        stuck = (f"no step line within {STUCK_S:.0f} s of the replacement's start; "
                 f"'Connection refused' lines in its stderr: {refused}")
        log(f"  {stuck}")
    restored = [watch.marks[p].values.get("start") for p, _ in new
                if p.name == "chiefworker-0.stdout"]
    meta = {"step_at_kill": step_at_kill, "stuck": stuck,
            "restored_global_step": int(restored[0]) if restored and restored[0] else None,
            "am_training_again": [(name, s) for at, name, s in driver.training_again]}
    return {"kind": "tfyarn", "variant": var.name, "victim": victim, "app_id": app_id, "t": t,
            "meta": meta}


def refused_lines(cluster: Cluster, app_id: str, stdout: str, before: set[Path]) -> int:
    """How often the replacement's TensorFlow failed to reach a peer (read before the end)."""
    stderr = stdout.replace(".stdout", ".stderr")
    old_dirs = {p.parent for p in before}
    count = 0
    for d in cluster.app_log_dirs(app_id):
        if d not in old_dirs and (d / stderr).exists():
            count += (d / stderr).read_text(errors="replace").count("Connection refused")
    return count


# ---------------------------------------------------------------- the floor: by hand


class LocalCluster:
    """mnist1.py's processes on 127.0.0.1 with the flags tfyarn gives them (as run_local.py)."""

    def __init__(self, work: Path, ps: int = 1, workers: int = 2) -> None:
        sys.path.insert(0, str(REPO))
        from appmaster.common.cluster_spec import ClusterSpec

        self.work, self.logs = work, work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.counts = {"ps": ps, "chiefworker": 1, "worker": workers}
        ports = iter(floors.free_ports(sum(self.counts.values())))
        self.spec = ClusterSpec(**{
            name: tuple(f"127.0.0.1:{next(ports)}" for _ in range(self.counts[role]))
            for name, role in (("ps", "ps"), ("chief", "chiefworker"), ("workers", "worker"))})
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}

    def start(self, role: str, index: int, attempt: int) -> None:
        env = dict(os.environ, TF_CONFIG=json.dumps(self.spec.tf_config(role, index)),
                   TFYARN_ROLE=role, TFYARN_TASK_INDEX=str(index), TFYARN_ATTEMPT=str(attempt),
                   PYTHONUNBUFFERED="1")
        command = [sys.executable, str(EXAMPLES / "mnist1.py"),
                   *self.spec.flags(role, index, str(self.work)), *TRAIN_ARGS]
        with open(self.logs / f"{role}-{index}.{attempt}.log", "wb") as out:
            self.procs[role, index] = subprocess.Popen(command, env=env, stdout=out,
                                                       stderr=subprocess.DEVNULL)

    def start_all(self, attempt: int) -> None:
        for role, count in self.counts.items():
            for index in range(count):
                self.start(role, index, attempt)

    def kill(self, role: str, index: int) -> None:
        proc = self.procs.pop((role, index))
        proc.kill()
        proc.wait()

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait()
        self.procs.clear()


def run_local_recovery(run_dir: Path, victim: str) -> dict:
    work = run_dir / "work"
    local = LocalCluster(work)
    watch = LogWatch(lambda: [p for p in sorted(local.logs.glob("*.log"))
                              if not p.name.startswith("ps")],
                     {"start": floors.START, "step": floors.STEP})
    trainers = 1 + local.counts["worker"]
    try:
        local.start_all(attempt=0)
        if victim == "worker":
            wait("worker-1 training", lambda: watch.first("step", "worker-1.0.log"), TIMEOUT_S,
                 watch.poll)
        else:
            wait("a checkpoint", lambda: (checkpoint_step(work) or 0) >= MIN_CHECKPOINT_STEP,
                 TIMEOUT_S, watch.poll)
        step_at_kill = checkpoint_step(work)
        t_kill = time.time()
        if victim == "worker":
            local.kill("worker", 1)
            local.start("worker", 1, attempt=1)
            wait("the restarted worker's first step",
                 lambda: watch.first("step", "worker-1.1.log"), TIMEOUT_S, watch.poll)
            again = watch.first("step", "worker-1.1.log")[0][1]
        else:
            local.kill("ps", 0)
            local.stop()
            local.start_all(attempt=1)
            wait("every restarted worker's first step",
                 lambda: len([p for p, _ in watch.first("step") if p.name.endswith(".1.log")])
                 >= trainers, TIMEOUT_S, watch.poll)
            again = max(t for p, t in watch.first("step") if p.name.endswith(".1.log"))
    finally:
        local.stop()
    flags = [p.stat().st_mtime for p in (work / "flags").glob("*.attempt1.json")]
    t = {"kill": t_kill, "scripts_started": max(flags) if flags else None,
         "training_again": again}
    return {"kind": "local", "victim": victim, "t": t, "meta": {"step_at_kill": step_at_kill}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--victims", default="worker,ps")
    parser.add_argument("--variants", default="current",
                        help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    opts = parser.parse_args(argv)
    cluster = Cluster.default()
    variants = [make_variant(v) for v in opts.variants.split(",") if v]
    victims = [v for v in opts.victims.split(",") if v]
    data = {"experiment": "recovery", "machine": machine_info(), "runs_per_kind": opts.runs,
            "train_args": TRAIN_ARGS, "runs": [], "variants": {v.name: v.info for v in variants}}
    out = opts.out / "recovery.json"
    scratch = SCRATCH / "recovery"
    shutil.rmtree(scratch, ignore_errors=True)
    for rep in range(opts.runs):
        for victim in victims:
            for kind, var, name in kinds_to_run(variants, [] if opts.no_floor else ["local"]):
                run_dir = scratch / f"{victim}-{rep}-{name}"
                conditions = wait_for_room(cluster, {"": 3, "gpu": 2}, 300)
                log(f"recovery ({victim}) run {rep + 1}/{opts.runs} {name} ({conditions})")
                if kind == "tfyarn":
                    run = functools.partial(run_tfyarn_recovery, cluster, run_dir, victim, var)
                else:
                    run = functools.partial(run_local_recovery, run_dir, victim)
                record_run(data, out, run_dir, kind=kind, name=name, rep=rep,
                           conditions=conditions, run=run, show=tables.print_recovery_run,
                           cluster=cluster, victim=victim)
    data["machine"]["load_at_end"] = os.getloadavg()
    save(out, data)
    print(tables.recovery_tables(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
