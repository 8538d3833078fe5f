"""YARN's verdicts on the strict local cluster: memory is enforced and queues preempt.

- A task holding more memory than its container was given is killed by the NodeManager
  (KILLED_EXCEEDED_PMEM); the job fails, and what the user reads names the usage, the
  limit and the fix: that component's yarn.memory, with a value.
- A job in the default queue running past its guaranteed share of the default partition
  has containers preempted when a job in the urgent queue asks for its own half; the
  preempted worker is asked for again, uncounted, and the job (failure threshold 0
  everywhere) trains on and SUCCEEDS, its global step never going back. YARN's notice
  comes first: the job notes it before the kill, and the chief saves a checkpoint at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import skein
from conftest import wait_for_final_state
from jobtools import ReleaseFile, prepare_light_job, status_json, yarn_logs
from test_faults_yarn import (
    Job,
    assert_failed,
    assert_succeeded,
    make_job,
    restarts_of,
    submitting,
    wait_until,
)

from appmaster.model.jobfailures import VERDICT_WAIT_S
from tfyarn.localyarn import cluster

pytestmark = pytest.mark.yarn

HOG_MB = 700  # in a 256 MB container: over twice its limit, so killed at the first look


@pytest.fixture
def submit(yarn_cluster, skein_client) -> Iterator[Callable[..., Job]]:
    with submitting(yarn_cluster, skein_client) as submit_job:
        yield submit_job


def test_a_task_over_its_memory_is_killed_by_yarn_and_the_fix_is_named(
        yarn_cluster, submit, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "600", "--hog", f"worker:2:{HOG_MB}"])  # worker role index 1
    job = submit(resources, app_config)
    app = job.final()
    assert_failed(job, app)
    diagnostics = app["diagnostics"]
    assert "worker 1 (attempt 0) was killed by YARN for memory: its processes used" in \
        diagnostics, diagnostics
    assert "of physical memory, over the 256 MB its container was given" in diagnostics
    assert 'Fix: raise "yarn.memory" of component "worker" in resources.json from 256 to ' \
        in diagnostics
    assert "Component worker failed 1 time(s)" in diagnostics
    view = status_json(yarn_cluster, job.app_id)["job"]
    worker = next(t for t in view["tasks"] if (t["role"], t["index"]) == ("worker", 1))
    assert worker["verdicts"] == {"memory-killed": 1}, worker
    assert view["verdicts"] == {"memory-killed": 1}, view["verdicts"]
    job.assert_no_process_left()


# ---------------------------------------------------------------- preemption

DEFAULT_PARTITION_MB = 2 * 16384  # the two default-partition nodes (layout.NODE_MEMORY_MB)
WORKER_MB = 6144  # 3 workers: 18 GB, past the 14.4 GB the default queue is guaranteed
URGENT_MB = 4096  # 4 of them: 16 GB, past the urgent queue's 14.4 GB share
# Long enough for the urgent job to come and take its share (preemption's monitor looks
# every second and kills after 10 s: the local cluster's capacity-scheduler settings), with
# training left after it: about 70 s of training with 4 workers at 0.3 s a step, where the
# notice comes some 15 s after the first checkpoint and the kill 10 s later. Slow steps: each
# costs the job's processes ~20 ms of CPU, which the suite's other lane is short of.
TRAIN_STEPS = 850
URGENT_HOLD_S = 25  # past the kill's wait: the urgent job's own ends do not make room first
CHIEF_OUT = "chiefworker-0.stdout"
TRAIN_ARGS = ["--train_steps", str(TRAIN_STEPS), "--step_sleep", "0.3"]


def urgent_application(containers: int, seconds: float) -> skein.ApplicationSpec:
    """Another team's job in the urgent queue, asking for about its guaranteed share."""
    return skein.ApplicationSpec(
        name="tfyarn-test-urgent", queue="urgent", max_attempts=1,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={"hold": skein.Service(
            instances=containers, resources=skein.Resources(memory=URGENT_MB, vcores=1),
            script=f"sleep {seconds:.0f}")})


@contextmanager
def preempting(yarn_cluster, skein_client, job: Job, timeout_s: float) -> Iterator[None]:
    """Another team's job in the urgent queue, until one of ``job``'s tasks is preempted;
    waited for to its end after the block."""
    urgent = skein_client.submit(urgent_application(containers=4, seconds=URGENT_HOLD_S))
    try:
        wait_until("a task of the job preempted", lambda: any(
            t.get("verdicts", {}).get("preempted") for t in
            status_json(yarn_cluster, job.app_id)["job"]["tasks"]),
            timeout_s, poll_s=2, fail_fast=job.ended_early)
        yield
    finally:
        wait_for_final_state(skein_client, urgent, 120)


def default_partition_used(yarn_cluster, queue: str) -> int:
    """MB the queue holds now (the RM's scheduler view)."""
    doc = cluster.rest(yarn_cluster.layout, "scheduler")["scheduler"]["schedulerInfo"]
    for info in doc["queues"]["queue"]:
        if info["queueName"] == queue:
            return int(info["resourcesUsed"]["memory"])
    raise AssertionError(f"no queue {queue} in the scheduler's view")


@pytest.mark.long
def test_a_job_past_its_queues_share_gets_a_preemption_notice_saves_and_trains_on(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:
    resources, app_config = make_job(
        tmp_path, args=TRAIN_ARGS,
        thresholds={"ps": 0, "chiefworker": 0, "worker": 0},
        components={"worker": {"yarn.component.instances": "3", "yarn.memory": str(WORKER_MB),
                               "yarn.label.expression": ""}})
    job = submit(resources, app_config)
    before = job.wait_for_checkpoint()
    used = default_partition_used(yarn_cluster, "default")
    assert used > DEFAULT_PARTITION_MB // 2, f"the default queue holds only {used} MB"

    # It holds its share briefly: the preempted worker's new ask is met once it is gone.
    with preempting(yarn_cluster, skein_client, job, 90):
        progress = status_json(yarn_cluster, job.app_id)["job"].get("progress") or {}
        print(f"[{job.app_id}] preempted {time.monotonic() - job.submitted_at:.0f} s after "
              f"submit, at global step {progress.get('step')} of {TRAIN_STEPS}; checkpoint "
              f"before: step {before}")

    app = job.final(timeout_s=300)
    assert_succeeded(job, app)  # threshold 0 everywhere: a preemption is no failure
    restarts = restarts_of(app["diagnostics"])
    assert any("preempted by YARN" in line for line in restarts), restarts
    assert job.result()["global_step"] >= TRAIN_STEPS, job.result()
    after = job.hdfs_checkpoint()
    assert after is not None and after[1] >= before, (before, after)
    view = status_json(yarn_cluster, job.app_id)["job"]
    assert view["verdicts"].get("preempted", 0) >= 1 and "failed" not in view["verdicts"], \
        view["verdicts"]
    # YARN's notice came before its kill: noted, and the chief saved a checkpoint at once
    notice = next(i for i, line in enumerate(restarts) if "told by YARN" in line)
    kill = next(i for i, line in enumerate(restarts) if "preempted by YARN" in line)
    assert notice < kill, restarts
    chief_preempted = any(line.startswith("chiefworker 0 preempted by YARN")
                          for line in restarts)
    chiefs = [c.files[CHIEF_OUT] for _, c in sorted(yarn_logs(
        yarn_cluster, job.app_id, {CHIEF_OUT}, copies=2 if chief_preempted else 1).items())
        if CHIEF_OUT in c.files]
    saved = re.search(r"preemption notice at global_step (\d+): saved \S+-(\d+)", chiefs[0])
    assert saved, chiefs[0][-2000:]
    saved_step = int(saved.group(2))
    assert after[1] >= saved_step, (saved.group(0), after)
    print(f"[{job.app_id}] notice at step {saved.group(1)}, saved {saved_step}; "
          f"restarts: {restarts}")
    if chief_preempted:  # the new chief resumed from that checkpoint, or a later one the
        # old chief saved (it trains on until the kill, its mirror copying every second)
        resumed = re.search(r"^start global_step (\d+)$", chiefs[1], re.M)
        assert resumed and int(resumed.group(1)) >= saved_step, (saved_step, chiefs[1][:500])
        print(f"[{job.app_id}] the new chief resumed at step {resumed.group(1)}")


# ---------------------------------------------------------------- ends around tfyarn's kills

def rm_transition(yarn_cluster, container: str, to: str) -> float | None:
    """When (epoch s) the ResourceManager logged ``container`` going from RUNNING to ``to``."""
    pattern = re.compile(rf"^(\S+ \S+),(\d{{3}}) .*{container} Container Transitioned from "
                         rf"RUNNING to {to}$", re.MULTILINE)
    found = pattern.search(yarn_cluster.layout.daemon_log("rm").read_text(errors="replace"))
    if not found:
        return None
    return time.mktime(time.strptime(found[1], "%Y-%m-%d %H:%M:%S")) + int(found[2]) / 1000


def test_an_end_beside_tfyarns_own_kills_is_heard_with_its_verdict(
        yarn_cluster, submit, tmp_path: Path) -> None:
    """Issue 36: skein's AppMaster stops reading a heartbeat's ended containers at the first
    one YARN reports KILLED_BY_APPMASTER. tfyarn's kills never are: skein kills by releasing
    the container, which YARN reports ABORTED, "Container released by application".
    Here the chief's end makes tfyarn kill the ps (training done), while the evaluator,
    holding memory from that moment, is killed by YARN: its end, in the same 5 s heartbeat
    of skein's (idle: nothing is asked for) as the ps's in most runs, is heard with its
    verdict, and the job ends on it at once, not VERDICT_WAIT_S later without it."""
    release = ReleaseFile.fresh(yarn_cluster.layout)
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "600", "--release_file", release.url,
                   "--hog_on_release", f"evaluator:0:{HOG_MB}"],
        components={"evaluator": {"yarn.role.priority": "4", "yarn.component.instances": "1",
                                  "yarn.memory": "256", "yarn.vcores": "1"}})
    job = submit(resources, app_config)
    try:
        wait_until("every task running", lambda: (view := status_json(
            yarn_cluster, job.app_id)["job"]) and len(view["tasks"]) == 5 and all(
            t["state"] == "running" for t in view["tasks"]), 180, poll_s=2,
            fail_fast=job.ended_early)
        release.touch()  # the chief and the worker end; the evaluator holds its memory
        app = job.final()
    finally:
        release.remove()
    assert_succeeded(job, app)
    diagnostics = app["diagnostics"]
    assert "The evaluator failed on the last checkpoint: evaluator 0 (attempt 0) was killed " \
        "by YARN for memory" in diagnostics, diagnostics
    tasks = {(t["role"], t["index"]): t for t in status_json(yarn_cluster, job.app_id)["job"][
        "tasks"]}
    assert tasks[("evaluator", 0)]["verdicts"] == {"memory-killed": 1}, tasks[("evaluator", 0)]
    # skein's kill is a release: RUNNING to RELEASED in the RM, ABORTED to the AppMaster
    killed = rm_transition(yarn_cluster, tasks[("ps", 0)]["yarn_container_id"], "RELEASED")
    ended = rm_transition(yarn_cluster, tasks[("evaluator", 0)]["yarn_container_id"],
                          "COMPLETED")
    decided = job.am_event("ending the application: SUCCEEDED")
    assert killed and ended and decided, (killed, ended, decided)
    print(f"[{job.app_id}] ps released by tfyarn at 0.0 s, the evaluator's end at "
          f"{ended - killed:+.2f} s (the RM's clock), the job's end decided "
          f"{decided - ended:.2f} s after it")
    assert decided - ended < VERDICT_WAIT_S, (killed, ended, decided)
