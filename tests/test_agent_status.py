"""The agent's word on its task (``status/<container>``, appmaster/common/registry.py) as a
typed message: each state's JSON is what the agents have always written (the master, the
benchmarks and older agents read the same keys), and reads back as the value it was."""

from __future__ import annotations

import json

import pytest

from appmaster.common.registry import AgentState, AgentStatus

# Each state's message as the agent writes it (appmaster/agent/main.py), key for key.
WIRE = [
    {"state": "started", "time": 1.5, "yarn_container_id": "container_1_0001_01_000002",
     "node": "nm1:8042", "user": "alice"},
    {"state": "registered", "time": 2.5, "address": "h:2222",
     "gpus": {"held": [0], "error": None}},
    {"state": "running", "time": 3.5, "address": "h:2222"},
    {"state": "exited", "time": 4.5, "address": "h:2222", "exit_code": 1},
    {"state": "exited", "time": 4.5, "exit_code": 74},  # before its script: no address
    {"state": "exited", "time": 4.5, "exit_code": 70, "gpus": {"error": "no GPU"}},
]


@pytest.mark.parametrize("wire", WIRE, ids=lambda w: w["state"])
def test_each_state_reads_and_writes_the_same_json(wire: dict) -> None:
    status = AgentStatus.from_json(json.dumps(wire))
    assert isinstance(status.state, AgentState) and status.state == wire["state"]
    assert json.loads(status.to_json()) == wire
    assert AgentStatus.from_dict(status.to_dict()) == status


def test_the_fields_of_a_state_are_typed_and_the_unset_ones_not_written() -> None:
    status = AgentStatus(AgentState.EXITED, exit_code=0)
    assert status.to_json() == '{"state": "exited", "exit_code": 0}'
    started = AgentStatus.from_dict(WIRE[0])
    assert (started.node, started.user, started.exit_code) == ("nm1:8042", "alice", None)


def test_a_word_no_agent_says_is_refused() -> None:
    with pytest.raises(ValueError, match="'finished' is not a valid AgentState"):
        AgentStatus.from_dict({"state": "finished"})
    with pytest.raises(KeyError):
        AgentStatus.from_dict({"time": 1.0})


def test_keys_a_newer_agent_adds_are_passed_over() -> None:
    assert AgentStatus.from_dict({"state": "running", "cpu": 3}) == AgentStatus(
        AgentState.RUNNING)
