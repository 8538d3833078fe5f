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
    # only there, until the escalate seconds pass (below)
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h2\nrelax=false"
    placement.failed(("worker", 1), "worker_1", "h2")
    # the job's other hosts (the env in YARN's cache)
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h1,h3\nrelax=false"
    placement.ran(("worker", 1), "h3")
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h3\nrelax=false"


def test_strict_goes_back_to_its_host_only_and_anywhere_keeps_no_history() -> None:
    strict = Placement(with_worker(plan(), placement_policy=1))
    strict.ran(("worker", 1), "h2")
    assert strict.for_request("worker", [("worker", 1)]) == "nodes=h2\nrelax=false"
    anywhere = Placement(with_worker(plan(), placement_policy=2))
    anywhere.ran(("worker", 1), "h2")
    anywhere.ran(("worker", 0), "h1")
    assert anywhere.for_request("worker", [("worker", 1)]) == ""


def test_a_task_given_back_for_the_queue_asks_for_any_host_strict_too() -> None:
    """The host its container had may be another application's by now."""
    for policy in (0, 1):
        placement = Placement(with_worker(plan(), placement_policy=policy))
        placement.ran(("worker", 1), "h2")
        placement.given_back(("worker", 1))
        assert placement.for_request("worker", [("worker", 1)]) == ""


def test_a_labelled_role_names_no_nodes_and_its_hosts_hold_no_replacement() -> None:
    placement = Placement(with_worker(plan(), label="gpu", placement_policy=1))
    placement.ran(("worker", 1), "h2")
    assert placement.for_request("worker", [("worker", 1)]) == ""
    placement.ran(("ps", 0), "h1")
    placement.ran(("ps", 1), "h3")
    placement.failed(("ps", 0), "ps_0", "h1")
    # not h2, the labelled worker's (another partition)
    assert placement.for_request("ps", [("ps", 0)]) == "nodes=h3\nrelax=false"


def test_a_host_past_the_node_failure_threshold_is_blacklisted_once() -> None:
    placement = Placement(with_worker(plan(), node_failure_threshold=2))
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    assert not placement.failed(("worker", 1), "worker_1", "h2")
    assert not placement.failed(("worker", 1), "worker_1", "h2")  # the same container: once
    assert placement.failed(("worker", 1), "worker_2", "h2")
    assert placement.blacklist() == "h2"
    assert not placement.failed(("worker", 1), "worker_3", "h2")  # already left out
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h1\nrelax=false"


def test_a_host_left_out_stays_open_to_yarn_for_a_strict_task_and_nothing_relaxes() -> None:
    """YARN's blacklist is the whole application's: a STRICT ps could never come back to a
    host a worker's failures left out. The host stays open; the workers avoid it by asking
    for the job's other hosts, never relaxed."""
    job = with_worker(plan(), node_failure_threshold=1, placement_escalate_seconds=5.0)
    job = replace(job, roles=tuple(replace(r, placement_policy=1) if r.name == "ps" else r
                                   for r in job.roles))
    placement = Placement(job)
    placement.ran(("ps", 0), "h1")
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    assert placement.failed(("worker", 0), "worker_0", "h1")
    assert placement.blacklist() == "" and placement.held() == {"h1"}
    assert placement.for_request("ps", [("ps", 0)]) == "nodes=h1\nrelax=false"
    assert placement.for_request("worker", [("worker", 0)], now=0.0) == "nodes=h2\nrelax=false"
    assert placement.escalations(100.0) == {} and placement.next_escalation() is None
    assert placement.for_request("worker", [("worker", 0)], now=100.0) == (
        "nodes=h2\nrelax=false")


def test_a_job_that_ran_on_one_host_steers_a_replacement_to_the_partitions_other_nodes() -> None:
    """Every task ran on h1 (YARN packs a small job), a worker's failures left h1 out and a
    STRICT ps keeps YARN's blacklist from saying so: the request names the partition's other
    running nodes as the RM listed them; without that list, it cannot avoid h1."""
    job = with_worker(plan(), node_failure_threshold=1)
    job = replace(job, roles=tuple(replace(r, placement_policy=1) if r.name == "ps" else r
                                   for r in job.roles))
    placement = Placement(job)
    for key in (("ps", 0), ("worker", 0), ("worker", 1)):
        placement.ran(key, "h1")
    assert placement.failed(("worker", 1), "worker_1", "h1")
    assert placement.blacklist() == ""  # h1 stays open to the STRICT ps
    assert placement.for_request("worker", [("worker", 1)]) == ""  # no other host known
    placement.heard_nodes({"h1", "h2", "h3"})
    assert placement.for_request("worker", [("worker", 1)]) == "nodes=h2,h3\nrelax=false"


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


def test_a_request_for_named_hosts_is_relaxed_after_the_escalate_seconds() -> None:
    placement = Placement(with_worker(plan(), placement_escalate_seconds=10))
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    assert placement.next_escalation() is None  # nothing asked for named hosts yet
    assert placement.for_request("worker", [("worker", 1)], now=100) == "nodes=h2\nrelax=false"
    assert placement.asked[("worker", 1)] == "h2"
    assert placement.next_escalation() == 110
    assert placement.escalations(109.9) == {}
    # asked again before then (YARN lost the request): still timed from the first ask
    assert placement.for_request("worker", [("worker", 1)], now=105) == "nodes=h2\nrelax=false"
    assert placement.escalations(112) == {("worker", 1): 12}
    assert placement.escalations(120) == {}  # once
    assert placement.next_escalation() is None
    assert placement.for_request("worker", [("worker", 1)], now=112) == ""  # any host
    # placed: its next request names its host again, timed anew
    placement.ran(("worker", 1), "h3")
    assert placement.for_request("worker", [("worker", 1)], now=200) == "nodes=h3\nrelax=false"
    assert placement.next_escalation() == 210


def test_a_request_asked_again_past_the_escalate_seconds_goes_anywhere() -> None:
    placement = Placement(plan())  # the default: 30 s
    placement.ran(("worker", 1), "h2")
    placement.for_request("worker", [("worker", 1)], now=0)
    assert placement.for_request("worker", [("worker", 1)], now=30) == ""
    assert placement.escalations(31) == {}  # relaxed already: not asked for again
    # a failure starts its next request's time anew (where the job ran, not h2)
    placement.ran(("worker", 0), "h1")
    placement.failed(("worker", 1), "worker_9", "h2")
    assert placement.for_request("worker", [("worker", 1)], now=40) == "nodes=h1\nrelax=false"
    assert placement.next_escalation() == 70


def test_strict_anywhere_and_labelled_requests_never_escalate() -> None:
    for changes in ({"placement_policy": 1}, {"placement_policy": 2}, {"label": "gpu"},
                    {"placement_policy": 4}):
        placement = Placement(with_worker(plan(), **changes))
        placement.ran(("worker", 1), "h2")
        placement.for_request("worker", [("worker", 1)], now=0)
        assert placement.next_escalation() is None, changes
        assert placement.escalations(1e6) == {}, changes


def test_a_host_the_job_just_lost_is_asked_for_by_no_replacement() -> None:
    # YARN may list it for minutes: a request for it alone would wait the escalate seconds
    placement = Placement(plan())
    placement.ran(("worker", 0), "h1")
    placement.ran(("worker", 1), "h2")
    placement.ran(("ps", 0), "h2")
    assert placement.for_request("worker", [("worker", 1), ("ps", 0)], lost={"h2"}) == (
        "nodes=h1\nrelax=false")
    assert placement.for_request("worker", [("worker", 1)], lost={"h1", "h2"}) == ""
