"""Where a waiting job stands in its YARN queue (appmaster/common/clusterview.py's
QueueStanding), asked of the ResourceManager's REST API with the user's credentials:
`tfyarn status` and `submit --wait` show it while a job waits for its AppMaster's container
or for its tasks'."""

from __future__ import annotations

import requests

from appmaster.common.clusterview import ACTIVE, QueueStanding, queue_standing
from tfyarn.hadoop import rmrest


def standing(reader: rmrest.RestReports, app_id: str) -> QueueStanding | None:
    """The job's queue as the RM sees it now, or None where the RM does not say (no
    CapacityScheduler, an error)."""
    try:
        return queue_standing(app_id, reader.get(f"apps/{app_id}")["app"],
                              reader.get("scheduler"), reader.get("apps", states=ACTIVE))
    except (rmrest.RestError, requests.RequestException, ValueError, KeyError):
        return None


def standing_line(app_id: str) -> str | None:
    """:meth:`QueueStanding.line` of the job's queue, through the first RM that answers."""
    reader = rmrest.reports_reader(failover_wait_s=0)
    found = standing(reader, app_id) if reader is not None else None
    return found.line() if found is not None else None
