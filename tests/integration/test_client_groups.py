"""brokerd.client's consumer-group admin calls against a real broker and real group members
(confluent-kafka consumers), cross-checked with confluent-kafka's AdminClient."""

import time

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin

from brokerd.client import AdminClient, AdminError, Cluster, ErrorCode, NewTopic, Producer
from brokerd.client.results import CommittedOffset, PartitionLag


def resolved(futures):
    return {key: future.result(15) for key, future in futures.items()}


def confluent_offsets(admin, group):
    request = [ConsumerGroupTopicPartitions(group)]
    (result,) = resolved(admin.list_consumer_group_offsets(request)).values()
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def join_and_commit(bootstrap, group, topic, count):
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "member-of-" + group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    assert seen == count, f"the member read {seen} of {count}"
    consumer.commit(asynchronous=False)
    return consumer


async def test_groups_agree_with_confluent(group_broker, topic_name):
    group = f"g-{topic_name}"
    confluent = ConfluentAdmin({"bootstrap.servers": group_broker.bootstrap})
    async with Cluster(group_broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 2, 1)])
        async with Producer(cluster) as producer:
            for partition, count in ((0, 5), (1, 3)):
                for i in range(count):
                    await producer.send(topic_name, b"%d" % i, partition=partition)
        member = join_and_commit(group_broker.bootstrap, group, topic_name, 8)
        try:
            listed = {g.group_id: g for g in await admin.list_groups()}
            assert (listed[group].protocol_type, listed[group].state) == ("consumer", "Stable")
            theirs = confluent.list_consumer_groups().result(15).valid
            assert group in {g.group_id for g in theirs}
            assert [g.group_id for g in await admin.list_groups(states=["Empty"])].count(group) == 0

            ours = (await admin.describe_groups([group]))[group]
            (their,) = resolved(confluent.describe_consumer_groups([group])).values()
            assert ours.state == "Stable" == their.state.name.capitalize()
            assert ours.protocol == their.partition_assignor
            assert ours.coordinator == their.coordinator.id == 1
            assert [(m.member_id, m.client_id, m.client_host) for m in ours.members] == [
                (m.member_id, m.client_id, m.host) for m in their.members
            ]
            assert sorted(ours.members[0].assignment) == sorted(
                (tp.topic, tp.partition) for tp in their.members[0].assignment.topic_partitions
            )
            assert sorted(ours.members[0].assignment) == [(topic_name, 0), (topic_name, 1)]

            committed = await admin.list_consumer_group_offsets(group)
            assert {tp: c.offset for tp, c in committed.items()} == confluent_offsets(
                confluent, group
            )
            assert {tp: c.offset for tp, c in committed.items()} == {
                (topic_name, 0): 5,
                (topic_name, 1): 3,
            }
            async with Producer(cluster) as producer:
                await producer.send_and_wait(topic_name, b"new", partition=1)
            assert await admin.consumer_group_lag(group) == {
                (topic_name, 0): PartitionLag(5, 5, 0),
                (topic_name, 1): PartitionLag(3, 4, 1),
            }
            with pytest.raises(AdminError) as busy:
                await admin.delete_groups([group])
            assert busy.value.error_code == ErrorCode.non_empty_group
        finally:
            member.close()

        # An empty group: standalone commits, offset deletion, then the group itself.
        assert (await admin.describe_groups([group]))[group].state == "Empty"
        await admin.commit_offsets(
            group, {(topic_name, 0): 2, (topic_name, 1): CommittedOffset(4, -1, "by-admin")}
        )
        assert confluent_offsets(confluent, group) == {(topic_name, 0): 2, (topic_name, 1): 4}
        only = await admin.list_consumer_group_offsets(group, [(topic_name, 1)])
        assert only == {(topic_name, 1): CommittedOffset(4, -1, "by-admin")}
        await admin.delete_consumer_group_offsets(group, [(topic_name, 0)])
        assert confluent_offsets(confluent, group) == {(topic_name, 1): 4}
        assert await admin.consumer_group_lag(group) == {(topic_name, 1): PartitionLag(4, 4, 0)}
        await admin.delete_groups([group])
        assert group not in {g.group_id for g in confluent.list_consumer_groups().result(15).valid}
        assert group not in {g.group_id for g in await admin.list_groups()}
        with pytest.raises(AdminError) as gone:
            await admin.delete_groups([group])
        assert gone.value.error_code == ErrorCode.group_id_not_found


async def test_offsets_committed_by_admin_are_where_a_member_starts(group_broker, topic_name):
    group = f"g-{topic_name}"
    async with Cluster(group_broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
        async with Producer(cluster) as producer:
            await producer.send_many(topic_name, [{"value": b"%d" % i} for i in range(10)])
        await admin.commit_offsets(group, {(topic_name, 0): 7})
        assert await admin.consumer_group_lag(group) == {(topic_name, 0): PartitionLag(7, 10, 3)}
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": group_broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic_name, 0)])  # no offset: the committed one
    message = consumer.poll(10)
    consumer.close()
    assert (message.offset(), message.value()) == (7, b"7")
