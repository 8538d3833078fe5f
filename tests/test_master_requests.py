"""How the master asks YARN for containers (issue 37, "start like the floor"): the skein spec
gives every role its instances, so skein asks for every container as its AppMaster registers;
the master adopts them at its start and asks only for what it was not given, and every later
ask (a replacement, a new generation) role by role in priority order, one call per role.
Driven with bench/simulated_am's in-memory skein: no YARN, no agents."""

from __future__ import annotations

import time

import pytest

from appmaster.common import registry
from appmaster.common.jobplan import JobPlan
from appmaster.model.jobfailures import FAILURE_SETTLE_S
from bench.simulated_am import SimulatedSkein, job_plan

skein = pytest.importorskip("skein")

WORK_DIR = "/tmp/unused"


def started_master(plan: JobPlan, from_spec: dict[str, int]):
    """A master started on a skein that asked for ``from_spec`` containers per role."""
    from appmaster.master.main import Master

    app = SimulatedSkein(from_spec)
    master = Master(app, plan, WORK_DIR)
    assert master.start(time.monotonic()) is None
    return master, app


def every_role(plan: JobPlan) -> dict[str, int]:
    return {role.name: role.instances for role in plan.roles}


def status(master, container: str, state: str, now: float, **fields) -> None:
    value = registry.AgentStatus(registry.AgentState(state), **fields).to_json().encode()
    event = skein.kv.Event(registry.status_key(container), skein.kv.ValueOwnerPair(value, None),
                           "PUT", None)
    assert master.handle(event) is None


def everyone_running(master) -> None:
    now = time.monotonic()
    for position, task in enumerate(master.job.tasks.values()):
        status(master, task.container, "started", now, node=f"nm{position % 3}:8042")
        export = registry.Export(f"h:{2000 + position}", task.container, 0).to_json().encode()
        master.handle(skein.kv.Event(registry.export_key(task.role, task.index),
                                     skein.kv.ValueOwnerPair(export, None), "PUT", None))
    for task in master.job.tasks.values():
        status(master, task.container, "running", now)


def test_every_container_skein_asked_for_at_its_start_is_adopted_and_none_asked_again() -> None:
    plan = job_plan(8)
    master, app = started_master(plan, every_role(plan))
    assert app.asks == []
    assert {key: task.container for key, task in master.job.tasks.items()} == {
        (role, index): f"{role}_{index}" for role, index in plan.task_keys()}
    for task in master.job.tasks.values():  # what each agent waits for is there
        assert master.store.get(registry.task_key(task.container))


def test_roles_skein_was_not_given_are_asked_for_in_priority_order_one_call_each() -> None:
    plan = job_plan(8)  # 2 ps (priority 1), the chief (2), 5 workers (3)
    master, app = started_master(plan, {"ps": 2})
    assert app.asks == [("chiefworker", 1), ("worker", 5)]
    assert master.job.tasks[("worker", 4)].container == "worker_4"


def test_a_new_generation_asks_every_role_again_in_priority_order() -> None:
    plan = job_plan(8)
    master, app = started_master(plan, every_role(plan))
    everyone_running(master)
    ps = master.job.tasks[("ps", 0)].container
    status(master, ps, "exited", time.monotonic(), exit_code=1)
    assert master.job.generation == 1
    assert app.asks == [("ps", 2), ("chiefworker", 1), ("worker", 5)]  # none adopted
    assert master.job.tasks[("ps", 0)].container == "ps_2"


def test_a_failed_workers_replacement_is_asked_for_alone() -> None:
    plan = job_plan(8)
    master, app = started_master(plan, every_role(plan))
    everyone_running(master)
    status(master, master.job.tasks[("worker", 2)].container, "exited", time.monotonic(),
           exit_code=1)
    assert master.on_deadline(time.monotonic() + FAILURE_SETTLE_S + 1) is None
    assert app.asks == [("worker", 1)]
    assert master.job.tasks[("worker", 2)].container == "worker_5"

