"""The messages a user reads, in the job's diagnostics and status: why containers were not
given, why tasks did not register, how a task failed, why the job stopped or succeeded. Their
words are compared by the integration tests: a change here is a change users see. Functions of
the plan and of what the job counted, called by the rules."""

from __future__ import annotations

import re

from appmaster.common.frameworks.base import Words
from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import FAILURE_THRESHOLD, MEMORY, REGISTRATION_TIMEOUT
from appmaster.common.vocabulary import FailurePolicy, TaskState
from appmaster.model.jobtasks import Task
from appmaster.model.phases import PhaseClock
from appmaster.model.verdicts import ContainerEnd


def describe_request(plan: JobPlan, task: Task) -> str:
    role = plan.role(task.role)
    gpus = f", {role.gpus} yarn.io/gpu" if role.gpus else ""
    partition = f"node label {role.label!r}" if role.label else "the default partition"
    return (f"asked for {role.memory_mb} MB, {role.vcores} vcore(s){gpus} in {partition}; "
            "no node there has that much free for this queue (check `yarn node -list "
            "-showDetails` and the queue's capacity for that label)")


def describe_unregistered(task: Task) -> str:
    """A task given its container (one still waiting for it waits for the queue, which the
    registration timeout does not bound) that did not register."""
    if task.state == TaskState.ALLOCATED:
        return (f"container {task.container} was given on {task.node} but its agent never "
                "started: YARN was still localizing its files (a large packed env takes "
                f"minutes the first time on a node; raise {REGISTRATION_TIMEOUT.key})")
    return (f"container {task.container} ({task.yarn_container_id}) started on "
            f"{task.node} but its agent never exported an address")


def failure_text(task: Task, failure: str) -> str:
    return f"{task.name} (attempt {task.attempt}) failed {failure or '(no report)'}"


def memory_text(plan: JobPlan, task: Task, end: ContainerEnd, failure: str) -> str:
    """What YARN's memory verdict means and the fix: the role's yarn.memory, a value."""
    role = plan.role(task.role)
    limit = f"{end.limit_mb:.0f} MB" if end.limit_mb else f"{role.memory_mb} MB"
    used = f"{end.used_mb:.0f} MB" if end.used_mb else "more"
    suggested = end.suggested_memory_mb(role.memory_mb)
    return (f"{task.name} (attempt {task.attempt}) was killed by YARN for memory: its "
            f"processes used {used} of {end.memory_kind or 'physical'} memory, over the "
            f"{limit} its container was given {failure}\nFix: raise \"{MEMORY.key}\" of "
            f"component \"{task.role}\" in resources.json from {role.memory_mb} to "
            f"{suggested} or more (what the script holds at its peak, with room to spare).")


def over_threshold_message(plan: JobPlan, task: Task, failures: int, reason: str) -> str:
    role = plan.role(task.role)
    if role.failure_policy == FailurePolicy.FATAL:
        rule = "its failure policy is fatal"
    else:
        rule = (f"that is more than its {FAILURE_THRESHOLD.key} of "
                f"{role.failure_threshold}")
    if plan.failure_window_seconds > 0 and role.failure_policy != FailurePolicy.FATAL:
        window = plan.failure_window_seconds
        span = f"{window / 3600:g} h" if window >= 3600 else f"{window / 60:g} min"
        rule += f" within one failure window ({span})"
    return (f"Component {task.role} failed {failures} time(s); {rule}. "
            f"The job is stopped.\n{reason}")


def success_message(words: Words, clock: PhaseClock, am_attempt: int, restarts: list[str],
                    evaluation: str = "", attempt_restore: str | None = None) -> str:
    """``attempt_restore``: what a later AppMaster attempt's first chief restored (None: not
    heard), so that the message claims no checkpoint it lacked."""
    text = f"{words.chief_first} finished successfully. {clock.summary()}."
    if evaluation:
        text += f" {evaluation}"
    if am_attempt > 1:
        text += (f" AppMaster attempt {am_attempt}: the earlier attempt was lost and "
                 f"every task started again, {words.chief} "
                 f"{attempt_restore or 'restoring what the work dir held'}.")
    if restarts:
        text += f" Restarts ({len(restarts)}): " + "; ".join(restarts) + "."
    return text


def preempted_line(task: Task, words: Words) -> str:
    """YARN's notice that it will preempt ``task``'s container."""
    return (f"{task.name} (attempt {task.attempt}) told by YARN it will be preempted: "
            f"{words.chief} may save a {words.checkpoint} first")


def restored_line(mirror: dict) -> str:
    """What a restarted generation's chief restored (its mirror's report, agent/mirror.py):
    "restored snapshot.pt of 12:03:10", "restored model.ckpt-100 of 12:03:10 (step 100)",
    or "restored nothing: the job starts over"."""
    restored = mirror.get("restored")
    if not restored:
        return "restored nothing: the job starts over"
    text = f"restored {restored}"
    if mirror.get("restored_written"):
        text += f" of {mirror['restored_written']}"
    if step := re.search(r"-(\d+)$", restored):  # TensorFlow's model.ckpt-<step>
        text += f" (step {step.group(1)})"
    return text


def restart_line(task: Task, how: str, alone: bool, generation: int) -> str:
    """``alone``: the task is replaced by itself, not with the whole cluster."""
    if alone:
        return (f"{task.name} replaced (attempt {task.attempt + 1})" if how == "failed" else
                f"{task.name} {how}: replaced (attempt {task.attempt + 1})")
    return f"{task.name} {how}: cluster restarted as generation {generation + 1}"
