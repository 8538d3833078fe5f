"""Where a waiting application stands in its queue (appmaster/common/clusterview.py), from
the RM's answers: the scheduler recorded from the local cluster (tests/test_preflight_rm.json)
and applications made up for each case."""

from __future__ import annotations

import json
from pathlib import Path

from appmaster.common.clusterview import Resources, ahead_of, queue_standing

RECORDING = json.loads(Path(__file__).with_name("test_preflight_rm.json").read_text())


def app(app_id: str, started: int, priority: int = 0, state: str = "RUNNING",
        queue: str = "default") -> dict:
    return {"id": app_id, "startedTime": started, "priority": priority, "state": state,
            "queue": queue}


def test_ahead_are_the_higher_priorities_then_the_older() -> None:
    mine = app("a_3", 3000, priority=1)
    others = [app("a_1", 1000), app("a_2", 2000, priority=2), app("a_4", 4000, priority=1),
              app("a_0", 500, priority=1)]
    assert ahead_of(mine, others) == 2  # a_2 (higher priority), a_0 (as high, older)


def test_the_standing_of_a_job_in_its_queue() -> None:
    mine = app("a_3", 3000, state="ACCEPTED")
    apps = {"apps": {"app": [mine, app("a_1", 1000), app("a_2", 2000, state="ACCEPTED"),
                             app("a_9", 100, queue="small")]}}
    standing = queue_standing("a_3", mine, RECORDING["scheduler"], apps)
    assert standing is not None
    assert (standing.path, standing.ordering, standing.guaranteed, standing.maximum) == (
        "root.default", "fifo", Resources(16384, 16), Resources(16384, 16))
    assert (standing.ahead, standing.others, standing.accepted) == (2, 2, 1)
    assert standing.line().endswith("2 application(s) ahead of this one (older, or of a "
                                    "higher priority), 1 of them waiting for their "
                                    "AppMaster's container")


def test_no_standing_outside_a_capacity_scheduler_queue() -> None:
    mine = app("a_1", 1000, queue="nowhere")
    assert queue_standing("a_1", mine, RECORDING["scheduler"], {"apps": None}) is None
