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

from appmaster.common import frameworks
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import JobState, Role
from appmaster.model.history import Mark
from appmaster.model.jobcore import JobCore
from appmaster.model.jobfailures import FailureRules

log = logging.getLogger("tfyarn.master")

def flex_refusal(plan: JobPlan, state: JobState, role: str, count: int) -> str | None:
    """Why the job cannot flex ``role`` to ``count`` now; None: it can. What may change is
    the framework's (appmaster/common/frameworks/: flex_roles), said in its words."""
    traits = frameworks.of(plan.framework)
    cluster, flexible = traits.words.cluster, traits.flex_roles
    if role == Role.CHIEFWORKER:
        return (f"the {Role.CHIEFWORKER} is one task, {traits.words.chief}: there is exactly 1; "
                "flex the workers instead")
    if role in (Role.EVALUATOR, Role.TENSORBOARD):
        return (f"the {role} runs beside the {cluster}, 0 or 1 as resources.json gives it; "
                f"flex changes the {cluster}'s {' and '.join(flexible)}s")
    if role not in flexible:
        return f"no role {role!r} to flex in a {traits.title} job: flex takes {', '.join(flexible)}"
    current = plan.role(role)
    if current is None:
        return (f"the job started without {role}s: its script was not written for them, "
                f"and the {cluster} cannot gain a role (give {role} in resources.json "
                "for the next job)")
    if count < 1:
        chief = f" (worker 0 is {traits.words.chief}: the job has no chiefworker)" if (
            role == Role.WORKER and plan.role(Role.CHIEFWORKER) is None) else ""
        return f"at least 1 {role}: the {cluster} keeps each of its roles{chief}"
    if count == current.instances:
        return f"the job already has {count} {role}(s)"
    if state != JobState.RUNNING:
        return (f"the job is {state.value.lower()}: flex once every task runs (a new "
                f"generation starts from a running one's {traits.words.checkpoint})")
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
