"""Which tasks have gone silent: the master's view of the agents' heartbeats.

Only the master's own clock counts: a beat is "heard" when the counter an agent writes under
``alive/<container>`` has changed since the master last looked, so clocks on other hosts do
not matter and a host that died (and sends nothing, not even a FIN) shows as silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Liveness:
    timeout_s: float
    # container -> (the last counter seen, when the master saw it change)
    _heard: dict[str, tuple[bytes | None, float]] = field(default_factory=dict)

    def watch(self, container: str, now: float) -> None:
        """From now on, ``container`` must be heard within the timeout."""
        self._heard[container] = (None, now)

    def forget(self, container: str) -> None:
        self._heard.pop(container, None)

    def count(self) -> int:
        """How many are watched (asked after every event: no copy of the list)."""
        return len(self._heard)

    def update(self, beats: dict[str, bytes], now: float) -> None:
        """``beats``: container -> its current counter, as read from the registry."""
        for container, (last, _) in list(self._heard.items()):
            value = beats.get(container)
            if value is not None and value != last:
                self._heard[container] = (value, now)

    def silent(self, now: float) -> list[tuple[str, float]]:
        """(container, seconds silent) of every watched container past the timeout."""
        return [(c, now - at) for c, (_, at) in self._heard.items() if now - at > self.timeout_s]

    def silent_for(self, container: str, now: float) -> float | None:
        heard = self._heard.get(container)
        return None if heard is None else now - heard[1]
