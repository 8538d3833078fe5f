"""Fault injection on the local YARN: kill -9 tasks, the AppMaster or the job, and watch tfyarn.

Every test submits with `tfyarn submit --detach --json`, then watches the job's files (its
work dir on HDFS, and what each task wrote in its own container's local work dir on its own
host) and the process table (/proc). Tasks are found by their command line
(`--work_dir=<container dir of the app>/work --job_name=... --task_index=...`), the
AppMaster's Python driver by `appmaster.master.main` and its container directory. Every wait is
bounded and says what it waited for. Recovery times are printed (run pytest with -s to see
them), never asserted.

The machine is small (2 cores): one job at a time, a small model, few steps.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for_final_state
from jobtools import (
    EXAMPLES,
    ONE_WORKER,
    REPO,
    TFYARN,
    JobFiles,
    gpu_partition_busy,
    prepare_job,
    prepare_light_job,
    run_tfyarn,
    status_json,
    yarn_logs,
)
from taskrecords import assert_tf2_records, flags_records

from tfyarn.localyarn import cluster
from tfyarn.localyarn.proctable import CONTAINER_ID, Proc, scan_processes

pytestmark = pytest.mark.yarn


SUBMIT_TIMEOUT_S = 120  # `tfyarn submit --detach` (skein's driver start + upload)
CHECKPOINT_TIMEOUT_S = 150  # submit -> a checkpoint at step >= MIN_CHECKPOINT_STEP
RECOVERY_TIMEOUT_S = 120  # kill -> the replacement's flags file
FINAL_TIMEOUT_S = 240  # the application's end
PROCESS_GONE_TIMEOUT_S = 30  # the app's end -> none of its processes left
MIN_CHECKPOINT_STEP = 50  # mnist1.py saves every 50 steps

# Long enough to kill mid-training and have the replacement join before the end.
TRAIN_ARGS = ["--train_steps", "600", "--step_sleep", "0.1"]
TRAIN_STEPS = 600
# model.ckpt-N (TF1's Saver) or ckpt-N (TF2's CheckpointManager)
CHECKPOINT_PATH = re.compile(r'^model_checkpoint_path: "(.*ckpt-(\d+))"$', re.MULTILINE)
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


# ---------------------------------------------------------------- processes


def app_processes(app_id: str, exclude: int | None = None) -> list[Proc]:
    """The app's processes: in one of its container dirs, or naming it on the command line
    (except the `exclude` pid: a command of ours, like `tfyarn kill <app id>`)."""
    return [p for p in scan_processes() if p.pid != exclude and p.mentions(app_id)]


def task_processes(app_id: str) -> list[Proc]:
    """The training scripts of the job: each gets --work_dir=<its container dir>/work, in the
    app's dir on its host.

    A script's own short-lived fork (Python forks before exec'ing a helper, e.g. while
    importing TensorFlow) shows the same command line for a moment: children of a task
    process are not tasks.
    """
    procs = [p for p in scan_processes()
             if any(a.startswith("--work_dir=") and f"/{app_id}/" in a for a in p.argv)]
    pids = {p.pid for p in procs}
    return [p for p in procs if p.ppid not in pids]


def task_key(proc: Proc) -> tuple[str, int]:
    return proc.flag("job_name") or "?", int(proc.flag("task_index") or -1)


def master_processes(app_id: str) -> list[Proc]:
    """The AppMaster's Python driver (skein's Java AM starts `python -m appmaster.master.main`)."""
    return [p for p in scan_processes()
            if "appmaster.master.main" in p.argv and app_id in p.cwd and p.container_number == 1]


# ---------------------------------------------------------------- waiting


def wait_until(what: str, probe: Callable[[], Any], timeout_s: float,
               poll_s: float = 0.5, fail_fast: Callable[[], str | None] | None = None) -> Any:
    """probe()'s first truthy value; AssertionError naming `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    next_check = 0.0
    while True:
        value = probe()
        if value:
            return value
        now = time.monotonic()
        if fail_fast is not None and now >= next_check:
            reason = fail_fast()
            if reason:
                raise AssertionError(f"while waiting for {what}: {reason}")
            next_check = now + 1.0
        if now > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # not there yet (the examples write atomically, but be safe)


def latest_checkpoint(state_text: str | None) -> tuple[str, int] | None:
    """(path, step) of the newest checkpoint a `checkpoint` state file names."""
    match = CHECKPOINT_PATH.search(state_text or "")
    return (match.group(1), int(match.group(2))) if match else None


# ---------------------------------------------------------------- jobs


@dataclass
class Job:
    """One submitted application and where to look at it."""

    yarn_cluster: Any
    app_id: str
    files: JobFiles
    submitted_at: float
    killed_pids: list[int] = field(default_factory=list)
    # Each AppMaster attempt's driver log as last seen live (the NodeManager deletes it once
    # the logs are aggregated): {"container_..._01_000001": text}
    driver_logs: dict[str, str] = field(default_factory=dict)
    logs_aggregated: bool = False  # driver_logs hold the whole logs from `yarn logs`

    # ----- YARN's view

    def rest(self) -> dict:
        return cluster.rest(self.yarn_cluster.layout, f"apps/{self.app_id}")["app"]

    def state(self) -> str:
        return str(self.rest()["state"])

    def ended_early(self) -> str | None:
        """For fail_fast: a reason if the application already ended."""
        app = self.rest()
        if app["state"] in FINAL_STATES:
            return (f"{self.app_id} already ended: {app['state']}/{app['finalStatus']}: "
                    f"{app.get('diagnostics', '')}")
        return None

    def final(self, timeout_s: float = FINAL_TIMEOUT_S) -> dict:
        """YARN's report once the app ended; the AppMaster logs are kept as they go by."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.driver_log()
            app = self.rest()
            if app["state"] in FINAL_STATES:
                return app
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.app_id} still {app['state']} after {timeout_s:.0f} s")
            time.sleep(0.5)

    # ----- the job's files

    def flags(self, job_name: str, index: int, attempt: int = 0) -> dict | None:
        """The record a task's script wrote in its own local work dir (on its host)."""
        suffix = f".attempt{attempt}" if attempt else ""
        path = self.files.local(f"flags/{job_name}_{index}{suffix}.json")
        return None if path is None else read_json(path)

    def result(self) -> dict:
        """The chief's result.json, as mirrored to the job's work dir on HDFS."""
        return self.files.remote_json("result.json")

    def hdfs_checkpoint(self) -> tuple[str, int] | None:
        return latest_checkpoint(self.files.remote_text("checkpoints/checkpoint"))

    def wait_for_checkpoint(self, min_step: int = MIN_CHECKPOINT_STEP) -> int:
        """The step of the first checkpoint >= min_step that reached HDFS."""
        started = time.monotonic()

        def probe() -> int | None:
            latest = self.hdfs_checkpoint()
            return latest[1] if latest and latest[1] >= min_step else None

        step = wait_until(f"a checkpoint at step >= {min_step} in {self.files.url}/checkpoints",
                          probe, CHECKPOINT_TIMEOUT_S, poll_s=0.5, fail_fast=self.ended_early)
        print(f"\n[{self.app_id}] checkpoint model.ckpt-{step} {time.monotonic() - started:.1f} s "
              f"after we started waiting ({time.monotonic() - self.submitted_at:.1f} s after "
              "submit)")
        return step

    # ----- processes

    def task(self, job_name: str, index: int) -> Proc:
        """The one live training process of a task."""
        def probe() -> list[Proc]:
            return [p for p in task_processes(self.app_id)
                    if task_key(p) == (job_name, index)]

        procs = wait_until(f"the process of --job_name={job_name} --task_index={index}", probe,
                           30, fail_fast=self.ended_early)
        assert len(procs) == 1, "two processes for one task:\n" + "\n".join(
            p.short() for p in procs)
        return procs[0]

    def kill9(self, proc: Proc) -> float:
        os.kill(proc.pid, signal.SIGKILL)
        self.killed_pids.append(proc.pid)
        return time.monotonic()

    def assert_no_process_left(self, timeout_s: float = PROCESS_GONE_TIMEOUT_S) -> float:
        """Seconds until no process of the app remains; AssertionError if some outlive it."""
        started = time.monotonic()
        deadline = started + timeout_s
        while alive := app_processes(self.app_id):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"processes of {self.app_id} still alive {timeout_s:.0f} s after it ended:\n"
                    + "\n".join(p.short() for p in alive))
            time.sleep(0.5)  # a scan of /proc is ~40 ms of CPU with the suite's processes
        return time.monotonic() - started

    def live_stdout(self, name: str) -> str:
        """The newest container's ``name`` log file so far, read from its NodeManager's log
        dir (a replacement's container comes after the one it replaces)."""
        found: dict[str, Path] = {}
        for nm in self.yarn_cluster.layout.node_managers:
            base = self.yarn_cluster.layout.node_dir(nm) / "containers" / self.app_id
            found.update({path.parent.name: path for path in base.glob(f"container_*/{name}")})
        if not found:
            return ""
        with contextlib.suppress(OSError):
            return found[max(found, key=container_number)].read_text(errors="replace")
        return ""

    # ----- the AppMaster's log, read live from the NodeManager's log dir

    def driver_log(self) -> str:
        """Every AppMaster attempt's driver log so far (read from the NodeManagers' log dirs)."""
        for nm in self.yarn_cluster.layout.node_managers:
            base = self.yarn_cluster.layout.node_dir(nm) / "containers" / self.app_id
            for path in base.glob("container_*_000001/application.driver.log"):
                with contextlib.suppress(OSError):  # aggregated and deleted meanwhile
                    text = path.read_text(errors="replace")
                    if len(text) >= len(self.driver_logs.get(path.parent.name, "")):
                        self.driver_logs[path.parent.name] = text
        return "\n".join(self.driver_logs[name] for name in sorted(self.driver_logs))

    def aggregated_driver_logs(self) -> None:
        """Once the app ended: every attempt's whole log from `yarn logs` (the NodeManager
        deletes its own copy once aggregated, so a poll may have missed the last lines)."""
        if self.logs_aggregated or self.rest()["state"] not in FINAL_STATES:
            return
        logs = yarn_logs(self.yarn_cluster, self.app_id, {"application.driver.log"},
                         copies=len(self.attempts()))
        for name, container in logs.items():
            if "application.driver.log" in container.files:
                self.driver_logs[name] = container.files["application.driver.log"]
        self.logs_aggregated = True

    def am_event(self, pattern: str, attempt: int = 1) -> float | None:
        """When (epoch s) the AppMaster of that attempt first logged a line matching pattern."""
        self.driver_log()
        self.aggregated_driver_logs()
        name = next((n for n in self.driver_logs if CONTAINER_ID.search(n)
                     and int(CONTAINER_ID.search(n).group(1)) == attempt), None)
        for line in self.driver_logs.get(name, "").splitlines() if name else []:
            stamp = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ", line)
            if stamp and re.search(pattern, line):
                seconds = time.mktime(time.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S"))
                return seconds + int(stamp.group(2)) / 1000
        return None

    def attempts(self) -> list[dict]:
        doc = cluster.rest(self.yarn_cluster.layout, f"apps/{self.app_id}/appattempts")
        return (doc.get("appAttempts") or {}).get("appAttempt") or []

    def print_attempts(self) -> None:
        print(f"[{self.app_id}] AppMaster attempts: " + ", ".join(
            f"{a['id']}: {a.get('appAttemptState')}" for a in self.attempts()))

    def print_am_recovery_lines(self, expected: int = 1, timeout_s: float = 10) -> None:
        """Print the AppMaster's "training again X s after its failure" lines (figures only)."""
        pattern = re.compile(r"INFO (.+ training again [\d.]+ s after its failure.*)$",
                             re.MULTILINE)
        deadline = time.monotonic() + timeout_s
        while True:
            lines = pattern.findall(self.driver_log())
            if len(lines) >= expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for line in lines:
            print(f"[{self.app_id}] AppMaster: {line}")
        if not lines:
            print(f"[{self.app_id}] AppMaster: no 'training again' line found in its live log")


def make_job(tmp_path: Path, *, args: list[str], thresholds: dict[str, int] | None = None,
             components: dict[str, dict[str, str]] | None = None,
             **options: Any) -> tuple[Path, Path]:
    """The seed job's files in tmp_path, with failure thresholds set per role."""
    components = {role: dict(values) for role, values in (components or {}).items()}
    for role, threshold in (thresholds or {}).items():
        components.setdefault(role, {})["yarn.container.failure.threshold"] = str(threshold)
    return prepare_job(tmp_path, args=args, components=components, **options)


@pytest.fixture
def submit(yarn_cluster, skein_client) -> Iterator[Callable[..., Job]]:
    """Submit jobs detached; afterwards kill any still running and check none left processes."""
    with submitting(yarn_cluster, skein_client) as submit_job:
        yield submit_job


@contextlib.contextmanager
def submitting(yarn_cluster, skein_client,
               client: Sequence[str] = TFYARN) -> Iterator[Callable[..., Job]]:
    """What the ``submit`` fixture gives, for other test modules' fixtures (``client``:
    tfyarn in another env, which it ships)."""
    jobs: list[Job] = []

    def _submit(res_path: Path, app_path: Path) -> Job:
        started = time.monotonic()
        result = run_tfyarn(yarn_cluster, "submit", "--resources", str(res_path), "--app-config",
                        str(app_path), "--detach", "--json", timeout_s=SUBMIT_TIMEOUT_S,
                        client=client)
        assert result.returncode == 0, f"submit failed:\n{result.stdout}\n{result.stderr}"
        line = next((line for line in result.stdout.splitlines() if line.startswith("{")), None)
        assert line, f"no JSON from submit --json:\n{result.stdout}\n{result.stderr}"
        app_id = json.loads(line)["application_id"]
        job = Job(yarn_cluster, app_id, JobFiles(yarn_cluster.layout, app_id), started)
        jobs.append(job)
        print(f"\n[{app_id}] submitted in {time.monotonic() - started:.1f} s")
        return job

    yield _submit

    for job in jobs:
        report = skein_client.application_report(job.app_id)
        if str(report.state) not in FINAL_STATES:
            skein_client.kill_application(job.app_id)  # the test failed midway
            wait_for_final_state(skein_client, job.app_id, 60)
        job.assert_no_process_left()


def restarts_of(diagnostics: str) -> list[str]:
    match = re.search(r"Restarts \((\d+)\): (.*?)\.(?:\s|$)", diagnostics, re.DOTALL)
    assert match, f"no restarts recorded in the diagnostics: {diagnostics!r}"
    lines = match.group(2).split("; ")
    assert len(lines) == int(match.group(1)), diagnostics
    return lines


def assert_succeeded(job: Job, app: dict) -> None:
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), (
        f"{job.app_id}: {app['state']}/{app['finalStatus']}: {app.get('diagnostics')}")


def assert_failed(job: Job, app: dict) -> None:
    """The AppMaster unregistered with FAILED: YARN shows FINISHED (the attempt ended well)."""
    assert app["finalStatus"] == "FAILED" and app["state"] in ("FINISHED", "FAILED"), (
        f"{job.app_id}: {app['state']}/{app['finalStatus']}: {app.get('diagnostics')}")


# ---------------------------------------------------------------- tests


@pytest.mark.long
def test_killed_worker_is_replaced(yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """kill -9 worker 1's script: a new container for the same task index, the job goes on."""
    job = submit(*make_job(tmp_path, args=TRAIN_ARGS, thresholds={"worker": 1}))
    job.wait_for_checkpoint()
    victim = job.task("worker", 2)  # worker role index 1 (the chief is TF worker 0)
    # The others pause while the replacement comes, so that it always joins a job still
    # training, however slow its start on a busy machine (their agents keep beating).
    others = [job.task("worker", 0), job.task("worker", 1)]
    killed_at = job.kill9(victim)
    with paused(others):
        record = wait_until("the replacement's flags/worker_2.attempt1.json",
                            lambda: job.flags("worker", 2, attempt=1), RECOVERY_TIMEOUT_S,
                            fail_fast=job.ended_early)
        print(f"[{job.app_id}] worker 1 killed -> replacement started its script "
              f"(worker_2.attempt1.json) in {time.monotonic() - killed_at:.1f} s")
        wait_until("the replacement's first progress line", lambda: re.search(
            r"^step \d+ loss", job.live_stdout("worker-1.stdout"), re.MULTILINE),
            RECOVERY_TIMEOUT_S, fail_fast=job.ended_early)
    job.print_am_recovery_lines()

    app = job.final()
    assert_succeeded(job, app)
    assert job.result()["global_step"] >= TRAIN_STEPS, job.result()
    restarts = restarts_of(app["diagnostics"])
    assert len(restarts) == 1 and restarts[0].startswith("worker 1 replaced"), restarts
    assert record["tfyarn_attempt"] == 1 and record["flags"]["task_index"] == 2, record
    assert record["pid"] != victim.pid
    assert job.flags("worker", 1, attempt=1) is None  # only worker 1 restarted
    job.assert_no_process_left()
    assert_replacement_trained(job, "worker-1.stdout")


def container_number(container_id: str) -> tuple[int, int]:
    """(attempt, number) of container_<cluster>_<app>_<attempt>_<number>: newer is larger."""
    attempt, number = container_id.split("_")[-2:]
    return int(attempt), int(number)


@contextlib.contextmanager
def paused(procs: list[Proc]) -> Iterator[None]:
    """SIGSTOP these processes for the block's length, SIGCONT after (even on a failure)."""
    for proc in procs:
        os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)


def assert_replacement_trained(job: Job, stdout_name: str) -> None:
    """`yarn logs` shows the task's stdout from two containers, and the second one trained:
    it joined at a global step past 0 and ran steps of its own (a replacement the other
    tasks cannot reach would hang at its first step instead)."""
    logs = yarn_logs(job.yarn_cluster, job.app_id, {stdout_name}, copies=2)
    outputs = [c.files[stdout_name] for _, c in sorted(logs.items()) if stdout_name in c.files]
    assert len(outputs) == 2, f"{stdout_name} in {len(outputs)} containers, expected 2"
    start = re.search(r"^start global_step (\d+)$", outputs[1], re.MULTILINE)
    done = re.search(r"\(local steps (\d+)\)$", outputs[1], re.MULTILINE)
    assert start and done, f"the replacement did not train:\n{outputs[1][-2000:]}"
    assert int(start.group(1)) > 0 and int(done.group(1)) > 0, outputs[1][-2000:]


# The chief's variant (about 55 s) runs on demand (TFYARN_LONG=1): a killed chief restarting
# the cluster from the checkpoint on HDFS is proven in every run by test_slider_yarn.py's
# test_killed_worker_0_restarts_from_the_hdfs_checkpoint and by the TF2 examples' chief kill.
@pytest.mark.long
@pytest.mark.parametrize("victim_task, role, threshold_role", [
    (("ps", 0), "ps 0", "ps"),
    pytest.param(("worker", 0), "chiefworker 0", "chiefworker", marks=pytest.mark.skipif(
        not os.environ.get("TFYARN_LONG"), reason="the chief's variant: TFYARN_LONG=1 runs it")),
], ids=["ps", "chief"])
def test_killed_ps_or_chief_restarts_from_checkpoint(
        yarn_cluster, skein_client, submit, tmp_path: Path, victim_task: tuple[str, int],
        role: str, threshold_role: str) -> None:
    """kill -9 the ps (or the chief): every task restarts as generation 1 from the checkpoint."""
    job = submit(*make_job(tmp_path, args=["--train_steps", "400", "--step_sleep", "0.1"],
                           thresholds={threshold_role: 1}, components=ONE_WORKER))
    step_at_kill = job.wait_for_checkpoint()
    victim = job.task(*victim_task)
    killed_at = job.kill9(victim)

    old_dir = job.flags(*victim_task)["flags"]["work_dir"]
    wait_until("the restarted task's and the chief's flags (attempt 1)",
               lambda: job.flags(*victim_task, attempt=1) and job.flags("worker", 0, attempt=1),
               RECOVERY_TIMEOUT_S, fail_fast=job.ended_early)
    print(f"[{job.app_id}] {role} killed -> generation 1 started its scripts "
          f"in {time.monotonic() - killed_at:.1f} s")
    # The new container works in a fresh local dir: what it resumes from came from HDFS.
    assert job.flags(*victim_task, attempt=1)["flags"]["work_dir"] != old_dir
    job.print_am_recovery_lines(expected=3)

    app = job.final()
    assert_succeeded(job, app)
    result = job.result()
    print(f"[{job.app_id}] checkpoint at the kill: step {step_at_kill}; the restarted chief "
          f"began at global step {result['first_global_step']} and ended at "
          f"{result['global_step']}")
    assert result["first_global_step"] >= step_at_kill > 0, (
        f"the restarted chief did not resume from the checkpoint: {result}")
    assert result["global_step"] >= 400, result
    restarts = restarts_of(app["diagnostics"])
    assert len(restarts) == 1, restarts
    assert restarts[0].startswith(f"{role} failed: cluster restarted as generation 1"), restarts
    for name, index in (("ps", 0), ("worker", 0), ("worker", 1)):
        record = job.flags(name, index, attempt=1)  # every task restarted
        assert record and record["tfyarn_attempt"] == 1, (name, index, record)
    assert_restored_from_hdfs(job, "chiefworker-0.stdout", step_at_kill)
    job.assert_no_process_left()


def assert_restored_from_hdfs(job: Job, stdout_name: str, min_step: int,
                              directory: str = "checkpoints") -> None:
    """The restarted task's agent brought a checkpoint >= min_step of `directory` down from
    HDFS before its script started (its own host never had the first container's files)."""
    logs = yarn_logs(job.yarn_cluster, job.app_id, {stdout_name}, copies=2)
    pattern = rf"restored {re.escape(directory)}/(?:model\.)?ckpt-(\d+) from hdfs://"
    restored = [int(m.group(1)) for c in logs.values() if stdout_name in c.files
                for text in c.files.values()  # the agent's own log, beside the script's
                for m in re.finditer(pattern, text)]
    assert restored and max(restored) >= min_step, (
        f"no restore of a checkpoint >= {min_step} from HDFS in {stdout_name}: {restored}")


# The kill comes once checkpoint 50 is on HDFS (mirrored every 2 s), 250 steps (over 12 s of
# step_sleep alone) before the end: generation 1 trains from it to the end.
TF2_STEPS = 300


# ParameterServerStrategy's example (tf2_ps) gets its checks of every task's TF_CONFIG and
# flags here, in the job whose chief this kills: a job of its own would only repeat them.
TF2_PS_TASKS = {"ps_0": ("ps", 0), "chief_0": ("chiefworker", 0), "worker_0": ("worker", 0)}


# tf2_mwms's variant (about 50 s) runs on demand (TFYARN_LONG=1): a MultiWorkerMirrored
# cluster restarted from HDFS is what test_keras_yarn's keras_mwms-kill-worker goes through.
@pytest.mark.long
@pytest.mark.parametrize("example", ["tf2_ps", pytest.param("tf2_mwms", marks=pytest.mark.skipif(
    not os.environ.get("TFYARN_LONG"), reason="tf2_mwms's variant: TFYARN_LONG=1 runs it"))])
def test_tf2_example_resumes_from_hdfs_after_its_chief_is_killed(
        yarn_cluster, skein_client, submit, tmp_path: Path, example: str) -> None:
    """TF2 ParameterServerStrategy / MultiWorkerMirroredStrategy: kill -9 the chief; the new
    generation, on fresh local dirs, resumes from the checkpoint mirrored to HDFS."""
    files = EXAMPLES / example
    args = ["--train_steps", str(TF2_STEPS), "--save_every", "50", "--step_sleep", "0.05"]
    job = submit(*make_job(
        tmp_path, args=args,
        thresholds={"chiefworker": 1}, settings={"checkpoint.mirror.interval": "2"},
        resources=files / "resources.json", app_config=files / "appConfig.json"))
    step_at_kill = job.wait_for_checkpoint()
    killed_at = job.kill9(job.task("worker", 0))  # TF's chief gets the legacy worker 0 flags

    app = job.final()
    print(f"[{job.app_id}] chief killed at HDFS checkpoint {step_at_kill} -> the job ended "
          f"{time.monotonic() - killed_at:.1f} s later")
    assert_succeeded(job, app)
    restarts = restarts_of(app["diagnostics"])
    (restart,) = restarts
    assert re.fullmatch(r"chiefworker 0 failed: cluster restarted as generation 1, restored "
                        r"checkpoints/\S+-(\d+) of \d\d:\d\d:\d\d \(step \1\)", restart), restarts
    result = job.result()
    assert result["first_global_step"] >= step_at_kill > 0, result
    assert result["global_step"] >= TF2_STEPS, result
    assert_restored_from_hdfs(job, "chiefworker-0.stdout", step_at_kill)
    if example == "tf2_ps":  # what its tasks were given, as test_jobs_yarn checks the others'
        assert_tf2_records(job.files, TF2_PS_TASKS, args)
        spec = flags_records(job.files)["chief_0"]["tf_config"]["cluster"]
        assert set(spec) == {"chief", "worker", "ps"}, spec
    job.assert_no_process_left()


def test_worker_failure_over_threshold_fails_the_job(yarn_cluster, skein_client, submit,
                                                     tmp_path: Path) -> None:
    """Threshold 0 for workers: the first killed worker fails the job, and says why. The
    AppMaster's rule is the same whatever the script: its tasks are light_task.py's."""
    job = submit(*light_policy_job(tmp_path, ["--sleep", "120"],
                                   {"yarn.container.failure.threshold": "0"}))
    victim = job.task("worker", 1)  # worker role index 0, once its script runs
    killed_wall = time.time()
    killed_at = job.kill9(victim)

    app = job.final(timeout_s=120)
    decided = job.am_event(r"ending the application: FAILED", attempt=1)
    print(f"[{job.app_id}] worker 0 killed -> the AppMaster decided FAILED in "
          + (f"{decided - killed_wall:.1f} s" if decided else "(no log line seen)")
          + f"; YARN showed {app['state']}/{app['finalStatus']} "
          f"{time.monotonic() - killed_at:.1f} s after the kill")
    job.print_attempts()
    assert_failed(job, app)
    diagnostics = app["diagnostics"]
    assert "Component worker failed 1 time(s)" in diagnostics, diagnostics
    assert "yarn.container.failure.threshold of 0" in diagnostics, diagnostics
    assert "worker 0 (attempt 0) failed" in diagnostics, diagnostics
    assert "exit code 137" in diagnostics, diagnostics
    worker = final_tasks(yarn_cluster, job.app_id)[("worker", 0)]
    assert worker["restarts"] == 0, f"the worker was replaced: {worker}"

    status = run_tfyarn(yarn_cluster, "status", job.app_id)
    assert status.returncode == 0, status.stderr
    assert "FAILED" in status.stdout, status.stdout
    assert "Component worker failed 1 time(s)" in status.stdout, status.stdout
    assert "yarn.container.failure.threshold of 0" in status.stdout, status.stdout
    assert "worker 0 (attempt 0) failed" in status.stdout, status.stdout
    job.assert_no_process_left()


# A stall watchdog shorter than light_task.py's sleep, whose tasks report no step.
NO_STEPS_WATCHED = {"stall.timeout": "4", "progress.interval": "2"}


def light_policy_job(tmp_path: Path, args: list[str], worker: dict[str, str],
                     **settings: str) -> tuple[Path, Path]:
    """The seed job's roles on tests/apps/light_task.py, with worker settings changed."""
    res, app = prepare_light_job(tmp_path, args, settings=settings)
    resources = json.loads(res.read_text())
    resources["components"]["worker"].update(worker)
    res.write_text(json.dumps(resources))
    return res, app


def final_tasks(yarn_cluster, app_id: str) -> dict[tuple[str, int], dict]:
    """The task table the AppMaster logged at the end, by (role, index)."""
    out = run_tfyarn(yarn_cluster, "status", app_id, "--json")
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["job"]
    assert job, f"no final task table for {app_id}: {out.stdout}"
    return {(t["role"], t["index"]): t for t in job["tasks"]}


def test_ignore_policy_drops_the_failed_worker_and_the_job_succeeds(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """yarn.container.failure.policy ignore: worker 1 fails, is not replaced, the chief ends
    the job as usual. Its tasks report no training step: the stall watchdog, shorter than
    the job, leaves them running, and status says it had no progress signal."""
    job = submit(*light_policy_job(tmp_path, ["--sleep", "8", "--fail", "worker:2"],
                                   {"yarn.container.failure.policy": "ignore"},
                                   **NO_STEPS_WATCHED))
    app = job.final(timeout_s=180)
    assert_succeeded(job, app)
    # its tasks report no step: a stall watchdog shorter than the job judged none of them
    assert restarts_of(app["diagnostics"]) == ["worker 1 dropped (failure policy ignore)"]
    view = status_json(yarn_cluster, job.app_id)["job"]
    assert view["watchdog"].startswith("no progress signal"), view["watchdog"]
    tasks = final_tasks(yarn_cluster, job.app_id)
    assert tasks[("worker", 1)]["state"] == "failed" and tasks[("worker", 1)]["restarts"] == 0
    # The other worker trained on: it ended with the job (whether its script or the chief's
    # end came first) and was never restarted.
    assert tasks[("worker", 0)]["state"] in ("finished", "stopped"), tasks
    assert tasks[("worker", 0)]["restarts"] == 0, tasks
    records = {path.name for path in job.files.glob("light/*.json")}
    assert records == {"ps_0.json", "worker_0.json", "worker_1.json", "worker_2.json"}, records


def test_fatal_policy_fails_the_job_at_the_first_failure(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """yarn.container.failure.policy fatal: the threshold of 5 does not matter."""
    job = submit(*light_policy_job(tmp_path, ["--sleep", "60", "--fail", "worker:2"], {
        "yarn.container.failure.policy": "fatal", "yarn.container.failure.threshold": "5"}))
    app = job.final(timeout_s=180)
    assert_failed(job, app)
    diagnostics = app["diagnostics"]
    assert "Component worker failed 1 time(s); its failure policy is fatal" in diagnostics
    assert "worker 1 (attempt 0) failed" in diagnostics and "exit code 3" in diagnostics
    assert "light task worker:2 failing on purpose" in diagnostics, diagnostics


def test_all_workers_success_policy_waits_for_every_worker(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """success.policy all-workers: the chief is done first, yet the job ends only when both
    workers exited 0 by themselves (with the default policy they would be stopped)."""
    job = submit(*light_policy_job(tmp_path, ["--sleep", "10", "--chief_sleep", "1"], {},
                                   **{"success.policy": "all-workers"}))
    app = job.final(timeout_s=180)
    assert_succeeded(job, app)
    tasks = final_tasks(yarn_cluster, job.app_id)
    for index in (0, 1):
        worker = tasks[("worker", index)]
        assert (worker["state"], worker["exit_code"]) == ("finished", 0), worker
    assert tasks[("ps", 0)]["state"] == "stopped", tasks[("ps", 0)]


FAILING_CHIEF_SCRIPT = """\
import sys, time
print("task", sys.argv[1:], flush=True)
if "--job_name=worker" in sys.argv and "--task_index=0" in sys.argv:
    sys.exit("the chief gives up")
time.sleep(60)
"""


def test_decided_failure_is_final_with_the_work_dir_on_hdfs(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """The AppMaster records its decided FAILED in the job's work dir on HDFS (native client,
    no JVM), and the next AppMaster attempt, on whichever host YARN picks, replays it instead
    of running the job again."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "fail.py").write_text(FAILING_CHIEF_SCRIPT)
    job = submit(*make_job(tmp_path, args=[], scripts_dir=scripts, entry="fail.py",
                           settings={"am.max.attempts": "2"}))

    app = job.final(timeout_s=180)
    job.print_attempts()
    assert_failed(job, app)
    assert "chiefworker 0 (attempt 0) failed" in app["diagnostics"], app["diagnostics"]
    assert "the chief gives up" in app["diagnostics"], app["diagnostics"]
    outcome = job.files.remote_json(".tfyarn-outcome.json")
    assert outcome and outcome["status"] == "FAILED", outcome
    assert len(job.attempts()) == 2, job.attempts()
    # The second attempt ran no task: it replayed the first one's decision.
    logs = yarn_logs(job.yarn_cluster, job.app_id, {"application.driver.log"}, copies=2)
    second = [c.files["application.driver.log"] for name, c in logs.items()
              if (m := CONTAINER_ID.search(name)) and m.groups() == ("02", "000001")]
    assert len(second) == 1, sorted(logs)
    assert "ending the application: FAILED" in second[0], second[0][-3000:]
    assert "generation 0: requested" not in second[0], second[0][-3000:]


LIGHT_SCRIPT = """\
import sys, time
print("light task", sys.argv[1:], flush=True)
time.sleep(60)
"""


def test_unschedulable_request_fails_after_allocation_timeout(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """The job fits the cluster (pre-flight lets it through), but another application holds
    the gpu partition: 2 workers of 1024 MB never get a container -> FAILED after 20 s."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "light.py").write_text(LIGHT_SCRIPT)
    timeout_s = 20
    with gpu_partition_busy(yarn_cluster, skein_client, seconds=300):
        job = submit(*make_job(
            tmp_path, args=[], scripts_dir=scripts, entry="light.py",
            components={"worker": {"yarn.component.instances": "2", "yarn.memory": "1024"}},
            settings={"allocation.timeout": str(timeout_s)}))
        job_ended = run_to_end_of_allocation_test(job, timeout_s)
    app, elapsed, requested, decided = job_ended

    print(f"[{job.app_id}] unschedulable: the AppMaster decided FAILED "
          f"{decided - requested:.1f} s after its container requests; YARN showed "
          f"{app['state']}/{app['finalStatus']} {elapsed:.1f} s after the AppMaster registered "
          f"({time.monotonic() - job.submitted_at:.1f} s after submit)")
    job.print_attempts()
    assert_failed(job, app)
    assert timeout_s - 1 <= decided - requested <= timeout_s + 10, (
        f"decided {decided - requested:.1f} s after the requests, not ~{timeout_s} s")
    # The end YARN shows comes later when a second AppMaster attempt replays the decision.
    assert elapsed < timeout_s + 90, f"FAILED only after {elapsed:.0f} s"
    diagnostics = app["diagnostics"]
    match = re.search(r"YARN did not allocate (\d+) container\(s\) within 20 s "
                      r"\(site\.global\.allocation\.timeout\)", diagnostics)
    assert match, diagnostics
    assert int(match.group(1)) == 2, diagnostics  # neither worker got a container
    waiting = re.findall(r"^\s+worker (\d+): asked for 1024 MB, 1 vcore\(s\) in node label "
                         r"'gpu'", diagnostics, re.MULTILINE)
    assert len(waiting) == int(match.group(1)), diagnostics
    job.assert_no_process_left()


def run_to_end_of_allocation_test(job: Job, timeout_s: float):
    """(YARN's final report, seconds from RUNNING to the end, when the AppMaster requested
    its containers, when it decided FAILED)."""
    running_at = wait_until(f"{job.app_id} RUNNING (its AppMaster registered)",
                            lambda: job.state() in ("RUNNING", *FINAL_STATES) and
                            time.monotonic(), 90)
    app = job.final(timeout_s=timeout_s + 100)
    elapsed = time.monotonic() - running_at
    requested = job.am_event(r"generation 0: requested", attempt=1)
    decided = job.am_event(r"ending the application: FAILED", attempt=1)
    assert requested and decided, f"attempt 1's AppMaster log:\n{job.driver_log()}"
    return app, elapsed, requested, decided


# The chief's dir mirrored every 2 s: the kill comes once checkpoint 50 is on HDFS, at step
# 100 or so, and attempt 2 has 300 steps to train from the checkpoint it restores.
AM_KILL_STEPS = 400
AM_KILL_ARGS = ["--train_steps", str(AM_KILL_STEPS), "--step_sleep", "0.1"]


@pytest.mark.long
def test_killed_appmaster_next_attempt_finishes(yarn_cluster, skein_client, submit,
                                                tmp_path: Path) -> None:
    """kill -9 the AppMaster's driver: YARN starts attempt 2, which reruns the job from the
    checkpoint; no task of attempt 1 survives, never two processes for one task."""
    job = submit(*make_job(tmp_path, args=AM_KILL_ARGS, components=ONE_WORKER, settings={
        "am.max.attempts": "2", "checkpoint.mirror.interval": "2"}))
    step_at_kill = job.wait_for_checkpoint()
    masters = master_processes(job.app_id)
    assert len(masters) == 1, [p.short() for p in masters]
    assert masters[0].am_attempt == 1, masters[0].short()
    first_tasks = task_processes(job.app_id)
    assert len(first_tasks) == 3, [p.short() for p in first_tasks]
    first_pids = {p.pid for p in first_tasks}
    chief_pid = job.flags("worker", 0)["pid"]
    killed_wall = time.time()
    killed_at = job.kill9(masters[0])

    gone = wait_until("every task process of attempt 1 to end",
                      lambda: not (first_pids & {p.pid for p in task_processes(job.app_id)})
                      and time.monotonic(), 60)
    print(f"[{job.app_id}] AppMaster killed -> attempt 1's tasks gone in "
          f"{gone - killed_at:.1f} s")

    samples = duplicates = 0
    second_attempt_seen: float | None = None
    new_chief_at: float | None = None  # attempt 2's chief wrote worker_0.attempt1.json
    while str(skein_client.application_report(job.app_id).state) not in FINAL_STATES:
        if time.monotonic() - killed_at > FINAL_TIMEOUT_S:
            raise AssertionError(f"{job.app_id} did not end {FINAL_TIMEOUT_S} s after the kill")
        procs = task_processes(job.app_id)
        survivors = [p for p in procs if p.pid in first_pids or p.am_attempt == 1]
        assert not survivors, "attempt 1's tasks survive:\n" + "\n".join(
            p.short() for p in survivors)
        counts = Counter(task_key(p) for p in procs)
        duplicates += sum(1 for n in counts.values() if n > 1)
        assert all(n <= 1 for n in counts.values()), "two processes for one task:\n" + "\n".join(
            p.short() for p in procs)
        if procs and second_attempt_seen is None:
            second_attempt_seen = time.monotonic()
            assert {p.am_attempt for p in procs} == {2}, [p.short() for p in procs]
        if procs:
            samples += 1
        if new_chief_at is None:
            # Attempt 2 starts every task again, so its chief is on its second start.
            record = job.flags("worker", 0, attempt=1)
            if record and record["pid"] != chief_pid and record["tfyarn_attempt"] == 1:
                new_chief_at = time.monotonic()
        time.sleep(0.5)
    print(f"[{job.app_id}] AppMaster killed -> attempt 2's first task script running in "
          + (f"{second_attempt_seen - killed_at:.1f} s" if second_attempt_seen else "(never)")
          + f"; {samples} process-table samples during attempt 2, {duplicates} duplicates")
    print(f"[{job.app_id}] AppMaster killed -> attempt 2's chief started its script "
          "(wrote worker_0.attempt1.json) in "
          + (f"{new_chief_at - killed_at:.1f} s" if new_chief_at else "(not seen)"))
    attempt2_started = job.am_event(r"tfyarn AppMaster attempt 2", attempt=2)
    attempt2_running = job.am_event(r"phase all running", attempt=2)
    if attempt2_started and attempt2_running:
        print(f"[{job.app_id}] AppMaster killed -> attempt 2's driver started in "
              f"{attempt2_started - killed_wall:.1f} s, all its tasks running in "
              f"{attempt2_running - killed_wall:.1f} s (from its log)")

    app = job.rest()
    job.print_attempts()
    assert len(job.attempts()) == 2, job.attempts()
    assert new_chief_at is not None, "attempt 2's chief never started its script"
    # The second attempt finishes the job (it could also fail it cleanly, with a reason; on
    # this cluster it succeeds, so that is what is asserted).
    assert_succeeded(job, app)
    assert "AppMaster attempt 2" in app["diagnostics"], app["diagnostics"]
    restored = re.search(r"the chief restored \S*model\.ckpt-(\d+) of \S+ \(step \d+\)",
                         app["diagnostics"])  # what it found, not a claim
    assert restored and int(restored[1]) >= step_at_kill, app["diagnostics"]
    assert samples >= 3, f"only {samples} samples of attempt 2's tasks"
    result = job.result()
    print(f"[{job.app_id}] checkpoint at the kill: step {step_at_kill}; attempt 2's chief began "
          f"at global step {result['first_global_step']}, ended at {result['global_step']}")
    assert result["first_global_step"] >= step_at_kill, result
    assert result["global_step"] >= AM_KILL_STEPS, result
    assert_restored_from_hdfs(job, "chiefworker-0.stdout", step_at_kill)
    job.assert_no_process_left()


LOAD_CHECKPOINT = """\
import sys
import tensorflow as tf
reader = tf.train.load_checkpoint(sys.argv[1])
names = sorted(reader.get_variable_to_shape_map())
print("variables", names)
print("global_step", int(reader.get_tensor("global_step")))
"""


def test_tfyarn_kill_ends_every_process_and_keeps_the_checkpoint(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    """`tfyarn kill` mid-job: KILLED, no process left, the checkpoints readable."""
    job = submit(*make_job(tmp_path, args=TRAIN_ARGS, components=ONE_WORKER))
    job.wait_for_checkpoint()
    assert len(task_processes(job.app_id)) == 3
    # `tfyarn kill` in the background while the process table and YARN's state are watched.
    started = time.monotonic()
    kill = subprocess.Popen([*TFYARN, "kill", job.app_id],
                            env=yarn_cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=REPO)
    seen: dict[str, float] = {}
    while len(seen) < 3:
        now = time.monotonic()
        if now - started > 90:
            kill.kill()
            raise AssertionError(f"after 90 s: seen only {sorted(seen)}; "
                                 f"left: {[p.short() for p in app_processes(job.app_id)]}")
        if "returned" not in seen and kill.poll() is not None:
            seen["returned"] = now
        if "yarn ended" not in seen and job.state() in FINAL_STATES:
            seen["yarn ended"] = now
        if "processes gone" not in seen and not app_processes(job.app_id, exclude=kill.pid):
            seen["processes gone"] = now
        time.sleep(0.1)
    output = kill.communicate()[0]
    assert kill.returncode == 0, output
    print(f"[{job.app_id}] after `tfyarn kill` started: it returned in "
          f"{seen['returned'] - started:.1f} s (skein's driver starts first), YARN ended the "
          f"app in {seen['yarn ended'] - started:.1f} s, no process of the job left in "
          f"{seen['processes gone'] - started:.1f} s")
    app = job.final(timeout_s=30)
    assert app["state"] == "KILLED", app
    gone_after = seen["processes gone"] - max(seen["returned"], seen["yarn ended"])
    assert gone_after < 10, f"processes outlived the kill by {gone_after:.1f} s"
    job.assert_no_process_left(timeout_s=5)

    # The checkpoints on HDFS are whole: every file of every listed checkpoint, readable.
    text = job.files.remote_text("checkpoints/checkpoint")
    latest = latest_checkpoint(text)
    assert latest, f"no checkpoint state file in {job.files.url}/checkpoints"
    listed = [os.path.basename(p) for p in
              re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.MULTILINE)]
    assert os.path.basename(latest[0]) in listed, text
    remote = job.files.remote()
    names = remote.list_files()
    local = tmp_path / "restored"
    for prefix in listed:
        for suffix in (".index", ".meta", ".data-00000-of-00001"):
            name = f"checkpoints/{prefix}{suffix}"
            assert name in names and names[name].length > 0, f"{name} missing or empty"
            remote.download(name, local / name)
    latest = (str(local / "checkpoints" / os.path.basename(latest[0])), latest[1])
    loaded = subprocess.run([sys.executable, "-c", LOAD_CHECKPOINT, latest[0]],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert f"global_step {latest[1]}" in loaded.stdout, loaded.stdout
    assert "w1" in loaded.stdout and "w2" in loaded.stdout, loaded.stdout


def test_helpers_parse_checkpoint_file(tmp_path: Path) -> None:
    """The checkpoint-file parsing the tests rely on (no cluster needed)."""
    assert latest_checkpoint(
        'model_checkpoint_path: "/w/checkpoints/model.ckpt-152"\n'
        'all_model_checkpoint_paths: "/w/checkpoints/model.ckpt-101"\n'
        'all_model_checkpoint_paths: "/w/checkpoints/model.ckpt-152"\n'
    ) == ("/w/checkpoints/model.ckpt-152", 152)
    assert restarts_of("The chief finished successfully. a -> b: 1.0 s. Restarts (1): "
                       "worker 1 replaced (attempt 1).") == ["worker 1 replaced (attempt 1)"]
    proc = Proc(1, ("python", "app/mnist1.py", "--job_name=worker", "--task_index=2"),
                "/x/appcache/application_1_0001/container_1_0001_02_000003")
    assert task_key(proc) == ("worker", 2) and proc.am_attempt == 2
    assert proc.container_number == 3
