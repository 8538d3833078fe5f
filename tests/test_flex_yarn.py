"""`tfyarn flex` on a running job on the local YARN: workers 2 -> 3 -> 2, each a new generation
that trains on from the newest checkpoint, and a flex the job refuses."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from jobtools import run_tfyarn, yarn_logs
from test_faults_yarn import (
    assert_succeeded,
    make_job,
    restarts_of,
    submit,  # noqa: F401  (the fixture)
    wait_until,
)

pytestmark = pytest.mark.yarn

STEPS = 400  # 20 s of step_sleep alone: two flexes fit before the end
FLEX_TIMEOUT_S = 90  # a generation's start: every task's container and TensorFlow again


def flex(job, count: str) -> str:
    """`tfyarn flex APP worker=N`, once the job runs every task of its newest generation."""
    def accepted() -> str | None:
        done = run_tfyarn(job.yarn_cluster, "flex", job.app_id, count, timeout_s=60)
        if done.returncode == 0:
            return done.stdout
        assert "once every task runs" in done.stderr, done.stdout + done.stderr
        return None

    return wait_until(f"flex {count} accepted", accepted, FLEX_TIMEOUT_S, poll_s=2,
                      fail_fast=job.ended_early)


def test_flex_workers_two_three_two_trains_on_from_the_checkpoint(
        yarn_cluster, skein_client, submit, tmp_path: Path) -> None:  # noqa: F811
    job = submit(*make_job(tmp_path, args=["--train_steps", str(STEPS), "--step_sleep", "0.05"],
                           settings={"checkpoint.mirror.interval": "2"}))
    before_up = job.wait_for_checkpoint()
    refused = run_tfyarn(yarn_cluster, "flex", job.app_id, "chiefworker=2")
    assert refused.returncode == 1 and "exactly 1" in refused.stderr, refused.stderr
    started = time.monotonic()
    said = flex(job, "worker=3")
    assert "worker flexed from 2 to 3: cluster restarted as generation 1" in said, said
    # TensorFlow's worker 0 is the chief: the job's workers are worker 1.. in its flags
    grown = wait_until("generation 1's chief and third worker", lambda: job.flags(
        "worker", 0, attempt=1) and job.flags("worker", 3, attempt=1), FLEX_TIMEOUT_S,
        fail_fast=job.ended_early)
    assert grown
    assert len(job.flags("worker", 0, attempt=1)["flags"]["worker_hosts"].split(",")) == 4
    before_down = job.wait_for_checkpoint(before_up + 50)
    said = flex(job, "worker=2")
    assert "worker flexed from 3 to 2: cluster restarted as generation 2" in said, said
    print(f"[{job.app_id}] flexed up at step {before_up}, down at step {before_down}, "
          f"{time.monotonic() - started:.1f} s")

    app = job.final()
    assert_succeeded(job, app)
    assert restarts_of(app["diagnostics"]) == [
        "worker flexed from 2 to 3: cluster restarted as generation 1 from the last checkpoint",
        "worker flexed from 3 to 2: cluster restarted as generation 2 from the last checkpoint"]
    assert len(job.flags("worker", 0, attempt=2)["flags"]["worker_hosts"].split(",")) == 3
    # each generation's chief began where the last checkpoint left off
    logs = yarn_logs(yarn_cluster, job.app_id, {"chiefworker-0.stdout"}, copies=3)
    starts = sorted(int(m.group(1)) for c in logs.values()
                    for name, text in c.files.items() if name == "chiefworker-0.stdout"
                    for m in re.finditer(r"start global_step (\d+)", text))
    assert len(starts) == 3 and starts[0] == 0, starts
    assert starts[1] >= before_up and starts[2] >= before_down, (starts, before_up, before_down)
    assert job.result()["global_step"] >= STEPS
