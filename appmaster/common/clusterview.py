"""The cluster as pre-flight (tfyarn/submission/preflight.py) and a waiting AppMaster see it:
queues, labels, nodes and their room, from two answers of the ResourceManager's REST API (the
scheduler and the nodes). Pure functions of those answers; only the standard library."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GPU = "yarn.io/gpu"
DIMENSIONS = ("memory_mb", "vcores", "gpus")  # a container's, as Resources holds them
DEFAULT_PARTITION = ""


def partition_name(label: str) -> str:
    return f'label "{label}"' if label else "the default partition (no label)"


@dataclass(frozen=True, order=True)
class Resources:
    memory_mb: int = 0
    vcores: int = 0
    gpus: int = 0

    @classmethod
    def from_json(cls, value: Mapping | None) -> Resources:
        """The RM's resource object: memory, vCores and resourceInformations (GPUs)."""
        if not value:
            return cls()
        gpus = 0
        for info in (value.get("resourceInformations") or {}).get("resourceInformation") or []:
            if info.get("name") == GPU:
                gpus = int(info.get("value") or 0)
        return cls(int(value.get("memory") or 0), int(value.get("vCores") or 0), gpus)

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.memory_mb + other.memory_mb, self.vcores + other.vcores,
                         self.gpus + other.gpus)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.memory_mb - other.memory_mb, self.vcores - other.vcores,
                         self.gpus - other.gpus)

    def times(self, n: int) -> Resources:
        return Resources(self.memory_mb * n, self.vcores * n, self.gpus * n)

    def fits_in(self, room: Resources) -> bool:
        return not self.too_big_for(room)

    def too_big_for(self, room: Resources) -> list[str]:
        """The dimensions (memory_mb, vcores, gpus) where this is bigger than ``room``."""
        return [d for d in DIMENSIONS if getattr(self, d) > getattr(room, d)]

    def at_least(self, other: Resources) -> Resources:
        return Resources(max(self.memory_mb, other.memory_mb), max(self.vcores, other.vcores),
                         max(self.gpus, other.gpus))

    def at_most(self, other: Resources) -> Resources:
        return Resources(min(self.memory_mb, other.memory_mb), min(self.vcores, other.vcores),
                         min(self.gpus, other.gpus))

    def __str__(self) -> str:
        text = f"{self.memory_mb} MB, {self.vcores} vcore(s)"
        return text + (f", {self.gpus} GPU(s)" if self.gpus else "")


ZERO = Resources()


# ---- the cluster, from the RM's answers ----

def host_of(node_id: str) -> str:
    """A NodeManager's host, from its id (host:port)."""
    return node_id.rsplit(":", 1)[0]


@dataclass(frozen=True)
class Node:
    id: str
    state: str
    label: str  # DEFAULT_PARTITION for a node without one
    total: Resources
    available: Resources
    health: str = ""  # the NodeManager's health report, when it has something to say

    @property
    def active(self) -> bool:
        return self.state == "RUNNING"

    @property
    def host(self) -> str:
        return host_of(self.id)

    @property
    def standing(self) -> str:
        """The node as YARN says it is: its id, state and health report."""
        return f"{self.id} {self.state}" + (f" ({self.health})" if self.health else "")


@dataclass(frozen=True)
class Queue:
    path: str  # root.default
    leaf: bool
    state: str
    labels: frozenset[str]  # labels it may use ("*": any); the default partition always
    max_allocation: Resources  # per container, the queue's own cap included
    max_by_label: Mapping[str, Resources]  # what it can ever hold, per partition
    guaranteed_by_label: Mapping[str, Resources]  # its capacity, per partition
    used_by_label: Mapping[str, Resources]
    am_limit_by_label: Mapping[str, Resources]
    max_capacity_by_label: Mapping[str, float]  # absolute maximum capacity, %
    acls: Mapping[str, str]  # SUBMIT_APP / ADMINISTER_QUEUE -> "users groups" or "*"
    ordering: str = "fifo"  # which of its applications is offered containers first: fifo, fair

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def may_use(self, label: str) -> bool:
        return label == DEFAULT_PARTITION or label in self.labels or "*" in self.labels


@dataclass(frozen=True)
class ClusterView:
    scheduler: str  # capacityScheduler, fairScheduler, fifoScheduler
    queues: Mapping[str, Queue]  # by path; empty unless the Capacity Scheduler
    nodes: tuple[Node, ...]
    labels: frozenset[str]  # every label the cluster knows
    max_allocation: Resources  # the cluster's (the root queue's); ZERO when unknown
    gpus_declared: bool

    def find_queue(self, name: str) -> Queue | None:
        """YARN takes a leaf's short name or its full path."""
        if name in self.queues:
            return self.queues[name]
        matches = [q for q in self.queues.values() if q.name == name]
        return matches[0] if len(matches) == 1 else None

    def leaves(self, running_only: bool = False) -> list[str]:
        return sorted(q.path for q in self.queues.values()
                      if q.leaf and (q.state == "RUNNING" or not running_only))

    def active_nodes(self, label: str) -> list[Node]:
        return [n for n in self.nodes if n.active and n.label == label]


def _by_partition(rows: Iterable[Mapping], key: str) -> dict[str, Resources]:
    return {row.get("partitionName", ""): Resources.from_json(row.get(key)) for row in rows}


def _queue(info: Mapping) -> Queue:
    capacities = (info.get("capacities") or {}).get("queueCapacitiesByPartition") or []
    usages = (info.get("resources") or {}).get("resourceUsagesByPartition") or []
    children = (info.get("queues") or {}).get("queue")
    leaf = info.get("queueType") == "leaf" if "queueType" in info else not children
    acls = {row.get("accessType", ""): row.get("accessControlList", "")
            for row in (info.get("queueAcls") or {}).get("queueAcl") or []}
    return Queue(
        path=info["queuePath"], leaf=leaf,
        state=info.get("state", "RUNNING"),
        labels=frozenset(info.get("nodeLabels") or ()),
        max_allocation=Resources.from_json(info.get("maximumAllocation")),
        max_by_label=_by_partition(capacities, "effectiveMaxResource"),
        guaranteed_by_label=_by_partition(capacities, "effectiveMinResource"),
        used_by_label=_by_partition(usages, "used"),
        am_limit_by_label=_by_partition(usages, "amLimit"),
        max_capacity_by_label={row.get("partitionName", ""): float(row.get("absoluteMaxCapacity",
                                                                           100.0))
                               for row in capacities},
        acls=acls,
        ordering=str(info.get("orderingPolicyInfo") or "fifo"),
    )


def _walk(info: Mapping, parent: str = "") -> Iterable[Mapping]:
    """Every queue under ``info``, each with its path: Hadoop 3.3.x leaves queuePath out of
    its answer (and queueType: _queue tells a leaf by its children), 3.4.0 and later write
    both; the path is then the parent's and the queue's name."""
    name = info.get("queueName", "")
    path = info.get("queuePath") or (f"{parent}.{name}" if parent else name)
    info = {**info, "queuePath": path}
    yield info
    for child in (info.get("queues") or {}).get("queue") or []:
        yield from _walk(child, path)


def cluster_view(scheduler: Mapping, nodes: Mapping) -> ClusterView:
    """The parts of /ws/v1/cluster/scheduler and /ws/v1/cluster/nodes the checks read."""
    info = (scheduler.get("scheduler") or {}).get("schedulerInfo") or {}
    kind = info.get("type", "unknown")
    node_rows = (nodes.get("nodes") or {}).get("node") or []
    node_list = tuple(
        Node(id=row.get("id", "?"), state=row.get("state", "?"),
             label=next(iter(row.get("nodeLabels") or ()), DEFAULT_PARTITION),
             total=Resources.from_json(row.get("totalResource")),
             available=Resources.from_json(row.get("availableResource")),
             health=str(row.get("healthReport") or ""))
        for row in node_rows
    )
    queues: dict[str, Queue] = {}
    labels = {n.label for n in node_list}
    if kind == "capacityScheduler":
        root = dict(info, queuePath=info.get("queuePath", "root"), queueType="parent")
        queues = {q.path: q for q in map(_queue, _walk(root))}
        for row in (info.get("capacities") or {}).get("queueCapacitiesByPartition") or []:
            labels.add(row.get("partitionName", ""))
    max_allocation = queues["root"].max_allocation if "root" in queues else ZERO
    gpus_declared = max_allocation.gpus > 0 or any(
        entry.get("name") == GPU for row in node_rows
        for entry in ((row.get("totalResource") or {}).get("resourceInformations") or {}).get(
            "resourceInformation") or [])
    labels.discard(DEFAULT_PARTITION)
    return ClusterView(kind, queues, node_list, frozenset(labels), max_allocation, gpus_declared)


# ---- where a waiting application stands in its queue: its use against its guaranteed
# capacity and its maximum, and the applications ahead. "Ahead" follows the
# CapacityScheduler's order within a leaf queue: a higher priority first, then, at one
# priority, the older first (fifo); a fair queue offers free containers to whichever holds
# least, so there the count says how many share the queue.

ACTIVE = "ACCEPTED,RUNNING"  # the applications' states that hold or wait for containers


@dataclass(frozen=True)
class QueueStanding:
    path: str
    ordering: str  # fifo or fair
    used: Resources
    guaranteed: Resources
    maximum: Resources
    ahead: int  # the queue's applications offered containers before this one
    others: int  # the queue's other applications, running or waiting
    accepted: int  # of those, waiting for their AppMaster's container

    def line(self) -> str:
        order = (f"{self.ahead} application(s) ahead of this one (older, or of a higher "
                 "priority)" if self.ordering != "fair" else
                 f"shared fairly with {self.others} other application(s)")
        return (f"Queue {self.path} ({self.ordering}): uses {self.used} of its "
                f"{self.guaranteed} guaranteed, {self.maximum} at most; {order}, "
                f"{self.accepted} of them waiting for their AppMaster's container")


def ahead_of(app: Mapping, others: list[Mapping]) -> int:
    """How many of the queue's ``others`` its scheduler offers containers before ``app``."""
    def rank(a: Mapping) -> tuple[int, int]:
        return (-int(a.get("priority") or 0), int(a.get("startedTime") or 0))

    return sum(1 for other in others if rank(other) < rank(app))


def queue_standing(app_id: str, app: Mapping, scheduler: Mapping,
                   apps: Mapping) -> QueueStanding | None:
    """Where ``app`` (its /ws/v1/cluster/apps/<id> answer) stands in its queue, from the
    scheduler's answer and the active applications' (apps?states=ACTIVE), in its partition;
    None without a CapacityScheduler queue."""
    queue = cluster_view(scheduler, {}).find_queue(app.get("queue", ""))
    if queue is None:
        return None
    rows = (apps.get("apps") or {}).get("app") or []
    others = [a for a in rows if a["id"] != app_id and a.get("queue") in (queue.path,
                                                                            queue.name)]
    part = app.get("appNodeLabelExpression") or DEFAULT_PARTITION
    return QueueStanding(
        queue.path, queue.ordering, queue.used_by_label.get(part, ZERO),
        queue.guaranteed_by_label.get(part, ZERO), queue.max_by_label.get(part, ZERO),
        ahead_of(app, others), len(others), sum(a["state"] == "ACCEPTED" for a in others))
