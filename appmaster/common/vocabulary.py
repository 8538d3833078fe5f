"""The words a job is described in: its roles, its tasks' states and its own state.

One place for them, used by the master, the agent, the job page and the CLI. The values are
what the JSON views show (each is a ``str`` equal to its value), so a view read back from
JSON and one built in the master read the same. Only the standard library: this module runs
inside YARN containers, on any Python from 3.10.
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A ``str`` that prints as its value (``enum.StrEnum`` only came with Python 3.11)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Role(Word):
    """The components of resources.json (Slider's names), and tfyarn's TensorBoard."""

    PS = "ps"
    CHIEFWORKER = "chiefworker"
    WORKER = "worker"
    TENSORBOARD = "tensorboard"  # beside the TensorFlow cluster, not in its spec
    EVALUATOR = "evaluator"  # beside it too: evaluates each checkpoint the chief saves


# The roles of the TensorFlow cluster, in the order its spec lists them.
TF_ROLES = (Role.PS, Role.CHIEFWORKER, Role.WORKER)


class Framework(Word):
    """What the tasks' processes are told of their cluster (site.global.framework)."""

    TENSORFLOW = "tensorflow"  # Slider's flags and TF_CONFIG
    PYTORCH = "pytorch"  # torchrun's environment (torch.distributed's env://)
    JAX = "jax"  # jax.distributed's and keras.distribution's environment


class FailurePolicy(Word):
    """What a component's failed task does (yarn.container.failure.policy)."""

    RESTART = "restart"  # replaced (or the cluster restarted) within the failure threshold
    FATAL = "fatal"  # the job fails
    IGNORE = "ignore"  # dropped, the job goes on: workers and the evaluator only


class SuccessPolicy(Word):
    """What ends a job SUCCEEDED (site.global.success.policy)."""

    CHIEF = "chief"  # the chief's exit 0
    ALL_WORKERS = "all-workers"  # that of every worker too


class TaskState(Word):
    """Where one task stands, from its container request to its end (each state's meaning:
    appmaster/page/view.py's ``STATE_MEANINGS``). The moves between them, and why each is
    made, are appmaster/model/jobtasks.py's table (``MOVES``)."""

    # Asked of YARN, not given yet; the state says why it was asked for.
    REQUESTED = "requested"
    REPLACING = "replacing"
    LOST = "lost"
    PREEMPTED = "preempted"
    STALLED = "stalled"
    # Neither given nor asked for: given back while the rest of the job could not come.
    QUEUED = "queued"
    # Given, on its way to its script.
    ALLOCATED = "allocated"
    STARTED = "started"
    REGISTERED = "registered"
    RUNNING = "running"
    # Its container ended otherwise than with success: judged within seconds.
    KILLED = "killed"
    FAILING = "failing"
    # Ended.
    FINISHED = "finished"
    FAILED = "failed"
    STOPPED = "stopped"

    @property
    def ended(self) -> bool:
        return self in (TaskState.FINISHED, TaskState.FAILED, TaskState.STOPPED)

    @property
    def waiting(self) -> bool:
        """Asked of YARN and not given yet, whatever the reason it was asked for."""
        return self in WAITING


# The states of a task whose container YARN has not given yet.
WAITING = (TaskState.REQUESTED, TaskState.REPLACING, TaskState.LOST, TaskState.PREEMPTED,
           TaskState.STALLED)

# How far each state got along the way, for the per-role counts the CLI prints. A STOPPED
# task got as far as the state it was stopped in (the view's row says which): on its own,
# the state says only that it was asked for.
STAGES = ("requested", "allocated", "registered", "running", "finished")
STAGES_REACHED = {
    **dict.fromkeys(WAITING, STAGES[:1]), TaskState.QUEUED: STAGES[:1],
    TaskState.ALLOCATED: STAGES[:2],
    TaskState.STARTED: STAGES[:2],
    TaskState.REGISTERED: STAGES[:3], TaskState.RUNNING: STAGES[:4],
    TaskState.KILLED: STAGES[:1], TaskState.FAILING: STAGES[:1],
    TaskState.FINISHED: STAGES, TaskState.FAILED: STAGES[:1], TaskState.STOPPED: STAGES[:1],
}


class JobState(Word):
    """The job as a whole; the last two are YARN's final statuses."""

    STARTING = "STARTING"  # generation 0 on its way to every task running
    RUNNING = "RUNNING"  # every task of the generation runs
    RESTARTING = "RESTARTING"  # a new generation on its way after a ps or chief failed
    EVALUATING = "EVALUATING"  # training done: the evaluator evaluates the last checkpoint
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
