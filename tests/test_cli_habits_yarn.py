"""The CLI's habits (issue 35) on the local YARN: `wait` and the exit codes, `submit ... --
ARGS`, list's filters, status --json's times, the evaluator's logs, clear refusals.

Light jobs (tests/apps/light_task.py, no TensorFlow) of a few seconds each.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from jobtools import (
    TFYARN,
    JobFiles,
    ReleaseFile,
    app_report,
    prepare_light_job,
    read_json,
    run_tfyarn,
    submit_and_wait,
    submit_detached,
    wait_for,
)

from tfyarn.cli import exitcodes

pytestmark = pytest.mark.yarn

EVALUATOR = {"yarn.role.priority": "4", "yarn.component.instances": "1", "yarn.memory": "256",
             "yarn.vcores": "1"}


def listed(yarn_cluster, *options: str) -> list[str]:
    out = run_tfyarn(yarn_cluster, "list", "--json", *options)
    assert out.returncode == 0, out.stderr
    return [app["id"] for app in json.loads(out.stdout)]


def test_wait_list_and_status_on_a_detached_job(yarn_cluster, tmp_path: Path) -> None:
    """A detached job: arguments after -- reach its script, list filters it by state and
    name, status --json times it, and `wait` gets its outcome as the exit code."""
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "20"], settings={"app.name": "tfyarn-habits-ok"})
    app_id = submit_detached(yarn_cluster, resources, app_config, "--", "--extra", "x y")

    running = run_tfyarn(yarn_cluster, "status", app_id, "--json", "--exit-code")
    assert running.returncode == exitcodes.JOB_RUNNING, running.stderr
    application = json.loads(running.stdout)["application"]
    assert application["finish_time"] is None
    assert datetime.fromisoformat(application["start_time"]).utcoffset() is not None
    assert app_id in listed(yarn_cluster, "--state", "accepted", "--state", "RUNNING",
                            "--name", "tfyarn-habits-*")
    assert app_id not in listed(yarn_cluster, "--state", "FINISHED", "--name", "tfyarn-habits-*")
    assert app_id not in listed(yarn_cluster, "--all", "--name", "other-name")
    assert app_id not in listed(yarn_cluster, "--all", "--queue", "small")

    waited = run_tfyarn(yarn_cluster, "wait", app_id, timeout_s=240)
    assert waited.returncode == exitcodes.OK, waited.stdout + waited.stderr
    assert f"Following {app_id} (tfyarn-habits-ok)" in waited.stdout
    assert waited.stdout.splitlines()[-1].startswith(f"{app_id} SUCCEEDED"), waited.stdout

    # The script got the files' args, then those after --, in every task.
    records = [read_json(path) for path in JobFiles(yarn_cluster.layout, app_id)
               .glob("light/*.json")]
    assert len(records) == 4 and all(r["argv"][-4:] == ["--sleep", "20", "--extra", "x y"]
                                     for r in records), [r["argv"] for r in records]

    ended = json.loads(run_tfyarn(yarn_cluster, "status", app_id, "--json").stdout)
    start = datetime.fromisoformat(ended["application"]["start_time"])
    finish = datetime.fromisoformat(ended["application"]["finish_time"])
    assert start.utcoffset() is not None and 15 < (finish - start).total_seconds() < 240
    assert run_tfyarn(yarn_cluster, "status", app_id, "--exit-code").returncode == 0
    assert app_id in listed(yarn_cluster, "--state", "FINISHED", "--name", "tfyarn-habits-ok")
    assert app_id not in listed(yarn_cluster, "--state", "FAILED", "--state", "KILLED")


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
