"""Where a role's next containers are asked for (appmaster/model/placement.py): Slider's
placement policy and node failure threshold, as the patched AppMaster's keys say them."""

from __future__ import annotations

from dataclasses import replace

from test_job import plan

from appmaster.common.jobplan import JobPlan
from appmaster.model.placement import Placement


def with_worker(job: JobPlan, **changes) -> JobPlan:
    return replace(job, roles=tuple(replace(r, **changes) if r.name == "worker" else r
                                    for r in job.roles))


def test_a_first_request_goes_anywhere() -> None:
    assert Placement(plan()).for_request("worker", [("worker", 0)]) == ""


def test_a_task_asked_again_prefers_its_host_unless_it_failed_there() -> None:
    placement = Placement(plan())
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    placement.ran(("ps", 0), "h3")
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h2"  # then anywhere
    placement.failed(("worker", 1), "worker_1", "h2")
    # the job's other hosts (the env in YARN's cache), then anywhere
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h1,h3"
    placement.ran(("worker", 1), "h3")
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h3"


def test_strict_goes_back_to_its_host_only_and_anywhere_keeps_no_history() -> None:
    strict = Placement(with_worker(plan(), placement_policy=1))
    strict.ran(("worker", 1), "h2")
    assert strict.for_request("worker", [("worker", 1)]) == "nodes=h2\nrelax=false"
    anywhere = Placement(with_worker(plan(), placement_policy=2))
    anywhere.ran(("worker", 1), "h2")
    anywhere.ran(("worker", 0), "h1")
    assert anywhere.for_request("worker", [("worker", 1)]) == ""


def test_a_labelled_role_names_no_nodes() -> None:
    placement = Placement(with_worker(plan(), label="gpu", placement_policy=1))
    placement.ran(("worker", 1), "h2")
    assert placement.for_request("worker", [("worker", 1)]) == ""


def test_a_host_past_the_node_failure_threshold_is_blacklisted_once() -> None:
    placement = Placement(with_worker(plan(), node_failure_threshold=2))
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    assert not placement.failed(("worker", 1), "worker_1", "h2")
    assert not placement.failed(("worker", 1), "worker_1", "h2")  # the same container: once
    assert placement.failed(("worker", 1), "worker_2", "h2")
    assert placement.blacklist() == "h2"
    assert not placement.failed(("worker", 1), "worker_3", "h2")  # already left out
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h1"  # h2 is out


def test_without_a_threshold_no_host_is_left_out() -> None:
    placement = Placement(plan())
    for n in range(5):
        assert not placement.failed(("worker", 0), f"worker_{n}", "h1")
    assert placement.blacklist() == ""


def test_anti_affinity_asks_apart_first_and_again_labelled_too() -> None:
    for policy in (4, 5, 6):
        placement = Placement(with_worker(plan(), placement_policy=policy))
        assert placement.for_request("worker", [("worker", 0)]) == "antiaffinity=true"
        placement.ran(("worker", 0), "h1")
        placement.failed(("worker", 0), "worker_0", "h1")
        # no node list: YARN's constraint alone keeps them apart (it takes none)
        assert placement.for_request("worker", [("worker", 0)]) == "antiaffinity=true"
    labelled = Placement(with_worker(plan(), placement_policy=4, label="gpu"))
    assert labelled.for_request("worker", [("worker", 1)]) == "antiaffinity=true"
    # the other roles are asked for as before
    assert labelled.for_request("ps", [("ps", 0)]) == ""
