"""The rules of a gang waiting for the queue (appmaster/model/queuewait.py): which job gives
back what it holds, when, and when it asks again."""

from __future__ import annotations

import itertools
import random

import pytest

from appmaster.model.queuewait import QueueWait

HOLD = 60.0


def wait(*draws: float) -> QueueWait:
    numbers = itertools.cycle(draws or (0.5,))
    queue_wait = QueueWait(HOLD, lambda: next(numbers))
    queue_wait.asked(100.0)
    return queue_wait


def test_a_job_holding_part_of_its_gang_gives_it_back_once_nothing_came_for_the_hold() -> None:
    w = wait()
    assert w.next_deadline(holding=3, waiting=1) == 160.0
    assert not w.release_due(159.9, holding=3, waiting=1)
    assert w.release_due(160.0, holding=3, waiting=1)


def test_each_container_that_comes_starts_the_hold_again() -> None:
    """A large job on an idle cluster is given its containers over minutes: it is on its
    way, not stuck."""
    w = wait()
    for now in (150.0, 200.0, 250.0):
        w.given(now)
        assert not w.release_due(now + HOLD - 1, holding=2, waiting=2)
    assert w.release_due(250.0 + HOLD, holding=2, waiting=2)


def test_a_job_that_holds_nothing_keeps_its_place_in_the_queue() -> None:
    w = wait()
    assert not w.release_due(10_000.0, holding=0, waiting=4)
    assert w.next_deadline(holding=0, waiting=4) is None


def test_a_job_given_everything_keeps_it_even_as_its_hold_runs_out() -> None:
    """The last container came in the same moment the hold ran out: nothing is waiting any
    more, so nothing is given back."""
    w = wait()
    assert not w.release_due(160.0, holding=4, waiting=0)
    assert w.next_deadline(holding=4, waiting=0) is None


def test_the_backoff_doubles_each_round_up_to_16_times_the_hold() -> None:
    w = wait(0.5)  # the random factor 1.0
    backoffs = []
    now = 100.0
    for _ in range(7):
        now += HOLD
        assert w.release_due(now, holding=1, waiting=1)
        again = w.release(now, holding=1)
        backoffs.append(again - now)
        assert w.backing_off and not w.release_due(again, holding=0, waiting=2)
        assert not w.ask_again_due(again - 0.1) and w.ask_again_due(again)
        now = again
        w.asked(now)
    assert backoffs == [60.0, 120.0, 240.0, 480.0, 960.0, 960.0, 960.0]
    assert w.rounds == 7 and w.given_back == 7


def test_the_random_factor_spreads_the_backoff_from_half_to_one_and_a_half() -> None:
    for draw, backoff in ((0.0, 30.0), (0.25, 60.0 * 0.75), (0.999, 60.0 * 1.499)):
        w = wait(draw)
        assert w.release(160.0, holding=2) - 160.0 == pytest.approx(backoff)


def test_two_jobs_that_give_back_together_ask_again_apart() -> None:
    """A tie: both held half of what they needed and gave it back at the same moment. Their
    own random draws part them; the first to ask again takes what came free, the second
    finds the queue full and holds nothing while it waits."""
    first, second = wait(0.1), wait(0.8)
    assert first.release(160.0, holding=2) < second.release(160.0, holding=2)


def test_ties_become_rarer_round_after_round() -> None:
    """Two jobs whose asks come within 2 s of each other split what comes free again. Over
    many pairs of random draws, fewer tie in the second round than in the first: the
    backoff doubled, the window of a tie did not."""
    rng = random.Random(53)

    def ties(round_: int) -> int:
        count = 0
        for _ in range(2000):
            a, b = QueueWait(HOLD, rng.random), QueueWait(HOLD, rng.random)
            a.rounds = b.rounds = round_ - 1
            count += abs(a.release(0.0, 1) - b.release(0.0, 1)) < 2.0
        return count

    first, second = ties(1), ties(2)
    assert 0 < second < first


def test_asking_again_starts_a_new_hold() -> None:
    w = wait()
    again = w.release(160.0, holding=3)
    w.asked(again)
    assert not w.backing_off and w.next_deadline(holding=1, waiting=3) == again + HOLD
    assert w.to_dict(again)["rounds"] == 1 and w.to_dict(again)["asks_again_in_s"] is None
