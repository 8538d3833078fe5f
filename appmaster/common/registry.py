"""Key names in the job's registry: the master's rendezvous (appmaster/master/rendezvous.py), where
the agents write and read, and skein's key-value store, which keeps what only YARN can tell.

- ``task/<container>``: the task a container runs ({role, index, generation, attempt}).
  The agent reads it from the rendezvous; in skein's registry the same key is owned by the
  container: YARN's end of the container deletes it, which is how the master hears of every
  container's end without polling.
- ``exports/<role>/<index>``: the task's {address, container, generation} (TensorBoard's
  also its page's secret path, appmaster/common/pageguard.py), owned by the container. Slider's
  "exports" under the same name.
- ``spec/<generation>``: the cluster spec, published once every task of a generation exported
  (also shown in skein's registry); ``spec/latest``: the newest with its generation, for the
  evaluator, which waits for any generation from its own on.
- ``status/<container>``: the agent's last word on its task (:class:`AgentStatus`: started,
  registered, running, exited).
- ``tail/<container>``: the last stderr lines of a task that failed, for diagnostics.
- ``mirror/<container>``: how the task's local work dir stands against HDFS (mirror.py).
- ``alive/<container>``: the agent's heartbeat, a POST every few seconds that raises its
  counter in the rendezvous (and answers whether it still holds its task); the master reads
  them all at once and declares a task lost when its counter stops.
- ``progress/<container>``: how far its training got, from its event files (progress.py).
- ``steps/<container>``: its processes' training steps ({"steps": [one per process, None
  for a process that reported none]}), as they change (appmaster/agent/steps.py).
- ``stacks/request``: the master's request that every process of every task write its
  threads' stacks to its stderr (the stall watchdog fired): its value says why.
- ``training/done``: written once the chief finished: the evaluator's cue to evaluate the
  last checkpoint and end.
- ``flex/request/<id>`` (skein's store): ``tfyarn flex``'s {role, count}; the master answers
  at ``flex/answer/<id>`` ({accepted, text}) once the job decided (appmaster/model/jobflex.py).
- ``tokens/hdfs``: the newest HDFS delegation tokens the master obtained with the job's keytab
  (appmaster/common/hdfstokens.py); a heartbeat's answer carries their version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from appmaster.common.vocabulary import Role, Word

# The agent's exit code when the script could not bind its port (another process listens
# there): the master restarts the task on a new port without counting a failure.
PORT_TAKEN_EXIT = 75
PORT_TAKEN_SIGNS = ("Address already in use", "Could not start gRPC server",
                    "Failed to add port to server")
# The agent's exit code when the job's work dir on HDFS could not be read before the start:
# starting without the checkpoint would lose the job's progress, so the task fails instead.
STORAGE_FAILED_EXIT = 74
# The agent's exit code when the job's interpreter does not exist on its node: a shell's
# "command not found", said by the node's own Python (appspec.interpreter_check).
NO_INTERPRETER_EXIT = 127
# `python3 -m appmaster.agent.main --cannot-start REASON`: then the node's own Python (this
# module needs only the standard library until the script starts) only tells the master why.
CANNOT_START = "--cannot-start"
# The agent's exit code when it found itself superseded (the master declared its task lost
# while its host was cut off) or cut off from the master longer than the timeout: it ends
# its script at once, so an old task never rejoins the job.
STALE_EXIT = 76


@dataclass(frozen=True)
class TaskAssignment:
    role: Role
    index: int
    generation: int
    attempt: int  # how many times this task was started before
    previous_address: str | None = None  # where it listened before: reused when free

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskAssignment:
        data = json.loads(text)
        return cls(**{**data, "role": Role(data["role"])})


@dataclass(frozen=True)
class Export:
    address: str  # host:port the task's TensorFlow server will listen on
    container: str
    generation: int
    # TensorBoard's: the secret path its guard forwards, for skein's UI only (pageguard.py)
    path: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> Export:
        return cls(**json.loads(text))


class AgentState(Word):
    """Where an agent says its task stands (``status/<container>``'s ``state``)."""

    STARTED = "started"  # the agent runs, and says where
    REGISTERED = "registered"  # its address exported
    RUNNING = "running"  # its script started
    EXITED = "exited"  # its script ended, or never could start


@dataclass(frozen=True)
class AgentStatus:
    """An agent's last word on its task. Only the fields it knows travel: a field left
    ``None`` is not written, so each state's message carries the keys it always did."""

    state: AgentState
    time: float | None = None  # when the agent said it (its clock)
    address: str | None = None  # registered, running, exited: where its server listens
    exit_code: int | None = None  # exited
    gpus: dict | None = None  # registered (what it holds), or exited for want of them
    yarn_container_id: str | None = None  # started: where, in YARN's words
    node: str | None = None  # started: the NodeManager's host:http-port
    user: str | None = None  # started: who its script runs as

    def to_dict(self) -> dict:
        return {name: value for name in _STATUS_FIELDS
                if (value := getattr(self, name)) is not None}

    @classmethod
    def from_dict(cls, data: dict) -> AgentStatus:
        # one per event the master hears: the field names are looked up once, not per call
        return cls(AgentState(data["state"]), **{key: value for key, value in data.items()
                                                  if key in _STATUS_FIELDS and key != "state"})

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes) -> AgentStatus:
        return cls.from_dict(json.loads(text))


_STATUS_FIELDS = tuple(f.name for f in fields(AgentStatus))


def task_key(container: str) -> str:
    return f"task/{container}"


def export_key(role: str, index: int) -> str:
    return f"exports/{role}/{index}"


def spec_key(generation: int) -> str:
    return f"spec/{generation}"


def status_key(container: str) -> str:
    return f"status/{container}"


def tail_key(container: str) -> str:
    return f"tail/{container}"


def mirror_key(container: str) -> str:
    return f"mirror/{container}"


def progress_key(container: str) -> str:
    return f"progress/{container}"


def steps_key(container: str) -> str:
    return f"steps/{container}"


def notice_key(container: str) -> str:
    """YARN announced it will preempt the container: its agent tells its script."""
    return f"notice/{container}"


def stop_key(container: str) -> str:
    """tfyarn ends a healthy task (a group restart, a flex, the job's end): its agent stops
    the script with SIGTERM, copies the chief's work dir up, then exits."""
    return f"stop/{container}"


def settled_key(generation: int) -> str:
    """The work dir on HDFS is final for ``generation``: every stopped chief of the ones
    before has copied its work dir up (or was given up on). Its tasks restore after it."""
    return f"settled/{generation}"


# the AppMaster's environment: which AppMaster runs the job (tfyarn/hadoop/amjar.py's words:
# tfyarn's patched skein one, or skein's stock one and why), for the job page
APPMASTER_BUILD_ENV = "TFYARN_APPMASTER_BUILD"
# the task's environment: the file that appears when YARN announced its container's preemption
NOTICE_FILE_ENV = "TFYARN_PREEMPTION_NOTICE_FILE"
# the task's environment: the file a process writes its training step into (tfyarn/progress.py),
# and the signal on which it writes its threads' stacks (appmaster/agent/sitecustomize)
PROGRESS_FILE_ENV = "TFYARN_PROGRESS_FILE"
STACKS_SIGNAL_ENV = "TFYARN_STACKS_SIGNAL"
STACKS_KEY = "stacks/request"
# skein's key-value store, where tfyarn's patched AppMaster (tfyarn/hadoop/amjar.py) writes
# this prefix + <container> when YARN's PreemptionMessage names the container
PREEMPT_PREFIX = "tfyarn.preempt."
# ... and reads these: a role's next requests' placement, and the job's blacklist
PLACEMENT_PREFIX = "tfyarn.placement."
BLACKLIST_KEY = "tfyarn.blacklist"
# a role whose containers must not share a host (ANTI_AFFINITY_REQUIRED): in its service's env,
# so that the patched AppMaster asks for its first containers apart too, before the job wrote
# the role's placement; and the prefix (+ <role>) the AppMaster writes where the RM cannot
PLACEMENT_APART_ENV = "TFYARN_ANTI_AFFINITY"
CONSTRAINTS_OFF_PREFIX = "tfyarn.constraints-off."
# ... and this prefix + <container>: how far YARN's localization of its files got on its node,
# as its NodeManager says: "<bytes there> <bytes in all> <files there> <files in all>"
LOCALIZED_PREFIX = "tfyarn.localized."
TRAINING_DONE_KEY = "training/done"
LATEST_SPEC_KEY = "spec/latest"
TOKENS_KEY = "tokens/hdfs"
FLEX_REQUEST_PREFIX = "flex/request/"


def flex_answer_key(request: str) -> str:
    return f"flex/answer/{request}"


def container_of(key: str) -> str:
    """``task/worker_3`` -> ``worker_3``."""
    return key.split("/", 1)[1]
