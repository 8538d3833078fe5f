"""The job's rules while it waits for the queue: on its way to running, a job that holds part
of its containers while the rest do not come gives back what it holds and withdraws what it
asked (its tasks go QUEUED), then asks for them again after a backoff (queuewait.py's rounds
and their timing). An object handed the job's core (jobcore.py), like the deadlines."""

from __future__ import annotations

import logging

from appmaster.common.clusterview import ClusterView, QueueStanding, Resources, partition_name
from appmaster.common.settings import ALLOCATION_HOLD
from appmaster.common.vocabulary import WAITING, JobState, TaskState
from appmaster.model.history import Mark
from appmaster.model.jobactions import EndJob, Kill
from appmaster.model.jobcore import JobCore
from appmaster.model.jobtasks import GIVEN_BACK

log = logging.getLogger("tfyarn.master")

HOLDING = (TaskState.ALLOCATED, TaskState.STARTED, TaskState.REGISTERED)
GIVEN_BACK_OUTCOME = "given back: waiting for the queue"
# A partition whose every node that could hold a role's container is gone (lost, unhealthy,
# shut down, decommissioned) this long, while tasks wait for one: the job fails with the
# cluster's reason. A NodeManager restarting comes back well within it.
NODES_GONE_S = 120.0


class QueueRules:
    """When the job gives back part of a gang, and asks for it again."""

    def __init__(self, core: JobCore) -> None:
        self.core = core
        self.table = core.table
        self.wait = core.queue_wait
        self.in_queue: QueueStanding | None = None  # the queue, as the RM last said
        self.no_node_since: dict[str, float] = {}  # by role: since when no node can hold it

    def counts(self) -> tuple[int, int]:
        """(containers the cluster's tasks hold, tasks waiting for one)."""
        index = self.table.index
        return index.count(*HOLDING), index.count(*WAITING)

    def on_the_way(self) -> bool:
        """A gang's wait: the job is on its way to running (a job that trains already
        waits for one replacement, not for the queue's room for all of it)."""
        return self.core.state in (JobState.STARTING, JobState.RESTARTING)

    def given(self, now: float) -> None:
        """A container came: the gang is on its way. Once none waits, it was given all."""
        self.wait.given(now)
        if not self.table.index.count(*WAITING, TaskState.QUEUED):
            self.core.clock.mark_once("all given", now)

    def due(self, now: float) -> bool:
        """Whether a decision is due (the master then asks YARN which requests it met)."""
        if not self.on_the_way():
            return False
        return self.wait.ask_again_due(now) or self.wait.release_due(now, *self.counts())

    def next_deadline(self) -> float | None:
        return self.wait.next_deadline(*self.counts()) if self.on_the_way() else None

    def check(self, now: float) -> None:
        """Give back a partial hold past its time, or ask again after the backoff."""
        if not self.on_the_way():
            return
        if self.wait.ask_again_due(now):
            self._ask_again(now)
            return
        holding, waiting = self.counts()
        if self.wait.release_due(now, holding, waiting):
            self._give_back(now, holding, waiting)

    def waits(self) -> bool:
        """Whether some task waits for a container (or was given back): what the cluster
        says then matters."""
        return bool(self.table.index.count(*WAITING, TaskState.QUEUED))

    def on_cluster(self, now: float, nodes: ClusterView,
                   standing: QueueStanding | None) -> EndJob | None:
        """What the RM says of the cluster while tasks wait: the queue (for the view), and
        the nodes. A role whose waiting tasks no active node could ever hold, for
        NODES_GONE_S, ends the job with the cluster's reason."""
        self.in_queue = standing
        waiting = {t.role for t in self.table.index.in_state(*WAITING, TaskState.QUEUED)}
        for role in self.core.plan.roles:
            if role.name not in waiting:
                self.no_node_since.pop(role.name, None)
                continue
            size = Resources(role.memory_mb, role.vcores, role.gpus)
            label = role.label or ""
            if any(size.fits_in(n.total) for n in nodes.active_nodes(label)):
                self.no_node_since.pop(role.name, None)
                continue
            since = self.no_node_since.setdefault(role.name, now)
            if now - since >= NODES_GONE_S:
                return EndJob(JobState.FAILED, gone_text(role.name, size, label, nodes,
                                                         now - since))
        return None

    def view(self, now: float) -> dict | None:
        """Where the job's wait for the queue stands, for its view: None once every
        container came and holds its files (or while it trains)."""
        index = self.table.index
        waiting, queued = index.count(*WAITING), index.count(TaskState.QUEUED)
        localizing = index.in_state(TaskState.ALLOCATED)
        if not self.on_the_way() or not (waiting or queued or localizing):
            return None
        of = index.live()
        heard = [t.localized for t in localizing if t.localized]
        return {"given": of - waiting - queued, "of": of,
                "localizing": len(localizing),
                # bytes of their files on their nodes, of all: the NodeManagers' word, for
                # those whose word came (None: none yet, or skein's stock AppMaster)
                "localized_bytes": [sum(there for there, _ in heard),
                                    sum(in_all for _, in_all in heard)] if heard else None,
                "waited_s": now - self.core.clock.requested_at, **self.wait.to_dict(now),
                "cluster": self.in_queue.line() if self.in_queue else None}

    def _give_back(self, now: float, holding: int, waiting: int) -> None:
        again = self.wait.release(now, holding)
        for task in self.table.index.in_state(*GIVEN_BACK):
            self.core.drop(task.container, now, GIVEN_BACK_OUTCOME)
            self.core.actions.append(Kill(task.container))  # a request is withdrawn
            self.table.move(task, TaskState.QUEUED, address=None)
        self.core.note(now, Mark.QUEUE, (
            f"waiting for the queue: held {holding} of {holding + waiting} containers with "
            f"none coming for {self.wait.hold_s:.0f} s ({ALLOCATION_HOLD.key}): gave "
            f"them back for other applications (round {self.wait.rounds}); asking again in "
            f"{again - now:.0f} s"))

    def _ask_again(self, now: float) -> None:
        queued = self.table.index.in_state(TaskState.QUEUED)
        log.info("asking again for the %d containers given back %d time(s)", len(queued),
                 self.wait.rounds)
        for task in queued:
            task.asked_again = True  # the allocation timeout still counts from the first ask
            self.core.request(task, now, anywhere=True)
        self.wait.asked(now)


def gone_text(role: str, size: Resources, label: str, nodes: ClusterView,
              for_s: float) -> str:
    """Why a waiting role's containers can never come: the partition's nodes, as YARN says
    they are."""
    there = [n for n in nodes.nodes if n.label == label]
    states = "; ".join(n.standing + ("" if size.fits_in(n.total) else f", too small: {n.total}")
                       for n in there) or "no node at all"
    return (f"No active node of {partition_name(label)} can hold a {role} container ({size}) "
            f"any more, for {for_s:.0f} s while the job waited for it: the cluster changed "
            f"since the job was submitted. YARN's nodes there: {states}. Fix: bring the "
            "nodes back (or ask the cluster's administrators), or submit again with a node "
            "label and container sizes the cluster has.")
