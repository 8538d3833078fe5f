"""The job's end reaches the master as data (issue 34): the rule that decides it returns an
:class:`EndJob`, the master's ``perform`` hands it back, and its event handlers return it for
``run`` to end on. Driven with bench/simulated_am's in-memory skein: no YARN, no agents."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from appmaster.common import registry
from appmaster.common.vocabulary import JobState
from appmaster.model.job import EndJob, Kill
from appmaster.model.jobactions import CHIEF_STOP_GRACE_S, Stop
from bench.simulated_am import SimulatedSkein, job_plan

skein = pytest.importorskip("skein")


def status_event(container: str, state: str, **fields) -> skein.kv.Event:
    value = registry.AgentStatus(registry.AgentState(state), **fields).to_json().encode()
    return skein.kv.Event(registry.status_key(container), skein.kv.ValueOwnerPair(value, None),
                          "PUT", None)


def running_master(**settings):
    """A master whose every task (2 ps, the chief, 1 worker) started, registered and runs;
    ``settings``: the plan's, changed from their defaults."""
    from appmaster.master.main import Master

    master = Master(SimulatedSkein(), replace(job_plan(4), **settings), "/tmp/unused")
    assert master.perform(master.job.start(time.monotonic())) is None
    for position, task in enumerate(master.job.tasks.values()):
        assert master.handle(status_event(task.container, "started", node="nm:8042")) is None
        export = registry.Export(f"h:{2000 + position}", task.container, 0).to_json().encode()
        assert master.handle(skein.kv.Event(registry.export_key(task.role, task.index),
                                            skein.kv.ValueOwnerPair(export, None),
                                            "PUT", None)) is None
    for task in master.job.tasks.values():
        assert master.handle(status_event(task.container, "running")) is None
    assert master.job.state == JobState.RUNNING
    return master


def test_the_chief_finishing_returns_the_end_from_handle() -> None:
    master = running_master()
    chief = master.job.tasks[master.plan.chief].container
    end = master.handle(status_event(chief, "exited", exit_code=0))
    assert isinstance(end, EndJob)
    assert end.status == JobState.SUCCEEDED
    assert end.diagnostics.startswith("The chief finished successfully.")
    assert master.job.state == JobState.SUCCEEDED


def test_a_deadline_passed_returns_the_end_from_on_deadline() -> None:
    master = running_master(deadline_s=5)
    assert master.on_deadline(time.monotonic()) is None
    end = master.on_deadline(time.monotonic() + 10)
    assert isinstance(end, EndJob) and end.status == JobState.FAILED
    assert "ran past its deadline of 5 s" in end.diagnostics


def test_perform_returns_the_end_after_the_actions_before_it() -> None:
    master = running_master()
    worker = master.job.tasks[("worker", 0)].container
    end = EndJob(JobState.FAILED, "stopped")
    assert master.perform([Kill(worker), end]) is end
    assert master.app.killed == [worker]


def container_end(container: str) -> skein.kv.Event:
    return skein.kv.Event(registry.task_key(container), None, "DELETE", None)


def test_a_restart_stops_the_running_tasks_and_restores_after_the_chiefs_last_copy() -> None:
    """A ps fails: the chief and the worker are asked to stop (not killed), and the new
    generation may restore (settled) only once the stopped chief's container ended."""
    master = running_master()
    containers = {key: task.container for key, task in master.job.tasks.items()}
    chief, worker = containers[master.plan.chief], containers[("worker", 0)]
    assert master.handle(status_event(containers[("ps", 0)], "exited", exit_code=1)) is None
    assert master.job.generation == 1
    assert {chief, worker} <= set(master.stopping.containers) and master.app.killed == []
    assert master.store.get(registry.stop_key(chief)) is not None
    assert master.store.get(registry.settled_key(1)) is None
    master.handle(container_end(worker))  # the worker's end settles nothing
    assert master.store.get(registry.settled_key(1)) is None
    master.handle(container_end(chief))  # the chief's last copy is done
    assert master.store.get(registry.settled_key(1)) is not None


def test_a_task_that_does_not_stop_within_its_grace_is_killed() -> None:
    master = running_master()
    containers = {key: task.container for key, task in master.job.tasks.items()}
    chief = containers[master.plan.chief]
    master.handle(status_event(containers[("ps", 0)], "exited", exit_code=1))
    assert master.seconds_to_next_deadline() is not None
    master.on_deadline(time.monotonic() + CHIEF_STOP_GRACE_S + 1)
    assert chief in master.app.killed and not master.stopping.containers
    assert master.store.get(registry.settled_key(1)) is not None


def test_the_jobs_end_awaits_the_last_copy_of_a_chief_already_asked_to_stop(
        caplog: pytest.LogCaptureFixture) -> None:
    """A stalled chief, stopped as its stall ends the job: the end awaits its agent's exit
    (its work dir copied up) as it awaits a running chief's, up to the timeout."""
    from appmaster.master.rendezvous import Store
    from appmaster.master.stopping import Stopping

    stopping = Stopping(Store(), kill=lambda container: None)
    stopping.stop(Stop("chief_1", CHIEF_STOP_GRACE_S, chief=True), 0.0)
    stopping.wind_down([], None, timeout_s=0.3)
    assert "the chief did not end within 0 s" in caplog.text
    caplog.clear()
    exited = registry.AgentStatus(registry.AgentState.EXITED, exit_code=143)
    stopping.store.put(registry.status_key("chief_1"), exited.to_json().encode())
    stopping.wind_down([], None, timeout_s=30)
    assert "did not end" not in caplog.text
