"""Tasks that tfyarn ends (a group restart, a flex, a stall, the job's end), asked to stop
rather than killed: each agent stops its script (SIGTERM, then SIGKILL after a grace), the
chief's copies its work dir to HDFS, then it exits (appmaster/agent/main.py). A container
still there at its deadline is killed. The newest generation's tasks restore only once no
stopped chief is still copying (registry.settled_key): what it saved is then on HDFS."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from appmaster.common import registry
from appmaster.common.registry import AgentState, AgentStatus
from appmaster.master.rendezvous import Store
from appmaster.model.jobactions import Stop

log = logging.getLogger("tfyarn.master")


class Stopping:
    def __init__(self, store: Store, kill: Callable[[str], None]) -> None:
        self.store, self.kill = store, kill
        # container -> (when it is killed if still there, whether it is a chief)
        self.containers: dict[str, tuple[float, bool]] = {}
        self.asked_generation = 0  # the newest generation containers were asked for
        self.settled_generation = 0  # the newest whose tasks may restore

    def stop(self, action: Stop, now: float) -> None:
        self.store.put(registry.stop_key(action.container), b"1")
        self.containers[action.container] = (now + action.grace_s, action.chief)

    def asked(self, generation: int) -> None:
        """Containers were asked for ``generation``'s tasks."""
        self.asked_generation = max(self.asked_generation, generation)

    def next_deadline(self) -> float | None:
        return min((due for due, _ in self.containers.values()), default=None)

    def ended(self, container: str) -> None:
        """A container the job dropped ended."""
        if self.containers.pop(container, None):
            self.settle()

    def kill_late(self, now: float) -> None:
        """Containers asked to stop that have not ended within their grace: killed."""
        late = [c for c, (due, _) in self.containers.items() if now >= due]
        for container in late:
            log.warning("%s did not stop within its grace: killed", container)
            self.kill(container)
            del self.containers[container]
        if late:
            self.settle()

    def settle(self) -> None:
        """The newest generation may restore once no stopped chief is still copying."""
        if self.asked_generation <= self.settled_generation:
            return
        if any(chief for _, chief in self.containers.values()):
            return
        self.settled_generation = self.asked_generation
        self.store.put(registry.settled_key(self.settled_generation), b"1")

    def wind_down(self, running: list[str], chief: str | None, timeout_s: float) -> bool:
        """The job ends: the ``running`` tasks' containers are asked to stop, and the
        ``chief``'s last copy to HDFS awaited (its agent's word that it exited), up to
        ``timeout_s``; or, without a running chief, that of a chief already asked to stop
        (a stalled one, whose stall ended the job). Whether no chief is copying any more."""
        for container in running:
            self.store.put(registry.stop_key(container), b"1")
        chief = chief or next((c for c, (_, is_chief) in self.containers.items() if is_chief),
                              None)
        if chief is None:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.store.get(registry.status_key(chief))
            if found and AgentStatus.from_json(found[0]).state == AgentState.EXITED:
                return True
            time.sleep(0.2)
        log.warning("the chief did not end within %.0f s of the job's end", timeout_s)
        return False
