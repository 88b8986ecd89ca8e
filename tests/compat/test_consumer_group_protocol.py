"""The consumer group protocol (KIP-848) with confluent-kafka's `group.protocol=consumer`:
ConsumerGroupHeartbeat, server-side assignors, member loss, a rolling restart, commits and
resuming from them, ListGroups' types, ConsumerGroupDescribe, classic and new groups side by
side.

Members are subprocesses (tests/compat/consumer_protocol_member.py) so a test can kill one.
The broker hands out a 500 ms heartbeat interval and a 6 s session timeout so rebalances and
member loss take seconds, not Kafka's 5 s / 45 s defaults.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from brokerd.protocol.errors import ErrorCode as E
from tests.compat.group_support import Member, balanced, group_story, wait_for
from tests.compat.test_groups_clients import committed, create_topic, produce
from tests.integration.test_groups_protocol import join, join_request
from tests.integration.wire import WireClient, request

SESSION_MS = 6000


@pytest.fixture(scope="module")
def kip848_broker(zookeeper, tmp_path_factory):
    from tests.conftest import new_broker

    process = new_broker(
        zookeeper,
        tmp_path_factory,
        num_partitions="3",
        group_initial_rebalance_delay_ms="0",
        group_consumer_heartbeat_interval_ms="500",
        group_consumer_session_timeout_ms=str(SESSION_MS),
    ).start()
    yield process
    process.kill()


def produce_range(bootstrap: str, topic: str, values: range, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in values:
        producer.produce(topic, str(i).encode(), partition=i % partitions)
    assert producer.flush(15) == 0


def group_id() -> str:
    return f"cg-{uuid.uuid4().hex[:8]}"


def member(bootstrap: str, group: str, topic: str, **options) -> Member:
    return Member(
        "confluent",
        bootstrap,
        group,
        topic,
        module="tests.compat.consumer_protocol_member",
        **options,
    )


def stop_all(members: list[Member]) -> None:
    for m in members:
        if m.alive():
            m.kill()


def no_overlap(members: list[Member]) -> bool:
    seen: list[tuple[str, int]] = []
    for m in members:
        seen += m.assignment or []
    return len(seen) == len(set(seen))


def test_members_join_share_and_take_over_a_lost_member(kip848_broker, topic_name):
    assignor = "range"  # asked for by the members (uniform, the default, elsewhere)
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 6)
    group = group_id()
    members = [
        member(bootstrap, group, topic_name, assignor=assignor, client_id=f"m{i}") for i in range(3)
    ]

    def story() -> str:
        return group_story(members, kip848_broker.output)

    try:
        wait_for(
            lambda: balanced(members, 6) and all(len(m.partitions) == 2 for m in members),
            60,
            "three members with two partitions each",
            story,
        )
        if assignor == "range":
            # Contiguous ranges in member id order.
            ranges = sorted(sorted(m.partitions) for m in members)
            assert ranges == [[0, 1], [2, 3], [4, 5]], story()
        # Member loss: a killed member's partitions move once its session times out.
        lost = members[2]
        lost.kill()
        alive = members[:2]
        wait_for(
            lambda: balanced(alive, 6) and all(len(m.partitions) == 3 for m in alive),
            SESSION_MS / 1000 + 45,
            "the two others sharing all six partitions",
            story,
        )
        # A member that leaves (close) hands its partitions over at once.
        members[1].terminate()
        wait_for(lambda: balanced(members[:1], 6), 45, "the last member owning all six", story)
        # At no time did two members of the group own the same partition (as far as each
        # member's printed assignment shows it).
        assert all(len(a) == len(set(a)) for m in members for a in m.assignments)
    finally:
        stop_all(members)


def test_rolling_restart_and_resume_from_commits(kip848_broker, topic_name):
    bootstrap = kip848_broker.bootstrap
    partitions = 4
    create_topic(bootstrap, topic_name, partitions)
    produce(bootstrap, topic_name, 200, partitions)
    group = group_id()
    members = [
        member(bootstrap, group, topic_name, commit=True, client_id=f"r{i}") for i in range(2)
    ]
    everyone = list(members)

    def story() -> str:
        return group_story(everyone, kip848_broker.output)

    def values() -> set[str]:
        return {value for m in everyone for _, _, value in m.records}

    try:
        wait_for(lambda: balanced(members, partitions), 60, "two members sharing the topic", story)
        wait_for(lambda: len(values()) == 200, 60, "all 200 records consumed", story)
        # Rolling restart: each member in turn is replaced; the group keeps every partition
        # owned by exactly one live member and nothing is re-read past the commits.
        for index in range(len(members)):
            members[index].terminate()
            replacement = member(bootstrap, group, topic_name, commit=True, client_id=f"n{index}")
            everyone.append(replacement)
            members[index] = replacement
            wait_for(
                lambda: balanced(members, partitions) and no_overlap(members),
                60,
                f"the group balanced again after restarting member {index}",
                story,
            )
        produce_range(bootstrap, topic_name, range(200, 240), partitions)
        wait_for(lambda: len(values()) == 240, 60, "the 40 new records consumed", story)
        # Resumed from the commits: the replacements read the new records, not the 200
        # the first members committed (a member commits each record before it stops).
        reread = [v for m in everyone[2:] for _, _, v in m.records if int(v) < 200]
        assert len(reread) <= partitions, f"re-read {len(reread)} committed records: {story()}"
    finally:
        stop_all(everyone)
    wait_for(
        lambda: sum(committed(bootstrap, group, topic_name, partitions).values()) == 240,
        30,
        "the commits to cover all 240 records",
    )


def test_list_describe_and_classic_groups_side_by_side(kip848_broker, topic_name):
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    group = group_id()
    classic_group = group_id()
    new = member(bootstrap, group, topic_name, client_id="described")
    classic = Member(
        "confluent", bootstrap, classic_group, topic_name, assignor="range", client_id="classic"
    )
    members = [new, classic]
    try:
        wait_for(
            lambda: balanced([new], 2) and balanced([classic], 2),
            60,
            "both groups assigned",
            lambda: group_story(members, kip848_broker.output),
        )
        admin = AdminClient({"bootstrap.servers": bootstrap})
        listed = admin.list_consumer_groups(request_timeout=15).result()
        kinds = {g.group_id: g.type for g in listed.valid}
        assert str(kinds[group]).endswith("CONSUMER"), kinds
        assert str(kinds[classic_group]).endswith("CLASSIC"), kinds
        described = admin.describe_consumer_groups([group], request_timeout=15)[group].result()
        assert str(described.type).endswith("CONSUMER")
        assert [m.client_id for m in described.members] == ["described"]
        assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1}
        # The groups CLI as kafka-consumer-groups.sh --list --type [--state] (Kafka 3.7+).
        from tests.integration.test_groups_cli import groups_cli

        listed_cli = groups_cli(bootstrap, "--list", "--type").stdout.splitlines()
        assert listed_cli[0].split() == ["GROUP", "TYPE"]
        types = {r.split()[0]: r.split()[1] for r in listed_cli[1:]}
        assert (types[group], types[classic_group]) == ("Consumer", "Classic"), listed_cli
        only = groups_cli(bootstrap, "--list", "--type", "consumer", "--state").stdout
        rows = [r.split() for r in only.splitlines()[1:]]
        assert [group, "Consumer", "Stable"] in rows and classic_group not in only, only
        # A classic JoinGroup to a consumer group with members is taken in as Kafka 4 does
        # (MEMBER_ID_REQUIRED first, KIP-394); one of another protocol type is refused.
        with WireClient(bootstrap) as wire:
            answer = join(wire, group, version=5)
            assert answer.error_code == E.member_id_required and answer.member_id
            other = dataclasses.replace(join_request(group, version=5), protocol_type="connect")
            assert wire.call(other).error_code == E.inconsistent_group_protocol
    finally:
        stop_all(members)


def test_commits_of_a_consumer_group_are_fetched_by_any_consumer(kip848_broker, topic_name):
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, 20, 2)
    group = group_id()
    one = member(bootstrap, group, topic_name, commit=True)
    try:
        wait_for(
            lambda: len(one.records) == 20,
            60,
            "20 records",
            lambda: group_story([one], kip848_broker.output),
        )
    finally:
        one.terminate()
    assert committed(bootstrap, group, topic_name, 2) == {0: 10, 1: 10}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
    )
    try:
        found = consumer.committed([TopicPartition(topic_name, p) for p in range(2)], 15)
        assert {tp.partition: tp.offset for tp in found} == {0: 10, 1: 10}
    finally:
        consumer.close()


def test_groups_cli_describes_a_consumer_group(kip848_broker, topic_name):
    from tests.integration.test_groups_cli import groups_cli, table

    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, 10, 2)
    group = group_id()
    one = member(bootstrap, group, topic_name, commit=True, client_id="cli-848")
    try:
        wait_for(
            lambda: (
                len(one.records) == 10
                and committed(bootstrap, group, topic_name, 2) == {0: 5, 1: 5}
            ),
            60,
            "10 records consumed and committed",
            lambda: group_story([one], kip848_broker.output),
        )
        assert group in groups_cli(bootstrap, "--list").stdout.split()
        rows = table(groups_cli(bootstrap, "--describe", "--group", group).stdout)
        assert [r[:6] for r in rows] == [[group, topic_name, str(p), "5", "5", "0"] for p in (0, 1)]
        assert all(r[-1] == "cli-848" and r[-2] == "/127.0.0.1" for r in rows), rows
    finally:
        one.terminate()


def test_members_resume_from_commits_after_the_coordinator_restarts(make_broker, topic_name):
    """The group's members, epochs and assignments are in __consumer_offsets (Kafka's
    consumer group records): the restarted coordinator loads them, the member goes on with
    its epoch and partitions (no rejoin: its assignment never changes) and from its
    commits, losing nothing and reading nothing committed again."""
    broker = make_broker(
        num_partitions="2",
        group_initial_rebalance_delay_ms="0",
        group_consumer_heartbeat_interval_ms="500",
        group_consumer_session_timeout_ms=str(SESSION_MS),
        offsets_topic_replication_factor="1",
    ).start()
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce_range(bootstrap, topic_name, range(0, 20), 2)
    group = group_id()
    one = member(bootstrap, group, topic_name, commit=True, client_id="survivor")

    def values() -> list[str]:
        return [v for _, _, v in one.records]

    def story() -> str:
        return group_story([one], broker.output)

    try:
        wait_for(
            lambda: (
                len(set(values())) == 20
                and committed(bootstrap, group, topic_name, 2) == {0: 10, 1: 10}
            ),
            60,
            "the first 20 records consumed and committed",
            story,
        )
        history = len(one.assignments)
        broker.terminate()
        broker.start()
        produce_range(bootstrap, topic_name, range(20, 40), 2)
        wait_for(lambda: len(set(values())) == 40, 90, "the next 20 after the restart", story)
        # Nothing lost, and nothing committed before the restart read again.
        before = [v for v in values() if int(v) < 20]
        assert sorted(before, key=int) == [str(i) for i in range(20)], story()
        assert one.alive()
        # The member was not made to rejoin: its partitions never left it.
        assert len(one.assignments) == history, story()
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 2) == {0: 20, 1: 20},
            60,
            "the commits after the restart accepted (the member still known)",
            story,
        )
    finally:
        one.terminate()


def test_a_regex_subscription_follows_new_matching_topics(kip848_broker, topic_name):
    bootstrap = kip848_broker.bootstrap
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    first, second = f"{prefix}-a", f"{prefix}-b"
    create_topic(bootstrap, first, 2)
    create_topic(bootstrap, f"other{prefix}", 2)  # does not match
    group = group_id()
    one = member(bootstrap, group, f"^{prefix}-.*", client_id="regex")

    def story() -> str:
        return group_story([one], kip848_broker.output)

    try:
        wait_for(
            lambda: set(one.assignment or []) == {(first, 0), (first, 1)},
            60,
            "the matching topic's partitions",
            story,
        )
        create_topic(bootstrap, second, 1)
        wait_for(
            lambda: set(one.assignment or []) == {(first, 0), (first, 1), (second, 0)},
            60,
            "the new matching topic's partition too",
            story,
        )
        with WireClient(bootstrap) as wire:
            described = wire.call(
                request(69, 1, group_ids=(group,), include_authorized_operations=False)
            ).groups[0]
        assert described.members[0].subscribed_topic_regex is not None
    finally:
        one.terminate()


def test_a_static_member_restarts_without_disturbing_the_other(kip848_broker, topic_name):
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    group = group_id()
    a = member(bootstrap, group, topic_name, instance_id="static-a", client_id="a")
    b = member(bootstrap, group, topic_name, instance_id="static-b", client_id="b")
    everyone = [a, b]

    def story() -> str:
        return group_story(everyone, kip848_broker.output)

    try:
        wait_for(lambda: balanced([a, b], 4) and a.partitions and b.partitions, 60, "both", story)
        a_had, b_history = set(a.partitions), len(b.assignments)
        a.terminate()  # leaves with epoch -2: its partitions wait for it
        again = member(bootstrap, group, topic_name, instance_id="static-a", client_id="a2")
        everyone.append(again)
        wait_for(lambda: again.partitions == a_had, 60, "the restarted member's partitions", story)
        assert len(b.assignments) == b_history, f"the other member was disturbed: {story()}"
    finally:
        stop_all(everyone)


@pytest.mark.parametrize("classic_assignor", ["range", "cooperative-sticky"])
def test_a_mixed_group_of_classic_and_new_members(kip848_broker, topic_name, classic_assignor):
    """Kafka 4's mixed groups: a classic confluent-kafka consumer (eager or cooperative)
    joins a consumer group that has a group.protocol=consumer member. Both are assigned by
    the coordinator (no overlap, every partition owned), both consume and commit; when the
    classic member goes, the other takes everything; when the new member leaves a classic
    one alone, the group turns classic (Kafka 4's online downgrade) and it gets everything."""
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    produce_range(bootstrap, topic_name, range(0, 40), 4)
    group = group_id()
    new = member(bootstrap, group, topic_name, commit=True, client_id="new")
    everyone = [new]

    def story() -> str:
        return group_story(everyone, kip848_broker.output)

    try:
        wait_for(lambda: balanced([new], 4), 60, "the new member alone", story)
        classic = Member(
            "confluent",
            bootstrap,
            group,
            topic_name,
            assignor=classic_assignor,
            commit=True,
            client_id="classic",
        )
        everyone.append(classic)
        wait_for(
            lambda: balanced([new, classic], 4) and new.partitions and classic.partitions,
            60,
            "both kinds sharing the partitions",
            story,
        )
        with WireClient(bootstrap) as wire:
            described = wire.call(
                request(69, 0, group_ids=(group,), include_authorized_operations=False)
            ).groups[0]
        assert described.error_code == E.none and len(described.members) == 2
        produce_range(bootstrap, topic_name, range(40, 80), 4)
        wait_for(
            lambda: {int(v) for m in everyone for _, _, v in m.records} >= set(range(80)),
            60,
            "every record consumed by one or the other",
            story,
        )
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 4) == {p: 20 for p in range(4)},
            60,
            "both kinds' commits accepted",
            story,
        )
        classic.terminate()  # a classic LeaveGroup
        wait_for(lambda: balanced([new], 4), 60, "the new member takes everything", story)
        again = Member(
            "confluent", bootstrap, group, topic_name, assignor=classic_assignor, client_id="c2"
        )
        everyone.append(again)
        wait_for(lambda: balanced([new, again], 4), 60, "a classic member back", story)
        new.terminate()
        wait_for(lambda: balanced([again], 4), 60, "the classic member alone", story)
        # Its last consumer-protocol member gone, the group is classic again (downgrade).
        with WireClient(bootstrap) as wire:
            listed = wire.call(request(16, 5, states_filter=(), types_filter=()))
        assert {g.group_id: g.group_type for g in listed.groups}[group] == "classic"
    finally:
        stop_all(everyone)


@pytest.mark.parametrize("classic_assignor", ["range", "cooperative-sticky"])
def test_a_live_classic_group_is_upgraded_by_a_new_member(
    kip848_broker, topic_name, classic_assignor
):
    """Kafka 4's online upgrade (group.consumer.migration.policy, bidirectional by
    default): a group.protocol=consumer member joins a classic group that is consuming;
    the group becomes a consumer group, the classic member goes on inside it, and the two
    share the partitions with every record consumed once committed."""
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    produce_range(bootstrap, topic_name, range(0, 40), 4)
    group = group_id()
    classic = Member(
        "confluent", bootstrap, group, topic_name, assignor=classic_assignor, commit=True
    )
    everyone = [classic]

    def story() -> str:
        return group_story(everyone, kip848_broker.output)

    try:
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 4) == {p: 10 for p in range(4)},
            60,
            "the classic group consuming",
            story,
        )
        new = member(bootstrap, group, topic_name, commit=True, client_id="new")
        everyone.append(new)
        wait_for(
            lambda: balanced([classic, new], 4) and new.partitions and classic.partitions,
            60,
            "the upgraded group shared by both kinds",
            story,
        )
        with WireClient(bootstrap) as wire:
            listed = wire.call(request(16, 5, states_filter=(), types_filter=()))
        assert {g.group_id: g.group_type for g in listed.groups}[group] == "consumer"
        produce_range(bootstrap, topic_name, range(40, 80), 4)
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 4) == {p: 20 for p in range(4)},
            60,
            "the records after the upgrade consumed and committed",
            story,
        )
        seen = {int(v) for m in everyone for _, _, v in m.records}
        assert seen >= set(range(80)), story()
    finally:
        stop_all(everyone)
