"""What the job's rules decide, for the master to do (appmaster/master/main.py ``perform``): the
actions a :class:`~appmaster.model.job.Job` returns. The job's end is one of them, its last."""

from __future__ import annotations

from dataclasses import dataclass

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.vocabulary import JobState
from appmaster.model.jobtasks import Task


@dataclass(frozen=True)
class Request:
    """Ask YARN for a container for ``task``, then tell the job with :meth:`Job.assigned`."""

    task: Task
    generation: int
    # given back while the job waited for the queue: no host is asked for in particular (the
    # one it had may be another application's by now)
    anywhere: bool = False


@dataclass(frozen=True)
class Kill:
    """Stop a container whose end the job no longer waits for."""

    container: str


# How long a stopped task is given before its container is killed: the script's SIGTERM grace
# (appmaster/agent/processgroup.py, 5 s) and the agent's end; the chief's also its last copy
# of the work dir to HDFS (appmaster/agent/taskdir.py, up to 120 s).
STOP_GRACE_S = 30.0
CHIEF_STOP_GRACE_S = 150.0


@dataclass(frozen=True)
class Stop:
    """End a running task's container (a healthy or a stalled one) the gentle way: its
    agent stops the script (SIGTERM, then SIGKILL after a grace), the chief's copies its
    work dir to HDFS in full, then it exits; killed if it has not ended ``grace_s`` later.
    A stopped chief's copy is awaited before the next generation restores
    (registry.settled_key)."""

    container: str
    grace_s: float = STOP_GRACE_S
    chief: bool = False


@dataclass(frozen=True)
class Fence:
    """Take a lost task's registry entry away: if its host comes back, its agent finds it
    gone and ends its script, so an old task never rejoins the job."""

    container: str


@dataclass(frozen=True)
class PublishSpec:
    generation: int
    spec: ClusterSpec


@dataclass(frozen=True)
class ShowTensorBoard:
    address: str
    path: str = ""  # the secret path its guard forwards (appmaster/common/pageguard.py): not shown


@dataclass(frozen=True)
class DumpStacks:
    """Ask every process of every task of ``generation`` to write its threads' stacks to
    its stderr log (the stall watchdog fired): ``why`` says so in the agents' logs."""

    generation: int
    why: str


@dataclass(frozen=True)
class TrainingDone:
    """Tell the evaluator that training ended: the last checkpoint is on HDFS."""


@dataclass(frozen=True)
class FlexAnswer:
    """The job's answer to ``tfyarn flex`` (request ``request``): done, or why not."""

    request: str
    accepted: bool
    text: str


@dataclass(frozen=True)
class EndJob:
    status: JobState  # SUCCEEDED or FAILED
    diagnostics: str


Action = (Request | Kill | Stop | Fence | PublishSpec | ShowTensorBoard | DumpStacks
          | TrainingDone | FlexAnswer | EndJob)
