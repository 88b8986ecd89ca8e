"""The pure parts of partition reassignment: Kafka's replica-set arithmetic (RS = TRS + ORS,
adding, removing), target validation, the shrink-and-lead step, and the CLI's JSON files
and proposal."""

from __future__ import annotations

import random

import pytest

from brokerd.coordination.reassignment import ReplicaAssignment, invalid_target, shrunk_state
from brokerd.coordination.zk_data import (
    PartitionState,
    parse_reassign_partitions,
    reassign_partitions_payload,
)
from brokerd.tools.reassign import PlanError, parse_reassignment, propose


def test_reassign_to_lists_target_first_then_original():
    moving = ReplicaAssignment((1, 2, 3)).reassign_to([3, 4, 2])
    assert moving == ReplicaAssignment((3, 4, 2, 1), adding=(4,), removing=(1,))
    assert moving.origin == (3, 2, 1) and moving.target == (3, 4, 2)
    # A new target replaces the ongoing one against the original replicas; cancelling
    # (reassigning to the origin) leaves no adding or removing replicas.
    assert moving.reassign_to([5]).adding == (5,)
    assert not moving.reassign_to(moving.origin).is_reassigning


def test_invalid_targets_are_named():
    current = ReplicaAssignment((1, 2))
    live = {1, 2, 3}
    assert "Empty" in invalid_target([], current, live)
    assert "Duplicate" in invalid_target([1, 1], current, live)
    assert "Invalid broker id" in invalid_target([-1, 2], current, live)
    assert "not alive" in invalid_target([1, 4], current, live)
    assert invalid_target([3, 2], current, live) is None


def test_shrunk_state_moves_leadership_into_the_target():
    state = PartitionState(leader=1, leader_epoch=4, isr=[1, 2, 3], controller_epoch=2)
    after = shrunk_state(state, {1}, [3, 2], live={1, 2, 3}, controller_epoch=7)
    assert (after.leader, after.leader_epoch, after.isr, after.controller_epoch) == (
        3,
        5,
        [2, 3],
        7,
    )
    # A dead target cannot lead; none left means no state.
    assert shrunk_state(state, {1}, [3, 2], live={1, 2}, controller_epoch=7).leader == 2
    assert shrunk_state(state, {1}, [3], live={1}, controller_epoch=7) is None


def test_legacy_znode_round_trip():
    entries = {("t", 0): [1, 2], ("u", 3): [3]}
    assert parse_reassign_partitions(reassign_partitions_payload(entries)) == entries
    assert parse_reassign_partitions({"partitions": [{"topic": "t"}]}) == {}
    assert parse_reassign_partitions(None) == {}


def test_cli_files_and_proposal():
    plan = parse_reassignment(
        {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]}]}
    )
    assert plan == {("t", 0): [2, 3]}
    for bad in ({}, {"partitions": [{"topic": "t"}]}, {"partitions": []}):
        with pytest.raises(PlanError):
            parse_reassignment(bad)
    with pytest.raises(PlanError):
        parse_reassignment(
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/d"]}]}
        )
    current = {("t", p): [1, 2] for p in range(6)}
    proposed = propose(current, [4, 5, 6], random.Random(1))
    assert set(proposed) == set(current)
    for replicas in proposed.values():
        assert len(replicas) == 2 and len(set(replicas)) == 2 and set(replicas) <= {4, 5, 6}
    leaders = [proposed[("t", p)][0] for p in range(6)]
    assert sorted(leaders) == [4, 4, 5, 5, 6, 6]  # leadership spread evenly
    with pytest.raises(PlanError):
        propose(current, [4], random.Random(1))
