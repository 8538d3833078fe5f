"""The job as people see it: one typed task table, built by the master, read by every view.

The master builds a :class:`JobView` from its :class:`~appmaster.model.job.Job`; the web page
serves it as JSON (``tasks.json``) and logs it when the job ends; `tfyarn status`, the
tracking page and the CLI's progress lines read it back with :meth:`JobView.from_dict`.
Only the standard library: this module runs inside YARN containers.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field, fields

from appmaster.common import frameworks
from appmaster.common.frameworks.base import GROUP_ROLES, world_size_text
from appmaster.common.settings import ALLOCATION_HOLD, STALL_TIMEOUT
from appmaster.common.vocabulary import STAGES_REACHED, Role, TaskState
from appmaster.model import stall, verdicts
from appmaster.model.job import Job, Task

# What each task state tells a user: `tfyarn status`, `--state` and the job page say the
# states, the commands' reference (docs/reference/cli.md) lists them with these. Here, not
# in the vocabulary: they name settings by their declarations, which read its words.
STATE_MEANINGS: dict[TaskState, str] = {
    TaskState.REQUESTED: "its container is asked of YARN: the job's first request, or a new "
                         "generation's",
    TaskState.REPLACING: "its container failed (counted against its role's failure "
                         "threshold): a new one is asked of YARN",
    TaskState.LOST: "its agent went silent past the heartbeat timeout, or YARN lost its node "
                    "(counted): a new container is asked of YARN",
    TaskState.PREEMPTED: "YARN took its container back (preempted for another queue, or "
                         "killed by the ResourceManager; not counted): asked for again",
    TaskState.STALLED: "its script made no training progress for the stall timeout "
                       f"({STALL_TIMEOUT.key}): every rank wrote its threads' stacks "
                       "to its logs, and it is counted as a failure and restarted (its "
                       "whole group, for a PyTorch, JAX or MultiWorkerMirrored job)",
    TaskState.QUEUED: "part of the job's containers could not come: it gave its container "
                      "back (or withdrew its request), so that the queue's other "
                      "applications may use it, and the job asks for every such task again "
                      f"after a random backoff ({ALLOCATION_HOLD.key})",
    TaskState.ALLOCATED: "YARN gave its container; its files (the packed env...) are being "
                         "localized on the node",
    TaskState.STARTED: "its agent runs in the container and holds the task's port",
    TaskState.REGISTERED: "its address is exported; the cluster spec waits for the others",
    TaskState.RUNNING: "its script runs",
    TaskState.KILLED: "its script was killed by a signal: YARN's word on why (memory, "
                      "preemption) is awaited for a few seconds before it is judged",
    TaskState.FAILING: "its script failed: it is counted and replaced within seconds, unless "
                       "a parameter server or the chief failed meanwhile (then the whole "
                       "cluster restarts, uncounted for it)",
    TaskState.FINISHED: "its script exited 0",
    TaskState.FAILED: "it failed past its role's failure threshold, or was dropped (failure "
                      "policy ignore): the job starts it no more",
    TaskState.STOPPED: "still on its way or running when the job ended: tfyarn stopped it",
}
assert set(STATE_MEANINGS) == set(TaskState)


@dataclass
class TaskRow:
    """One task as shown: where it runs, how it stands, what its agent reported."""

    role: Role
    index: int
    state: TaskState
    address: str | None = None  # host:port its TensorFlow server listens on
    container: str = ""  # skein's name for its container (``worker_3``)
    yarn_container_id: str | None = None
    node: str | None = None  # the NodeManager's host:http-port
    restarts: int = 0
    exit_code: int | None = None
    log_url: str | None = None  # its logs on its NodeManager's web UI
    mirror: dict | None = None  # its local work dir against HDFS (appmaster/agent/mirror.py)
    gpus: dict | None = None  # the GPUs its agent holds (appmaster/common/gpus.py)
    silent_s: float | None = None  # since its agent's last heartbeat was heard
    progress: dict | None = None  # its event files' newest figures (appmaster/agent/tfevents.py)
    # its containers' ends by YARN's verdict: {"failed": 1, "preempted": 2} (none: {})
    verdicts: dict[str, int] = field(default_factory=dict)
    processes: int | None = None  # the processes its container runs, where more than one
    # its training step in its container and its rate (appmaster/model/stall.py); a
    # straggler steps at under half the median rate of the job's tasks
    step: int | None = None
    steps_per_s: float | None = None
    straggler: bool = False
    stopped_in: TaskState | None = None  # stopped: the state the job's end found it in

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"

    @property
    def stages(self) -> tuple[str, ...]:
        """How far along the way it got; a stopped task, as far as it was when stopped."""
        return STAGES_REACHED[self.stopped_in or self.state]

    @classmethod
    def of(cls, task: Task, silent_s: float | None = None, processes: int = 1,
           rate: float | None = None, straggler: bool = False) -> TaskRow:
        log_url = (f"http://{task.node}/node/containerlogs/{task.yarn_container_id}/{task.user}"
                   if task.node and task.yarn_container_id and task.user else None)
        return cls(task.role, task.index, task.state, task.address, task.container,
                   task.yarn_container_id, task.node, task.attempt, task.exit_code, log_url,
                   task.mirror, task.gpus, silent_s, task.progress,
                   verdicts.counts(task.verdicts), processes if processes > 1 else None,
                   task.steps.step if task.steps else None,
                   None if rate is None else round(rate, 3), straggler, task.stopped_in)

    def to_dict(self) -> dict:
        # Field by field, not dataclasses.asdict: its deep copy of every value was most of
        # the view's cost at 1,000s of tasks (issue 28), and the job replaces a task's
        # dicts (mirror, gpus, progress) when they change, never edits them in place.
        return {name: getattr(self, name) for name in _ROW_FIELDS}

    @classmethod
    def from_dict(cls, data: dict) -> TaskRow:
        known = {f.name for f in fields(cls)}
        row = cls(**{key: value for key, value in data.items() if key in known})
        row.role, row.state = Role(row.role), TaskState(row.state)
        row.stopped_in = TaskState(row.stopped_in) if row.stopped_in else None
        return row


_ROW_FIELDS = tuple(f.name for f in fields(TaskRow))


@dataclass
class JobView:
    """The whole job: its state, every task, restarts, start-up phases, where things are."""

    app_id: str
    name: str
    state: str  # a JobState while it runs; SUCCEEDED or FAILED once it ended
    generation: int = 0
    updated: int = 0  # when the view was made, ms since the epoch
    work_dir: str | None = None
    tasks: list[TaskRow] = field(default_factory=list)
    heartbeat_timeout_s: float = 0.0
    lost_nodes: list[str] = field(default_factory=list)
    tensorboard: TaskRow | None = None
    tensorboard_url: str | None = None
    cluster_spec: dict | None = None  # {role: [host:port, ...]}
    restarts: list[str] = field(default_factory=list)  # one line each, oldest first
    phases: dict[str, float] = field(default_factory=dict)  # start-up phase -> seconds
    # how far training got (the chief's event files) and the evaluator's last metrics:
    # {step, steps_per_s, scalars, updated, evaluation: {step, scalars, updated}}
    progress: dict | None = None
    # every task's containers' ends by YARN's verdict, added up (appmaster/model/verdicts.py)
    verdicts: dict[str, int] = field(default_factory=dict)
    # training's curves, faults and every container's life over time, in wall-clock seconds
    # (appmaster/model/history.py): what the page's charts and timeline draw
    history: dict | None = None
    # while the job waits for the queue (appmaster/model/jobqueue.py): {given, of,
    # localizing, localized_bytes, waited_s, hold_s, rounds, given_back, asks_again_in_s};
    # None otherwise
    queue: dict | None = None
    # which AppMaster runs the job: tfyarn's patched skein one, or skein's stock one and why
    appmaster: str | None = None
    # the stall watchdog's word: its last firing (the stalled tasks and their step), or that
    # no task reports a step (then it judges none); "" otherwise
    watchdog: str = ""
    framework: str = "tensorflow"  # site.global.framework: the words the views speak

    @property
    def chief(self) -> TaskRow | None:
        """The task that drives training: the chief worker, or worker 0 (Slider's)."""
        chiefs = [t for t in self.tasks if t.role == Role.CHIEFWORKER]
        chiefs += [t for t in self.tasks if (t.role, t.index) == (Role.WORKER, 0)]
        return chiefs[0] if chiefs else None

    @property
    def evaluator(self) -> TaskRow | None:
        return next((t for t in self.tasks if t.role == Role.EVALUATOR), None)

    def select(self, role: str | None = None, index: int | None = None) -> list[TaskRow]:
        return [t for t in self.tasks
                if (role is None or t.role == role) and (index is None or t.index == index)]

    @classmethod
    def of(cls, job: Job, app_id: str, work_dir: str | None, now: float,
           appmaster: str | None = None) -> JobView:
        board, evaluator = job.tensorboard, job.evaluator
        tasks = [*job.tasks.values(), *([evaluator] if evaluator else [])]
        rates = job.watchdog.rates(now)
        stragglers = set(stall.stragglers(rates))
        return cls(
            app_id=app_id, name=job.plan.name, state=str(job.state), generation=job.generation,
            updated=int(time.time() * 1000), work_dir=work_dir,
            tasks=[TaskRow.of(task, job.table.silent_for(task, now),
                              job.plan.processes_per_container, rates.get(task.key),
                              task.key in stragglers) for task in tasks],
            heartbeat_timeout_s=job.plan.heartbeat_timeout_s, lost_nodes=sorted(job.lost_nodes),
            tensorboard=TaskRow.of(board) if board else None,
            tensorboard_url=f"http://{board.address}" if board and board.address else None,
            cluster_spec=job.spec.to_dict() if job.spec else None,
            restarts=list(job.restarts), phases=job.clock.seconds(),
            progress=job_progress(job), verdicts=verdicts.counts(sum(
                (task.verdicts for task in tasks), Counter())),
            history=job.history.to_dict(), queue=job.queue.view(now), appmaster=appmaster,
            watchdog=job.watchdog.summary(), framework=str(job.plan.framework))

    def to_dict(self) -> dict:
        view = {f.name: getattr(self, f.name) for f in fields(self)}
        view["tasks"] = [task.to_dict() for task in self.tasks]
        view["tensorboard"] = self.tensorboard.to_dict() if self.tensorboard else None
        return view

    @classmethod
    def from_dict(cls, data: dict) -> JobView:
        known = {f.name for f in fields(cls)}
        view = cls(**{key: value for key, value in data.items() if key in known})
        view.tasks = [TaskRow.from_dict(task) for task in data.get("tasks", [])]
        board = data.get("tensorboard")
        view.tensorboard = TaskRow.from_dict(board) if board else None
        return view


def cluster_words(view: dict) -> tuple[str, str]:
    """The published cluster as its framework speaks of it: a title and one line. A group
    of ranks: its tasks' addresses in rank order, rank 0's (where the group meets) first."""
    spec = view.get("cluster_spec")
    traits = frameworks.of(view.get("framework") or "tensorflow")
    if not traits.ranks:
        return "Cluster spec", json.dumps(spec) if spec else ""
    if not spec:
        return "Process group", ""
    addresses = [*spec.get(Role.CHIEFWORKER, []), *spec.get(Role.WORKER, [])]
    processes = max((task.get("processes") or 1 for task in view.get("tasks", [])
                     if task.get("role") in GROUP_ROLES), default=1)
    return "Process group", (f"{world_size_text(len(addresses), processes)}, its containers "
                             "in rank order, rank 0's first (where the group meets): "
                             f"{', '.join(addresses)}")


def size_of(count: float) -> str:
    units = ("B", "KB", "MB", "GB")
    step = 0
    while count >= 1024 and step < len(units) - 1:
        count, step = count / 1024, step + 1
    return f"{count:.3g} {units[step]}"


def queue_line(queue: dict) -> str:
    """What a job waiting for the queue waits for, how far it got, and the queue as the
    ResourceManager last described it (when the AppMaster could ask); once every container
    came, how much of their files YARN copied to the nodes still localizing them."""
    waiting = queue["given"] < queue["of"]
    line = (f"Waiting for the queue for {queue['waited_s']:.0f} s: {queue['given']} of "
            f"{queue['of']} containers given" if waiting else
            f"Every container given ({queue['of']}), {queue['waited_s']:.0f} s after the "
            "first request")
    if queue.get("localizing"):
        line += f" ({queue['localizing']} still localizing the job's files on their node"
        if queue.get("localized_bytes"):
            there, in_all = queue["localized_bytes"]
            line += f": {size_of(there)} of {size_of(in_all)} there"
        line += ")"
    if queue.get("asks_again_in_s") is not None:
        line += (f"; the job gave back what it held ({queue['given_back']} container(s) over "
                 f"{queue['rounds']} round(s)) for the queue's other applications and asks "
                 f"again in {queue['asks_again_in_s']:.0f} s")
    else:
        if queue["given"] and waiting:
            line += (f"; held until none came for {queue['hold_s']:.0f} s "
                     f"({ALLOCATION_HOLD.key}), then given back")
        if queue["rounds"]:
            line += f" (given back {queue['rounds']} time(s) so far)"
    return line + (f". {queue['cluster']}" if queue.get("cluster") else "")


def job_progress(job: Job) -> dict | None:
    """The chief's training figures, with the evaluator's last metrics beside them."""
    chief = job.tasks.get(job.plan.chief)
    training = dict(chief.progress) if chief and chief.progress else {}
    evaluated = job.evaluator.progress if job.evaluator else None
    if evaluated:
        training["evaluation"] = {"step": evaluated.get("evaluated_step"),
                                  "scalars": evaluated.get("scalars", {}),
                                  "updated": evaluated.get("updated")}
    return training or None
