"""The evaluator and live training progress on the local YARN.

An ``evaluator`` component runs the seed script with ``--job_name=evaluator`` beside the
TensorFlow cluster: tfyarn brings each checkpoint the chief mirrors to HDFS into its local
work dir, sends its summaries to HDFS, and lets it evaluate the last checkpoint before the
job ends. `tfyarn status --json` shows the global step while training runs and the final
figures (training's and the evaluation's) after the end.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from jobtools import (
    ONE_WORKER,
    prepare_job,
    prepare_light_job,
    run_tfyarn,
    status_json,
    submit_and_wait,
    task_processes,
)

pytestmark = pytest.mark.yarn

EVALUATOR = {"yarn.role.priority": "4", "yarn.component.instances": "1",
             "yarn.memory": "1024", "yarn.vcores": "1"}
TRAIN_STEPS = 300  # the seed script's default last step


def status_view(yarn_cluster, app_id: str) -> dict:
    return status_json(yarn_cluster, app_id)["job"] or {}


def test_the_evaluator_evaluates_the_last_checkpoint(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_job(tmp_path, components={"evaluator": EVALUATOR,
                                                              **ONE_WORKER})
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config)
    print(run.output)
    assert run.returncode == 0 and f"{run.app_id} SUCCEEDED" in run.output, run.output
    assert "The evaluator evaluated the last checkpoint." in run.output

    evaluations = run.files.remote_json("eval/evaluations.json")
    assert evaluations, "the evaluator's summaries did not reach the job's work dir on HDFS"
    assert evaluations[-1]["step"] >= TRAIN_STEPS, evaluations  # the final checkpoint
    assert any(name.startswith("eval/events.out.tfevents") for name in run.files.remote_names())

    view = status_view(yarn_cluster, run.app_id)  # the final figures, after the end
    tasks = {(t["role"], t["index"]): t for t in view["tasks"]}
    assert tasks[("evaluator", 0)]["state"] == "finished", tasks[("evaluator", 0)]
    assert tasks[("evaluator", 0)]["address"] is None  # not in the TensorFlow cluster
    assert "evaluator" not in view["cluster_spec"], view["cluster_spec"]
    progress = view["progress"]
    assert progress["step"] >= TRAIN_STEPS - 20 and progress["steps_per_s"] > 0, progress
    evaluation = progress["evaluation"]
    assert evaluation["step"] == evaluations[-1]["step"], (evaluation, evaluations)
    assert evaluation["scalars"]["eval/accuracy"] == pytest.approx(
        evaluations[-1]["accuracy"], abs=1e-6)
    text = run_tfyarn(yarn_cluster, "status", run.app_id).stdout
    assert f"Last evaluation (checkpoint step {evaluation['step']}): eval/accuracy" in text, text


def test_killing_the_evaluator_does_not_fail_the_job(yarn_cluster, tmp_path: Path) -> None:
    """Its failure policy is the default (threshold 0): it is dropped and training goes on.
    Meanwhile `tfyarn status` shows the global step moving. The AppMaster's rule, whatever
    the script: light_task.py's chief writes summaries (its global step) every second for
    40 s (the kill must come before the end: after it, the evaluator's failure is the last
    checkpoint's, a different rule)."""
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "40", "--summaries"],
        components={"evaluator": {**EVALUATOR, "yarn.memory": "256"}, **ONE_WORKER})
    detach = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources),
                        "--app-config", str(app_config), "--detach", "--json", timeout_s=180)
    assert detach.returncode == 0, detach.stdout + detach.stderr
    app_id = json.loads(detach.stdout.splitlines()[-1])["application_id"]
    try:
        watch_and_kill_the_evaluator(yarn_cluster, app_id)
    finally:
        run_tfyarn(yarn_cluster, "kill", app_id)  # "already ended" when it went well


def watch_and_kill_the_evaluator(yarn_cluster, app_id: str) -> None:
    steps = []
    deadline = time.monotonic() + 300
    while len(set(steps)) < 2 and time.monotonic() < deadline:  # the step, while it runs
        step = (status_view(yarn_cluster, app_id).get("progress") or {}).get("step")
        if step is not None:
            steps.append(step)
        time.sleep(2)
    assert len(set(steps)) >= 2 and steps == sorted(steps), steps

    scripts = []
    while not scripts and time.monotonic() < deadline:
        scripts = [p for p in task_processes(app_id, "--job_name=evaluator")
                   if any(arg.endswith("light_task.py") for arg in p.argv)]
        time.sleep(1)
    assert scripts, "the evaluator's script never ran"
    os.kill(scripts[0].pid, signal.SIGKILL)

    while time.monotonic() < deadline:
        report = json.loads(run_tfyarn(yarn_cluster, "status", app_id, "--json").stdout)
        if report["application"]["state"] in ("FINISHED", "FAILED", "KILLED"):
            break
        time.sleep(2)
    assert report["application"]["final_status"] == "SUCCEEDED", report["application"]
    diagnostics = report["application"]["diagnostics"]
    assert "evaluator 0 dropped after 1 failure(s); training goes on without it" in diagnostics
    tasks = {(t["role"], t["index"]): t for t in report["job"]["tasks"]}
    assert tasks[("evaluator", 0)]["state"] == "failed", tasks[("evaluator", 0)]
    # Training went on after the kill (the last progress the chief reported, past the
    # step seen before it).
    assert report["job"]["progress"]["step"] > steps[-1], (steps, report["job"]["progress"])
