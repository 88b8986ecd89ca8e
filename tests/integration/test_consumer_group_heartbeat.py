"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) on the wire (KIP-848): Kafka's
validation errors, epochs and fencing, revoke-before-assign between two members, leaving,
offset commits checked by member epoch, ListGroups' group type, DescribeGroups on a
consumer group, and a classic member turned away from it."""

from __future__ import annotations

import datetime
import time
import uuid

from brokerd.protocol.errors import ErrorCode as E
from tests.compat.test_groups_clients import add_partitions, create_topic
from tests.integration.test_groups_protocol import commit, join, ready_coordinator
from tests.integration.wire import WireClient, nested, request

V = 1


def hb(
    client,
    group,
    member_id,
    epoch,
    topics=None,
    owned=None,
    rebalance_ms=None,
    assignor=None,
    instance=None,
    regex=None,
):
    return client.call(
        request(
            68,
            V,
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance,
            rack_id=None,
            rebalance_timeout=datetime.timedelta(
                milliseconds=-1 if rebalance_ms is None else rebalance_ms
            ),
            subscribed_topic_names=tuple(topics) if topics is not None else None,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=None
            if owned is None
            else tuple(
                nested(68, V, "TopicPartitions", topic_id=tid, partitions=tuple(sorted(ps)))
                for tid, ps in owned.items()
                if ps
            ),
        )
    )


def joined(client, group, member_id, topic, assignor=None, instance=None):
    return hb(client, group, member_id, 0, [topic], {}, 60000, assignor, instance)


def parts(response) -> dict:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


def only(assignment: dict) -> set:
    return set().union(*assignment.values()) if assignment else set()


def test_validation_errors_are_kafkas(group_broker, topic_name):
    create_topic(group_broker.bootstrap, topic_name, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        ready_coordinator(client, group)
        member = uuid.uuid4().hex
        # Joining needs a rebalance timeout, subscriptions and an empty owned list.
        assert hb(client, group, member, 0, [topic_name], {}, None).error_code == E.invalid_request
        assert hb(client, group, member, 0, None, {}, 60000).error_code == E.invalid_request
        assert hb(client, group, member, 0, [topic_name], None, 60000).error_code == (
            E.invalid_request
        )
        assert hb(client, group, "", 0, [topic_name], {}, 60000).error_code == E.invalid_request
        assert hb(client, group, member, -3).error_code == E.invalid_request
        assert hb(client, group, member, 0, None, {}, 60000, regex="(unclosed").error_code == (
            E.invalid_regular_expression
        )
        assert joined(client, group, member, topic_name, "sticky").error_code == (
            E.unsupported_assignor
        )
        # Unknown member, then a wrong epoch: fenced.
        assert hb(client, group, member, 5).error_code == E.unknown_member_id
        first = joined(client, group, member, topic_name)
        assert first.error_code == E.none and first.member_epoch == 1
        assert first.heartbeat_interval.total_seconds() > 0
        assert hb(client, group, member, 7).error_code == E.fenced_member_epoch
        # Leaving answers epoch -1; the member is gone afterwards.
        left = hb(client, group, member, -1)
        assert left.error_code == E.none and left.member_epoch == -1
        assert hb(client, group, member, 1).error_code == E.unknown_member_id


def test_a_partition_is_given_only_after_its_owner_revoked_it(group_broker, topic_name):
    create_topic(group_broker.bootstrap, topic_name, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        ready_coordinator(client, group)
        a, b = "a-" + uuid.uuid4().hex, "b-" + uuid.uuid4().hex
        first = joined(client, group, a, topic_name)
        a_owns = parts(first)
        (topic_id,) = a_owns
        assert only(a_owns) == {0, 1, 2, 3} and first.member_epoch == 1

        second = joined(client, group, b, topic_name)
        assert second.error_code == E.none and second.member_epoch == 2
        assert only(parts(second)) == set(), "b got partitions a still owns"

        # a is told to keep two: it must revoke the others (its epoch stays 1 until then).
        asked = hb(client, group, a, 1, owned=a_owns)
        kept = parts(asked)
        assert asked.member_epoch == 1 and len(only(kept)) == 2
        taken = {0, 1, 2, 3} - only(kept)
        # b still gets nothing while a owns them.
        assert only(parts(hb(client, group, b, 2, owned={})) or {}) == set()
        # a acknowledges (owns only what it keeps) and moves to epoch 2.
        acked = hb(client, group, a, 1, owned=kept)
        assert acked.member_epoch == 2
        given = hb(client, group, b, 2, owned={})
        assert only(parts(given)) == taken

        # Offsets: the member epoch is the commit's generation.
        tp = (topic_name, 0)
        assert commit(client, group, 1, a, {tp: (5, "")}, version=9)[tp] == E.stale_member_epoch
        assert commit(client, group, 3, a, {tp: (5, "")}, version=9)[tp] == E.fenced_member_epoch
        assert commit(client, group, 2, "nobody", {tp: (5, "")}, version=9)[tp] == (
            E.unknown_member_id
        )
        assert commit(client, group, 2, a, {tp: (5, "")}, version=9)[tp] == E.none

        # ListGroups v5: the group's type, and the types filter.
        def listed(types):
            response = client.call(request(16, 5, states_filter=(), types_filter=tuple(types)))
            return {g.group_id: (g.group_type, g.group_state) for g in response.groups}

        assert listed(["consumer"])[group] == ("consumer", "Stable")
        assert group not in listed(["classic"])
        # DescribeGroups: not a classic group. ConsumerGroupDescribe: both members.
        old = client.call(request(15, 5, groups=(group,), include_authorized_operations=False))
        assert old.groups[0].group_state == "Dead"  # before v6: no error code
        v6 = client.call(request(15, 6, groups=(group,), include_authorized_operations=False))
        assert v6.groups[0].error_code == E.group_id_not_found
        described = client.call(
            request(69, 1, group_ids=(group,), include_authorized_operations=False)
        )
        found = described.groups[0]
        assert found.error_code == E.none and found.group_state == "Stable"
        assert found.group_epoch == 2 and found.assignor_name == "uniform"
        assert sorted(m.member_id for m in found.members) == sorted([a, b])
        for m in found.members:
            assert m.member_type == 1 and m.subscribed_topic_names == (topic_name,)
            assert all(tp.topic_name == topic_name for tp in m.assignment.topic_partitions)

        # A classic member joins it as Kafka 4 does (MEMBER_ID_REQUIRED first, KIP-394);
        # DeleteGroups refuses a group with members.
        assert join(client, group, version=5).error_code == E.member_id_required
        deleted = client.call(request(42, 2, groups_names=(group,)))
        assert deleted.results[0].error_code == E.non_empty_group

        # b leaves: a gets everything back at its next heartbeat.
        assert hb(client, group, b, -1).member_epoch == -1
        back = hb(client, group, a, 2, owned=parts(acked))
        assert only(parts(back)) == {0, 1, 2, 3} and back.member_epoch == 3


def test_a_static_member_comes_back_to_its_partitions_without_a_rebalance(group_broker, topic_name):
    create_topic(group_broker.bootstrap, topic_name, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        ready_coordinator(client, group)
        a, b = "a-" + uuid.uuid4().hex, "b-" + uuid.uuid4().hex
        first = joined(client, group, a, topic_name, instance="instance-a")
        a_owns = parts(first)
        joined(client, group, b, topic_name)
        kept = parts(hb(client, group, a, 1, owned=a_owns))
        settled = hb(client, group, a, 1, owned=kept)
        assert settled.member_epoch == 2
        b_got = parts(hb(client, group, b, 2, owned={}))
        assert only(b_got) == {0, 1, 2, 3} - only(kept)

        # a restarts: leaves with -2 and keeps its partitions; b is not disturbed.
        assert hb(client, group, a, -2, instance="instance-a").member_epoch == -2
        still = hb(client, group, b, 2, owned=b_got)
        assert still.member_epoch == 2
        assert still.assignment is None or only(parts(still)) == only(b_got)
        # The same instance id under a new member id gets a's partitions back at once,
        # at the same group epoch (no rebalance).
        a2 = "a2-" + uuid.uuid4().hex
        back = joined(client, group, a2, topic_name, instance="instance-a")
        assert back.error_code == E.none and back.member_epoch == 2
        assert only(parts(back)) == only(kept)
        # While it is active, another member with its instance id is refused.
        twin = joined(client, group, "twin-" + uuid.uuid4().hex, topic_name, instance="instance-a")
        assert twin.error_code == E.unreleased_instance_id
        described = client.call(
            request(69, 1, group_ids=(group,), include_authorized_operations=False)
        ).groups[0]
        assert described.group_epoch == 2
        assert sorted(m.member_id for m in described.members) == sorted([a2, b])


def test_a_hostile_regex_neither_stalls_the_broker_nor_is_taken(group_broker, topic_name):
    """Regex subscriptions come from the network. Kafka matches them with RE2J: linear in
    the topic name, no backreferences or lookaround (INVALID_REGULAR_EXPRESSION). Python's
    backtracking `re` took 2**40 steps to fail `(a+)+$` on the topic below, stalling every
    connection of the broker; RE2 answers at once and the member is assigned nothing."""
    hostile_topic = "a" * 40 + "b"
    create_topic(group_broker.bootstrap, hostile_topic, 1)
    create_topic(group_broker.bootstrap, topic_name, 1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        ready_coordinator(client, group)
        for refused in [r"(t)\1", r"(?=t).*", r"(?<!x)t.*"]:
            answer = hb(client, group, uuid.uuid4().hex, 0, None, {}, 60000, regex=refused)
            assert answer.error_code == E.invalid_regular_expression, refused
        member = uuid.uuid4().hex
        joined = hb(client, group, member, 0, None, {}, 60000, regex="(a+)+$")
        assert joined.error_code == E.none
        assert only(parts(joined) or {}) == set()
    # The broker still answers others, on other connections.
    with WireClient(group_broker.bootstrap) as other:
        assert other.call(request(18, 0)).error_code == E.none


def test_new_partitions_of_a_subscribed_topic_are_assigned(group_broker, topic_name):
    """The group follows its topics' partition counts (its heartbeats read them again only
    after the broker's topic metadata changed, not each time)."""
    create_topic(group_broker.bootstrap, topic_name, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        ready_coordinator(client, group)
        member = uuid.uuid4().hex
        first = joined(client, group, member, topic_name)
        owned = parts(first)
        assert only(owned) == {0, 1}
        epoch = first.member_epoch
        assert hb(client, group, member, epoch, owned=owned).member_epoch == epoch  # no change
        add_partitions(group_broker.bootstrap, topic_name, 4)
        deadline = time.monotonic() + 30
        while True:
            answer = hb(client, group, member, epoch, owned=owned)
            assert answer.error_code == E.none
            if answer.assignment is not None:
                owned, epoch = parts(answer), answer.member_epoch
            if only(owned) == {0, 1, 2, 3} or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert only(owned) == {0, 1, 2, 3} and epoch > first.member_epoch
