"""Flex (appmaster/model/jobflex.py): a role's count changed while the job runs, as a new
generation from the newest checkpoint; refused where the role cannot change."""

from __future__ import annotations

import pytest
from test_job import Cluster, plan

from appmaster.common.vocabulary import JobState, TaskState
from appmaster.model.jobactions import FlexAnswer
from appmaster.model.jobflex import flex_refusal
from tfyarn.errors import TfyarnError
from tfyarn.watch.flexing import parse


def answer(cluster: Cluster, role: str, count: int) -> FlexAnswer:
    actions = cluster.apply(cluster.job.on_flex("r1", role, count, cluster.now))
    last = actions[-1]
    assert isinstance(last, FlexAnswer) and last.request == "r1"
    return last


def test_workers_two_to_three_to_two_each_a_generation() -> None:
    cluster = Cluster(plan(workers=2))
    cluster.everyone_running()
    first = {key: task.container for key, task in cluster.job.tasks.items()}
    said = answer(cluster, "worker", 3)
    assert said.accepted and said.text == (
        "worker flexed from 2 to 3: cluster restarted as generation 1")
    assert sorted(cluster.killed) == sorted(first.values())  # the old cluster stopped
    assert cluster.job.plan.role("worker").instances == 3
    assert cluster.job.state == JobState.RESTARTING
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING and cluster.specs[-1].generation == 1
    assert len(cluster.specs[-1].spec.to_dict()["worker"]) == 3
    assert answer(cluster, "worker", 2).accepted
    assert ("worker", 2) not in cluster.job.tasks and cluster.job.index.count(
        TaskState.REQUESTED) == 4  # ps, chief, two workers asked for again
    cluster.everyone_running()
    assert len(cluster.specs[-1].spec.to_dict()["worker"]) == 2
    assert cluster.job.generation == 2 and len(cluster.job.restarts) == 2
    assert cluster.job.failures == {}  # a flex is no failure


def test_refused_where_the_role_cannot_change() -> None:
    job = plan(workers=2)
    running = JobState.RUNNING
    assert "exactly 1" in (flex_refusal(job, running, "chiefworker", 2) or "")
    assert "beside the TensorFlow cluster" in (flex_refusal(job, running, "evaluator", 1) or "")
    assert "at least 1 worker" in (flex_refusal(job, running, "worker", 0) or "")
    assert "worker 0 is the chief" in (
        flex_refusal(plan(chief=0), running, "worker", 0) or "")
    assert "started without ps" in (flex_refusal(plan(ps=0), running, "ps", 2) or "")
    assert "already has 2" in (flex_refusal(job, running, "worker", 2) or "")
    assert "once every task runs" in (
        flex_refusal(job, JobState.RESTARTING, "worker", 3) or "")
    assert flex_refusal(job, running, "ps", 2) is None


def test_a_refusal_changes_nothing() -> None:
    cluster = Cluster(plan(workers=2))
    cluster.everyone_running()
    said = answer(cluster, "chiefworker", 2)
    assert not said.accepted and cluster.killed == [] and cluster.job.generation == 0


def test_the_command_line_takes_role_equals_count() -> None:
    assert (parse(" worker=3").role, parse("ps=2").count) == ("worker", 2)
    for wrong in ("worker", "worker=-1", "worker=three", "=3"):
        with pytest.raises(TfyarnError, match="is not ROLE=N"):
            parse(wrong)
