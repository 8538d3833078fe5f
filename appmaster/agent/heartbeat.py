"""The agent's sign of life, and its fence.

YARN notices a silent NodeManager only after 10 minutes; tfyarn must not wait that long. Each
agent beats on the master's rendezvous every few seconds, which raises its counter; the master
reads them all and declares a task lost when its counter stops (a dead host sends nothing:
silence is what counts). The same beat's answer fences the task: when the master has given
its task to another container (it deleted ``task/<container>``), or when the agent could not
reach the master for longer than the timeout (its host was cut off, and by now the job has
replaced it), the agent ends at once and its script with it (PR_SET_PDEATHSIG), so an old
task never rejoins the job. The answer also says when the master has new HDFS tokens
(appmaster/common/hdfstokens.py): ``on_tokens(version)`` fetches them.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

from appmaster.common import registry
from appmaster.common.agentlink import AgentLink
from appmaster.common.storage import StorageError, bounded

log = logging.getLogger("tfyarn.heartbeat")


class Heartbeat:
    def __init__(self, link: AgentLink, container: str, interval_s: float, timeout_s: float,
                 fence: Callable[[str], None] | None = None,
                 on_tokens: Callable[[int], None] | None = None) -> None:
        self.link = link
        self.container = container
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self.fence = fence or end_now
        self.on_tokens = on_tokens
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="heartbeat").start()

    def stop(self) -> None:
        self._stop.set()

    def beat(self) -> bool:
        """One beat; whether this container still holds its task."""
        holds_task, tokens_version = self.link.beat(self.container)
        if holds_task and tokens_version and self.on_tokens:
            try:
                self.on_tokens(tokens_version)
            except OSError as exc:  # the old tokens still serve until they die
                log.error("could not take the AppMaster's new HDFS tokens: %s", exc)
        return holds_task

    def _run(self) -> None:
        reached = time.monotonic()
        while True:
            try:
                holds_task = bounded(self.beat, self.timeout_s, "the AppMaster")
            except StorageError as exc:
                if time.monotonic() - reached > self.timeout_s:
                    self.fence(f"cut off from the AppMaster for more than {self.timeout_s:.0f} s "
                               f"({exc}): the job has replaced this task")
                    return
            else:
                reached = time.monotonic()
                if not holds_task:
                    self.fence("the AppMaster gave this task to another container (this one "
                               "was silent too long, e.g. its host was cut off)")
                    return
            if self._stop.wait(self.interval_s):
                return


def end_now(reason: str) -> None:
    """End the agent at once; the kernel kills its script (PR_SET_PDEATHSIG)."""
    log.error("stale task, ending it: %s", reason)
    sys.stdout.flush()
    os._exit(registry.STALE_EXIT)
