"""Keras `model.fit` on the local YARN: examples/keras_ps.py (ParameterServerStrategy) and
examples/keras_mwms.py (MultiWorkerMirroredStrategy).

Both need tf-keras (Keras 2): on TensorFlow 2.21 Keras 3's `fit` runs with neither strategy.
scripts/setup.sh installs tf-keras with --no-deps beside tensorflow-cpu in .venv, the Python
the local cluster's containers run. An env without it is checked too: the script fails at
its start, naming the fix, and `tfyarn status` passes that on.

Checkpoints: keras_ps saves the weights with `ModelCheckpoint` into `checkpoints/` (one per
epoch), keras_mwms its training state with `BackupAndRestore` into `backup/chief/`; tfyarn
mirrors the chief's local dir to HDFS and restores it into restarted tasks.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_faults_yarn
from barenodes import venv_without
from jobtools import EXAMPLES, prepare_job, status_json, submit_and_wait
from test_faults_yarn import (
    Job,
    assert_restored_from_hdfs,
    assert_succeeded,
    final_tasks,
    latest_checkpoint,
    restarts_of,
    wait_until,
)
from test_frameworks_yarn import STALL_SETTINGS, assert_stall_recovered

from tfyarn.localyarn.layout import GPU_LABEL

pytestmark = pytest.mark.yarn
# The fixture: submits detached; afterwards kills what still runs and checks no process is left.
submit = test_faults_yarn.submit

TRAIN_STEPS, SAVE_EVERY = 200, 50  # four epochs, a checkpoint after each
ARGS = ["--train_steps", str(TRAIN_STEPS), "--save_every", str(SAVE_EVERY)]
# Long enough to kill a task after a checkpoint and still train past it: 50 ms a step, the
# chief's dir mirrored to HDFS every 2 s (MIRROR): a kill made once two checkpoints reached
# HDFS (step 100, seen by step 150 or so) lands 250 steps (over 12 s) before the end.
LONG_STEPS = 400
LONG_ARGS = ["--train_steps", str(LONG_STEPS), "--save_every", str(SAVE_EVERY),
             "--step_sleep", "0.05"]
MIRROR = {"checkpoint.mirror.interval": "2"}
CHECKPOINT_STATE = {"keras_ps": "checkpoints", "keras_mwms": "backup/chief"}
CHECKPOINT_TIMEOUT_S = 240  # submit -> the second checkpoint on HDFS (busy 2-core machine)


def keras_job(tmp_path: Path, example: str, args: list[str], **options) -> tuple[Path, Path]:
    files = EXAMPLES / example
    return prepare_job(tmp_path, args=args, resources=files / "resources.json",
                       app_config=files / "appConfig.json", **options)


def hdfs_checkpoint(job: Job, example: str) -> int | None:
    """The number of the newest checkpoint on HDFS (an epoch's end, or BackupAndRestore's
    save count: both one per epoch)."""
    latest = latest_checkpoint(job.files.remote_text(f"{CHECKPOINT_STATE[example]}/checkpoint"))
    return latest[1] if latest else None


@pytest.mark.parametrize("example", ["keras_ps", "keras_mwms"])
def test_keras_example_succeeds(yarn_cluster, tmp_path: Path, example: str) -> None:
    """The example's own job files: fit to the last step, a checkpoint per epoch on HDFS,
    TensorBoard's event files there too, and `tfyarn status` shows their global step."""
    run = submit_and_wait(yarn_cluster, tmp_path, *keras_job(tmp_path, example, ARGS))
    print(run.output)
    assert run.returncode == 0 and f"{run.app_id} SUCCEEDED" in run.output, run.output
    result = run.files.remote_json("result.json")
    assert result["global_step"] == TRAIN_STEPS and result["first_global_step"] == 0, result
    assert result["loss"] < 2.0, result  # it learned: chance over 10 classes is ln 10 = 2.3
    state = run.files.remote_text(f"{CHECKPOINT_STATE[example]}/checkpoint")
    assert latest_checkpoint(state)[1] == TRAIN_STEPS // SAVE_EVERY, state
    assert any(name.startswith("tensorboard/train/events.out.tfevents")
               for name in run.files.remote_names()), run.files.remote_names()
    progress = status_json(yarn_cluster, run.app_id)["job"]["progress"]
    assert progress["step"] == TRAIN_STEPS, progress
    assert "tensorboard/train/epoch_loss" in progress["scalars"], progress


# About 65 s, on demand (TFYARN_LONG=1): a killed worker replaced is proven in every run by
# test_faults_yarn.py's test_killed_worker_is_replaced, Keras `fit` under
# ParameterServerStrategy by test_keras_example_succeeds[keras_ps].
@pytest.mark.skipif(not os.environ.get("TFYARN_LONG"),
                    reason="keras_ps through a worker kill: TFYARN_LONG=1 runs it")
def test_keras_ps_goes_on_after_a_worker_kill(
        yarn_cluster, submit, tmp_path: Path) -> None:
    """ParameterServerStrategy keeps no state on the workers: kill -9 worker 0 and tfyarn
    replaces it (on its old host:port when it can), while the chief's ClusterCoordinator
    holds the steps it lost until a worker serves again; `fit` goes on in the same process,
    without a restart. (Had the replacement come back at another address, the cluster would
    restart from the checkpoint on HDFS, as after a ps kill below.)"""
    job = submit(*keras_job(tmp_path, "keras_ps", LONG_ARGS, settings=MIRROR, components={
        "worker": {"yarn.container.failure.threshold": "1"}}))
    wait_for_hdfs_checkpoint(job, "keras_ps", 2)
    job.kill9(job.task("worker", 1))  # TF's worker 0 gets the legacy flags of worker 1

    app = job.final()
    assert_succeeded(job, app)
    restarts = restarts_of(app["diagnostics"])
    assert restarts[0].startswith("worker 0 replaced"), restarts
    result = job.result()
    if len(restarts) == 1:  # back on its old host:port: fit went on in the same chief
        assert result["first_global_step"] == 0, result
    else:  # YARN put the replacement on another host: the documented restart from HDFS
        assert len(restarts) == 2 and restarts[1].startswith("worker 0 came back at ") and (
            ", cluster restarted as generation 1, restored " in restarts[1]), restarts
        assert result["first_global_step"] > 0, result  # resumed, not from scratch
    # Steps the dead worker had begun run again elsewhere: the global step may end past the
    # last (measured: 601 of 600 steps), as ParameterServerStrategy runs a step at least once.
    assert result["global_step"] >= LONG_STEPS, result
    job.assert_no_process_left()


# keras_ps's variant (about 50 s) runs on demand (TFYARN_LONG=1): what it goes through is
# proven in every run by others. A killed ps restarting the cluster from the checkpoint on
# HDFS: test_faults_yarn.py's test_killed_ps_or_chief_restarts_from_checkpoint[ps]; a
# ParameterServerStrategy example resuming from HDFS after a restart:
# test_tf2_example_resumes_from_hdfs_after_its_chief_is_killed[tf2_ps]; Keras `fit` resuming
# from the state tfyarn restored: keras_mwms's variant here.
@pytest.mark.long
@pytest.mark.parametrize("example, victim", [
    pytest.param("keras_ps", ("ps", 0), marks=pytest.mark.skipif(
        not os.environ.get("TFYARN_LONG"), reason="keras_ps's variant: TFYARN_LONG=1 runs it")),
    ("keras_mwms", ("worker", 1)),
], ids=["keras_ps-kill-ps", "keras_mwms-kill-worker"])
def test_keras_example_resumes_from_hdfs(
        yarn_cluster, submit, tmp_path: Path, example: str, victim: tuple[str, int]) -> None:
    """kill -9 a task whose loss the survivors cannot train through: the cluster restarts as
    a new generation and `fit` resumes from the checkpoint tfyarn restored from HDFS.

    ParameterServerStrategy: the ps holds the variables, so its failure restarts every task;
    the chief loads the newest `ModelCheckpoint` and passes its epoch as `initial_epoch`.
    MultiWorkerMirroredStrategy: a worker failure breaks the all-reduce: the chief's
    collective fails, and the chief's failure restarts the cluster; every task finds the
    chief's `BackupAndRestore` state in its fresh local work dir and goes on from its epoch.
    """
    job = submit(*keras_job(tmp_path, example, LONG_ARGS, components={
        role: {"yarn.container.failure.threshold": "1"}
        for role in ("ps", "chiefworker", "worker")}, settings=MIRROR))
    saved = wait_for_hdfs_checkpoint(job, example, 2)
    killed_at = job.kill9(job.task(*victim))

    app = job.final()
    print(f"[{job.app_id}] {victim} killed at HDFS checkpoint {saved} -> the job ended "
          f"{time.monotonic() - killed_at:.1f} s later; restarts: {app.get('diagnostics')}")
    assert_succeeded(job, app)
    restarts = restarts_of(app["diagnostics"])
    assert any("cluster restarted as generation 1" in r for r in restarts), restarts
    result = job.result()
    assert result["first_global_step"] >= saved * SAVE_EVERY > 0, (saved, result)
    assert result["global_step"] >= LONG_STEPS, result
    assert_restored_from_hdfs(job, "chiefworker-0.stdout", saved, CHECKPOINT_STATE[example])
    job.assert_no_process_left()


# The stall watchdog's proof is test_frameworks_yarn.py's Keras-on-JAX stall, in every run;
# this is its variant on TensorFlow's collectives (which have no timeout of their own).
@pytest.mark.skipif(not os.environ.get("TFYARN_LONG"),
                    reason="the stall watchdog on MultiWorkerMirrored: TFYARN_LONG=1 runs it")
def test_keras_mwms_a_stalled_worker_is_found_its_stacks_logged_and_the_group_restarts(
        yarn_cluster, submit, tmp_path: Path) -> None:
    """examples/keras_mwms.py, a chief and two workers reporting their steps: worker 1 sleeps
    after step 130 in generation 0, the others wait for it in the next all-reduce. The
    watchdog names worker 1, every task writes its stacks, the cluster restarts from the
    chief's `BackupAndRestore` state on HDFS and the job SUCCEEDS."""
    job = submit(*keras_job(
        tmp_path, "keras_mwms", [*LONG_ARGS, "--stall_at", "130", "--stall_task", "worker:1"],
        components={"chiefworker": {"yarn.container.failure.threshold": "1"},
                    "worker": {"yarn.component.instances": "2",
                               "yarn.container.failure.threshold": "1"}},
        settings={**MIRROR, **STALL_SETTINGS}))
    assert_stall_recovered(yarn_cluster, job, 130, "on_train_batch_end", ranks=frozenset(
        {("chiefworker", 0), ("worker", 0), ("worker", 1)}))
    result = job.result()
    assert result["first_global_step"] >= SAVE_EVERY and result["global_step"] >= LONG_STEPS, (
        result)  # resumed from a backup, trained to the end


def wait_for_hdfs_checkpoint(job: Job, example: str, at_least: int) -> int:
    return wait_until(f"checkpoint {at_least} of {example} on HDFS",
                      lambda: (n := hdfs_checkpoint(job, example)) and n >= at_least and n,
                      CHECKPOINT_TIMEOUT_S, poll_s=0.5, fail_fast=job.ended_early)


@pytest.fixture(scope="module")
def python_without_tf_keras(yarn_cluster) -> Iterator[Path]:
    """A Python installed on every node (the "every node has this interpreter" mode), with
    everything of .venv but tf-keras."""
    python = venv_without(yarn_cluster.layout, "python-no-tf-keras", ("tf_keras",))
    yield python
    shutil.rmtree(python.parent.parent, ignore_errors=True)


def test_keras_example_without_tf_keras_names_the_fix(yarn_cluster, tmp_path: Path,
                                                      python_without_tf_keras: Path) -> None:
    """The example refuses to start before importing TensorFlow; the job fails with its
    message in YARN's diagnostics."""
    resources, app_config = keras_job(tmp_path, "keras_mwms", ARGS,
                                      settings={"python": str(python_without_tf_keras)})
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config)
    assert run.returncode != 0, run.output
    diagnostics = status_json(yarn_cluster, run.app_id)["application"]["diagnostics"]
    assert "this example needs tf-keras (Keras 2)" in diagnostics, diagnostics
    assert "pip install --no-deps 'tf-keras==2.21.*'" in diagnostics, diagnostics


# A heavy proof of a failure path (three TensorFlow tasks; 225 s on a loaded 2-core machine):
# on demand (TFYARN_LONG=1). tests/test_splitsave.py checks the fix's text on every run.
@pytest.mark.skipif(not os.environ.get("TFYARN_LONG"),
                    reason="the PS tutorial's checkpoint on separate hosts: TFYARN_LONG=1 runs it")
def test_a_checkpoint_saved_on_the_ps_host_is_reported(yarn_cluster, submit,
                                                       tmp_path: Path) -> None:
    """TensorFlow's parameter-server tutorial saves with `ModelCheckpoint` and no
    `CheckpointOptions`: each ps writes its variables at the chief's path, but on its own
    host. With the ps on another host than the chief (its own partition), that path's
    directory is not there: the ps's save fails, the chief with it, and the job's
    diagnostics say why and what to write instead (appmaster/agent/splitsave.py)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("example_support.py", "keras_support.py"):
        shutil.copy(EXAMPLES / name, scripts / name)
    example = (EXAMPLES / "keras_ps.py").read_text()
    tutorial = example.replace("save_weights_only=True,\n                options=on_chief)",
                               "save_weights_only=True)")
    assert tutorial != example, "keras_ps.py's ModelCheckpoint changed: update this test"
    (scripts / "keras_ps.py").write_text(tutorial)
    job = submit(*keras_job(tmp_path, "keras_ps", ARGS, scripts_dir=scripts,
                            components={"ps": {"yarn.label.expression": GPU_LABEL}}))
    app = job.final()
    print(f"[{job.app_id}] {app['state']}/{app['finalStatus']}: {app.get('diagnostics')}")
    tasks = final_tasks(yarn_cluster, job.app_id)
    ps_host, chief_host = (tasks[(role, 0)]["node"].split(":")[0]
                           for role in ("ps", "chiefworker"))
    assert ps_host != chief_host, (ps_host, chief_host)
    assert app["finalStatus"] == "FAILED", app
    diagnostics = app["diagnostics"]
    assert "chiefworker 0 (attempt 0) failed" in diagnostics, diagnostics
    assert "/work/checkpoints/ckpt-1 was saved from the ps, each on its own host" in diagnostics
    assert "experimental_io_device" in diagnostics, diagnostics
    assert not any(name.startswith("checkpoints/ckpt-") for name in job.files.remote_names())
