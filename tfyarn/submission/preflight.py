"""Pre-flight: refuse, before anything is submitted, a job the live cluster cannot run.

YARN accepts a request for a label no node has, or for more memory than any container may
get, and fails the application seconds later with a Java stack trace; a job bigger than its
queue waits forever. Everything needed to know this in advance is in two answers of the
ResourceManager's REST API: the scheduler (queues, their state, labels, limits and use) and
the nodes (labels, state, size, free room). The checks here are pure functions of those
answers; `run_preflight` fetches them (rmrest.py) and never blocks a submission when the RM
cannot be asked (no REST address, no answer, no Kerberos ticket for its web UI): it says why
the check was skipped.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import requests

from appmaster.jobplan import JobPlan, RolePlan
from tfyarn.errors import NOTHING_SUBMITTED, TfyarnError
from tfyarn.hadoop import hadoopconf, rmrest
from tfyarn.jobconfig import APPMASTER, JobConfig, Problem, describe_problems
from tfyarn.jobconfig.documents import COMMAND_LINE, key_path
from tfyarn.submission.plan import Placement

GPU = "yarn.io/gpu"
DEFAULT_PARTITION = ""
# What each dimension is called in resources.json, and in YARN's maximum-allocation settings.
KEYS = {"memory_mb": "yarn.memory", "vcores": "yarn.vcores", "gpus": "yarn.gpus"}
MAX_ALLOCATION_SETTINGS = {"memory_mb": "maximum-allocation-mb",
                           "vcores": "maximum-allocation-vcores",
                           "gpus": f"resource-types.{GPU}.maximum-allocation"}


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
        return [d for d in KEYS if getattr(self, d) > getattr(room, d)]

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

@dataclass(frozen=True)
class Node:
    id: str
    state: str
    label: str  # DEFAULT_PARTITION for a node without one
    total: Resources
    available: Resources

    @property
    def active(self) -> bool:
        return self.state == "RUNNING"


@dataclass(frozen=True)
class Queue:
    path: str  # root.default
    leaf: bool
    state: str
    labels: frozenset[str]  # labels it may use ("*": any); the default partition always
    max_allocation: Resources  # per container, the queue's own cap included
    max_by_label: Mapping[str, Resources]  # what it can ever hold, per partition
    used_by_label: Mapping[str, Resources]
    am_limit_by_label: Mapping[str, Resources]
    max_capacity_by_label: Mapping[str, float]  # absolute maximum capacity, %
    acls: Mapping[str, str]  # SUBMIT_APP / ADMINISTER_QUEUE -> "users groups" or "*"

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
        path=info.get("queuePath") or info.get("queueName", ""), leaf=leaf,
        state=info.get("state", "RUNNING"),
        labels=frozenset(info.get("nodeLabels") or ()),
        max_allocation=Resources.from_json(info.get("maximumAllocation")),
        max_by_label=_by_partition(capacities, "effectiveMaxResource"),
        used_by_label=_by_partition(usages, "used"),
        am_limit_by_label=_by_partition(usages, "amLimit"),
        max_capacity_by_label={row.get("partitionName", ""): float(row.get("absoluteMaxCapacity",
                                                                           100.0))
                               for row in capacities},
        acls=acls,
    )


def _walk(info: Mapping) -> Iterable[Mapping]:
    yield info
    for child in (info.get("queues") or {}).get("queue") or []:
        yield from _walk(child)


def cluster_view(scheduler: Mapping, nodes: Mapping) -> ClusterView:
    """The parts of /ws/v1/cluster/scheduler and /ws/v1/cluster/nodes the checks read."""
    info = (scheduler.get("scheduler") or {}).get("schedulerInfo") or {}
    kind = info.get("type", "unknown")
    node_rows = (nodes.get("nodes") or {}).get("node") or []
    node_list = tuple(
        Node(id=row.get("id", "?"), state=row.get("state", "?"),
             label=next(iter(row.get("nodeLabels") or ()), DEFAULT_PARTITION),
             total=Resources.from_json(row.get("totalResource")),
             available=Resources.from_json(row.get("availableResource")))
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


# ---- the job, as YARN will see it ----

@dataclass(frozen=True)
class Request:
    """Containers of one kind the job asks for, and where the user set each of their values."""

    what: str  # "worker", "AppMaster"
    count: int
    size: Resources
    label: str
    file: str
    keys: Mapping[str, str]  # memory_mb/vcores/gpus/label -> the key (or option) that sets it
    appmaster: bool = False

    def problem(self, dimension: str, message: str, fix: str, value: object = None) -> Problem:
        key = self.keys[dimension]
        file = COMMAND_LINE if key.startswith("--") else self.file
        return Problem(file, key, None if value is None else f"{value}", message, fix)


def job_requests(job: JobConfig, plan: JobPlan, placement: Placement,
                 given: frozenset[str] = frozenset()) -> list[Request]:
    """Every container the job asks for: the tasks, TensorBoard and the AppMaster.

    ``given`` names the command-line options the user gave (--am-memory, --am-vcores,
    --am-label), so that problems point at what the user wrote.
    """
    resources = str(job.resources_path)

    def component_keys(name: str, label_from_am: bool) -> dict[str, str]:
        keys = {d: key_path("components", name, k) for d, k in KEYS.items()}
        keys["label"] = ("--am-label" if label_from_am
                         else key_path("components", name, "yarn.label.expression"))
        return keys

    def role_request(role: RolePlan) -> Request:
        own_label = (job.component(role.name) or role).label
        return Request(role.name, role.instances,
                       Resources(role.memory_mb, role.vcores, role.gpus), role.label or "",
                       resources, component_keys(role.name, not own_label and
                                                 bool(placement.am_label)))

    containers = [role_request(r) for r in (*plan.roles, *plan.side_roles)]
    am_keys = component_keys(APPMASTER, "--am-label" in given)
    for option, dimension in (("--am-memory", "memory_mb"), ("--am-vcores", "vcores")):
        if option in given:
            am_keys[dimension] = option
    containers.append(Request("AppMaster", 1,
                            Resources(placement.am_memory_mb, placement.am_vcores),
                            placement.am_label or "", resources, am_keys, appmaster=True))
    return containers


# ---- the checks ----

@dataclass
class Verdict:
    """What pre-flight found: problems refuse the job; notes are said and the job goes on."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check(view: ClusterView, containers: list[Request], queue_name: str,
          queue_source: tuple[str, str], submit_allowed: bool | None = None,
          user: str = "") -> Verdict:
    """Every problem YARN would meet with this job on this cluster, and what it would wait for.

    ``queue_source`` is (file, key) of the queue setting; ``submit_allowed`` is the RM's answer
    to "may ``user`` submit to the queue" (None: not asked, as no ACL can forbid it).
    """
    verdict = Verdict()
    queue = _check_queue(view, queue_name, queue_source, submit_allowed, user, verdict)
    labels_ok = _check_labels(view, containers, queue, verdict)
    sizes_ok = all([_check_container(view, request, queue, verdict) for request in containers])
    if queue is not None and queue.leaf and labels_ok and sizes_ok:
        _check_whole_job(view, containers, queue, verdict)
    return verdict


def _check_queue(view: ClusterView, name: str, source: tuple[str, str],
                 submit_allowed: bool | None, user: str, verdict: Verdict) -> Queue | None:
    file, key = source
    if view.scheduler != "capacityScheduler":
        verdict.notes.append(f"the cluster runs the {view.scheduler}: pre-flight checked nodes "
                             "and labels, not queues and their limits (Capacity Scheduler only)")
        return None
    queue = view.find_queue(name)
    running = ", ".join(view.leaves(running_only=True)) or "none"
    if queue is None:
        verdict.problems.append(Problem(file, key, f'"{name}"', "no such queue in the cluster",
                                        f"use one of its running leaf queues: {running}."))
        return None
    if not queue.leaf:
        leaves = ", ".join(p for p in view.leaves(True) if p.startswith(queue.path + "."))
        verdict.problems.append(Problem(
            file, key, f'"{name}"', f"{queue.path} is a parent queue; applications go to leaf "
            "queues", f"use one of its leaf queues: {leaves or running}."))
        return queue
    if queue.state != "RUNNING":
        verdict.problems.append(Problem(
            file, key, f'"{name}"', f"queue {queue.path} is {queue.state} and takes no new "
            "applications", f"use a running queue ({running}), or ask the cluster's "
            "administrators to start it."))
    if submit_allowed is False:
        verdict.problems.append(Problem(
            file, key, f'"{name}"', f"user {user} may not submit to queue {queue.path} (its "
            "SUBMIT_APP and ADMINISTER_QUEUE ACLs)", "use a queue you may submit to, or ask "
            "the cluster's administrators to add you to the queue's ACL."))
    return queue


def _label_offer(view: ClusterView) -> str:
    parts = []
    for label in sorted(view.labels):
        nodes = len(view.active_nodes(label))
        parts.append(f'"{label}" ({nodes} active node{"s" if nodes != 1 else ""})')
    return ", ".join(parts) if parts else "no labels at all"


def _check_labels(view: ClusterView, containers: list[Request], queue: Queue | None,
                  verdict: Verdict) -> bool:
    ok = True
    for request in containers:
        label = request.label
        fix_other = ('use one of the cluster\'s labels, or "" (empty) for the default '
                     f"partition; the cluster has {_label_offer(view)}.")
        if label and label not in view.labels:
            verdict.problems.append(request.problem(
                "label", f"no node label \"{label}\" in the cluster (the {request.what} "
                "containers would never be placed)", fix_other, f'"{label}"'))
            ok = False
            continue
        if not view.active_nodes(label):
            nodes = [n for n in view.nodes if n.label == label]
            states = ", ".join(f"{n.id} {n.state}" for n in nodes) or "no node at all"
            verdict.problems.append(request.problem(
                "label", f"{partition_name(label)} has no active node ({states})",
                fix_other, f'"{label}"'))
            ok = False
            continue
        if queue is not None and queue.leaf and not queue.may_use(label):
            usable = ", ".join(f'"{x}"' for x in sorted(queue.labels)) or "none"
            verdict.problems.append(request.problem(
                "label", f'queue {queue.path} may not use node label "{label}" (its labels: '
                f"{usable})", "use a label the queue may use, or a queue that may use this "
                "label.", f'"{label}"'))
            ok = False
    return ok


def _check_container(view: ClusterView, request: Request, queue: Queue | None,
                     verdict: Verdict) -> bool:
    """Whether one container fits the maximum allocation and some active node."""
    size = request.size
    if size.gpus and not view.gpus_declared:
        verdict.problems.append(request.problem(
            "gpus", f"the cluster declares no {GPU} resource", f"set {KEYS['gpus']} to 0, or "
            "use a cluster whose NodeManagers offer GPUs.", size.gpus))
        return False
    # A queue may cap containers below the cluster's maximum allocation.
    own_cap = queue is not None and queue.leaf and queue.max_allocation != view.max_allocation
    cap = queue.max_allocation if own_cap and queue is not None else view.max_allocation
    if cap != ZERO:
        too_big = size.too_big_for(cap)
        for dimension in too_big:
            whose, setting = (
                (f"queue {queue.path}'s",
                 f"yarn.scheduler.capacity.{queue.path}.{MAX_ALLOCATION_SETTINGS[dimension]}")
                if own_cap and queue is not None else
                ("the cluster's", f"yarn.scheduler.{MAX_ALLOCATION_SETTINGS[dimension]}"))
            verdict.problems.append(request.problem(
                dimension, f"one {request.what} container asks for more than {whose} maximum "
                f"allocation per container, {getattr(cap, dimension)} ({setting})",
                f"at most {getattr(cap, dimension)}; the maximum container is {cap}.",
                getattr(size, dimension)))
        if too_big:
            return False
    nodes = view.active_nodes(request.label)
    if nodes and not any(size.fits_in(n.total) for n in nodes):
        largest = max(nodes, key=lambda n: n.total)
        dimension = size.too_big_for(largest.total)[0]
        verdict.problems.append(request.problem(
            dimension, f"no active node in {partition_name(request.label)} is that large: one "
            f"{request.what} container asks for {size}; the largest node there has "
            f"{largest.total} ({largest.id})",
            f"at most what one node offers ({largest.total}).", getattr(size, dimension)))
        return False
    return True


def _needs(containers: list[Request]) -> dict[str, Resources]:
    needs: dict[str, Resources] = {}
    for request in containers:
        needs[request.label] = needs.get(request.label, ZERO) + request.size.times(request.count)
    return needs


def _check_whole_job(view: ClusterView, containers: list[Request], queue: Queue,
                     verdict: Verdict) -> None:
    if not containers:
        return
    resources = containers[0].file
    busy = []
    for label, need in sorted(_needs(containers).items()):
        nodes = view.active_nodes(label)
        on_nodes = sum((n.total for n in nodes), ZERO)
        ever = queue.max_by_label.get(label, on_nodes).at_most(on_nodes)
        if not need.fits_in(ever):
            capacity = queue.max_capacity_by_label.get(label, 100.0)
            verdict.problems.append(Problem(
                resources, "components", None,
                f"the whole job needs {need} in {partition_name(label)} at once (TensorFlow "
                f"starts only when every task runs; the AppMaster included), but queue "
                f"{queue.path} can never hold more than {ever} there (maximum capacity "
                f"{capacity:g}% of {len(nodes)} active node(s) with {on_nodes}); it would wait "
                "forever", "fewer or smaller tasks (yarn.component.instances, yarn.memory, "
                "yarn.vcores, yarn.gpus), or a larger queue (--queue or site.global.queue)."))
            continue
        free = (ever - queue.used_by_label.get(label, ZERO)).at_most(
            sum((n.available for n in nodes), ZERO))
        if not need.fits_in(free):
            busy.append(f"{partition_name(label)} has {free.at_least(ZERO)} free for queue "
                        f"{queue.path} now, the job needs {need}")
    if busy:
        verdict.notes.append("the cluster is busy: " + "; ".join(busy) + ". The job fits the "
                             "queue once other applications free their containers, so it is "
                             "submitted and waits (site.global.allocation.timeout limits how "
                             "long the AppMaster waits for its containers).")
    am = next((r for r in containers if r.appmaster), None)
    limit = queue.am_limit_by_label.get(am.label, ZERO) if am is not None else ZERO
    if am is not None and limit != ZERO and not am.size.fits_in(limit):
        verdict.notes.append(
            f"the AppMaster ({am.size}) is larger than queue {queue.path}'s share for "
            f"AppMasters ({limit}, maximum-am-resource-percent): YARN starts it only while no "
            "other application runs in the queue.")


# ---- asking the live cluster ----

@dataclass
class Preflight:
    """The outcome for the CLI and the dry-run document."""

    checked: bool
    rm_url: str | None = None
    skipped_reason: str | None = None
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"checked": self.checked, "resourcemanager": self.rm_url,
                "skipped_reason": self.skipped_reason,
                "problems": [str(p) for p in self.problems], "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """For people: one line when skipped or clean, else each problem and note."""
        if not self.checked:
            return [f"Pre-flight check skipped: {self.skipped_reason}."]
        lines = [f"Note: {note}" for note in self.notes]
        if not self.problems:
            lines.insert(0, f"Pre-flight check against {self.rm_url}: the cluster can run "
                            "this job.")
        return lines


class PreflightRefused(TfyarnError):
    """The cluster cannot run the job (nothing was submitted); ``preflight.problems`` says
    why, each with its fix."""

    def __init__(self, checked: Preflight) -> None:
        notes = "".join(f"\nNote: {note}" for note in checked.notes)
        super().__init__(f"{NOTHING_SUBMITTED}: the cluster ({checked.rm_url}) cannot run "
                         f"this job:\n{describe_problems(checked.problems)}{notes}")
        self.preflight = checked


def submitting_user() -> str:
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def needs_acl_answer(view: ClusterView, queue: Queue | None) -> bool:
    """Whether an ACL may forbid the user this queue: not when it or a parent says "*"."""
    if queue is None or not queue.leaf:
        return False
    parts = queue.path.split(".")
    for i in range(1, len(parts) + 1):
        ancestor = view.queues.get(".".join(parts[:i]))
        if ancestor is None:
            return False  # cannot tell: let YARN decide
        if any(ancestor.acls.get(kind, "").strip() == "*"
               for kind in ("SUBMIT_APP", "ADMINISTER_QUEUE")):
            return False
    return True


def run_preflight(containers: list[Request], queue_name: str,
                  queue_source: tuple[str, str]) -> Preflight:
    """Ask the RM (one or two REST calls; two more where a queue ACL may apply) and check."""
    conf = hadoopconf.client_configuration()
    urls = rmrest.web_urls(conf)
    if not urls:
        return Preflight(False, skipped_reason="the Hadoop configuration (HADOOP_CONF_DIR) "
                         "names no ResourceManager web address")
    errors = []
    for url in urls:
        client = rmrest.RestReports(url)
        try:
            view = cluster_view(client.get("scheduler"), client.get("nodes"))
        except (rmrest.RestError, requests.RequestException, ValueError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        queue, user, allowed, acl_note = view.find_queue(queue_name), submitting_user(), None, []
        if needs_acl_answer(view, queue):
            assert queue is not None
            try:
                allowed = client.may_submit(queue.path, user)
            except (rmrest.RestError, requests.RequestException, ValueError) as exc:
                acl_note = [f"queue {queue.path}'s ACL was not checked ({exc})"]
        verdict = check(view, containers, queue_name, queue_source, allowed, user)
        return Preflight(True, url, None, verdict.problems, acl_note + verdict.notes)
    return Preflight(False, skipped_reason="the ResourceManager's REST API did not answer ("
                     + "; ".join(errors) + ")")
