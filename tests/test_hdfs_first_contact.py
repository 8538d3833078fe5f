"""A task's first contact with HDFS (appmaster/agent/taskdir.py): refused, it is tried again on
a new connection; never answered, it is not."""

from __future__ import annotations

import pytest

from appmaster.agent import taskdir
from appmaster.common.storage import NoAnswer, StorageError


class Flaky:
    """Refuses the first ``refusals`` calls, then answers."""

    def __init__(self, refusals: int, error: Exception) -> None:
        self.refusals, self.error = refusals, error
        self.calls = self.reconnects = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.refusals:
            raise self.error
        return "restored"

    def reconnect(self) -> None:
        self.reconnects += 1


def test_a_refused_first_contact_is_tried_again_on_a_new_connection() -> None:
    flaky, pauses = Flaky(2, StorageError("GSSAPIError: No credentials")), []
    assert taskdir.first_contact(flaky, flaky.reconnect, "HDFS", pauses.append) == "restored"
    assert (flaky.calls, flaky.reconnects) == (3, 2)
    assert pauses == list(taskdir.FIRST_CONTACT_PAUSES_S)


def test_refused_every_time_it_fails_with_the_last_reason() -> None:
    flaky = Flaky(9, StorageError("Permission denied"))
    with pytest.raises(StorageError, match="Permission denied"):
        taskdir.first_contact(flaky, flaky.reconnect, "HDFS", lambda _: None)
    assert flaky.calls == len(taskdir.FIRST_CONTACT_PAUSES_S) + 1


def test_a_namenode_that_never_answered_is_not_waited_for_again() -> None:
    flaky = Flaky(1, NoAnswer("HDFS did not answer within 300 s"))
    with pytest.raises(NoAnswer):
        taskdir.first_contact(flaky, flaky.reconnect, "HDFS", lambda _: None)
    assert (flaky.calls, flaky.reconnects) == (1, 0)
