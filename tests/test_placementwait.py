"""What the AppMaster says while a request waits on its role's placement rules."""

from __future__ import annotations

from dataclasses import replace

from appmaster.common.jobplan import RolePlan
from appmaster.model.placementwait import relaxed_line, waiting_reason

PS = RolePlan(name="ps", instances=3, priority=1, memory_mb=1024, vcores=1)


def test_no_rule_no_reason() -> None:
    assert waiting_reason(PS, 2, {"a"}) is None
    assert waiting_reason(replace(PS, placement_policy=4), 0, {"a"}) is None


def test_anti_affinity_names_the_hosts_taken() -> None:
    said = waiting_reason(replace(PS, placement_policy=4), 1, {"b", "a"})
    assert said == ("1 ps container(s) wait for host(s) of their own "
                    "(ANTI_AFFINITY_REQUIRED; ps holds a, b)")


def test_strict_waits_for_its_host_and_the_default_escalates() -> None:
    strict = waiting_reason(replace(PS, placement_policy=1), 1, (), last_host="h1",
                            waited_s=500)
    assert strict == "ps waits for its own host h1 (STRICT placement)"
    relaxing = waiting_reason(PS, 1, (), last_host="h1", waited_s=5)
    assert relaxing and "any host after 30 s" in relaxing
    assert waiting_reason(PS, 1, (), last_host="h1", waited_s=31) is None


def test_hosts_left_out_are_said() -> None:
    said = waiting_reason(replace(PS, node_failure_threshold=2), 1, (), hosts_left_out={"h2"})
    assert said == "the job uses h2 no more (yarn.node.failure.threshold 2)"


def test_a_relaxed_request_says_where_it_asked_and_how_long() -> None:
    said = relaxed_line("worker 1", replace(PS, placement_escalate_seconds=3), "h1,h2", 3.4)
    assert said == ("worker 1: no container on h1, h2 within 3 s "
                    "(yarn.placement.escalate.seconds; waited 3 s): asked for on any host")
