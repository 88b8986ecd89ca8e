"""The KIP-848 server-side assignors (uniform, range) and the reconciliation of a member
towards its target (revoke before assign: no partition given while another member owns it)."""

from __future__ import annotations

import pytest

from brokerd.groups.assignors import (
    MemberSubscription,
    configured_assignors,
    range_assignor,
    uniform_assignor,
)
from brokerd.groups.consumer_group import (
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
)


def flat(assignment) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in assignment.items() for p in parts}


def counts(result) -> list[int]:
    return sorted(len(flat(a)) for a in result.values())


def everything_once(result, topics) -> bool:
    seen = [tp for a in result.values() for tp in flat(a)]
    expected = {(t, p) for t, n in topics.items() for p in range(n)}
    return len(seen) == len(set(seen)) and set(seen) == expected


# Range ------------------------------------------------------------------------------------------
def test_range_gives_contiguous_ranges_in_member_order_per_topic():
    members = {m: MemberSubscription(frozenset({"a", "b"})) for m in ("m2", "m1", "m3")}
    result = range_assignor(members, {"a": 7, "b": 3})
    assert result["m1"] == {"a": frozenset({0, 1, 2}), "b": frozenset({0})}
    assert result["m2"] == {"a": frozenset({3, 4}), "b": frozenset({1})}
    assert result["m3"] == {"a": frozenset({5, 6}), "b": frozenset({2})}


def test_range_only_over_the_subscribers_of_each_topic():
    members = {
        "m1": MemberSubscription(frozenset({"a"})),
        "m2": MemberSubscription(frozenset({"a", "b"})),
    }
    result = range_assignor(members, {"a": 2, "b": 2})
    assert result["m1"] == {"a": frozenset({0})}
    assert result["m2"] == {"a": frozenset({1}), "b": frozenset({0, 1})}


# Uniform ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("members", "partitions"), [(1, 5), (3, 10), (4, 4), (5, 3), (7, 50)])
def test_uniform_is_balanced_and_complete(members, partitions):
    subs = {f"m{i}": MemberSubscription(frozenset({"t"})) for i in range(members)}
    result = uniform_assignor(subs, {"t": partitions})
    assert everything_once(result, {"t": partitions})
    sizes = counts(result)
    assert sizes[-1] - sizes[0] <= 1


def test_uniform_is_sticky_when_a_member_joins():
    topics = {"t": 6}
    two = {m: MemberSubscription(frozenset({"t"})) for m in ("a", "b")}
    before = uniform_assignor(two, topics)
    three = {m: MemberSubscription(frozenset({"t"}), before.get(m, {})) for m in ("a", "b", "c")}
    after = uniform_assignor(three, topics)
    assert everything_once(after, topics)
    assert counts(after) == [2, 2, 2]
    # a and b keep two of their three each; only the two c needs move.
    assert flat(after["a"]) <= flat(before["a"])
    assert flat(after["b"]) <= flat(before["b"])


def test_uniform_is_sticky_when_a_member_leaves():
    topics = {"t": 9}
    three = {m: MemberSubscription(frozenset({"t"})) for m in ("a", "b", "c")}
    before = uniform_assignor(three, topics)
    two = {m: MemberSubscription(frozenset({"t"}), before[m]) for m in ("a", "b")}
    after = uniform_assignor(two, topics)
    assert everything_once(after, topics)
    assert flat(before["a"]) <= flat(after["a"]) and flat(before["b"]) <= flat(after["b"])


def test_uniform_with_different_subscriptions_gives_topics_only_to_subscribers():
    members = {
        "a": MemberSubscription(frozenset({"x"})),
        "b": MemberSubscription(frozenset({"x", "y"})),
        "c": MemberSubscription(frozenset({"y"})),
    }
    topics = {"x": 4, "y": 4}
    result = uniform_assignor(members, topics)
    assert everything_once(result, topics)
    assert {t for t, _ in flat(result["a"])} <= {"x"}
    assert {t for t, _ in flat(result["c"])} <= {"y"}
    assert counts(result) == [2, 3, 3]  # 8 partitions as evenly as the subscriptions allow


def test_uniform_drops_partitions_of_unsubscribed_or_shrunk_topics():
    members = {
        "a": MemberSubscription(frozenset({"t"}), {"t": frozenset({0, 5}), "gone": frozenset({0})})
    }
    result = uniform_assignor(members, {"t": 3})
    assert result["a"] == {"t": frozenset({0, 1, 2})}


def test_assignor_config_takes_kafka_class_names_and_short_names():
    assert configured_assignors(
        (
            "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        )
    ) == ("uniform", "range")
    assert configured_assignors("range") == ("range",)
    with pytest.raises(ValueError):
        configured_assignors(("sticky",))


# Reconciliation ---------------------------------------------------------------------------------
def joined(group: ConsumerGroup, member_id: str, topics: dict[str, int]) -> ConsumerMember:
    member = ConsumerMember(member_id, subscribed=("t",))
    group.members[member_id] = member
    group.bump_and_assign(topics)
    return member


def test_a_partition_moves_only_after_its_owner_revoked_it():
    topics = {"t": 4}
    group = ConsumerGroup("g")
    a = joined(group, "a", topics)
    group.reconcile(a, {})
    assert flat(a.assigned) == {("t", p) for p in range(4)} and a.member_epoch == 1
    assert group.state == ConsumerGroupState.STABLE

    b = joined(group, "b", topics)  # group epoch 2: two partitions of a's go to b
    taken = flat(group.target["b"])
    assert len(taken) == 2
    group.reconcile(b, {})
    # a still owns them: b gets its epoch but not the partitions yet.
    assert b.member_epoch == 2 and flat(b.assigned) == set()
    assert b.state == MemberState.UNRELEASED_PARTITIONS
    assert group.state == ConsumerGroupState.RECONCILING

    # a's heartbeat: asked to revoke (its epoch stays until it acknowledges).
    group.reconcile(a, a.assigned)
    assert a.state == MemberState.UNREVOKED_PARTITIONS and a.member_epoch == 1
    assert flat(a.pending_revocation) == taken
    # A heartbeat that still reports the revoked partitions acknowledges nothing.
    group.reconcile(a, {"t": frozenset(range(4))})
    assert a.state == MemberState.UNREVOKED_PARTITIONS
    group.reconcile(b, {})
    assert flat(b.assigned) == set()
    # It reports them gone: now at epoch 2, and b may have them.
    group.reconcile(a, a.assigned)
    assert a.state == MemberState.STABLE and a.member_epoch == 2
    group.reconcile(b, {})
    assert flat(b.assigned) == taken and b.state == MemberState.STABLE
    assert group.state == ConsumerGroupState.STABLE


def test_a_member_that_leaves_releases_its_partitions():
    topics = {"t": 2}
    group = ConsumerGroup("g")
    a = joined(group, "a", topics)
    b = joined(group, "b", topics)
    group.reconcile(a, {})
    group.reconcile(b, {})
    group.reconcile(a, a.assigned)
    group.reconcile(a, a.assigned)
    group.reconcile(b, {})
    assert len(flat(a.assigned)) == 1 and len(flat(b.assigned)) == 1
    del group.members["b"]
    group.target.pop("b")
    group.bump_and_assign(topics)
    group.reconcile(a, a.assigned)
    assert flat(a.assigned) == {("t", 0), ("t", 1)} and a.member_epoch == group.group_epoch


def test_the_assignor_most_members_ask_for_wins():
    group = ConsumerGroup("g", default_assignor="uniform")
    assert group.assignor_name() == "uniform"
    group.members["a"] = ConsumerMember("a", server_assignor="range")
    group.members["b"] = ConsumerMember("b", server_assignor="range")
    group.members["c"] = ConsumerMember("c", server_assignor="uniform")
    assert group.assignor_name() == "range"
