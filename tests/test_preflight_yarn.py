"""Pre-flight on the local YARN: what the cluster cannot run is refused before submitting.

Each refusal is checked as a user meets it: `tfyarn submit` exits non-zero with one message
listing every problem, no Java stack frame, and the RM's application list unchanged. A job
that only has to wait for a busy cluster is submitted and runs.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import wait_for_final_state
from jobtools import (
    REPO,
    JobFiles,
    application_ids,
    gpu_memory_free,
    gpu_partition_busy,
    prepare_job,
    prepare_light_job,
    run_tfyarn,
    submit_and_wait,
    unique_name,
    wait_for,
    yarn_logs,
)
from test_faults_yarn import Job

from appmaster.model.job import REASK_S
from tfyarn.hadoop.driver import SubmitError
from tfyarn.jobconfig import load_job
from tfyarn.localyarn import cluster
from tfyarn.localyarn.siteconf import capacity_scheduler, xml_document
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.launch import submit
from tfyarn.submission.plan import AppSpecExtras, build_plan

pytestmark = pytest.mark.yarn

STACK_FRAME = re.compile(r"^\s*at [\w$.]+\(.*\)\s*$", re.MULTILINE)
SMALL_JOB = {"ps": {"yarn.memory": "256"}, "chiefworker": {"yarn.memory": "256"},
             "worker": {"yarn.memory": "256", "yarn.label.expression": "",
                        "yarn.component.instances": "1"}}


def assert_refused(yarn_cluster, resources: Path, app_config: Path, *options: str) -> str:
    """`tfyarn submit` refused before YARN saw anything; returns what the user read."""
    name = unique_name()
    result = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources),
                        "--app-config", str(app_config), "--detach", "--name", name, *options)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert output.count("Error: nothing was submitted") == 1, output
    assert not STACK_FRAME.search(output), output
    assert "Exception" not in output, output
    assert not application_ids(yarn_cluster, name), "an application was submitted"
    return output


@pytest.mark.parametrize(("components", "options", "expected"), [
    ({"worker": {"yarn.label.expression": "tpu"}}, (),
     ['components.worker."yarn.label.expression" = "tpu": no node label "tpu"',
      'the cluster has "gpu" (']),
    ({"worker": {"yarn.memory": "20000"}}, (),
     ['components.worker."yarn.memory" = 20000', "maximum allocation per container, 8192 "
      "(yarn.scheduler.maximum-allocation-mb). Fix: at most 8192"]),
    ({}, ("--queue", "nosuchqueue"),
     ['command line: --queue = "nosuchqueue": no such queue in the cluster. Fix: use one of '
      "its running leaf queues: root.default, root.fair, root.fifo, root.small, root.urgent."]),
    ({"worker": {"yarn.gpus": "3"}}, (),
     ['components.worker."yarn.gpus" = 3', "Fix: at most 2"]),
], ids=["unknown-label", "memory-above-maximum", "unknown-queue", "gpus-no-node-has"])
def test_refused_before_submitting(yarn_cluster, tmp_path: Path, components: dict,
                                   options: tuple[str, ...], expected: list[str]) -> None:
    resources, app_config = prepare_job(tmp_path, components=components)
    output = assert_refused(yarn_cluster, resources, app_config, *options)
    for text in expected:
        assert text in output, output


def small_queue_memory(yarn_cluster) -> int:
    """The most memory root.small can ever hold (a quarter of the default partition)."""
    queues = cluster.rest(yarn_cluster.layout, "scheduler")["scheduler"]["schedulerInfo"]
    small = next(q for q in queues["queues"]["queue"] if q["queueName"] == "small")
    return small["maxEffectiveCapacity"]["memory"]


def test_a_job_larger_than_its_queue(yarn_cluster, tmp_path: Path) -> None:
    workers = small_queue_memory(yarn_cluster) // 2048 + 1
    resources, app_config = prepare_job(tmp_path, components={"worker": {
        "yarn.label.expression": "", "yarn.memory": "2048",
        "yarn.component.instances": str(workers)}})
    output = assert_refused(yarn_cluster, resources, app_config, "--queue", "small")
    assert re.search(r"components: the whole job needs \d+ MB, \d+ vcore\(s\) in the default "
                     r"partition \(no label\) at once .* queue root\.small can never hold more "
                     rf"than {small_queue_memory(yarn_cluster)} MB, .*\(maximum capacity 25% "
                     r".*wait forever\. Fix: ", output), output


def test_every_problem_in_one_message(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_job(tmp_path, components={
        "worker": {"yarn.label.expression": "tpu"}, "ps": {"yarn.memory": "20000"}})
    output = assert_refused(yarn_cluster, resources, app_config, "--queue", "nosuchqueue")
    problems = [line for line in output.splitlines() if "Fix: " in line]
    assert len(problems) == 3, output
    assert "no such queue" in problems[0]
    assert 'no node label "tpu"' in problems[1]
    assert 'components.ps."yarn.memory" = 20000' in problems[2]


def test_a_key_written_twice(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_job(tmp_path)
    text = resources.read_text()
    worker = json.loads(text)["components"]["worker"]
    doubled = text.replace('"components": {', '"components": {\n    "worker": '
                           + json.dumps(worker) + ",", 1)
    resources.write_text(doubled)
    output = assert_refused(yarn_cluster, resources, app_config)
    assert re.search(r'resources\.json: components\.worker: written twice, at line 6, column 5 '
                     r"and at line \d+, column 5; only the last would count\. Fix: ", output), (
        output)


@contextmanager
def queue_state(yarn_cluster, queue: str, state: str) -> Iterator[None]:
    """The local cluster's queue in ``state`` (yarn rmadmin -refreshQueues), then as before."""
    path = yarn_cluster.layout.conf_dir / "capacity-scheduler.xml"
    original = path.read_text()

    def refresh() -> None:
        subprocess.run(["yarn", "rmadmin", "-refreshQueues"], env=yarn_cluster.env,
                       check=True, capture_output=True, timeout=120)

    path.write_text(xml_document({**capacity_scheduler(),
                                  f"yarn.scheduler.capacity.root.{queue}.state": state}))
    refresh()
    try:
        yield
    finally:
        path.write_text(original)
        refresh()


def test_a_stopped_queue(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_job(tmp_path, components=SMALL_JOB)
    with queue_state(yarn_cluster, "small", "STOPPED"):
        output = assert_refused(yarn_cluster, resources, app_config, "--queue", "small")
    assert ('command line: --queue = "small": queue root.small is STOPPED and takes no new '
            "applications. Fix: use a running queue (root.default, root.fair, root.fifo, "
            "root.urgent)") in output, output


def test_what_yarn_refuses_later_reads_plainly(yarn_cluster, skein_client,
                                                tmp_path: Path) -> None:
    """Past pre-flight (the cluster changed since): YARN's own refusal, once, no frames."""
    resources, app_config = prepare_job(tmp_path, components=SMALL_JOB)
    job = load_job(resources, app_config,
                   overrides=SubmitOptions(queue="nosuchqueue").overrides())
    before = application_ids(yarn_cluster)
    with pytest.raises(SubmitError) as refused:
        submit(skein_client, job, build_plan(job), AppSpecExtras())
    message = str(refused.value)
    assert message.startswith("YARN refused the application: Application application_"), message
    assert message.endswith("to unknown queue: nosuchqueue"), message
    assert message.count("submitted by user") == 1 and not STACK_FRAME.search(message)
    assert len(application_ids(yarn_cluster)) <= len(before) + 1  # YARN records the refusal


ASKING_AGAIN = re.compile(r"worker \d+: no container after \d+ s; asking YARN again")
WAITING_TURN = re.compile(r"\d+ task\(s\) wait their turn: the ResourceManager holds their asks")


def test_a_busy_cluster_only_delays_the_job(yarn_cluster, skein_client, tmp_path: Path) -> None:
    """The gpu node is nearly full for a while: the job is submitted, waits, and runs. The
    wait outlasts REASK_S, but the ResourceManager says it holds every ask the AppMaster made:
    none was lost, so none is made again (it would give up its place), and those asks are
    the ones YARN meets once the blocker is gone."""
    submitting = ThreadPoolExecutor(1)
    try:
        # The blocker ends as soon as the AppMaster found its asks held past REASK_S (a
        # fixed time would have to outlast REASK_S after a submit whose length varies).
        with gpu_partition_busy(yarn_cluster, skein_client, seconds=300) as blocker:
            # More 256 MB workers than fit in what is left, fewer than fit in an idle partition.
            workers = gpu_memory_free(yarn_cluster) // 256 + 1
            resources, app_config = prepare_light_job(tmp_path, ["--sleep", "1"], components={
                "worker": {"yarn.component.instances": str(workers)}})
            before = application_ids(yarn_cluster)
            waiting = submitting.submit(submit_and_wait, yarn_cluster, tmp_path, resources,
                                        app_config)
            app_id = wait_for("the job's application", lambda: next(
                iter(application_ids(yarn_cluster) - before), None), 180)
            job = Job(yarn_cluster, app_id, JobFiles(yarn_cluster.layout, app_id), 0.0)
            wait_for("the AppMaster finding its asks held by YARN",
                     lambda: WAITING_TURN.search(job.driver_log()), REASK_S + 120)
            assert not waiting.done(), waiting.result().output  # still waiting: not run yet
            skein_client.kill_application(blocker)
            run = waiting.result()
    finally:
        submitting.shutdown()  # after the blocker is gone, whatever happened
    assert run.returncode == 0 and run.app_id == app_id, run.output
    assert 'Note: the cluster is busy: label "gpu" has' in run.output, run.output
    assert run.output.index("Note: the cluster is busy") < run.output.index("Submitted ")
    assert f"{run.app_id} SUCCEEDED" in run.output
    wait_for_final_state(skein_client, blocker)
    logs = yarn_logs(yarn_cluster, run.app_id, {"application.driver.log"})  # master.py's
    master_log = next(c.files["application.driver.log"] for c in logs.values()
                      if "application.driver.log" in c.files)
    assert WAITING_TURN.search(master_log) and not ASKING_AGAIN.search(master_log), \
        master_log[-3000:]


def test_dry_run_shows_the_check(yarn_cluster, tmp_path: Path) -> None:
    result = run_tfyarn(yarn_cluster, "submit", "--dry-run", "--json", "--resources",
                        str(REPO / "resources.json"), "--app-config",
                        str(REPO / "appConfig.json"))
    assert result.returncode == 0, result.stderr
    preflight = json.loads(result.stdout)["preflight"]
    assert preflight["checked"] and preflight["problems"] == []
    assert preflight["resourcemanager"] == yarn_cluster.layout.webapp_url
