"""What the job's rules share: the plan and the task table, where the job stands (its
generation, its state, the cluster spec), what it keeps over time (history, start-up phases,
restarts), the actions decided for the event at hand, and the steps every rule takes: ask for
a task's container, stop waiting on a container, note a restart.

The rules (job.py's way to running and to success, jobfailures.py's failures, jobdeadlines.py's
deadlines) are objects handed this core; they call its public steps and each other's public
methods, never reach into one another."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from appmaster.common import frameworks
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.base import Words
from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import ALLOCATION_HOLD
from appmaster.common.vocabulary import JobState, TaskState
from appmaster.model.history import History
from appmaster.model.jobactions import Action, Request
from appmaster.model.jobmessages import restored_line, success_message
from appmaster.model.jobtasks import Task, TaskTable
from appmaster.model.phases import PhaseClock
from appmaster.model.queuewait import QueueWait

log = logging.getLogger("tfyarn.master")


class JobCore:
    """One job's shared state, and the steps its rules take on it."""

    def __init__(self, plan: JobPlan, now: float, am_attempt: int = 1,
                 draw: Callable[[], float] = random.random) -> None:
        self.plan = plan
        self.am_attempt = am_attempt
        self.table = TaskTable(plan, am_attempt)
        self.generation = 0
        self.state = JobState.STARTING
        self.spec: ClusterSpec | None = None
        self.started_at = now
        self.history = History()  # curves, faults and containers over time, bounded
        self.clock = PhaseClock()
        # part of the job's containers held while the rest do not come (queuewait.py)
        self.queue_wait = QueueWait(plan.value(ALLOCATION_HOLD), draw)
        # (when, how many): the containers the RM last said it holds the job's asks for
        self.pending_heard: tuple[float, int] | None = None
        self.restarts: list[str] = []  # one line per restart, for diagnostics and status
        self.restore_told = 0  # the last generation whose restore its restart line tells
        self.attempt_restore: str | None = None  # what a later AM attempt's chief restored
        self.actions: list[Action] = []  # decided for the event at hand

    def request(self, task: Task, now: float, why: TaskState | None = None,
                anywhere: bool = False) -> None:
        """Ask YARN for a container for ``task`` (in this generation); it waits in ``why``
        (REQUESTED, REPLACING, LOST, PREEMPTED), or, if not given, as it waited already (a
        request made again), else REQUESTED. ``anywhere``: on no host in particular."""
        self.table.move(task, why or self.table.waiting_again(task))
        task.requested_at = now
        self.actions.append(Request(task, self.generation, anywhere))

    def request_all(self, now: float) -> None:
        """Every task's container, role by role in priority order (YARN keeps FIFO)."""
        self.clock.restart(now)
        self.queue_wait.asked(now)
        for role in self.plan.roles:
            for index in range(role.instances):
                self.request(self.table.tasks[(role.name, index)], now)
        table = self.table
        for side in (table.tensorboard, table.evaluator):  # once: a restart leaves them be
            if side and side.container not in table.by_container and not side.state.ended:
                self.request(side, now)
        log.info("generation %d: requested %d containers (%s)", self.generation,
                 len(table.tasks), ", ".join(f"{role.instances} {role.name}"
                                             for role in self.plan.roles))

    def drop(self, container: str, now: float, outcome: str) -> Task | None:
        """The job stops waiting on ``container``: its later words are ignored. ``outcome``:
        how it ended, for the timeline."""
        self.table.forget(container)
        self.history.ended(container, outcome, now)
        return self.table.by_container.pop(container, None)

    def note(self, now: float, kind: str, line: str) -> None:
        """A restart: a line for the diagnostics and status, a mark on the time axis."""
        self.restarts.append(line)
        self.history.mark(now, kind, line)

    @property
    def words(self) -> Words:
        """How the job's framework speaks of it (the chief, its checkpoints)."""
        return frameworks.of(self.plan.framework).words

    def note_attempt_restore(self, mirror: dict) -> None:
        """What a later AppMaster attempt's first chief restored, for the success message."""
        if mirror.get("restore_done") and self.am_attempt > 1 and self.attempt_restore is None:
            self.attempt_restore = restored_line(mirror)

    def success(self, evaluation: str = "") -> str:
        """The diagnostics of a job that succeeded."""
        return success_message(self.words, self.clock, self.am_attempt, self.restarts,
                               evaluation, self.attempt_restore)
