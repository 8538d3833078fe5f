"""YARN's verdicts read from what skein hands on (appmaster/model/verdicts.py), and the job's rules
for each (appmaster/model/job.py). The messages are Hadoop's and skein's own words, as seen on
the local cluster (the memory one) or as their sources write them."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from test_job import Cluster, plan, restarts

from appmaster.common.vocabulary import JobState, TaskState
from appmaster.model.job import VERDICT_WAIT_S
from appmaster.model.verdicts import Verdict, judge, killed_by_signal, localization_failure
from appmaster.page.jobpage import render_page
from appmaster.page.view import JobView
from tfyarn.watch.jobview import format_table, verdict_lines

PMEM = "714.2 MB of 256 MB physical memory used"  # skein's rewording of YARN's -104
PREEMPTED = "Container preempted by scheduler"
LOST = "Container released on a *lost* node"
SEE_LOGS = "Container failed during execution, see logs for more information."


@pytest.mark.parametrize(("message", "verdict"), [
    (PMEM, Verdict.MEMORY),
    ("2.1 GB of 2.1 GB virtual memory used", Verdict.MEMORY),
    (PREEMPTED, Verdict.PREEMPTED),
    (LOST, Verdict.LOST),
    ("Container exited with a non-zero exit code 1. 1/1 local-dirs are bad: /data/1;",
     Verdict.LOST),
    ("Container Killed by ResourceManager", Verdict.YARN_KILLED),
    ("Container killed on application-finish event", Verdict.YARN_KILLED),
    (SEE_LOGS, Verdict.FAILED),
    ("", Verdict.FAILED),
])
def test_each_of_yarns_words_is_one_verdict(message: str, verdict: Verdict) -> None:
    assert judge("FAILED", message).verdict == verdict


def test_a_memory_verdict_carries_the_usage_the_limit_and_a_value_that_fits() -> None:
    end = judge("FAILED", PMEM)
    assert (end.used_mb, end.limit_mb, end.memory_kind) == (pytest.approx(714.2), 256,
                                                            "physical")
    assert end.suggested_memory_mb(256) == 1024  # 714 MB with a quarter to spare, in 256s
    assert end.suggested_memory_mb(1024) == 1280  # never the ask itself: a step above it
    assert judge("FAILED", "1.5 GB of 1 GB physical memory used").used_mb == 1536


def test_only_the_tasks_own_failures_lost_hosts_and_stalls_count() -> None:
    assert {v for v in Verdict if v.counted} == {Verdict.FAILED, Verdict.MEMORY, Verdict.LOST,
                                                 Verdict.STALLED}


@pytest.mark.parametrize(("code", "signalled"), [(137, True), (143, True), (-9, True),
                                                 (1, False), (0, False), (None, False),
                                                 (127, False), (75, False)])
def test_killed_by_signal(code: int | None, signalled: bool) -> None:
    assert killed_by_signal(code) is signalled


# ------------------------------------------------------------------ the job's rules


def killed(cluster: Cluster, role: str, index: int, message: str) -> list:
    """YARN kills a task's container: its agent's word (143) comes first, YARN's end after."""
    container = cluster.container(role, index)
    actions = cluster.apply(cluster.job.on_exited(container, 143, cluster.now, ""))
    assert actions == [] and cluster.job.tasks[(role, index)].state == TaskState.KILLED
    cluster.tick(1.0)
    return actions + cluster.yarn_end(container, message=message)


def test_a_preempted_worker_is_replaced_uncounted_with_threshold_zero() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    old = cluster.container("worker", 1)
    killed(cluster, "worker", 1, PREEMPTED)
    task = cluster.job.tasks[("worker", 1)]
    assert cluster.end is None and cluster.job.failures == Counter()
    assert task.container != old and task.state == TaskState.PREEMPTED
    assert task.verdicts == Counter({Verdict.PREEMPTED: 1}) and cluster.job.generation == 0
    assert restarts(cluster) == ["worker 1 preempted by YARN: replaced (attempt 1)"]


def test_yarns_notice_is_noted_and_told_to_the_task_and_the_chief_before_the_kill() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    worker, chief = cluster.container("worker", 1), cluster.container("chiefworker", 0)
    assert cluster.job.on_preempt_notice(worker, cluster.now) == [worker, chief]
    assert cluster.job.on_preempt_notice(chief, cluster.now) == [chief]  # its own: told once
    assert cluster.job.on_preempt_notice("worker_99", cluster.now) == []  # not a task's
    killed(cluster, "worker", 1, PREEMPTED)
    assert restarts(cluster)[0].startswith("worker 1 (attempt 0) told by YARN it will be "
                                           "preempted")
    assert restarts(cluster)[-1] == "worker 1 preempted by YARN: replaced (attempt 1)"
    assert cluster.job.failures == Counter()  # a notice is no failure either


def test_without_a_chiefworker_rank_0_is_told_with_the_preempted_rank() -> None:
    """A group of workers alone (PyTorch's, say): worker 0 is rank 0, which saves."""
    cluster = Cluster(plan(ps=0, chief=0, workers=3, threshold=0, framework="pytorch"))
    cluster.everyone_running()
    rank_0, rank_2 = cluster.container("worker", 0), cluster.container("worker", 2)
    assert cluster.job.on_preempt_notice(rank_2, cluster.now) == [rank_2, rank_0]


def test_a_preempted_ps_restarts_the_cluster_from_the_checkpoint_uncounted() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    killed(cluster, "ps", 0, PREEMPTED)
    assert cluster.end is None and cluster.job.failures == Counter()
    assert cluster.job.generation == 1 and cluster.job.state == JobState.RESTARTING
    assert restarts(cluster) == [
        "ps 0 preempted by YARN: cluster restarted as generation 1"]
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING


def test_a_worker_that_broke_with_a_preempted_chief_is_not_counted() -> None:
    """The chief's SIGTERM breaks a worker's collective at once; the worker's word comes
    first and its 5-s settling ends before YARN says the chief was preempted: the worker
    still waits for that verdict, and falls with the cluster."""
    cluster = Cluster(plan(ps=0, threshold=0))
    cluster.everyone_running()
    chief = cluster.container("chiefworker", 0)
    cluster.apply(cluster.job.on_exited(chief, 143, cluster.now, ""))
    cluster.exit("worker", 0, 1)
    cluster.settle()  # past the worker's settling, within the chief's verdict wait
    assert cluster.end is None and cluster.job.failures == Counter()
    cluster.yarn_end(chief, message=PREEMPTED)
    assert cluster.job.generation == 1 and cluster.job.failures == Counter()
    assert cluster.settle() == [] and cluster.end is None


def test_a_memory_kill_is_a_failure_whose_message_gives_the_fix() -> None:
    cluster = Cluster(plan(threshold=0))  # every role asks for 1024 MB
    cluster.everyone_running()
    killed(cluster, "worker", 1, "1.3 GB of 1 GB physical memory used")
    assert cluster.end is not None and cluster.end.status == JobState.FAILED
    text = cluster.end.diagnostics
    assert "worker 1 (attempt 0) was killed by YARN for memory: its processes used 1331 MB " \
        "of physical memory, over the 1024 MB its container was given" in text
    assert 'Fix: raise "yarn.memory" of component "worker" in resources.json from 1024 to ' \
        "1792 or more" in text
    assert cluster.job.tasks[("worker", 1)].verdicts == Counter({Verdict.MEMORY: 1})


def test_a_memory_kill_within_the_threshold_replaces_the_worker_at_once() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    killed(cluster, "worker", 1, PMEM)
    assert cluster.end is None and cluster.job.failures == Counter(worker=1)
    assert restarts(cluster) == ["worker 1 killed for memory: replaced (attempt 1)"]


def test_a_node_lost_under_a_task_counts_as_a_lost_host() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    cluster.yarn_end(cluster.container("worker", 1), message=LOST)
    assert cluster.job.failures == Counter(worker=1) and "nm1" in cluster.job.lost_nodes
    assert cluster.job.tasks[("worker", 1)].verdicts == Counter({Verdict.LOST: 1})
    assert restarts(cluster) == [  # back elsewhere, at a new address: a new generation
        "worker 1 lost on nm1: cluster restarted as generation 1"]
    assert cluster.job.generation == 1


def test_a_container_killed_by_the_resourcemanager_is_asked_for_again() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    cluster.yarn_end(cluster.container("worker", 0), message="Container Killed by "
                     "ResourceManager")
    assert cluster.end is None and cluster.job.failures == Counter()
    assert cluster.job.tasks[("worker", 0)].verdicts == Counter({Verdict.YARN_KILLED: 1})


def test_a_killed_script_whose_container_end_never_comes_is_its_own_failure() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    container = cluster.container("ps", 0)
    cluster.apply(cluster.job.on_exited(container, 137, cluster.now, "(c on nm1): exited."))
    ps = cluster.job.tasks[("ps", 0)]
    assert (ps.state, ps.due) == (TaskState.KILLED, pytest.approx(cluster.now + VERDICT_WAIT_S))
    cluster.tick(VERDICT_WAIT_S - 1)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []  # still waiting for YARN
    cluster.tick(1)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.job.failures == Counter(ps=1) and cluster.job.generation == 1
    assert cluster.job.tasks[("ps", 0)].verdicts == Counter({Verdict.FAILED: 1})
    # YARN's end, late, changes nothing: the job no longer waits on that container
    assert cluster.yarn_end(container, message=PREEMPTED) == []
    assert cluster.job.failures == Counter(ps=1)


# ------------------------------------------------------------------ shown


def test_counts_by_verdict_reach_the_view_the_page_and_the_status_lines() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    killed(cluster, "worker", 1, PREEMPTED)
    cluster.everyone_running()
    killed(cluster, "worker", 1, PMEM)
    view = JobView.of(cluster.job, "application_1_0001", "hdfs://nn/w", cluster.now)
    row = next(t for t in view.tasks if (t.role, t.index) == ("worker", 1))
    assert row.verdicts == {"memory-killed": 1, "preempted": 1}  # in the order shown
    assert view.verdicts == {"memory-killed": 1, "preempted": 1}
    again = JobView.from_dict(json.loads(json.dumps(view.to_dict())))  # as status reads it
    assert again.verdicts == view.verdicts and again.tasks[3].verdicts == row.verdicts
    page = render_page(view.to_dict())
    # under the task's state, as its heartbeat is: no column widens the table
    assert '<br><small class="ends">memory-killed 1, preempted 1</small></td>' in page
    assert "col-verdicts" not in page
    assert "<dt>verdicts</dt>" in page
    assert "ENDS" in format_table(again) and "memory-killed 1, preempted 1" in format_table(again)
    (line,) = verdict_lines(again)
    assert line == ("Container ends: memory-killed 1, preempted 1 (preempted: YARN took the "
                    "container back; not counted against yarn.container.failure.threshold)")


def test_a_job_without_verdicts_shows_no_column_and_no_line() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    view = JobView.of(cluster.job, "application_1_0001", "hdfs://nn/w", cluster.now)
    assert view.verdicts == {} and verdict_lines(view) == []
    assert "ENDS" not in format_table(view) and 'class="ends"' not in render_page(view.to_dict())


def test_a_killed_workers_settling_counts_from_its_agents_word() -> None:
    """kill -9 of a worker's script: its agent's word (137) starts the 5 s in which a ps's
    or the chief's failure would explain it; YARN's end, 3 s later, does not restart them."""
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    container = cluster.container("worker", 1)
    cluster.apply(cluster.job.on_exited(container, 137, cluster.now, ""))
    cluster.tick(3.0)
    cluster.yarn_end(container, message=SEE_LOGS)
    worker = cluster.job.tasks[("worker", 1)]
    assert (worker.state, worker.due) == (TaskState.FAILING, pytest.approx(cluster.now + 2.0))
    cluster.tick(2.0)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.job.failures == Counter(worker=1)
    assert cluster.job.tasks[("worker", 1)].container != container  # replaced


def test_a_verdict_awaited_on_a_container_the_cluster_restart_ended_is_forgotten() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    worker = cluster.container("worker", 1)
    cluster.apply(cluster.job.on_exited(worker, 143, cluster.now, ""))
    cluster.exit("ps", 0, 1)  # the cluster restarts: worker 1's old container goes too
    assert cluster.job.generation == 1 and worker not in cluster.job.by_container
    cluster.everyone_running()
    new = cluster.container("worker", 1)
    cluster.tick(VERDICT_WAIT_S + 1)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    assert cluster.settle() == [] and cluster.container("worker", 1) == new
    assert cluster.job.failures == Counter(ps=1) and cluster.job.state == JobState.RUNNING


@pytest.mark.parametrize(("message", "meaning"), [
    # ResourceLocalizationService and DiskChecker, as Hadoop 3 words them
    ("java.io.IOException: No space left on device", "have no room to unpack"),
    ("org.apache.hadoop.util.DiskChecker$DiskErrorException: No space available in any of "
     "the local directories.", "have no room to unpack"),
    ("org.apache.hadoop.util.DiskChecker$DiskErrorException: Could not find any valid local "
     "directory for nmPrivate/container_1_0001_01_000002.tokens", "have no room to unpack"),
    # Hadoop 3.5's FSDownload on a node whose local dirs are too small (tests/test_no_room_yarn)
    ("[2026-11-25 23:56:37.571]Failed to download resource { { hdfs://127.0.0.1:9220/user/"
     "root/.tfyarn/envs/layer-tensorboard-5ac5.tar, 1795650525382, ARCHIVE, null },pending,"
     "[(container_1795650851952_0003_01_000003)],21955219298126,DOWNLOADING} org.apache.hadoop"
     ".yarn.exceptions.YarnException: Download and unpack failed.",
     "have no room for the job's Python env"),
    # FSDownload's check of the timestamp the job named
    ('java.io.IOException: Resource hdfs://nn:8020/user/a/.tfyarn/envs/layer-site-1.tar.gz '
     'changed on src filesystem - expected: "2026-11-25T20:00:00.000Z", was: '
     '"2026-11-25T20:05:00.000Z"', "was replaced after it was submitted"),
    # the shell's gzip, unpacking a cut archive (FileUtil.unTarUsingTar)
    ("ExitCodeException exitCode=1: gzip: stdin: unexpected end of file\ntar: Unexpected EOF "
     "in archive\ntar: Error is not recoverable: exiting now", "is not whole"),
])
def test_a_localization_failure_is_named_with_its_fix(message: str, meaning: str) -> None:
    found = localization_failure(message)
    assert found is not None and found.startswith("YARN could not localize") and meaning in found
    assert "Fix:" in found


def test_other_failures_are_no_localization_failure() -> None:
    assert localization_failure(SEE_LOGS) is None
    assert localization_failure(PMEM) is None
    assert localization_failure("") is None


def test_constraints_off_on_the_cluster_are_said_not_silently_ignored() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    cluster.job.on_constraints_off("ps", cluster.now)
    assert restarts(cluster) == [
        "ps: ANTI_AFFINITY_REQUIRED not enforced: the ResourceManager's yarn.resourcemanager."
        "placement-constraints.handler is disabled, so two ps containers may share a host"]
    assert cluster.end is None
