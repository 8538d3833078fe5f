"""PyTorch, JAX and Keras 3 jobs on the local YARN (site.global.framework), each shipping an
env with its framework from a client in that env, as its users would.

The env: a venv of this client's own interpreter with tfyarn (editable), jax[cpu] and Keras
3, built once per machine (kept while its packages are the same) and shipped in layers:
the distributions it shares with the suite's env (numpy, keras, hdfs-native...) are the
same layers, already on the cluster; jax and jaxlib are new. PyPI's torch brings its CUDA
wheels (GBs): with TFYARN_TORCH=1 the same env gets torch too, and the PyTorch tests run;
docs/benchmarks.md has what that costs.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_faults_yarn
from barenodes import make_venv, pins
from jobtools import EXAMPLES, REPO, prepare_job, submit_and_wait, task_processes
from test_faults_yarn import Job, assert_succeeded, restarts_of, wait_until

from tfyarn.localyarn.layout import GPU_LABEL

pytestmark = pytest.mark.yarn

TORCH = os.environ.get("TFYARN_TORCH") == "1"
PACKAGES = ["jax[cpu]==0.10.2", "keras==3.15.1", *(["torch==2.15.0"] if TORCH else [])]
ENV_TIMEOUT_S = 1800 if TORCH else 600  # torch's wheels: GBs


@pytest.fixture(scope="session")
def framework_client() -> tuple[str, ...]:
    """`tfyarn` run by a venv with the frameworks: what its jobs ship."""
    packages = [*pins(), *PACKAGES, "-e", str(REPO)]
    key = hashlib.sha256("\n".join(packages).encode()).hexdigest()[:12]
    root = Path.home() / ".cache" / "tfyarn-tests" / f"frameworks-{key}"
    started = time.monotonic()
    python = make_venv(root, packages, timeout_s=ENV_TIMEOUT_S, base=sys._base_executable)
    print(f"\nframework env {root}: ready in {time.monotonic() - started:.1f} s")
    return (str(python), "-m", "tfyarn.cli.main")


def example_job(tmp_path: Path, example: str, args: list[str], **options) -> tuple[Path, Path]:
    files = EXAMPLES / example
    return prepare_job(tmp_path, args=args, resources=files / "resources.json",
                       app_config=files / "appConfig.json", **options)


def test_keras_on_jax_two_processes_see_each_other(yarn_cluster, tmp_path: Path,
                                                   framework_client: tuple[str, ...]) -> None:
    """examples/keras_jax.py as Keras's guide writes it: keras.distribution.initialize()
    with no arguments, DataParallel over both processes' devices; SUCCEEDED."""
    run = submit_and_wait(yarn_cluster, tmp_path,
                          *example_job(tmp_path, "keras_jax", ["--epochs", "2"]),
                          client=framework_client)
    print(run.output)
    assert run.returncode == 0 and f"{run.app_id} SUCCEEDED" in run.output, run.output
    result = run.files.remote_json("result.json")
    # each process has one CPU device: two in all means each sees the other's
    assert (result["processes"], result["devices"], result["epochs"]) == (2, 2, 2), result
    print(f"[{run.app_id}] submit -> SUCCEEDED in {run.seconds:.1f} s")


@pytest.fixture
def submit_framework(yarn_cluster, skein_client,
                     framework_client: tuple[str, ...]) -> Iterator[Callable[..., Job]]:
    with test_faults_yarn.submitting(yarn_cluster, skein_client, framework_client) as submit:
        yield submit


def rank_of(pid: int) -> int | None:
    """A running rank's RANK, from its environment."""
    try:
        variables = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((int(v[5:]) for v in variables if v.startswith(b"RANK=")), None)


@pytest.mark.skipif(not TORCH, reason="PyTorch's env is GBs: TFYARN_TORCH=1 runs it")
def test_pytorch_ddp_three_ranks_killed_rank_restarts_the_group(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/pytorch_ddp.py, unmodified torchrun script, 3 ranks with gloo: kill -9 rank
    1 once rank 0's snapshot is on HDFS; the whole group restarts as generation 1
    (TORCHELASTIC_RESTART_COUNT 1), every rank loads the snapshot restored from HDFS, and
    the job SUCCEEDS."""
    # The ranks on the gpu partition's one node: the local cluster's nodes share one disk,
    # and each node that runs a rank holds the whole 5.7 GB env.
    job = submit_framework(*example_job(
        tmp_path, "pytorch_ddp", ["--epochs", "12", "--step_sleep", "0.1"],
        settings={"checkpoint.mirror.interval": "2"},
        components={"worker": {"yarn.label.expression": GPU_LABEL}}))
    wait_until("rank 0's snapshot on HDFS", lambda: "snapshot.pt" in job.files.remote_names(),
               300, poll_s=0.5, fail_fast=job.ended_early)
    rank_1 = wait_until("rank 1's process", lambda: [
        p for p in task_processes(job.app_id, "pytorch_ddp.py") if rank_of(p.pid) == 1], 30)
    os.kill(rank_1[0].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    app = job.final()
    print(f"[{job.app_id}] rank 1 killed -> ended {time.monotonic() - killed_at:.1f} s later")
    assert_succeeded(job, app)
    (restart,) = restarts_of(app["diagnostics"])
    assert "cluster restarted as generation 1" in restart, restart
    result = job.result()
    assert result["world_size"] == 3 and result["restart_count"] == 1, result
    assert 0 < result["first_epoch"] < result["epochs"], result  # resumed from the snapshot
    job.assert_no_process_left()
