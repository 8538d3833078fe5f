"""The job's rules (appmaster/model/job.py) driven without YARN: events in, actions out.

Each test plays what the master would hear (containers started, exports, exits, silence,
deadlines) into a :class:`Job` and checks what it decides. The integration tests show the
same rules on a real cluster; these reach the cases hard to stage there: two failures at
once, a failure during a restart, a late export from an old generation.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest

from appmaster.common import registry
from appmaster.common.clusterview import ClusterView, QueueStanding, Resources, cluster_view
from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.vocabulary import JobState, TaskState
from appmaster.model.job import (
    FAILURE_SETTLE_S,
    REASK_S,
    VERDICT_WAIT_S,
    EndJob,
    Fence,
    Job,
    Kill,
    PublishSpec,
    Request,
    ShowTensorBoard,
    Stop,
    TrainingDone,
)
from appmaster.model.jobqueue import NODES_GONE_S
from appmaster.model.verdicts import judge, killed_by_signal
from appmaster.page.view import JobView, queue_line
from tfyarn.watch.jobview import format_progress


def plan(ps: int = 1, chief: int = 1, workers: int = 2, threshold: int = 1,
         worker_policy: str = "restart", **settings) -> JobPlan:
    roles = [RolePlan("ps", ps, 1, 1024, 1, failure_threshold=threshold),
             RolePlan("chiefworker", chief, 2, 1024, 1, failure_threshold=threshold),
             RolePlan("worker", workers, 3, 1024, 1, failure_threshold=threshold,
                      failure_policy=worker_policy)]
    return JobPlan(name="job", entry="train.py", python="python3", work_dir="/w",
                   roles=tuple(r for r in roles if r.instances), **settings)


class Cluster:
    """Plays YARN and the agents for a Job: names containers as skein does, keeps time."""

    def __init__(self, job_plan: JobPlan, am_attempt: int = 1, draw: float = 0.5) -> None:
        self.now = 100.0
        self.job = Job(job_plan, self.now, am_attempt, draw=lambda: draw)
        self.numbers: Counter[str] = Counter()
        self.killed: list[str] = []
        self.fenced: list[str] = []
        self.specs: list[PublishSpec] = []
        self.end: EndJob | None = None
        self.apply(self.job.start(self.now))

    def apply(self, actions) -> list:
        for action in actions:
            if isinstance(action, Request):
                role = action.task.role
                container = f"{role}_{self.numbers[role]}"
                self.numbers[role] += 1
                self.job.assigned(action.task, container, self.now)
            elif isinstance(action, (Kill, Stop)):  # a Stop ends in a kill at the latest
                self.killed.append(action.container)
            elif isinstance(action, Fence):
                self.fenced.append(action.container)
            elif isinstance(action, PublishSpec):
                self.specs.append(action)
            elif isinstance(action, EndJob):
                self.end = action
        return actions

    def container(self, role: str, index: int) -> str:
        return self.job.tasks[(role, index)].container

    def tick(self, seconds: float = 0.1) -> None:
        self.now += seconds

    def start(self, role: str, index: int, node: str = "nm1:8042") -> list:
        return self.apply(self.job.on_started(self.container(role, index), self.now, node=node,
                                              yarn_container_id="c", user="u"))

    def export(self, role: str, index: int, address: str | None = None,
               generation: int | None = None) -> list:
        task = self.job.tasks[(role, index)]
        export = registry.Export(address or f"h{role}{index}:2222", task.container,
                                 self.job.generation if generation is None else generation)
        return self.apply(self.job.on_export(export, self.now))

    def run(self, role: str, index: int) -> list:
        return self.apply(self.job.on_running(self.container(role, index), self.now))

    def exit(self, role: str, index: int, code: int) -> list:
        """Its agent says the script exited with ``code``. A script killed by a signal (137:
        kill -9) takes its agent, and so its container, with it: YARN's end follows."""
        container = self.container(role, index)
        actions = self.apply(self.job.on_exited(container, code, self.now,
                                                "(c on nm1): container exited, exit code 1."))
        if killed_by_signal(code):
            actions += self.yarn_end(container)
        return actions

    def yarn_end(self, container: str, state: str = "FAILED", message: str = "") -> list:
        """YARN says ``container`` ended, in skein's words."""
        end = judge(state, message)
        return self.apply(self.job.on_container_end(container, state == "SUCCEEDED", self.now,
                                                    f"(c on nm1): container {state}.", end))

    def settle(self) -> list:
        """A worker's failure waits for a cause elsewhere: none comes."""
        self.now += FAILURE_SETTLE_S
        return self.apply(self.job.on_tick(self.now))

    def everyone_running(self) -> None:
        """Every task not yet running starts, exports and runs, as its agent would."""
        def waiting(state: TaskState) -> list[tuple[str, int]]:
            return [key for key, task in self.job.tasks.items() if task.state == state]

        for key in [k for k, t in self.job.tasks.items() if t.state.waiting] + waiting(
                TaskState.ALLOCATED):
            self.start(*key)
        for key in waiting(TaskState.STARTED):
            self.export(*key)
        for key in waiting(TaskState.REGISTERED):
            self.run(*key)


def restarts(cluster: Cluster) -> list[str]:
    return cluster.job.restarts


def test_start_requests_every_task_in_priority_order() -> None:
    cluster = Cluster(plan(ps=2, workers=3))
    assert [(t.role, t.index) for t in cluster.job.tasks.values()] == [
        ("ps", 0), ("ps", 1), ("chiefworker", 0), ("worker", 0), ("worker", 1), ("worker", 2)]
    assert [t.container for t in cluster.job.tasks.values()] == [
        "ps_0", "ps_1", "chiefworker_0", "worker_0", "worker_1", "worker_2"]
    assert cluster.job.state == JobState.STARTING


def test_spec_is_published_once_every_task_exported_then_running() -> None:
    cluster = Cluster(plan())
    for key in cluster.job.tasks:
        cluster.start(*key)
    cluster.export("ps", 0)
    cluster.export("chiefworker", 0)
    assert not cluster.specs
    cluster.export("worker", 0)
    assert not cluster.specs
    cluster.export("worker", 1)
    (spec,) = cluster.specs
    assert spec.generation == 0 and spec.spec.workers == ("hworker0:2222", "hworker1:2222")
    for key in cluster.job.tasks:
        cluster.run(*key)
    assert cluster.job.state == JobState.RUNNING
    assert set(cluster.job.clock.marks) == {"all given", "all started", "all registered",
                                            "spec published", "all running"}


def test_chief_success_ends_the_job_and_the_rest_show_stopped() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    cluster.exit("worker", 1, 0)
    assert cluster.end is None  # a worker's success alone ends nothing
    cluster.exit("chiefworker", 0, 0)
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED
    assert cluster.end.diagnostics.startswith("The chief finished successfully.")
    cluster.job.ended(cluster.end.status)
    states = {key: t.state for key, t in cluster.job.tasks.items()}
    assert states == {("ps", 0): TaskState.STOPPED, ("chiefworker", 0): TaskState.FINISHED,
                      ("worker", 0): TaskState.STOPPED, ("worker", 1): TaskState.FINISHED}


def test_without_a_chiefworker_worker_0_is_the_chief() -> None:
    cluster = Cluster(plan(chief=0, workers=3, threshold=5))
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)  # a plain worker: replaced
    cluster.settle()
    assert restarts(cluster) == ["worker 1 replaced (attempt 1)"]
    cluster.exit("worker", 0, 1)  # the chief: the whole cluster restarts
    assert cluster.job.generation == 1
    cluster.everyone_running()
    cluster.exit("worker", 0, 0)
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED


def test_all_workers_policy_waits_for_every_worker() -> None:
    cluster = Cluster(plan(success_policy="all-workers"))
    cluster.everyone_running()
    cluster.exit("chiefworker", 0, 0)
    cluster.exit("worker", 0, 0)
    assert cluster.end is None
    cluster.exit("worker", 1, 0)
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED


def test_a_failed_worker_alone_is_replaced_and_rejoins_the_spec() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    old = cluster.container("worker", 1)
    assert cluster.exit("worker", 1, 1) == [] and cluster.job.failures == Counter()
    task = cluster.job.tasks[("worker", 1)]
    assert (task.state, task.due) == (TaskState.FAILING, cluster.now + FAILURE_SETTLE_S)
    assert [type(a) for a in cluster.settle()] == [Request]
    assert cluster.container("worker", 1) != old and cluster.job.generation == 0
    assert (task.attempt, task.state, task.previous_address) == (1, TaskState.REPLACING,
                                                               "hworker1:2222")
    cluster.start("worker", 1)
    cluster.export("worker", 1)  # back on its old address: the spec is published again
    assert len(cluster.specs) == 2 and cluster.specs[-1].generation == 0
    cluster.run("worker", 1)
    assert cluster.job.state == JobState.RUNNING


@pytest.mark.parametrize("role", ["ps", "chiefworker"])
def test_a_failed_ps_or_chief_restarts_the_whole_cluster(role: str) -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    old = {key: t.container for key, t in cluster.job.tasks.items()}
    actions = cluster.exit(role, 0, 1)
    others = {c for key, c in old.items() if key != (role, 0)}
    # the running others are asked to stop, the chief's work dir awaited (not killed at once)
    stops = {a.container: a for a in actions if isinstance(a, Stop)}
    assert set(stops) == others and not any(isinstance(a, Kill) for a in actions)
    assert {c for c, a in stops.items() if a.chief} == (
        {old[("chiefworker", 0)]} if role == "ps" else set())
    assert sum(isinstance(a, Request) for a in actions) == 4
    assert cluster.job.generation == 1 and cluster.job.state == JobState.RESTARTING
    assert restarts(cluster) == [f"{role} 0 failed: cluster restarted as generation 1"]
    assert all(t.attempt == 1 for t in cluster.job.tasks.values())
    # The killed containers' ends are the job's doing: no failure is counted for them.
    for container in others:
        assert cluster.apply(cluster.job.on_container_end(container, False, cluster.now)) == []
    assert cluster.job.failures == Counter({role: 1})
    cluster.everyone_running()
    assert cluster.specs[-1].generation == 1 and cluster.job.state == JobState.RUNNING


def test_failures_past_the_threshold_end_the_job() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    cluster.exit("worker", 0, 1)
    cluster.settle()
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)
    assert cluster.settle() == [cluster.end] and cluster.end.status == JobState.FAILED
    assert cluster.end.diagnostics.startswith(
        "Component worker failed 2 time(s); that is more than its "
        "yarn.container.failure.threshold of 1 within one failure window (6 h). The job is "
        "stopped.\nworker 1 (attempt 0) failed (c on nm1): container exited, exit code 1.")
    assert cluster.job.tasks[("worker", 1)].state == TaskState.FAILED


def test_the_failure_window_starts_each_roles_count_again() -> None:
    """yarn.container.failure.window.*: the threshold judges the failures of one window."""
    cluster = Cluster(replace(plan(threshold=1), failure_window_seconds=60.0))
    cluster.everyone_running()
    cluster.exit("worker", 0, 1)
    cluster.settle()
    cluster.everyone_running()
    cluster.tick(61)  # the next window: worker's count starts at 0 again
    cluster.exit("worker", 1, 1)
    cluster.settle()
    assert cluster.end is None and cluster.job.failures == Counter({"worker": 2})
    cluster.everyone_running()
    cluster.exit("worker", 0, 1)  # the second in this window: over the threshold of 1
    assert cluster.settle() == [cluster.end] and cluster.end.status == JobState.FAILED
    assert "within one failure window (1 min)" in cluster.end.diagnostics


def test_an_unlimited_threshold_restarts_for_ever() -> None:
    cluster = Cluster(plan(threshold=-1))
    for _ in range(20):
        cluster.everyone_running()
        cluster.exit("ps", 0, 1)
    assert cluster.end is None and cluster.job.generation == 20


def test_fatal_policy_ends_the_job_at_the_first_failure() -> None:
    job_plan = plan()
    worker = replace(job_plan.roles[2], failure_policy="fatal")
    cluster = Cluster(replace(job_plan, roles=(*job_plan.roles[:2], worker)))
    cluster.everyone_running()
    cluster.exit("worker", 0, 1)
    cluster.settle()
    assert cluster.end and "Component worker failed 1 time(s); its failure policy is fatal" in (
        cluster.end.diagnostics)


def test_ignore_policy_drops_workers_until_none_is_left() -> None:
    cluster = Cluster(plan(worker_policy="ignore", chief=0, workers=2))
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)
    assert cluster.settle() == []
    assert restarts(cluster) == ["worker 1 dropped (failure policy ignore)"]
    assert [t.name for t in cluster.job.live_tasks()] == ["ps 0", "worker 0"]
    cluster.exit("worker", 0, 1)
    cluster.settle()
    assert cluster.end and cluster.end.diagnostics.startswith(
        "Every worker failed and was dropped.")


def test_a_taken_port_restarts_the_task_uncounted() -> None:
    cluster = Cluster(plan(threshold=0))
    cluster.everyone_running()
    cluster.exit("worker", 0, registry.PORT_TAKEN_EXIT)
    cluster.exit("ps", 0, registry.PORT_TAKEN_EXIT)
    assert cluster.end is None and not cluster.job.failures
    assert restarts(cluster)[0] == "worker 0 found its port taken: restarted on a new one"


def test_two_failures_at_once_make_one_new_generation() -> None:
    """The ps and a worker fail together: the ps restarts the cluster; the worker's end,
    heard after, is one the job already stopped, and counts for nothing."""
    cluster = Cluster(plan(threshold=5))
    cluster.everyone_running()
    worker = cluster.container("worker", 1)
    cluster.exit("ps", 0, 1)
    assert cluster.apply(cluster.job.on_exited(worker, 1, cluster.now, "late")) == []
    assert cluster.apply(cluster.job.on_container_end(worker, False, cluster.now)) == []
    assert cluster.job.generation == 1 and cluster.job.failures == Counter({"ps": 1})


def test_a_worker_that_fails_just_before_the_chief_fell_with_it() -> None:
    """Kill -9 the chief of a collective job: a worker's collective breaks at once, and its
    agent's word may come first. With threshold 0 for workers that worker must not end the
    job (seen in CI): the chief's failure restarts everyone, and the job goes on."""
    job_plan = plan(ps=0, threshold=0)
    chief = replace(job_plan.roles[0], failure_threshold=1)
    cluster = Cluster(replace(job_plan, roles=(chief, job_plan.roles[1])))
    cluster.everyone_running()
    assert cluster.exit("worker", 0, 1) == []  # its collective broke
    cluster.tick(0.5)
    cluster.exit("chiefworker", 0, 137)
    cluster.settle()
    assert cluster.end is None and cluster.job.failures == Counter(chiefworker=1)
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING and cluster.job.generation == 1


def test_a_worker_failure_absorbed_by_a_cluster_restart_is_not_counted() -> None:
    cluster = Cluster(plan(threshold=1))
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)
    cluster.tick(1.0)
    cluster.exit("chiefworker", 0, 137)
    assert cluster.job.generation == 1 and cluster.job.failures == Counter(chiefworker=1)
    assert restarts(cluster) == [  # one restart: the worker's end was part of it
        "chiefworker 0 failed: cluster restarted as generation 1"]
    assert cluster.settle() == [] and cluster.job.failures == Counter(chiefworker=1)
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING and cluster.end is None


def test_a_failure_during_a_restart_starts_another_generation() -> None:
    cluster = Cluster(plan(threshold=5))
    cluster.everyone_running()
    cluster.exit("ps", 0, 1)
    cluster.start("ps", 0)
    cluster.start("worker", 0)
    cluster.exit("worker", 0, 1)  # a plain worker, not yet registered: replaced alone
    cluster.settle()
    assert cluster.job.generation == 1
    cluster.exit("ps", 0, 1)  # the new ps fails before the rendezvous: once more
    assert cluster.job.generation == 2 and cluster.job.failures == Counter(ps=2, worker=1)
    cluster.everyone_running()
    assert cluster.specs[-1].generation == 2 and cluster.job.state == JobState.RUNNING


def test_a_late_export_from_an_old_generation_is_ignored() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    cluster.exit("chiefworker", 0, 1)
    for key in cluster.job.tasks:
        cluster.start(*key)
    published = len(cluster.specs)
    for key in cluster.job.tasks:
        cluster.export(*key, address="old:1", generation=0)
    assert len(cluster.specs) == published
    assert all(t.address is None for t in cluster.job.tasks.values())


def test_a_replaced_task_on_a_new_address_restarts_the_cluster() -> None:
    """A running ps holds the old address: only a new generation hears of the new one."""
    cluster = Cluster(plan(threshold=5))
    cluster.everyone_running()
    cluster.exit("worker", 0, 1)
    cluster.settle()
    cluster.start("worker", 0)
    cluster.export("worker", 0, address="elsewhere:3333")
    assert cluster.job.generation == 1
    assert restarts(cluster)[-1] == ("worker 0 came back at elsewhere:3333: cluster restarted "
                                     "as generation 1")


def test_a_silent_task_is_lost_fenced_and_counted() -> None:
    cluster = Cluster(plan(heartbeat_timeout_s=30.0, threshold=5))
    cluster.everyone_running()
    containers = {key: t.container for key, t in cluster.job.tasks.items()}
    cluster.tick(10)
    beats = dict.fromkeys(containers.values(), b"1")
    assert cluster.apply(cluster.job.on_heartbeats(beats, cluster.now)) == []
    cluster.tick(25)  # the ps's host died: its counter stops; the others go on
    beats = {c: b"2" for key, c in containers.items() if key != ("ps", 0)}
    assert cluster.apply(cluster.job.on_heartbeats(beats, cluster.now)) == []
    cluster.tick(10)  # 35 s since the ps was last heard
    beats = {c: b"3" for key, c in containers.items() if key != ("ps", 0)}
    actions = cluster.apply(cluster.job.on_heartbeats(beats, cluster.now))
    assert actions[:2] == [Fence(containers[("ps", 0)]), Kill(containers[("ps", 0)])]
    assert cluster.job.failures == Counter(ps=1) and cluster.job.generation == 1
    assert restarts(cluster) == [
        "ps 0 lost on nm1: cluster restarted as generation 1"]
    assert cluster.job.lost_nodes == {"nm1": cluster.now}


def test_a_replacement_placed_on_the_lost_host_goes_back() -> None:
    cluster = Cluster(plan(heartbeat_timeout_s=30.0, threshold=5))
    cluster.everyone_running()
    cluster.tick(10)
    everyone = {t.container: b"x" for t in cluster.job.tasks.values()}
    cluster.apply(cluster.job.on_heartbeats(everyone, cluster.now))  # all heard
    cluster.tick(31)
    lost = cluster.container("worker", 1)
    beats = {t.container: b"y" for t in cluster.job.tasks.values() if t.container != lost}
    cluster.apply(cluster.job.on_heartbeats(beats, cluster.now))
    replacement = cluster.container("worker", 1)
    assert replacement != lost and restarts(cluster)[-1] == (  # it cannot keep its address
        "worker 1 lost on nm1: cluster restarted as generation 1")
    actions = cluster.start("worker", 1, node="nm1:8042")  # the same host, too soon
    assert [type(a) for a in actions] == [Kill, Request] and actions[0].container == replacement
    assert cluster.start("worker", 1, node="nm2:8042") == []
    assert cluster.job.tasks[("worker", 1)].state == TaskState.STARTED


def test_a_replacement_placed_on_the_lost_host_twice_stays() -> None:
    """YARN found no other room (the host is the only one of its partition): sent back once,
    the task's next container there runs, not one sent back every few seconds for 3
    timeouts."""
    cluster = Cluster(plan(heartbeat_timeout_s=30.0, threshold=5))
    cluster.everyone_running()
    cluster.tick(31)
    lost = cluster.container("ps", 0)
    beats = {t.container: b"y" for t in cluster.job.tasks.values() if t.container != lost}
    cluster.apply(cluster.job.on_heartbeats(beats, cluster.now))
    assert [type(a) for a in cluster.start("ps", 0, node="nm1:8042")] == [Kill, Request]
    assert cluster.start("ps", 0, node="nm1:8042") == []
    assert cluster.job.tasks[("ps", 0)].state == TaskState.STARTED


def test_a_worker_lost_before_the_rendezvous_is_replaced_alone() -> None:
    """No spec holds its address yet: its replacement's export joins the first one."""
    cluster = Cluster(plan(heartbeat_timeout_s=30.0, threshold=5))
    for key in cluster.job.tasks:
        cluster.start(*key)
    lost = cluster.container("worker", 1)
    cluster.tick(31)
    beats = {t.container: b"y" for t in cluster.job.tasks.values() if t.container != lost}
    cluster.apply(cluster.job.on_heartbeats(beats, cluster.now))
    assert cluster.container("worker", 1) != lost and cluster.job.generation == 0
    assert restarts(cluster)[-1] == "worker 1 lost on nm1: replaced (attempt 1)"


def test_deadlines_name_what_is_missing() -> None:
    job_plan = plan(allocation_timeout_s=20.0, registration_timeout_s=60.0)
    cluster = Cluster(job_plan)
    assert cluster.job.next_deadline() == pytest.approx(120.0)  # 100 + 20
    cluster.tick(21)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.startswith(
        "YARN did not allocate 4 container(s) within 20 s (site.global.allocation.timeout):\n"
        "  ps 0: asked for 1024 MB, 1 vcore(s) in the default partition")

    cluster = Cluster(job_plan)
    for key in cluster.job.tasks:
        cluster.start(*key)
    cluster.export("ps", 0)
    cluster.tick(61)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.splitlines()[:2] == [
        "Tasks did not register within 60 s (site.global.registration.timeout): 3 of 4 missing.",
        "  chiefworker 0: container chiefworker_0 (c) started on nm1:8042 but its agent never "
        "exported an address"]


def test_tasks_stopped_at_the_end_count_only_as_far_as_they_got() -> None:
    """A job that ended while tasks were still asked for, starting or registered: its last
    progress line counts each as far as it got, not as running."""
    cluster = Cluster(plan(allocation_timeout_s=20.0))
    for key in (("ps", 0), ("chiefworker", 0)):
        cluster.start(*key)
        cluster.export(*key)
    cluster.run("ps", 0)
    cluster.tick(21)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.status == JobState.FAILED
    cluster.job.ended(cluster.end.status, cluster.now)
    assert {task.state for task in cluster.job.tasks.values()} == {TaskState.STOPPED}
    view = JobView.from_dict(json.loads(json.dumps(
        JobView.of(cluster.job, "app", None, cluster.now).to_dict())))
    assert format_progress(view).startswith(
        "FAILED gen 0: ps 1/1/1/1/0  chiefworker 1/1/1/0/0  worker 2/0/0/0/0")


def test_a_replacement_yarn_never_gives_waits_for_the_queue_up_to_the_allocation_timeout(
        ) -> None:
    """A replacement waits for the queue, whatever it waits for (replacing, lost,
    preempted): the registration timeout does not bound that wait, the allocation timeout
    does, and names it."""
    cluster = Cluster(plan(registration_timeout_s=60.0, allocation_timeout_s=600.0,
                           threshold=3))
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)
    cluster.settle()
    assert cluster.job.tasks[("worker", 1)].state == TaskState.REPLACING
    cluster.tick(61)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end is None
    cluster.tick(540)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.splitlines() == [
        "YARN did not allocate 1 container(s) within 600 s (site.global.allocation.timeout):",
        "  worker 1: asked for 1024 MB, 1 vcore(s) in the default partition; no node there "
        "has that much free for this queue (check `yarn node -list -showDetails` and the "
        "queue's capacity for that label)"]


def test_the_job_deadline_stops_it() -> None:
    cluster = Cluster(plan(deadline_s=50.0))
    cluster.everyone_running()
    cluster.tick(49)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    cluster.tick(2)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and "past its deadline of 50 s" in cluster.end.diagnostics


def test_a_later_appmaster_attempt_counts_the_earlier_starts() -> None:
    cluster = Cluster(plan(), am_attempt=2)
    assert all(t.attempt == 1 for t in cluster.job.tasks.values())
    cluster.everyone_running()
    cluster.exit("chiefworker", 0, 0)
    assert cluster.end and "AppMaster attempt 2" in cluster.end.diagnostics
    assert "restoring what the work dir held" in cluster.end.diagnostics  # its chief unheard


@pytest.mark.parametrize("mirror, said", [
    ({"restore_done": True, "restored": "model.ckpt-300", "restored_written": "12:03:10"},
     "the chief restored model.ckpt-300 of 12:03:10 (step 300)."),
    ({"restore_done": True}, "the chief restored nothing: the job starts over."),
])
def test_a_later_appmaster_attempt_says_what_its_chief_restored(mirror: dict, said: str) -> None:
    cluster = Cluster(plan(), am_attempt=2)
    cluster.everyone_running()
    cluster.job.on_status(cluster.container("chiefworker", 0), mirror=mirror)
    cluster.exit("chiefworker", 0, 0)
    assert cluster.end and said in cluster.end.diagnostics, cluster.end.diagnostics
    assert "from the checkpoint" not in cluster.end.diagnostics


def test_tensorboard_is_shown_and_its_end_ends_nothing() -> None:
    job_plan = plan(tensorboard=RolePlan("tensorboard", 1, 9, 512, 1))
    cluster = Cluster(job_plan)
    board = cluster.job.tensorboard
    assert board is not None and board.container == "tensorboard_0"
    cluster.apply(cluster.job.on_started(board.container, cluster.now))
    actions = cluster.apply(cluster.job.on_export(
        registry.Export("tb:6006", board.container, 0, "s3cret"), cluster.now))
    assert actions == [ShowTensorBoard("tb:6006", "s3cret")]  # the path, for skein's UI only
    assert "s3cret" not in json.dumps(JobView.of(cluster.job, "app", "hdfs://w",
                                                 cluster.now).to_dict())
    cluster.everyone_running()
    assert cluster.apply(cluster.job.on_container_end(board.container, False, cluster.now)) == []
    assert board.state == TaskState.FAILED and cluster.job.state == JobState.RUNNING


def evaluator_plan(policy: str = "restart", threshold: int = 1) -> JobPlan:
    return plan(threshold=5, evaluation_timeout_s=60.0,
                evaluator=RolePlan("evaluator", 1, 4, 1024, 1, failure_threshold=threshold,
                                   failure_policy=policy))


def start_evaluator(cluster: Cluster) -> str:
    evaluator = cluster.job.evaluator
    assert evaluator is not None and evaluator.state.waiting
    cluster.apply(cluster.job.on_started(evaluator.container, cluster.now, node="nm3:8042"))
    cluster.apply(cluster.job.on_running(evaluator.container, cluster.now))
    return evaluator.container


def test_the_evaluator_is_asked_for_beside_the_cluster_and_not_in_its_spec() -> None:
    cluster = Cluster(evaluator_plan())
    assert cluster.job.evaluator.container == "evaluator_0"
    start_evaluator(cluster)
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING
    assert "evaluator" not in cluster.specs[-1].spec.to_dict()
    cluster.exit("ps", 0, 1)  # a new generation: the evaluator goes on where it is
    assert cluster.job.generation == 1 and "evaluator_0" not in cluster.killed
    assert cluster.numbers["evaluator"] == 1


def test_after_the_chief_the_evaluator_gets_the_last_checkpoint_then_the_job_ends() -> None:
    cluster = Cluster(evaluator_plan())
    evaluator = start_evaluator(cluster)
    cluster.everyone_running()
    actions = cluster.exit("chiefworker", 0, 0)
    assert cluster.end is None and cluster.job.state == JobState.EVALUATING
    assert TrainingDone() in actions
    assert set(cluster.killed) == {"ps_0", "worker_0", "worker_1"}  # training's tasks go
    assert cluster.job.evaluation_deadline == pytest.approx(cluster.now + 60.0)
    cluster.apply(cluster.job.on_exited(evaluator, 0, cluster.now))
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED
    assert "The evaluator evaluated the last checkpoint." in cluster.end.diagnostics


def test_an_evaluator_that_takes_too_long_at_the_end_is_stopped() -> None:
    cluster = Cluster(evaluator_plan())
    start_evaluator(cluster)
    cluster.everyone_running()
    cluster.exit("chiefworker", 0, 0)
    cluster.tick(61)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED
    assert "did not finish the last checkpoint within 60 s" in cluster.end.diagnostics


def test_a_failing_evaluator_is_replaced_then_dropped_and_training_goes_on() -> None:
    cluster = Cluster(evaluator_plan(threshold=1))
    first = start_evaluator(cluster)
    cluster.everyone_running()
    cluster.apply(cluster.job.on_exited(first, 1, cluster.now, "(c): exit code 1."))
    assert restarts(cluster) == ["evaluator 0 replaced (attempt 1)"]
    second = start_evaluator(cluster)
    assert second != first
    cluster.apply(cluster.job.on_exited(second, 1, cluster.now, "(c): exit code 1."))
    assert cluster.end is None and cluster.job.evaluator.state == TaskState.FAILED
    assert restarts(cluster)[-1] == ("evaluator 0 dropped after 2 failure(s); training goes on "
                                     "without it")
    cluster.exit("chiefworker", 0, 0)  # no evaluator left: the chief's end is the job's
    assert cluster.end and cluster.end.status == JobState.SUCCEEDED


def test_a_fatal_evaluator_fails_the_job() -> None:
    cluster = Cluster(evaluator_plan(policy="fatal"))
    evaluator = start_evaluator(cluster)
    cluster.everyone_running()
    cluster.apply(cluster.job.on_container_end(evaluator, False, cluster.now, "(c): KILLED."))
    assert cluster.end and cluster.end.status == JobState.FAILED
    assert cluster.end.diagnostics.startswith(
        "Component evaluator failed 1 time(s); its failure policy is fatal.")


def test_a_container_given_but_still_localizing_is_not_an_allocation_failure() -> None:
    """A large packed env takes minutes to unpack on a fresh node: YARN gave the container,
    its agent has not started. The allocation timeout does not apply; the registration
    timeout does, from when the container was seen given, and says what was happening."""
    cluster = Cluster(plan(allocation_timeout_s=20.0, registration_timeout_s=60.0))
    for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]:
        cluster.start(*key)
    cluster.tick(21)
    assert cluster.job.waiting_for_yarn(cluster.now)
    given = {cluster.container("worker", 1): "nm2:8042", "other_9": "x"}
    cluster.job.on_allocated(given, cluster.now)
    assert not cluster.job.waiting_for_yarn(cluster.now)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == [] and cluster.end is None
    cluster.tick(40)  # 61 s after the requests, 40 s after worker 1 was seen given
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == [] and cluster.end is None
    cluster.tick(20)  # the registration timeout after it was seen given
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.splitlines()[-1] == (
        "  worker 1: container worker_1 was given on nm2:8042 but its agent never started: "
        "YARN was still localizing its files (a large packed env takes minutes the first "
        "time on a node; raise site.global.registration.timeout)")


def test_an_allocated_task_that_starts_counts_as_started() -> None:
    cluster = Cluster(plan())
    cluster.job.on_allocated({cluster.container("ps", 0): "nm1:8042"}, cluster.now)
    assert cluster.job.tasks[("ps", 0)].state == TaskState.ALLOCATED
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING and "all started" in cluster.job.clock.marks


def test_a_request_yarn_has_not_met_is_made_again_within_the_allocation_timeout() -> None:
    """YARN can lose an ask (skein released extra containers YARN gave): a task waiting
    REASK_S is asked for again, its old request withdrawn; the allocation timeout still
    counts from the first ask, and its message is unchanged."""
    cluster = Cluster(plan(allocation_timeout_s=100.0))
    for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]:
        cluster.start(*key)
    old = cluster.container("worker", 1)
    cluster.tick(REASK_S - 1)
    assert not cluster.job.waiting_for_yarn(cluster.now)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    cluster.tick(1)
    assert cluster.job.waiting_for_yarn(cluster.now)  # the master asks YARN what it gave
    cluster.job.on_allocated({}, cluster.now)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert [type(a) for a in actions] == [Kill, Request] and actions[0].container == old
    assert cluster.container("worker", 1) != old and cluster.job.failures == Counter()
    cluster.tick(REASK_S - 1)  # the new ask has its own REASK_S
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    cluster.tick(1)
    given = {cluster.container("worker", 1): "nm2:8042"}
    cluster.job.on_allocated(given, cluster.now)  # given: not asked again
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    cluster.job.table.move(cluster.job.tasks[("worker", 1)], TaskState.REQUESTED)  # never came
    cluster.tick(100 - 2 * REASK_S - 1)  # just before the first ask's allocation timeout
    assert [type(a) for a in cluster.apply(cluster.job.on_tick(cluster.now))] == [Kill, Request]
    cluster.tick(1)  # 100 s after the first ask
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.startswith(
        "YARN did not allocate 1 container(s) within 100 s (site.global.allocation.timeout):")



def test_a_relaxed_placement_asks_again_only_what_yarn_has_not_given() -> None:
    """A request for named hosts past yarn.placement.escalate.seconds: the master says so;
    a task still waiting is asked for again (its old request withdrawn, nothing counted),
    one already given or running is left be."""
    cluster = Cluster(plan())
    for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]:
        cluster.start(*key)
    old = cluster.container("worker", 1)
    line = "worker 1: no container on h2 within 30 s: asked for on any host"
    actions = cluster.apply(cluster.job.on_placement_relaxed(
        {("worker", 1): line, ("worker", 0): "not said"}, cluster.now))
    assert [type(a) for a in actions] == [Kill, Request] and actions[0].container == old
    assert cluster.container("worker", 1) != old and cluster.job.failures == Counter()
    assert restarts(cluster) == [line]
    cluster.job.on_allocated({cluster.container("worker", 1): "nm2:8042"}, cluster.now)
    assert cluster.apply(cluster.job.on_placement_relaxed({("worker", 1): line},
                                                          cluster.now)) == []

def index_agrees(cluster: Cluster) -> None:
    """The job's index of tasks (what each event's checks read) against a pass over them."""
    job = cluster.job
    live = job.live_tasks()
    for state in TaskState:
        assert job.index.count(state) == sum(t.state == state for t in job.tasks.values())
    assert set(job.index.unregistered) == {t.key for t in live if t.address is None}
    waiting = [t for t in live if t.state.waiting]
    assert job.index.oldest_request() == (min(t.requested_at for t in waiting)
                                          if waiting else None)
    assert {t.key for t in job.index.in_judgement(TaskState.KILLED)} == {
        t.key for t in (*job.tasks.values(), job.evaluator) if t and t.state == TaskState.KILLED
        and job.by_container.get(t.container) is t}


def test_the_index_of_tasks_follows_starts_failures_and_restarts() -> None:
    cluster = Cluster(plan(ps=2, workers=4, threshold=5, evaluator=RolePlan(
        "evaluator", 1, 4, 1024, 1, failure_threshold=1)))
    index_agrees(cluster)
    cluster.tick()
    cluster.start("ps", 1)
    cluster.tick()
    cluster.everyone_running()
    index_agrees(cluster)
    for role, index, code in (("worker", 2, 137), ("ps", 0, 143)):  # killed by a signal:
        container = cluster.container(role, index)  # YARN's verdict awaited
        cluster.apply(cluster.job.on_exited(container, code, cluster.now))
    assert len(cluster.job.index.in_judgement(TaskState.KILLED)) == 2
    index_agrees(cluster)
    cluster.tick(VERDICT_WAIT_S + 1)
    cluster.apply(cluster.job.on_tick(cluster.now))  # no end came: judged as failures
    index_agrees(cluster)
    assert cluster.job.generation == 1  # the ps restarted everyone
    cluster.tick()
    cluster.everyone_running()
    index_agrees(cluster)
    assert cluster.job.state == JobState.RUNNING


def test_a_job_waits_for_the_queue_as_long_as_it_needs() -> None:
    """No allocation timeout by default: containers that do not come for an hour fail
    nothing, and the registration timeout counts from when a container was given."""
    cluster = Cluster(plan(registration_timeout_s=60.0,
                           extra={"site.global.allocation.hold": 600.0}))
    for _ in range(120):  # an hour, a deadline every REASK_S: each waiting task asked again
        cluster.now = cluster.job.next_deadline()
        cluster.job.on_allocated({}, cluster.now)
        cluster.apply(cluster.job.on_tick(cluster.now))
        assert cluster.end is None
    assert cluster.now >= 3600
    cluster.start("chiefworker", 0)  # given at last: 60 s to register from now
    cluster.tick(59)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end is None
    cluster.tick(1)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end and cluster.end.diagnostics.splitlines()[0] == (
        "Tasks did not register within 60 s (site.global.registration.timeout): 1 of 4 "
        "missing.")



# ---- waiting for the queue (appmaster/model/jobqueue.py, queuewait.py)

HOLD = 20.0  # below REASK_S: no request is made again meanwhile


def queued_plan(**settings) -> JobPlan:
    return plan(extra={"site.global.allocation.hold": HOLD}, **settings)


def holding_three_of_four(draw: float = 0.5) -> Cluster:
    """ps, chief and worker 0 given and registered; worker 1 waits for the queue."""
    cluster = Cluster(queued_plan(), draw=draw)
    for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]:
        cluster.start(*key)
        cluster.export(*key)
    return cluster


def test_a_job_holding_part_of_its_gang_gives_it_back_and_asks_again_after_a_backoff() -> None:
    cluster = holding_three_of_four()
    held = [cluster.container(*key) for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]]
    waiting = cluster.container("worker", 1)
    assert cluster.job.queue.next_deadline() == pytest.approx(100.0 + HOLD)
    cluster.now = 100.0 + HOLD
    assert cluster.job.waiting_for_yarn(cluster.now)  # the master asks YARN first
    cluster.job.on_allocated({}, cluster.now)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert sorted(a.container for a in actions if isinstance(a, Kill)) == sorted(
        [*held, waiting])
    assert {t.state for t in cluster.job.tasks.values()} == {TaskState.QUEUED}
    assert restarts(cluster)[-1] == (
        "waiting for the queue: held 3 of 4 containers with none coming for 20 s "
        "(site.global.allocation.hold): gave them back for other applications (round 1); "
        "asking again in 20 s")
    # the given-back containers' last words change nothing
    assert cluster.apply(cluster.job.on_container_end(held[0], False, cluster.now)) == []
    assert cluster.job.next_deadline() == pytest.approx(cluster.now + HOLD)  # factor 1.0
    cluster.tick(HOLD)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert [type(a) for a in actions] == [Request] * 4
    assert all(a.anywhere for a in actions)  # its old hosts may be others' by now
    assert {t.state for t in cluster.job.tasks.values()} == {TaskState.REQUESTED}
    assert all(cluster.container(*key) not in [*held, waiting] for key in cluster.job.tasks)
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING and cluster.end is None
    assert "all given" in cluster.job.clock.marks


def test_a_job_given_everything_as_its_hold_runs_out_keeps_it() -> None:
    """The last container came (still localizing) in the moment the hold ran out: the
    master asked YARN before the tick, and nothing is given back."""
    cluster = holding_three_of_four()
    cluster.now = 100.0 + HOLD
    cluster.job.on_allocated({cluster.container("worker", 1): "nm2:8042"}, cluster.now)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    assert cluster.job.tasks[("worker", 1)].state == TaskState.ALLOCATED
    assert cluster.job.queue.wait.rounds == 0


def test_the_wait_says_how_much_of_their_files_the_localizing_nodes_hold() -> None:
    """Given containers whose agents have not started: YARN copies their files (a packed env
    takes minutes the first time on a node); the patched AppMaster asks each NodeManager how
    many bytes are there. A word about a container the task no longer has is not counted."""
    cluster = holding_three_of_four()
    cluster.job.on_allocated({cluster.container("worker", 1): "nm2:8042"}, cluster.now)
    line = queue_line(JobView.of(cluster.job, "app", None, cluster.now).queue)
    assert line.startswith("Every container given (4), 0 s after the first request (1 still "
                           "localizing the job's files on their node)"), line  # no word yet
    cluster.job.on_localized(cluster.container("worker", 1), 300 * 2**20, 1536 * 2**20)
    cluster.job.on_localized("worker_99", 1, 2)  # no task's
    waits = JobView.of(cluster.job, "app", None, cluster.now).queue
    assert waits["localized_bytes"] == [300 * 2**20, 1536 * 2**20]
    assert ("(1 still localizing the job's files on their node: 300 MB of 1.5 GB there)"
            in queue_line(waits)), queue_line(waits)


def test_each_container_that_comes_holds_off_the_give_back() -> None:
    cluster = Cluster(queued_plan())
    for at, key in [(20.0, ("ps", 0)), (40.0, ("chiefworker", 0)), (60.0, ("worker", 0))]:
        cluster.now = 100.0 + at
        cluster.start(*key)
    assert cluster.job.queue.next_deadline() == pytest.approx(160.0 + HOLD)


def test_a_job_that_holds_nothing_keeps_its_requests() -> None:
    cluster = Cluster(queued_plan())
    cluster.tick(HOLD * 10)
    cluster.job.on_allocated({}, cluster.now)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert all(t.state == TaskState.REQUESTED for t in cluster.job.tasks.values())
    assert cluster.job.queue.wait.rounds == 0 and all(
        isinstance(a, Kill | Request) for a in actions)  # only REASK_S's asking again


def test_a_running_job_waiting_for_one_replacement_keeps_the_rest() -> None:
    """It trains already: a replaced worker waits for the queue, the others go on."""
    cluster = Cluster(queued_plan(threshold=3))
    cluster.everyone_running()
    cluster.exit("worker", 1, 1)
    cluster.settle()
    cluster.tick(HOLD * 10)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.job.tasks[("ps", 0)].state == TaskState.RUNNING
    assert cluster.job.queue.wait.rounds == 0


def test_two_jobs_that_give_back_together_ask_again_apart() -> None:
    """A tie broken by each job's own random draw: the first asks again alone."""
    first, second = holding_three_of_four(draw=0.1), holding_three_of_four(draw=0.9)
    for cluster in (first, second):
        cluster.now = 100.0 + HOLD
        cluster.apply(cluster.job.on_tick(cluster.now))
    first_at, second_at = first.job.next_deadline(), second.job.next_deadline()
    assert first_at == pytest.approx(100.0 + HOLD + HOLD * 0.6)
    assert second_at == pytest.approx(100.0 + HOLD + HOLD * 1.4)


def test_the_allocation_timeout_counts_across_give_backs() -> None:
    cluster = Cluster(queued_plan(allocation_timeout_s=100.0))
    for key in [("ps", 0), ("chiefworker", 0)]:
        cluster.start(*key)
    beat = 0
    while cluster.end is None:
        cluster.now = max(cluster.now, cluster.job.next_deadline())
        assert cluster.now <= 200.0
        if cluster.job.heartbeats_due(cluster.now):  # the agents alive beat on
            beat += 1
            cluster.apply(cluster.job.on_heartbeats(
                {c: str(beat).encode() for c in cluster.job.by_container}, cluster.now))
        cluster.job.on_allocated({}, cluster.now)
        cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.job.queue.wait.rounds >= 1 and cluster.now == 200.0
    assert cluster.end.diagnostics.startswith(
        "YARN did not allocate 4 container(s) within 100 s (site.global.allocation.timeout)")


def nodes(*rows: tuple[str, str, str, int]) -> ClusterView:
    """The RM's nodes answer: (id, state, label, memory MB) each, 8 vcores."""
    return cluster_view({}, {"nodes": {"node": [
        {"id": node, "state": state, "nodeLabels": [label] if label else [],
         "healthReport": "" if state == "RUNNING" else "NodeManager stopped",
         "totalResource": {"memory": memory, "vCores": 8},
         "availableResource": {"memory": memory, "vCores": 8}}
        for node, state, label, memory in rows]}})


def test_a_waiting_job_whose_only_suitable_node_is_gone_fails_with_the_clusters_reason(
        ) -> None:
    """The workers wait for the gpu partition's one node, which YARN lost: past
    NODES_GONE_S (a NodeManager restarting comes back well within it) the job fails,
    naming the node and its state, not after an allocation timeout."""
    job_plan = replace(plan(), roles=tuple(
        replace(r, label="gpu") if r.name == "worker" else r for r in plan().roles))
    cluster = Cluster(job_plan)
    for key in [("ps", 0), ("chiefworker", 0)]:
        cluster.start(*key)
    lost = nodes(("nm1:1", "RUNNING", "", 16384), ("nm3:1", "LOST", "gpu", 16384))
    assert cluster.apply(cluster.job.on_cluster(lost, None, cluster.now)) == []
    cluster.tick(60)
    back = nodes(("nm1:1", "RUNNING", "", 16384), ("nm3:1", "RUNNING", "gpu", 16384))
    assert cluster.apply(cluster.job.on_cluster(back, None, cluster.now)) == []  # it came back
    cluster.tick(60)
    assert cluster.apply(cluster.job.on_cluster(lost, None, cluster.now)) == []
    cluster.tick(NODES_GONE_S)
    cluster.apply(cluster.job.on_cluster(lost, None, cluster.now))
    assert cluster.end and cluster.end.status == JobState.FAILED
    assert cluster.end.diagnostics.startswith(
        "No active node of label \"gpu\" can hold a worker container (1024 MB, 1 vcore(s)) "
        "any more, for 120 s while the job waited for it: the cluster changed since the job "
        "was submitted. YARN's nodes there: nm3:1 LOST (NodeManager stopped).")


def test_a_node_too_small_for_the_role_counts_as_none() -> None:
    cluster = Cluster(plan())
    small = nodes(("nm1:1", "RUNNING", "", 512))
    cluster.apply(cluster.job.on_cluster(small, None, cluster.now))
    cluster.tick(NODES_GONE_S)
    cluster.apply(cluster.job.on_cluster(small, None, cluster.now))
    assert cluster.end and "nm1:1 RUNNING, too small: 512 MB, 8 vcore(s)" in (
        cluster.end.diagnostics)


def test_the_queue_as_the_rm_says_it_shows_in_the_wait() -> None:
    cluster = Cluster(plan())
    standing = QueueStanding("root.fifo", "fifo", Resources(8192, 2), Resources(1638, 1),
                             Resources(16384, 16), ahead=2, others=3, accepted=1)
    cluster.apply(cluster.job.on_cluster(nodes(("nm1:1", "RUNNING", "", 16384)), standing,
                                         cluster.now))
    waits = JobView.of(cluster.job, "app", None, cluster.now).queue
    assert waits is not None and waits["cluster"] == standing.line()
    assert queue_line(waits) == (
        "Waiting for the queue for 0 s: 0 of 4 containers given. Queue root.fifo (fifo): uses "
        "8192 MB, 2 vcore(s) of its 1638 MB, 1 vcore(s) guaranteed, 16384 MB, 16 vcore(s) at "
        "most; 2 application(s) ahead of this one (older, or of a higher priority), 1 of them "
        "waiting for their AppMaster's container")


def test_asks_the_rm_says_it_holds_are_not_made_again() -> None:
    """A request waiting its turn is not lost: made again, it would give up what YARN
    reserved for it on a node, and its place to a younger job. Made again only where the RM
    holds fewer asks than tasks wait, or has not said for REASK_S."""
    cluster = Cluster(plan(extra={"site.global.allocation.hold": 600.0}))
    for key in [("ps", 0), ("chiefworker", 0)]:
        cluster.start(*key)
    everywhere = nodes(("nm1:1", "RUNNING", "", 16384))
    cluster.tick(REASK_S - 5)
    cluster.apply(cluster.job.on_cluster(everywhere, None, cluster.now, pending=2))
    cluster.tick(5)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []  # both still held
    assert cluster.job.index.oldest_request() == cluster.now  # asked, as of now
    cluster.apply(cluster.job.on_cluster(everywhere, None, cluster.now, pending=1))
    cluster.tick(REASK_S)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))  # one lost: both asked again
    assert [type(a) for a in actions] == [Kill, Request, Kill, Request]


def test_a_give_back_due_with_a_request_made_again_asks_for_nothing() -> None:
    """The hold ran out in the moment a waiting task's REASK_S did: the job gives back and
    withdraws; it does not ask again for what it gives back."""
    cluster = Cluster(plan(extra={"site.global.allocation.hold": REASK_S}))
    for key in [("ps", 0), ("chiefworker", 0), ("worker", 0)]:
        cluster.start(*key)
    cluster.tick(REASK_S)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert {type(a) for a in actions} == {Kill} and len(actions) == 4
    assert {t.state for t in cluster.job.tasks.values()} == {TaskState.QUEUED}
