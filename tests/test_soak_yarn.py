"""A soak: one job takes 20 random faults of every kind and still SUCCEEDS.

The faults, one at a time, each once the job has recovered from the one before: kill -9 of
a task's script and of a whole container (its agent) for every role, a preemption (the
urgent queue takes back its share), a lost host (power loss of a NodeManager and its
containers), an HDFS outage (the NameNode stopped for 20 s) and a kill -9 of the
AppMaster. Throughout, the process table is sampled: no role/index ever runs twice at
once. Each fault's cost is measured: seconds until every task runs again, seconds until
the global step is back where it was, and steps lost; no fault may lose more steps than
one mirror interval of training (plus a checkpoint's and a summary's granularity).

With ``TFYARN_SOAK_HA=1`` the soak runs on an HA cluster of its own (two ResourceManagers,
two NameNodes: `tfyarn cluster up --ha`) and its faults include ResourceManager and NameNode
failovers (`tfyarn cluster failover rm|nn`); the HDFS outage stops the active NameNode. There,
`tfyarn status`, `tfyarn report`, `tfyarn tensorboard --once` and the job's page through the
active ResourceManager's proxy are asked over and over: each must answer through every
failover (tfyarn's commands every time, the page again once the new active RM serves it).

About 15 minutes on 2 cores, so not in CI's suite: run it alone with
``TFYARN_SOAK=1 .venv/bin/python -m pytest -s tests/test_soak_yarn.py`` (``TFYARN_SOAK_SEED``
picks the faults' order, ``TFYARN_SOAK_FAULTS`` their number). Its figures are in
docs/benchmarks.md ("A soak of 20 faults").
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest
import requests
from barenodes import client_environ, ship_env_to_every_node
from conftest import LocalCluster
from jobtools import run_tfyarn
from test_faults_yarn import (
    Job,
    assert_succeeded,
    make_job,
    master_processes,
    submitting,
    task_key,
    task_processes,
    wait_until,
)
from test_ha_yarn import HA_PORT_OFFSET
from test_host_loss_yarn import lost
from test_verdicts_yarn import urgent_application

from tfyarn.localyarn import cluster, daemons, ha, hdfs
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.proctable import scan_processes
from tfyarn.localyarn.provision import find_java_home

pytestmark = [pytest.mark.yarn, pytest.mark.xdist_group("offset-2700"), pytest.mark.skipif(
    not os.environ.get("TFYARN_SOAK"),
    reason="a 15-minute soak, run alone: TFYARN_SOAK=1 pytest -s tests/test_soak_yarn.py")]

FAULTS = int(os.environ.get("TFYARN_SOAK_FAULTS", "20"))
SEED = int(os.environ.get("TFYARN_SOAK_SEED", str(int(time.time()) % 10000)))
HA = bool(os.environ.get("TFYARN_SOAK_HA"))
FAILOVERS = ("failover rm", "failover nn")  # no container changes: the job rides through
MIRROR_INTERVAL_S = 5  # site.global.checkpoint.mirror.interval
HEARTBEAT_TIMEOUT_S = 10  # site.global.task.heartbeat.timeout: a lost host is seen quickly
SAVE_CHECKPOINT_STEPS = 50  # mnist1.py's default
SUMMARY_EVERY = 20  # mnist1.py writes summaries (the progress tfyarn reads) this often
STEP_SLEEP_S = 0.1
# Training must outlast the faults. Seen here: a fault and its recovery take 20-130 s,
# and the job gains 300-600 steps between faults (4 workers at STEP_SLEEP_S: 40 steps/s at
# most, restarts cost more), so 20 faults end near step 9,000.
TRAIN_STEPS = FAULTS * 600 + 4000
WORKER_MB = 5120  # 3 of them, the ps, the chief and the AppMaster: past the default
# queue's guaranteed 16 GB, so the urgent queue can take some back; no single node holds
# the whole job, so a lost host leaves a task waiting until the host is back
HOST_DOWN_S = 40
HDFS_DOWN_S = 20
RECOVERY_TIMEOUT_S = 420  # a regained host localizes the packed env again: minutes here
TASK_KILLS = ("script", "container")
ROLES = (("ps", 0), ("chiefworker", 0), ("worker", 0), ("worker", 1), ("worker", 2))
# the scripts' own --job_name/--task_index: the chief is TensorFlow's worker 0
SCRIPTS = {("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2), ("worker", 3)}


def fault_plan(count: int, rng: random.Random) -> list[str]:
    """Every kind at least once (a kill of each role both ways, a preemption, a lost host,
    an HDFS outage, an AppMaster kill; on HA each failover twice), the rest random task
    kills (and failovers), in random order."""
    kills = [f"kill {how} {role}" for role in ("ps", "chiefworker", "worker")
             for how in TASK_KILLS]
    plan = [*kills, "preempt", "lose host", "hdfs outage", "kill appmaster"]
    others = kills
    if HA:  # each failover twice at least, and as likely as a kill after that
        plan += [*FAILOVERS, *FAILOVERS]
        others = [*kills, *FAILOVERS]
    plan += [rng.choice(others) for _ in range(max(0, count - len(plan)))]
    rng.shuffle(plan)
    return plan[:count]


@dataclass
class Watch:
    """What a background thread sees while the job runs: the chief's global step and the
    job's state (`tfyarn status --json`), and the task processes (/proc)."""

    yarn_cluster: object
    app_id: str
    steps: list[tuple[float, int]] = field(default_factory=list)
    view: dict = field(default_factory=dict)
    twice: list[str] = field(default_factory=list)  # a role/index seen running twice
    samples: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        next_status = 0.0
        while not self.stop.is_set():
            self.check_processes()
            if time.monotonic() >= next_status:
                self.read_status()
                next_status = time.monotonic() + 1.5
            time.sleep(0.3)

    def check_processes(self) -> None:
        procs = [p for p in task_processes(self.app_id) if not _stopped(p.pid)]
        counts = Counter(task_key(p) for p in procs)
        self.samples += 1
        self.twice += [f"{key} x{n}: " + "; ".join(p.short() for p in procs
                                                    if task_key(p) == key)
                       for key, n in counts.items() if n > 1]

    def read_status(self) -> None:
        out = run_tfyarn(self.yarn_cluster, "status", self.app_id, "--json", timeout_s=60)
        if out.returncode != 0:
            return
        view = json.loads(out.stdout).get("job") or {}
        self.view = view
        step = (view.get("progress") or {}).get("step")
        if step is not None and (not self.steps or self.steps[-1][1] != step):
            self.steps.append((time.monotonic(), int(step)))

    def step(self) -> int:
        return self.steps[-1][1] if self.steps else 0

    def all_running(self) -> bool:
        """The AppMaster says every task runs, and each has one script in the process table."""
        tasks = self.tasks()
        return (self.view.get("state") == "RUNNING" and len(tasks) == len(ROLES)
                and all(t["state"] == "running" for t in tasks)
                and {task_key(p) for p in task_processes(self.app_id)} == SCRIPTS)

    def tasks(self) -> list[dict]:
        return [t for t in self.view.get("tasks", []) if t["role"] in dict(ROLES)]

    def containers(self) -> set[str]:
        return {t.get("yarn_container_id") or "" for t in self.tasks()}


@dataclass
class Answers:
    """On HA: `tfyarn status`, `tfyarn report`, `tfyarn tensorboard --once` and the job's page
    through the active ResourceManager's proxy, asked in turn over and over in a thread;
    every answer kept as (when, what, ok, why)."""

    yarn_cluster: LocalCluster
    app_id: str
    scratch: Path
    answers: list[tuple[float, str, bool, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        asks: list[tuple[str, Callable[[], str]]] = [
            ("status", lambda: self.tfyarn("status", self.app_id, "--json")),
            ("report", lambda: self.tfyarn("report", self.app_id, "--json", "-o",
                                           str(self.scratch / "report.html"))),
            ("tensorboard", lambda: self.tfyarn("tensorboard", self.app_id, "--once", "--json",
                                                "--cache", str(self.scratch / "tensorboard"))),
            ("page", self.page)]
        while not self.stop.is_set():
            for what, ask in asks:
                started = time.monotonic()
                try:
                    why = ask()
                except (requests.RequestException, ValueError, KeyError) as error:
                    why = f"{type(error).__name__}: {error}"
                self.answers.append((started, what, not why, why[-300:]))
            time.sleep(1)

    def tfyarn(self, *args: str) -> str:
        out = run_tfyarn(self.yarn_cluster, *args, timeout_s=120)
        return "" if out.returncode == 0 else f"exit {out.returncode}: {out.stderr}"

    def page(self) -> str:
        """"" when the page answers with the job on it, as a person's browser would get it
        from the tracking URL the active ResourceManager gives now."""
        app = cluster.rest(self.yarn_cluster.layout, f"apps/{self.app_id}")["app"]
        page = requests.get(f"{app['trackingUrl'].rstrip('/')}/pages/tfyarn/", timeout=60)
        return "" if page.ok and self.app_id in page.text else f"HTTP {page.status_code}"

    def check(self, fault: str, started: float, recovered: float) -> str:
        """Every one of tfyarn's commands answered while the failover went on and until the
        job ran again; the page answered at least once after it. A line for the output."""
        window = [a for a in self.answers if started <= a[0] <= recovered]
        failed = [a for a in window if not a[2] and a[1] != "page"]
        assert not failed, f"tfyarn's commands failed during {fault}: {failed[:3]}"
        wait_until(f"the job's page after {fault}", lambda: any(
            what == "page" and ok and when >= started for when, what, ok, _ in self.answers),
            120)
        asked = Counter(a[1] for a in window)
        misses = sum(1 for a in window if a[1] == "page" and not a[2])
        return ("answered during it: " + ", ".join(f"{k} {n}x" for k, n in sorted(asked.items()))
                + f"; the page missed {misses}x")


def _stopped(pid: int) -> bool:
    """A process frozen (SIGSTOP) or a zombie runs nothing."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("T", "t", "Z", "X")


@dataclass
class FaultCost:
    fault: str
    recovered_s: float  # until every task runs again
    caught_up_s: float  # until the global step passed where it stood at the fault
    steps_lost: int  # how far the global step went back


class Soak:
    def __init__(self, yarn_cluster, skein_client, job: Job, watch: Watch,
                 rng: random.Random, answers: Answers | None) -> None:
        self.yarn_cluster, self.skein_client, self.job, self.watch = (
            yarn_cluster, skein_client, job, watch)
        self.rng, self.answers = rng, answers
        self.layout = yarn_cluster.layout
        self.answered: list[str] = []  # per failover: how tfyarn answered through it

    # ----- faults

    def inject(self, fault: str) -> None:
        if fault == "kill appmaster":
            (master,) = master_processes(self.job.app_id)
            os.kill(master.pid, signal.SIGKILL)
        elif fault.startswith("kill "):
            _, how, role = fault.split()
            index = self.rng.randrange(3) if role == "worker" else 0
            self.kill_task(how, role, index)
        elif fault == "preempt":
            self.preempt()
        elif fault == "lose host":
            self.lose_a_host()
        elif fault == "hdfs outage":
            self.hdfs_outage()
        elif fault in FAILOVERS:
            out = run_tfyarn(self.yarn_cluster, "cluster", *fault.split(), timeout_s=300)
            assert out.returncode == 0, out.stdout + out.stderr

    def kill_task(self, how: str, role: str, index: int) -> None:
        job_name, task_index = ("worker", index + 1) if role == "worker" else (
            ("worker", 0) if role == "chiefworker" else ("ps", 0))
        (script,) = wait_until(f"the script of {job_name} {task_index}", lambda: [
            p for p in task_processes(self.job.app_id) if task_key(p) == (job_name, task_index)],
            60, fail_fast=self.ended_early)
        if how == "script":
            os.kill(script.pid, signal.SIGKILL)
            return
        agent = next(p for p in scan_processes() if p.pid == script.ppid)
        os.kill(agent.pid, signal.SIGKILL)  # the container's main process: the script goes too

    def preempt(self) -> None:
        urgent = self.skein_client.submit(urgent_application(containers=4, seconds=30))
        wait_until("the urgent job's end", lambda: str(
            self.skein_client.application_report(urgent).state) in ("FINISHED", "FAILED",
                                                                     "KILLED"), 180)

    def lose_a_host(self) -> None:
        """A default-partition node with tasks and without the AppMaster (losing its host is
        YARN's 10-minute affair), down for HOST_DOWN_S."""
        am = self.job.rest()["amHostHttpAddress"].rsplit(":", 1)[0]
        hosts = {t["node"].rsplit(":", 1)[0] for t in self.watch.view.get("tasks", [])
                 if t.get("node")}
        candidates = sorted(h for h in hosts if h != am and h != self.gpu_host())
        assert candidates, f"no task host apart from the AppMaster's ({am}): {hosts}"
        with lost(self.yarn_cluster, self.rng.choice(candidates)):
            time.sleep(HOST_DOWN_S)

    def gpu_host(self) -> str:
        return next(nm.host for nm in self.layout.node_managers if nm.partition)

    def hdfs_outage(self) -> None:
        """The NameNode stopped for HDFS_DOWN_S. On HA, the active one: without automatic
        failover (as the HA cluster runs HDFS) it comes back as a standby, and is made
        active again as an operator would."""
        active = ha.active_namenode(self.layout) if self.layout.is_ha else None
        namenode = next(d for d in (ha.storage_daemons(self.layout) if active
                                    else hdfs.daemons_of(self.layout))
                        if d.name == (active or "namenode"))
        assert daemons.stop(self.layout, namenode.name)
        try:
            time.sleep(HDFS_DOWN_S)
        finally:
            daemons.start(self.layout, find_java_home(), namenode)
            if active:
                wait_until(f"{active} back as a standby", lambda: ha.nn_state(
                    self.layout, active) == "standby", 120)
                ha.haadmin(self.layout, "-transitionToActive", active)
            wait_until("HDFS back", lambda: _ready(self.layout), 120)

    def ended_early(self) -> str | None:
        """The job's own fail_fast, but a ResourceManager between two actives (a failover
        under way) is no answer yet, not a failure."""
        try:
            return self.job.ended_early()
        except requests.RequestException:
            return None

    # ----- costs

    def cost_of(self, fault: str) -> FaultCost:
        before, containers = self.watch.step(), self.watch.containers()
        generation, attempts = self.watch.view.get("generation"), len(self.job.attempts())
        started = time.monotonic()
        self.inject(fault)
        if fault == "preempt" and self.watch.all_running() and (
                self.watch.containers() == containers):
            # The urgent job ended and took none of the job's containers: it found room
            # (YARN preempts only what a queue below its share cannot get otherwise).
            print("soak fault preempt: YARN preempted nothing (the urgent job fit)")
            return FaultCost(fault, 0.0, 0.0, 0)
        # Recovered: every task runs again, in a new container where the fault took one
        # (an HDFS outage takes none: the tasks train on through it).
        recovered = wait_until(f"every task running again after {fault}", lambda: (
            self.watch.all_running() and (fault in ("hdfs outage", *FAILOVERS) or
                                          self.watch.containers() != containers)
            and time.monotonic()), RECOVERY_TIMEOUT_S, poll_s=1,
            fail_fast=self.ended_early)
        caught_up = wait_until(f"the global step past {before} after {fault}", lambda: (
            self.watch.step() > before and time.monotonic()), RECOVERY_TIMEOUT_S, poll_s=0.5,
            fail_fast=self.ended_early)
        # A restart (a new generation, or a new AppMaster attempt) resumes from a checkpoint
        # on HDFS: the new chief says which step. Workers alone lose none (the ps keeps the
        # variables).
        restarted = (self.watch.view.get("generation") != generation
                     or len(self.job.attempts()) != attempts)
        lowest = self.resumed_step() if restarted else before
        if self.answers is not None and fault in FAILOVERS:
            self.answered.append(f"{fault}: " + self.answers.check(fault, started, recovered))
        return FaultCost(fault, recovered - started, caught_up - started,
                         max(0, before - lowest))


    def resumed_step(self) -> int:
        """The global step the running chief started from ("start global_step N" in its
        stdout, in its container's log dir on its node)."""
        chief = next(t for t in self.watch.tasks() if t["role"] == "chiefworker")

        def started_at() -> int | None:
            for nm in self.layout.node_managers:
                path = (self.layout.node_dir(nm) / "containers" / self.job.app_id
                        / chief["yarn_container_id"] / "chiefworker-0.stdout")
                found = path.is_file() and START.search(path.read_text(errors="replace"))
                if found:
                    return int(found.group(1))
            return None

        return wait_until("the new chief's starting step", started_at, 120, poll_s=1)


START = re.compile(r"^start global_step (\d+)$", re.MULTILINE)


def _ready(layout) -> bool:
    try:
        return hdfs.ready(layout)
    except Exception:  # noqa: BLE001 (its web server is not up yet)
        return False


@pytest.fixture(scope="module")
def soak_cluster(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The session's cluster; on HA (TFYARN_SOAK_HA=1) one of its own, with as many nodes."""
    if not HA:
        yield request.getfixturevalue("yarn_cluster")
        return
    layout = Layout(tmp_path_factory.mktemp("ha-soak"), port_offset=HA_PORT_OFFSET, ha=True)
    try:
        cluster.up(layout, probe=False)  # the soak's job follows at once
        env = {**cluster.client_environment(layout), "TFYARN_CLUSTER_DIR": str(layout.state_dir),
               "TFYARN_CLUSTER_PORT_OFFSET": str(HA_PORT_OFFSET)}
        with client_environ(env):
            ship_env_to_every_node(layout)
            yield LocalCluster(layout, env)
    finally:
        cluster.down(layout)


@pytest.fixture
def soak_skein(soak_cluster: LocalCluster):
    import skein

    with skein.Client() as client:
        yield client


@pytest.fixture
def submit(soak_cluster: LocalCluster, soak_skein) -> Iterator[Callable[..., Job]]:
    with submitting(soak_cluster, soak_skein) as submit_job:
        yield submit_job


def test_twenty_faults_of_every_kind_and_the_job_succeeds(
        soak_cluster: LocalCluster, soak_skein, submit, tmp_path: Path) -> None:
    yarn_cluster, skein_client = soak_cluster, soak_skein
    rng = random.Random(SEED)
    faults = fault_plan(FAULTS, rng)
    print(f"\nsoak{' on HA' if HA else ''}: seed {SEED}, {len(faults)} faults: "
          f"{', '.join(faults)}")
    every_role = {role: "100" for role in ("ps", "chiefworker", "worker")}
    resources, app_config = make_job(
        tmp_path, args=["--train_steps", str(TRAIN_STEPS), "--step_sleep", str(STEP_SLEEP_S)],
        thresholds={role: int(n) for role, n in every_role.items()},
        components={"worker": {"yarn.component.instances": "3", "yarn.memory": str(WORKER_MB),
                               "yarn.label.expression": ""}},
        settings={"checkpoint.mirror.interval": str(MIRROR_INTERVAL_S),
                  "task.heartbeat.timeout": str(HEARTBEAT_TIMEOUT_S),
                  "allocation.timeout": "900", "registration.timeout": "900",
                  "am.max.attempts": "3"})
    job = submit(resources, app_config)
    watch = Watch(yarn_cluster, job.app_id)
    watcher = threading.Thread(target=watch.run, daemon=True)
    watcher.start()
    answers = Answers(yarn_cluster, job.app_id, tmp_path) if HA else None
    if answers is not None:
        threading.Thread(target=answers.run, daemon=True).start()
    soak = Soak(yarn_cluster, skein_client, job, watch, rng, answers)
    costs: list[FaultCost] = []
    try:
        job.wait_for_checkpoint()
        wait_until("every task running", watch.all_running, 300, poll_s=1)
        for number, fault in enumerate(faults, 1):
            time.sleep(rng.uniform(5, 10))  # a checkpoint or two reaches HDFS
            cost = soak.cost_of(fault)
            costs.append(cost)
            print(f"soak fault {number:2d}/{len(faults)} {fault:28s} running again "
                  f"{cost.recovered_s:5.1f} s, caught up {cost.caught_up_s:5.1f} s, "
                  f"{cost.steps_lost} steps lost (step {watch.step()})", flush=True)
        app = job.final(timeout_s=1800)
    finally:
        watch.stop.set()
        watcher.join(timeout=30)
        if answers is not None:
            answers.stop.set()
    print("\n".join(soak.answered))
    assert_succeeded(job, app)
    if answers is not None:  # and after: the ended job's report and curves
        assert not answers.tfyarn("report", job.app_id, "-o", str(tmp_path / "final.html"))
        assert not answers.tfyarn("tensorboard", job.app_id, "--once",
                                  "--cache", str(tmp_path / "final-tensorboard"))
    job.assert_no_process_left()
    assert not watch.twice, "a role/index ran twice at once:\n" + "\n".join(watch.twice[:5])
    peak_rate = max((s2 - s1) / (t2 - t1) for (t1, s1), (t2, s2) in pairwise(watch.steps)
                    if t2 > t1)
    bound = peak_rate * MIRROR_INTERVAL_S + SAVE_CHECKPOINT_STEPS + SUMMARY_EVERY
    report(costs, watch, peak_rate, bound, tmp_path)
    too_many = [c for c in costs if c.steps_lost > bound]
    assert not too_many, f"more than one mirror interval ({bound:.0f} steps) lost: {too_many}"
    assert job.result()["global_step"] >= TRAIN_STEPS, job.result()


def report(costs: list[FaultCost], watch: Watch, peak_rate: float, bound: float,
           tmp_path: Path) -> None:
    """The figures docs/benchmarks.md records: per kind of fault, and in all."""
    by_kind: dict[str, list[FaultCost]] = {}
    for cost in costs:
        by_kind.setdefault(cost.fault, []).append(cost)
    print(f"\nsoak: {len(costs)} faults, {watch.samples} process-table samples, no task "
          f"twice; peak {peak_rate:.1f} steps/s, bound {bound:.0f} steps lost per fault")
    print(f"{'fault':28s} {'n':>3s} {'running again s':>16s} {'caught up s':>12s} "
          f"{'steps lost (max)':>17s}")
    for kind, group in sorted(by_kind.items()):
        print(f"{kind:28s} {len(group):3d} "
              f"{statistics.median(c.recovered_s for c in group):16.1f} "
              f"{statistics.median(c.caught_up_s for c in group):12.1f} "
              f"{max(c.steps_lost for c in group):17d}")
    figures = tmp_path / "soak.json"
    figures.write_text(json.dumps({"seed": SEED, "peak_steps_per_s": peak_rate,
                                   "bound_steps": bound,
                                   "faults": [c.__dict__ for c in costs]}, indent=2))
    print(f"soak figures: {figures}")
