"""The CLI's habits on the local YARN: `wait`'s exit codes for failed and killed jobs, the
evaluator's logs, clear refusals (a successful job's `wait`, `submit ... -- ARGS`, list's
filters and status --json's times: test_operate_yarn.py).

Light jobs (tests/apps/light_task.py, no TensorFlow) of a few seconds each.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from jobtools import (
    TFYARN,
    ReleaseFile,
    app_report,
    prepare_light_job,
    run_tfyarn,
    submit_and_wait,
    submit_detached,
    wait_for,
)

from tfyarn.cli import exitcodes

pytestmark = pytest.mark.yarn

EVALUATOR = {"yarn.role.priority": "4", "yarn.component.instances": "1", "yarn.memory": "256",
             "yarn.vcores": "1"}


def test_a_failed_job_exits_3_and_a_killed_one_4(yarn_cluster, tmp_path: Path) -> None:
    for part in ("fails", "killed"):
        (tmp_path / part).mkdir()
    # The job to kill runs while the failing one is submitted and waited for: one job's time.
    release = ReleaseFile.fresh(yarn_cluster.layout)  # never created: it runs until killed
    resources, app_config = prepare_light_job(
        tmp_path / "killed", ["--sleep", "240", "--release_file", release.url])
    app_id = submit_detached(yarn_cluster, resources, app_config)
    waiter = subprocess.Popen([*TFYARN, "wait", app_id], env=yarn_cluster.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        failing, app_config = prepare_light_job(tmp_path / "fails", ["--sleep", "1",
                                                                     "--exit_code", "3"])
        run = submit_and_wait(yarn_cluster, tmp_path, failing, app_config)
        assert run.returncode == exitcodes.JOB_FAILED, run.output
        assert f"{run.app_id} FAILED" in run.output
        again = run_tfyarn(yarn_cluster, "wait", run.app_id, "--json")
        assert again.returncode == exitcodes.JOB_FAILED, again.stderr
        assert json.loads(again.stdout)["final_status"] == "FAILED"

        wait_for("the job to run", lambda: app_report(yarn_cluster, app_id)["state"]
                 == "RUNNING", 120)
        killed = run_tfyarn(yarn_cluster, "kill", app_id, "--json")
        assert killed.returncode == 0, killed.stderr
        assert json.loads(killed.stdout)["killed"] is True
        out, err = waiter.communicate(timeout=120)
        assert waiter.returncode == exitcodes.JOB_KILLED, out + err
        assert f"{app_id} KILLED" in out
    finally:
        if waiter.poll() is None:
            waiter.kill()
        run_tfyarn(yarn_cluster, "kill", app_id)  # "already ended" when it went well
    assert run_tfyarn(yarn_cluster, "status", app_id, "--exit-code").returncode == 4


def test_logs_of_the_evaluator(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "4"],
                                              components={"evaluator": EVALUATOR})
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config)
    assert run.returncode == 0, run.output

    def aggregated(*options: str) -> str | None:
        out = run_tfyarn(yarn_cluster, "logs", run.app_id, *options)
        return out.stdout if out.returncode == 0 and "evaluator 0 started" in out.stdout \
            else None

    only = wait_for("the evaluator's aggregated logs",
                    lambda: aggregated("--role", "evaluator"), 90)
    assert "light task evaluator 0 started" in only and "worker 0 started" not in only
    every = aggregated()  # without --role: the evaluator's too
    assert every and "light task worker 0 started" in every, every
    entries = json.loads(run_tfyarn(yarn_cluster, "logs", run.app_id, "--role", "evaluator",
                                    "--json").stdout)
    assert {(e["role"], e["index"]) for e in entries} == {("evaluator", 0)}, entries
    assert any("light task evaluator 0 started" in e["text"] for e in entries
               if e["stream"] == "stdout"), entries


def test_wait_refuses_what_is_no_tfyarn_job(yarn_cluster, skein_client) -> None:
    import skein

    other = skein_client.submit(skein.ApplicationSpec(
        name="not-tfyarn-wait", master=skein.Master(
            resources=skein.Resources(memory=256, vcores=1), script="sleep 1")))
    out = run_tfyarn(yarn_cluster, "wait", other)
    assert out.returncode == exitcodes.ERROR and "is not a tfyarn job" in out.stderr, out
    out = run_tfyarn(yarn_cluster, "wait", "application_1_9999")
    assert out.returncode == exitcodes.ERROR, out
    assert "YARN knows no application" in out.stderr and "tfyarn list --all" in out.stderr
    # -v after the command, as before it (kill always starts skein's driver)
    verbose = run_tfyarn(yarn_cluster, "kill", "-v", "application_1_9999")
    assert "INFO skein.Driver: Driver started" in verbose.stderr, verbose.stderr
