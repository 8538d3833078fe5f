"""Flex, as Slider's `flex`: a role's count changed while the job runs. A TensorFlow cluster is
fixed once its tasks started, so the job starts a new generation with the new count, which
trains on from the newest checkpoint (the way a lost ps restarts the cluster:
jobfailures.restart_generation). The rules say what may change; the table and the plan change
together, and the generation restarts.

What may change: the workers (at least 1; worker 0 is the chief where there is no
chiefworker) and the ps (at least 1 where the job has ps: TensorFlow restores a checkpoint's
variables by name, whichever ps holds them, so a new generation places them on the new count
of ps). Not the chiefworker (exactly 1), nor the evaluator or TensorBoard (0 or 1, beside the
cluster), nor a role the job started without (its script was not written for it)."""

from __future__ import annotations

import logging
from dataclasses import replace

from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import TF_ROLES, JobState, Role
from appmaster.model.history import Mark
from appmaster.model.jobcore import JobCore
from appmaster.model.jobfailures import FailureRules

log = logging.getLogger("tfyarn.master")

FLEXIBLE = (Role.WORKER, Role.PS)


def flex_refusal(plan: JobPlan, state: JobState, role: str, count: int) -> str | None:
    """Why the job cannot flex ``role`` to ``count`` now; None: it can."""
    if role == Role.CHIEFWORKER:
        return ("the chief worker is one task that drives training: there is exactly 1; "
                "flex the workers instead")
    if role in (Role.EVALUATOR, Role.TENSORBOARD):
        return (f"the {role} runs beside the TensorFlow cluster, 0 or 1 as resources.json "
                "gives it; flex changes the cluster's roles (worker, ps)")
    if role not in TF_ROLES:
        return f"no role {role!r}: flex takes {', '.join(FLEXIBLE)}"
    current = plan.role(role)
    if current is None:
        return (f"the job started without {role}s: its script was not written for them, "
                f"and TensorFlow's cluster cannot gain a role (give {role} in resources.json "
                "for the next job)")
    if count < 1:
        chief = " (worker 0 is the chief: the job has no chiefworker)" if (
            role == Role.WORKER and plan.role(Role.CHIEFWORKER) is None) else ""
        return f"at least 1 {role}: a TensorFlow cluster keeps each of its roles{chief}"
    if count == current.instances:
        return f"the job already has {count} {role}(s)"
    if state != JobState.RUNNING:
        return (f"the job is {state.value.lower()}: flex once every task runs (a new "
                "generation starts from a running one's checkpoint)")
    return None


def flex(core: JobCore, rules: FailureRules, role: str, count: int, now: float) -> str:
    """The plan and the task table take the new count; the cluster restarts as a new
    generation from the newest checkpoint. What the job says (status, page, report)."""
    plan, table = core.plan, core.table
    current = plan.role(role)
    assert current is not None
    before = current.instances
    for index in range(count, before):  # the tasks flexed away: their containers stopped
        task = table.remove(role, index)
        if task.container in table.by_container:
            core.drop(task.container, now, f"stopped: {role} flexed to {count}")
            rules.stop(task)
    for index in range(before, count):
        table.add(Role(role), index)
    roles = tuple(replace(r, instances=count) if r.name == role else r for r in plan.roles)
    core.plan = replace(plan, roles=roles)
    line = (f"{role} flexed from {before} to {count}: cluster restarted as generation "
            f"{core.generation + 1}")
    log.info(line)
    rules.restart_generation(None, now)
    core.note(now, Mark.RESTART, line)
    return line
