"""The cluster as a waiting job sees it: the ResourceManager's REST API asked from the
AppMaster's container, whose node's Hadoop configuration (HADOOP_CONF_DIR) names the RM's web
address. What it answers (the nodes, the job's queue and the applications in it) feeds the
job's rules (a node gone for good: appmaster/model/jobqueue.py) and its view (its standing in
the queue).

A RM whose web UI wants a Kerberos login (SPNEGO) is not asked: the AppMaster holds YARN's
tokens, not the user's ticket. The job then waits without those facts, and says so once in
its log; `tfyarn status` asks the RM with the user's own credentials instead.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.request
from dataclasses import dataclass

from appmaster.common.clusterview import (
    ACTIVE,
    DEFAULT_PARTITION,
    ClusterView,
    QueueStanding,
    cluster_view,
    queue_standing,
)
from appmaster.common.hadoopxml import rm_web_bases

log = logging.getLogger("tfyarn.master")

TIMEOUT_S = 5.0
QUIET_S = 300.0


@dataclass(frozen=True)
class ClusterFacts:
    nodes: ClusterView
    standing: QueueStanding | None
    pending: int  # containers the RM holds asks of the job's for (any host)


def pending_asks(app: dict) -> int:
    """How many containers the RM holds the application's asks for: its resource requests
    for any host ("*"), one per priority and size."""
    return sum(int(r.get("numContainers") or 0) for r in app.get("resourceRequests") or []
               if r.get("resourceName") == "*")


class ClusterWatch:
    """Asks the first RM that answers. Where none did, it asks again only QUIET_S later (an
    RM that does not answer at all costs its timeout, on the master's event loop), and says
    why once in the log."""

    def __init__(self, app_id: str, conf_dir: str | None = None) -> None:
        self.app_id = app_id
        self.bases = rm_web_bases(conf_dir or os.environ.get("HADOOP_CONF_DIR"))
        self.said_why = False
        self.quiet_until = 0.0

    def partition_hosts(self) -> set[str] | None:
        """The default partition's running hosts, from the first RM that answers its nodes
        (None: none did; the job goes on without)."""
        for base in self.bases:
            try:
                nodes = cluster_view({}, self._get(base, "nodes"))
            except (OSError, ValueError, KeyError):
                continue
            return {n.host for n in nodes.active_nodes(DEFAULT_PARTITION)}
        return None

    def facts(self) -> ClusterFacts | None:
        if time.monotonic() < self.quiet_until:
            return None
        why: Exception | str = "HADOOP_CONF_DIR names no web address"
        for base in self.bases:
            try:
                nodes = cluster_view({}, self._get(base, "nodes"))
                app = self._get(base, f"apps/{self.app_id}")["app"]
                standing = queue_standing(self.app_id, app, self._get(base, "scheduler"),
                                          self._get(base, f"apps?states={ACTIVE}"))
                return ClusterFacts(nodes, standing, pending_asks(app))
            except (OSError, ValueError, KeyError) as exc:
                why = exc
        self.quiet_until = time.monotonic() + QUIET_S
        if not self.said_why:
            self.said_why = True
            log.info("the ResourceManager's REST API cannot be asked from here (%s): the job "
                     "waits without its view of the nodes and the queue",
                     why)
        return None

    @staticmethod
    def _get(base: str, path: str) -> dict:
        request = urllib.request.Request(f"{base}/ws/v1/cluster/{path}",
                                         headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310
            return json.loads(answer.read())
