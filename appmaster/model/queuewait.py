"""A gang waiting for the queue: when a job gives back the part of its containers it holds,
and when it asks for them again. Pure: the job's counts and the time come in, decisions go
out; the random draws come from the master.

A distributed training job is a gang: none of its tasks trains until every one runs. YARN
gives an application its containers as they come free and lets it keep them, so a job that
holds part of its gang while the rest cannot come keeps those containers from everyone
else; under a queue's fair ordering two such jobs can each hold part of what they need and
wait on each other forever. Each job therefore applies, on its own, Kueue's answer (admit
whole, else requeue with a backoff):

- while some of its tasks wait for YARN and others hold containers, and no container came
  for ``site.global.allocation.hold`` seconds, the job gives back every container it holds
  and withdraws its requests;
- it asks again after a backoff: the hold, doubled at each round up to 16 times, times a
  random factor from 0.5 to 1.5. Two jobs that gave back at the same moment draw different
  factors and ask again apart, the first taking what came free; the doubling makes a second
  tie rarer than the first.

A job that holds nothing keeps its requests (its place in the queue); one given everything
keeps it all, even at the moment its hold ran out. A job that already trains (a replaced
worker waiting for its container) is not a gang waiting: the rule applies only on the way to
running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MAX_DOUBLINGS = 4  # the backoff grows to 16 times the hold
JITTER = (0.5, 1.5)  # the backoff's random factor


@dataclass
class QueueWait:
    """One job's rounds of giving back and asking again."""

    hold_s: float
    draw: Callable[[], float]  # uniform in [0, 1): the master's random source, a test's own
    last_given: float = 0.0  # when a container last came (or the containers were asked for)
    rounds: int = 0  # how many times the job gave its containers back
    asks_again_at: float | None = None  # while it waits out a backoff
    given_back: int = 0  # containers given back, over every round

    def asked(self, now: float) -> None:
        """The job asked for its containers (first, again, or for a new generation): the
        hold counts from now."""
        self.last_given = now
        self.asks_again_at = None

    def given(self, now: float) -> None:
        """A container came: the gang is still on its way, the hold counts from now."""
        self.last_given = now

    @property
    def backing_off(self) -> bool:
        return self.asks_again_at is not None

    def release_due(self, now: float, holding: int, waiting: int) -> bool:
        """Whether the job should give back the ``holding`` containers it has while
        ``waiting`` tasks have none: part of a gang, and nothing came for the hold."""
        return (holding > 0 and waiting > 0 and not self.backing_off
                and now >= self.last_given + self.hold_s)

    def release(self, now: float, holding: int) -> float:
        """The job gives back ``holding`` containers now: when it asks again."""
        self.rounds += 1
        self.given_back += holding
        low, high = JITTER
        factor = low + (high - low) * self.draw()
        backoff = self.hold_s * 2 ** min(self.rounds - 1, MAX_DOUBLINGS) * factor
        self.asks_again_at = now + backoff
        return self.asks_again_at

    def ask_again_due(self, now: float) -> bool:
        return self.asks_again_at is not None and now >= self.asks_again_at

    def next_deadline(self, holding: int, waiting: int) -> float | None:
        """When the next decision is due: the end of the backoff, or of the hold."""
        if self.asks_again_at is not None:
            return self.asks_again_at
        if holding > 0 and waiting > 0:
            return self.last_given + self.hold_s
        return None

    def to_dict(self, now: float) -> dict:
        """For the job's view: the rounds so far, and the backoff's end if in one."""
        return {"hold_s": self.hold_s, "rounds": self.rounds, "given_back": self.given_back,
                "asks_again_in_s": (None if self.asks_again_at is None
                                    else max(0.0, self.asks_again_at - now))}
