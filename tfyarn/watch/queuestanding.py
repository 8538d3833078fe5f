"""Where a waiting job stands in its YARN queue, from the ResourceManager's REST API: the
queue's use against its guaranteed capacity and its maximum, and the applications ahead of
it. `tfyarn status` and `submit --wait` show it while a job waits for its AppMaster's
container or for its tasks'; the job itself never needs it.

"Ahead" follows the CapacityScheduler's order within a leaf queue: an application of a higher
priority first, then, at one priority, the older first (fifo); a fair queue offers free
containers to whichever holds least, so there the count says how many share the queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import requests

from appmaster.common.clusterview import DEFAULT_PARTITION, ZERO, Resources, cluster_view
from tfyarn.hadoop import rmrest

ACTIVE = "ACCEPTED,RUNNING"


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


def standing(reader: rmrest.RestReports, app_id: str) -> QueueStanding | None:
    """The job's queue as the RM sees it now (the default partition's figures), or None
    where the RM does not say (no CapacityScheduler, an error)."""
    try:
        app = reader.get(f"apps/{app_id}")["app"]
        view = cluster_view(reader.get("scheduler"), {})
        queue = view.find_queue(app.get("queue", ""))
        apps = (reader.get("apps", states=ACTIVE).get("apps") or {}).get("app") or []
    except (rmrest.RestError, requests.RequestException, ValueError, KeyError):
        return None
    if queue is None:
        return None
    others = [a for a in apps if a["id"] != app_id and a.get("queue") in (queue.path,
                                                                            queue.name)]
    part = DEFAULT_PARTITION
    return QueueStanding(
        queue.path, queue.ordering, queue.used_by_label.get(part, ZERO),
        queue.guaranteed_by_label.get(part, ZERO), queue.max_by_label.get(part, ZERO),
        ahead_of(app, others), len(others), sum(a["state"] == "ACCEPTED" for a in others))


def standing_line(app_id: str) -> str | None:
    """:meth:`QueueStanding.line` of the job's queue, through the first RM that answers."""
    reader = rmrest.reports_reader(failover_wait_s=0)
    found = standing(reader, app_id) if reader is not None else None
    return found.line() if found is not None else None
