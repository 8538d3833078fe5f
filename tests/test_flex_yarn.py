"""`tfyarn flex` on a running job on the local YARN: workers 1 -> 2 -> 1, each a new generation
that trains on from the newest checkpoint; a flex the job refuses (the chief worker), and one
the cluster could never hold."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from jobtools import ONE_WORKER, run_tfyarn, yarn_logs
from test_faults_yarn import (
    make_job,
    submit,  # noqa: F401  (the fixture)
    wait_until,
)

pytestmark = pytest.mark.yarn

# Never reached: the test ends the job itself once its third generation trained, so that no
# flex races the end of training on a slow machine.
STEPS = 100_000
FLEX_TIMEOUT_S = 90  # a generation's start: every task's container and TensorFlow again


def flex(job, count: str) -> str:
    """`tfyarn flex APP worker=N`, once the job runs every task of its newest generation."""
    def accepted() -> str | None:
        done = run_tfyarn(job.yarn_cluster, "flex", job.app_id, count, timeout_s=60)
        if done.returncode == 0:
            return done.stdout
        assert "once every task runs" in done.stderr or "not answering yet" in done.stderr, (
            done.stdout + done.stderr)
        return None

    return wait_until(f"flex {count} accepted", accepted, FLEX_TIMEOUT_S, poll_s=2,
                      fail_fast=job.ended_early)


def trained_on(job, generation: int, workers: int) -> int:
    """Once the generation's chief runs with ``workers`` workers, the step of a checkpoint
    it wrote itself (50 steps past the newest when it started): the step it trained on to."""
    record = wait_until(f"generation {generation}'s chief", lambda: job.flags(
        "worker", 0, attempt=generation), FLEX_TIMEOUT_S, fail_fast=job.ended_early)
    # TensorFlow's worker 0 is the chief: --worker_hosts lists it and the job's workers
    assert len(record["flags"]["worker_hosts"].split(",")) == workers + 1, record
    at_start = (job.hdfs_checkpoint() or ("", 0))[1]
    return job.wait_for_checkpoint(at_start + 50)


@pytest.mark.long
def test_flex_workers_one_two_one_trains_on_from_the_checkpoint(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:  # noqa: F811
    job = submit(*make_job(tmp_path, args=["--train_steps", str(STEPS), "--step_sleep", "0.1"],
                           settings={"checkpoint.mirror.interval": "2"}, components=ONE_WORKER))
    before_up = job.wait_for_checkpoint()
    refused = run_tfyarn(yarn_cluster, "flex", job.app_id, "chiefworker=2")
    assert refused.returncode == 1 and "exactly 1" in refused.stderr, refused.stderr
    too_many = run_tfyarn(yarn_cluster, "flex", job.app_id, "worker=60")
    assert too_many.returncode == 1 and "cannot hold" in too_many.stderr and (
        "it would wait forever" in too_many.stderr), too_many.stderr

    started = time.monotonic()
    said = flex(job, "worker=2")
    assert "worker flexed from 1 to 2: cluster restarted as generation 1" in said, said
    wait_until("generation 1's second worker", lambda: job.flags("worker", 2, attempt=1),
               FLEX_TIMEOUT_S, fail_fast=job.ended_early)
    before_down = trained_on(job, 1, workers=2)
    said = flex(job, "worker=1")
    assert "worker flexed from 2 to 1: cluster restarted as generation 2" in said, said
    last = trained_on(job, 2, workers=1)
    print(f"[{job.app_id}] flexed up at step {before_up}, down at step {before_down}, "
          f"generation 2 trained to {last}: {time.monotonic() - started:.1f} s")

    status = run_tfyarn(yarn_cluster, "status", job.app_id)
    assert status.stdout.count("Restart: worker flexed from") == 2, status.stdout
    assert run_tfyarn(yarn_cluster, "kill", job.app_id).returncode == 0
    job.final()
    # each generation's chief began where the last checkpoint left off
    logs = yarn_logs(yarn_cluster, job.app_id, {"chiefworker-0.stdout"}, copies=3)
    starts = sorted(int(m.group(1)) for c in logs.values()
                    for name, text in c.files.items() if name == "chiefworker-0.stdout"
                    for m in re.finditer(r"start global_step (\d+)", text))
    # generation 0 from nothing: below the first checkpoint (not 0: the workers may step
    # before the chief first reads the global step)
    assert len(starts) == 3 and starts[0] < before_up, (starts, before_up)
    assert starts[1] >= before_up and starts[2] >= before_down, (starts, before_up, before_down)
