"""Kafka's replica spread for new partitions: distinct replicas, leaders spread over the
brokers, distinct racks while racks remain, and Kafka's error when brokers are too few."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from brokerd.coordination.replica_assignment import assign_replicas
from brokerd.protocol.errors import ErrorCode, KafkaError


def test_replicas_are_distinct_and_leaders_spread_evenly():
    brokers = {b: None for b in (1, 2, 3, 4)}
    for seed in range(20):
        out = assign_replicas(brokers, 8, 3, rng=random.Random(seed))
        assert sorted(out) == list(range(8))
        for replicas in out.values():
            assert len(replicas) == 3 and len(set(replicas)) == 3 and set(replicas) <= {1, 2, 3, 4}
        assert Counter(replicas[0] for replicas in out.values()) == {1: 2, 2: 2, 3: 2, 4: 2}


def test_new_partitions_are_numbered_after_the_existing_ones():
    out = assign_replicas({1: None, 2: None}, 2, 1, first_partition=5, rng=random.Random(1))
    assert sorted(out) == [5, 6]


def test_racks_alternate_and_a_partitions_replicas_take_distinct_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    for seed in range(20):
        out = assign_replicas(racks, 6, 3, rng=random.Random(seed))
        for replicas in out.values():
            assert len({racks[r] for r in replicas}) == 3
    # More replicas than racks: every rack is used, then brokers are reused across racks.
    for replicas in assign_replicas(racks, 6, 4, rng=random.Random(3)).values():
        assert {racks[r] for r in replicas} == {"a", "b", "c"} and len(set(replicas)) == 4


def test_a_broker_without_a_rack_turns_rack_awareness_off():
    out = assign_replicas({1: "a", 2: "a", 3: None}, 3, 2, rng=random.Random(0))
    assert all(len(set(replicas)) == 2 for replicas in out.values())


def test_more_replicas_than_brokers_is_kafkas_invalid_replication_factor():
    with pytest.raises(KafkaError) as refused:
        assign_replicas({1: None, 2: None}, 1, 3)
    assert refused.value.error_code == ErrorCode.invalid_replication_factor
    assert str(refused.value.message) == ("Replication factor: 3 larger than available brokers: 2.")
