"""Where a role's next containers are asked for: Slider's placement policy and node failure
threshold, turned into what tfyarn's patched AppMaster reads (tfyarn/hadoop/amjar.py): a
placement per role (``nodes=h1,h2`` and ``relax=false``, a line each; empty: anywhere) and the
job's blacklist (hosts, one a line). Pure: the master tells it where tasks ran and which
containers failed, and writes what it returns.

- The default (0): a task asked for again asks for the host it ran on (its env is in YARN's
  cache there) and nowhere else (relax-locality off) until its role's
  ``yarn.placement.escalate.seconds`` have passed: then the master withdraws the request
  (:meth:`Placement.escalations`) and asks for any host.
- A task whose container failed on a host, or any task while a host the job just lost a
  task on may still look alive to YARN: the hosts of its partition that ran
  the job's containers (YARN's cache holds the job's env layers there) but not that one, as
  above; where the job ran on that host alone, the partition's other running nodes (as the
  ResourceManager lists them, where the AppMaster can ask it).
- STRICT (1): a task asked for again goes back to the host it ran on, and nowhere else.
- A task that gave its container back while the job waited for the queue: any host.
- ANYWHERE (2): no placement history.
- ANTI_AFFINITY_REQUIRED (4, 5, 6): ``antiaffinity=true`` only, labelled roles too (a
  constraint works with a node label, unlike a node list): the AppMaster asks with YARN's
  placement constraints (no two of the role's containers on one node), which take no node
  list, so neither the host a task ran on (STRICT) nor the env's cache is asked for.
- A role with a node label (``yarn.label.expression``): no node list (YARN refuses a label
  with nodes), only the blacklist.
- ``yarn.node.failure.threshold``: a host on which that many containers of the role failed is
  blacklisted for the job (YARN's blacklist is the application's, every role's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import ANTI_AFFINITY_REQUIRED, ANYWHERE, STRICT

Key = tuple[str, int]
APART = "antiaffinity=true"  # no two of the role's containers on one host


class Placement:
    def __init__(self, plan: JobPlan) -> None:
        self.roles = {role.name: role for role in plan.roles}
        self.last_host: dict[Key, str] = {}  # where each task last ran
        # every host that ran a container of the job's unlabelled roles: a replacement is
        # steered only there (a labelled role's host, of another partition, cannot hold it)
        self.hosts: set[str] = set()
        # the default partition's running nodes, as the RM last said (empty: it was not
        # asked): where a replacement is steered when every host of the job's is left out
        self.partition_hosts: set[str] = set()
        self.failures: Counter[tuple[str, str]] = Counter()  # (role, host) -> failed
        self.counted: set[str] = set()  # containers whose failure was counted
        self.blacklisted: set[str] = set()
        self.left: dict[Key, str] = {}  # the host a task's container last failed on
        self.strict_host: dict[Key, str] = {}  # where each STRICT task must come back to
        self.pinned: dict[Key, float] = {}  # first asked for named hosts only, at
        self.escalated: set[Key] = set()  # waited past the escalate seconds: any host
        self.asked: dict[Key, str] = {}  # the hosts a pinned request names

    def ran(self, key: Key, host: str) -> None:
        """The task's container runs on ``host``."""
        self.last_host[key] = host
        role = self.roles.get(key[0])
        if role is not None and not role.label:
            self.hosts.add(host)
        if role is not None and role.placement_policy & STRICT:
            self.strict_host[key] = host
        self.left.pop(key, None)
        self.settled(key)

    def heard_nodes(self, hosts: set[str] | None) -> None:
        """The default partition's running nodes, from the ResourceManager (None: it did not
        answer). From another thread: one rebinding, read whole, needs no lock."""
        if hosts is not None:
            self.partition_hosts = hosts

    def given_back(self, key: Key) -> None:
        """The task gave its container back while the job waited for the queue, on its way
        to running: its next request names no host (that one may be another application's
        by now), a STRICT one's neither (its task had no state there yet to come back to)."""
        self.last_host.pop(key, None)
        self.strict_host.pop(key, None)
        self.settled(key)

    def settled(self, key: Key) -> None:
        """The task's request is met or gone: its next one is asked for anew."""
        self.pinned.pop(key, None)
        self.asked.pop(key, None)
        self.escalated.discard(key)

    def failed(self, key: Key, container: str, host: str) -> bool:
        """The task's container failed on ``host`` (counted once per container): whether
        the blacklist grew."""
        role = key[0]
        if container in self.counted or not host or host == "?":
            return False
        self.counted.add(container)
        self.failures[(role, host)] += 1
        self.left[key] = host
        self.settled(key)
        plan = self.roles.get(role)
        threshold = plan.node_failure_threshold if plan else None
        if threshold is None or self.failures[(role, host)] < threshold or \
                host in self.blacklisted:
            return False
        self.blacklisted.add(host)
        return True

    def blacklist(self) -> str:
        """YARN's blacklist for the job: the hosts left out, less those a STRICT task must
        come back to (YARN's list is the whole application's: it would keep that task off its
        only host for good). The job's other tasks keep off those by their requests."""
        return "\n".join(sorted(self.blacklisted - self.held()))

    def held(self) -> set[str]:
        """The hosts a STRICT role's tasks last ran on."""
        return set(self.strict_host.values())

    def for_request(self, role: str, keys: Iterable[Key], now: float = 0.0,
                    lost: Collection[str] = ()) -> str:
        """The placement of the role's next request, for these tasks, asked at ``now``;
        ``lost``: hosts where the job just lost a task (YARN may not know yet)."""
        plan = self.roles.get(role)
        if plan is not None and plan.placement_policy & ANTI_AFFINITY_REQUIRED:
            return APART
        keys = list(keys)
        last = {self.last_host[key] for key in keys if key in self.last_host}
        # YARN takes no node list with a node label: a labelled role gets the blacklist only
        if plan is None or not last or plan.placement_policy & ANYWHERE or plan.label:
            return ""
        if plan.placement_policy & STRICT:
            return f"nodes={','.join(sorted(last))}\nrelax=false"
        left = {self.left[key] for key in keys if key in self.left} | set(lost)
        # where they ran, unless they failed there; else where the job ran (the env's cache)
        out = left | self.blacklisted
        preferred = (last - out) or (self.hosts - out) or (self.partition_hosts - out)
        if not preferred:
            return ""
        if self.relaxes() and any(self.due(key, now) for key in keys):
            self.escalated.update(keys)
            return ""
        hosts = ",".join(sorted(preferred))
        for key in keys:
            self.pinned.setdefault(key, now)  # asked again (REASK_S): still from the first
            self.asked[key] = hosts
        return f"nodes={hosts}\nrelax=false"

    def due(self, key: Key, now: float) -> bool:
        """Whether the task's request for named hosts has waited its escalate seconds."""
        since = self.pinned.get(key)
        role = self.roles.get(key[0])
        return key in self.escalated or (since is not None and role is not None and
                                         now >= since + role.placement_escalate_seconds)

    def relaxes(self) -> bool:
        """Whether a request for named hosts may be relaxed to any host: not while a host
        left out is kept open for a STRICT task (any host could be that one)."""
        return not self.blacklisted & self.held()

    def escalations(self, now: float) -> dict[Key, float]:
        """Tasks whose request for named hosts waited past their role's
        yarn.placement.escalate.seconds, not relaxed yet (how long each waited): the master
        asks for them again, on any host."""
        if not self.relaxes():
            return {}
        due = {key: now - since for key, since in self.pinned.items()
               if key not in self.escalated and self.due(key, now)}
        self.escalated.update(due)
        return due

    def next_escalation(self) -> float | None:
        """When the next request for named hosts is due to be relaxed."""
        if not self.relaxes():
            return None
        times = [since + self.roles[key[0]].placement_escalate_seconds
                 for key, since in self.pinned.items()
                 if key not in self.escalated and key[0] in self.roles]
        return min(times) if times else None
