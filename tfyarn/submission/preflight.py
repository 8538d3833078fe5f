"""Pre-flight: refuse, before anything is submitted, a job the live cluster cannot run.

YARN accepts a request for a label no node has, or for more memory than any container may
get, and fails the application seconds later with a Java stack trace; a job bigger than its
queue waits forever. Everything needed to know this in advance is in two answers of the
ResourceManager's REST API: the scheduler (queues, their state, labels, limits and use) and
the nodes (labels, state, size, free room, release: a cluster older than tfyarn supports is
refused). The checks here are pure functions of those answers;
`run_preflight` fetches them (rmrest.py) and never blocks a submission when the RM cannot be
asked (no REST address, no answer, no Kerberos ticket for its web UI): it says why the check
was skipped.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import requests

from appmaster.common.clusterview import (
    DIMENSIONS,
    GPU,
    ZERO,
    ClusterView,
    Queue,
    Resources,
    cluster_view,
    partition_name,
)
from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.settings import (
    ALLOCATION_TIMEOUT,
    ANTI_AFFINITY_REQUIRED,
    COMPONENT_SCOPE,
    GPUS,
    INSTANCES,
    LABEL,
    MEMORY,
    PLACEMENT_POLICY,
    QUEUE,
    VCORES,
    settings,
)
from tfyarn.errors import NOTHING_SUBMITTED, TfyarnError
from tfyarn.hadoop import amjar, hadoopconf, rmrest
from tfyarn.jobconfig import APPMASTER, JobConfig, Problem, describe_problems
from tfyarn.jobconfig.defaults import where_set
from tfyarn.submission.plan import AppSpecExtras

# What each dimension is called in resources.json, and in YARN's maximum-allocation settings.
KEYS = {s.field: s.key for s in settings(COMPONENT_SCOPE) if s.field in DIMENSIONS}
MAX_ALLOCATION_SETTINGS = {"memory_mb": "maximum-allocation-mb",
                           "vcores": "maximum-allocation-vcores",
                           "gpus": f"resource-types.{GPU}.maximum-allocation"}


# ---- the job, as YARN will see it ----

@dataclass(frozen=True)
class ContainerAsk:
    """Containers of one kind the job asks for, and where the user set each of their values."""

    what: str  # "worker", "AppMaster"
    count: int
    size: Resources
    label: str
    file: str  # resources.json: what the whole job's problems name
    # memory_mb/vcores/gpus/label/placement -> (file, key) that set it: the job file's key,
    # a defaults file's, or the command line's option (defaults.where_set)
    keys: Mapping[str, tuple[str, str]]
    appmaster: bool = False
    placement_policy: int = 0  # Slider's bit mask (appmaster/common/settings.py)

    def problem(self, dimension: str, message: str, fix: str, value: object = None) -> Problem:
        file, key = self.keys[dimension]
        return Problem(file, key, None if value is None else f"{value}", message, fix)


def job_requests(job: JobConfig, plan: JobPlan, extras: AppSpecExtras) -> list[ContainerAsk]:
    """Every container the job asks for: the tasks, TensorBoard and the AppMaster, each
    value named where it was set, so that problems point at what the user wrote."""
    resources = str(job.client.resources_path)

    def where(component: str, key: str) -> tuple[str, str]:
        return where_set(job.settings, resources, f"{component}.{key}")

    def component_keys(name: str, label_from_am: bool) -> dict[str, tuple[str, str]]:
        keys = {d: where(name, k) for d, k in KEYS.items()}
        keys["label"] = where(APPMASTER if label_from_am else name, LABEL.key)
        keys["placement"] = where(name, PLACEMENT_POLICY.key)
        return keys

    def role_request(role: RolePlan) -> ContainerAsk:
        own_label = (job.spec.role(role.name) or role).label
        return ContainerAsk(role.name, role.instances,
                            Resources(role.memory_mb, role.vcores, role.gpus), role.label or "",
                            resources, component_keys(role.name, not own_label and
                                                      bool(plan.am_label)),
                            placement_policy=role.placement_policy)

    containers = [role_request(r) for r in (*plan.roles, *plan.side_roles)]
    containers.append(ContainerAsk("AppMaster", 1,
                                 Resources(plan.am_memory_mb, plan.am_vcores),
                                 plan.am_label or "", resources,
                                 component_keys(APPMASTER, False), appmaster=True))
    return containers


# ---- the checks ----

@dataclass
class PreflightFindings:
    """What pre-flight found: problems refuse the job; notes are said and the job goes on."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PriorityAsk:
    """The YARN application priority the job asks for, where the user set it, and the
    cluster's highest (yarn.cluster.max-application-priority; None: not known)."""

    value: int
    source: tuple[str, str]  # (file, key)
    cluster_max: int | None = None


def check(view: ClusterView, containers: list[ContainerAsk], queue_name: str,
          queue_source: tuple[str, str], submit_allowed: bool | None = None,
          user: str = "", priority: PriorityAsk | None = None) -> PreflightFindings:
    """Every problem YARN would meet with this job on this cluster, and what it would wait for.

    ``queue_source`` is (file, key) of the queue setting; ``submit_allowed`` is the RM's answer
    to "may ``user`` submit to the queue" (None: not asked, as no ACL can forbid it).
    """
    verdict = PreflightFindings()
    if priority is not None:
        _check_priority(priority, verdict)
    queue = _check_queue(view, queue_name, queue_source, submit_allowed, user, verdict)
    labels_ok = _check_labels(view, containers, queue, verdict)
    sizes_ok = all([_check_container(view, request, queue, verdict) for request in containers])
    if labels_ok and sizes_ok:
        for request in containers:
            _check_anti_affinity(view, request, verdict)
    if queue is not None and queue.leaf and labels_ok and sizes_ok:
        _check_whole_job(view, containers, queue, verdict)
    return verdict


def _check_priority(priority: PriorityAsk, verdict: PreflightFindings) -> None:
    """A priority above the cluster's highest: YARN would lower it without a word."""
    highest, (file, key) = priority.cluster_max, priority.source
    if highest is None or priority.value <= highest:
        return
    if highest == 0:
        verdict.problems.append(Problem(
            file, key, f"{priority.value}", "the cluster has application priorities off "
            "(yarn.cluster.max-application-priority is 0): every job runs at 0",
            "remove the key, or ask the cluster's administrators to set "
            "yarn.cluster.max-application-priority."))
        return
    verdict.problems.append(Problem(
        file, key, f"{priority.value}", f"the cluster's application priorities go from 0 to "
        f"{highest} (yarn.cluster.max-application-priority)", f"at most {highest}."))


def _check_queue(view: ClusterView, name: str, source: tuple[str, str],
                 submit_allowed: bool | None, user: str,
                 verdict: PreflightFindings) -> Queue | None:
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


def _check_labels(view: ClusterView, containers: list[ContainerAsk], queue: Queue | None,
                  verdict: PreflightFindings) -> bool:
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
            states = "; ".join(n.standing for n in nodes) or "no node at all"
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


def _check_container(view: ClusterView, request: ContainerAsk, queue: Queue | None,
                     verdict: PreflightFindings) -> bool:
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


def _check_anti_affinity(view: ClusterView, request: ContainerAsk,
                         verdict: PreflightFindings) -> None:
    """ANTI_AFFINITY_REQUIRED: each container on a host of its own, so as many active nodes
    that can hold one as there are containers; hosts with room now are what the job waits
    for (the AppMaster says so while it waits: appmaster/model/placementwait.py)."""
    if not request.placement_policy & ANTI_AFFINITY_REQUIRED or request.count < 2:
        return
    able = [n.id for n in view.active_nodes(request.label) if request.size.fits_in(n.total)]
    where = partition_name(request.label)
    if request.count > len(able):
        verdict.problems.append(request.problem(
            "placement", f"{request.count} {request.what} containers, no two on one host "
            f"(ANTI_AFFINITY_REQUIRED), but {where} has {len(able)} active node(s) that can "
            f"hold one ({', '.join(able) or 'none'}): they would wait forever",
            f"at most {len(able)} {INSTANCES.key}, or a placement policy without "
            f"{ANTI_AFFINITY_REQUIRED} (0, 1 or 2), or a label with more nodes.",
            f'"{request.placement_policy}"'))
        return
    free = [n for n in view.active_nodes(request.label) if request.size.fits_in(n.available)]
    if request.count > len(free):
        verdict.notes.append(
            f"{request.what}: {request.count} containers on as many hosts (ANTI_AFFINITY_"
            f"REQUIRED), and {len(free)} node(s) in {where} have room for one now: the job "
            "waits for the others to free some.")


def _needs(containers: list[ContainerAsk]) -> dict[str, Resources]:
    needs: dict[str, Resources] = {}
    for request in containers:
        needs[request.label] = needs.get(request.label, ZERO) + request.size.times(request.count)
    return needs


def _check_whole_job(view: ClusterView, containers: list[ContainerAsk], queue: Queue,
                     verdict: PreflightFindings) -> None:
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
                "forever", f"fewer or smaller tasks ({INSTANCES.key}, {MEMORY.key}, "
                f"{VCORES.key}, {GPUS.key}), or a larger queue (--queue or {QUEUE.key})."))
            continue
        free = (ever - queue.used_by_label.get(label, ZERO)).at_most(
            sum((n.available for n in nodes), ZERO))
        if not need.fits_in(free):
            busy.append(f"{partition_name(label)} has {free.at_least(ZERO)} free for queue "
                        f"{queue.path} now, the job needs {need}")
    if busy:
        verdict.notes.append("the cluster is busy: " + "; ".join(busy) + ". The job fits the "
                             "queue once other applications free their containers, so it is "
                             "submitted and waits its turn (as long as the queue needs, unless "
                             f"{ALLOCATION_TIMEOUT.key} says otherwise).")
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


class UnsupportedHadoop(TfyarnError):
    """The cluster runs a Hadoop release older than tfyarn supports (nothing was submitted)."""

    def __init__(self, rm_url: str, version: str) -> None:
        oldest = amjar.oldest_line()
        super().__init__(
            f"the cluster ({rm_url}) runs Hadoop {version}; tfyarn supports Hadoop {oldest} "
            f"and later: its AppMaster is built against Hadoop {amjar.HADOOP_API}'s API",
            f"submit to a cluster of Hadoop {oldest} or later (ask its administrators to "
            "upgrade this one).")
        self.rm_url = rm_url


def oldest_node_release(nodes: dict) -> str | None:
    """The oldest Hadoop release among the NodeManagers (the nodes answer's ``version``: where
    the AppMaster runs); None where no node says."""
    versions = [str(n["version"]) for n in ((nodes.get("nodes") or {}).get("node") or [])
                if isinstance(n, dict) and n.get("version")]
    return min(versions, key=amjar.release, default=None)


def _cluster_max_priority(client: rmrest.RestReports) -> int | None:
    """yarn.cluster.max-application-priority as the RM has it (YARN's default, 0, where its
    configuration does not set it); None where it cannot be read."""
    try:
        value = client.conf_value("yarn.cluster.max-application-priority")
        return int(value) if value is not None else 0
    except (rmrest.RestError, requests.RequestException, ValueError):
        return None


def run_preflight(containers: list[ContainerAsk], queue_name: str,
                  queue_source: tuple[str, str],
                  priority: PriorityAsk | None = None) -> Preflight:
    """Ask the RM (two REST calls; two more where a queue ACL may apply, one where the job
    asks for a priority) and check; UnsupportedHadoop for a cluster older than tfyarn
    supports."""
    conf = hadoopconf.client_configuration()
    urls = rmrest.web_urls(conf)
    if not urls:
        return Preflight(False, skipped_reason="the Hadoop configuration (HADOOP_CONF_DIR) "
                         "names no ResourceManager web address")
    failures: dict[str, Exception] = {}
    for url in urls:
        client = rmrest.RestReports(url)
        try:
            scheduler, nodes = client.get("scheduler"), client.get("nodes")
            # Before the answers are read: an older release's may not read as 3.3's, and
            # tfyarn's AppMaster would die at its start there without a word.
            version = oldest_node_release(nodes)
            if version is not None and not amjar.runs_on(version):
                raise UnsupportedHadoop(url, version)
            view = cluster_view(scheduler, nodes)
        except (rmrest.RestError, requests.RequestException, ValueError) as exc:
            failures[url] = exc
            continue
        queue, user, allowed, acl_note = view.find_queue(queue_name), submitting_user(), None, []
        if needs_acl_answer(view, queue):
            assert queue is not None
            try:
                allowed = client.may_submit(queue.path, user)
            except (rmrest.RestError, requests.RequestException, ValueError) as exc:
                acl_note = [f"queue {queue.path}'s ACL was not checked ({exc})"]
        if priority is not None:
            priority = replace(priority, cluster_max=_cluster_max_priority(client))
        verdict = check(view, containers, queue_name, queue_source, allowed, user, priority)
        return Preflight(True, url, None, verdict.problems, acl_note + verdict.notes)
    no_active = rmrest.no_active_rm(conf, failures)
    if no_active is not None:
        raise no_active
    return Preflight(False, skipped_reason="the ResourceManager's REST API did not answer ("
                     + "; ".join(f"{url}: {exc}" for url, exc in failures.items()) + ")")
