"""What a container request waits for because of its role's placement rules: the part of
Slider's placement that pre-flight cannot know (which hosts are free, which the job left out),
said while the job waits. Pure: the AppMaster passes what it knows of the hosts and shows the
line on the page and in status (the waiting task's note)."""

from __future__ import annotations

from collections.abc import Collection

from appmaster.common.jobplan import RolePlan
from appmaster.common.settings import (
    ANTI_AFFINITY_REQUIRED,
    NODE_FAILURE_THRESHOLD,
    PLACEMENT_ESCALATE,
    STRICT,
)


def waiting_reason(role: RolePlan, waiting: int, hosts_in_use: Collection[str],
                   hosts_left_out: Collection[str] = (), last_host: str | None = None,
                   waited_s: float = 0.0) -> str | None:
    """Why ``waiting`` containers of ``role`` are not placed yet, in users' words; None when
    its placement rules ask nothing of the hosts.

    ``hosts_in_use``: the hosts its running containers hold; ``hosts_left_out``: hosts the
    job uses no more (yarn.node.failure.threshold); ``last_host``: where a restarted task
    ran (STRICT); ``waited_s``: how long the request has waited."""
    if waiting < 1:
        return None
    parts = []
    if role.placement_policy & ANTI_AFFINITY_REQUIRED:
        taken = ", ".join(sorted(hosts_in_use)) or "none yet"
        parts.append(f"{waiting} {role.name} container(s) wait for host(s) of their own "
                     f"(ANTI_AFFINITY_REQUIRED; {role.name} holds {taken})")
    if role.placement_policy & STRICT and last_host:
        parts.append(f"{role.name} waits for its own host {last_host} (STRICT placement)")
    elif last_host and waited_s < role.placement_escalate_seconds:
        parts.append(f"{role.name} asks for {last_host} first, any host after "
                     f"{role.placement_escalate_seconds:g} s ({PLACEMENT_ESCALATE.key})")
    if hosts_left_out:
        parts.append(f"the job uses {', '.join(sorted(hosts_left_out))} no more "
                     f"({NODE_FAILURE_THRESHOLD.key} {role.node_failure_threshold})")
    return "; ".join(parts) or None


def relaxed_line(task_name: str, role: RolePlan, hosts: str, waited_s: float) -> str:
    """What the job says when a request for named hosts is relaxed to any host."""
    return (f"{task_name}: no container on {hosts.replace(',', ', ')} within "
            f"{role.placement_escalate_seconds:g} s ({PLACEMENT_ESCALATE.key}; "
            f"waited {waited_s:.0f} s): asked for on any host")
