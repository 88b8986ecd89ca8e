"""Expired committed offsets are tombstoned in __consumer_offsets and stay gone on restart."""

import datetime
import time

from brokerd.groups import offsets_topic
from brokerd.protocol.errors import ErrorCode as E
from brokerd.records import iter_entries
from tests.integration.test_groups_protocol import fetch, ready_coordinator
from tests.integration.wire import WireClient, nested, request


def commit_with_retention(client, group, topic, partition, offset, retention_ms):
    response = client.call(
        request(
            8,
            2,  # v2-v4 carry an explicit retention time
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time=datetime.timedelta(milliseconds=retention_ms),
            topics=(
                nested(
                    8,
                    2,
                    "OffsetCommitRequestTopic",
                    name=topic,
                    partitions=(
                        nested(
                            8,
                            2,
                            "OffsetCommitRequestPartition",
                            partition_index=partition,
                            committed_offset=offset,
                            committed_metadata="m",
                        ),
                    ),
                ),
            ),
        )
    )
    return response.topics[0].partitions[0].error_code


def test_expired_offsets_are_tombstoned(make_broker, topic_name):
    broker = make_broker(
        num_partitions="2",
        group_initial_rebalance_delay_ms="0",
        offsets_retention_check_interval_ms="200",
    ).start()
    expiring, lasting = "expiring-group", "lasting-group"
    with WireClient(broker.bootstrap) as client:
        ready_coordinator(client, expiring)
        ready_coordinator(client, lasting)
        client.call(
            request(
                3,
                4,
                topics=(nested(3, 4, "MetadataRequestTopic", name=topic_name),),
                allow_auto_topic_creation=True,
            )
        )
        assert commit_with_retention(client, expiring, topic_name, 0, 5, 300) == E.none
        assert commit_with_retention(client, lasting, topic_name, 1, 6, -1) == E.none
        deadline = time.monotonic() + 15
        while (
            fetch(client, expiring, [(topic_name, 0)]).topics[0].partitions[0].committed_offset
            != -1
        ):
            assert time.monotonic() < deadline, "the offset never expired"
            time.sleep(0.1)
        assert (
            fetch(client, lasting, [(topic_name, 1)]).topics[0].partitions[0].committed_offset == 6
        )
        listed = {g.group_id for g in client.call(request(16, 0)).groups}
        assert expiring not in listed and lasting in listed

    partition = offsets_topic.partition_for(expiring, 50)
    segment = broker.dir / "logs" / f"__consumer_offsets-{partition}" / ("0" * 20 + ".log")
    records = [
        offsets_topic.decode_record(r.key, r.value)
        for entry in iter_entries(segment.read_bytes())
        for r in entry
    ]
    mine = [(k, v) for k, v in records if k.group == expiring]
    assert mine[0][1].expire_timestamp > 0  # offset value v1: the explicit retention
    assert (offsets_topic.OffsetKey(expiring, topic_name, 0), None) in mine
    assert (offsets_topic.GroupKey(expiring), None) in mine  # the emptied group died too

    broker.terminate()
    broker.start()
    with WireClient(broker.bootstrap) as client:
        ready_coordinator(client, expiring)
        assert (
            fetch(client, expiring, [(topic_name, 0)]).topics[0].partitions[0].committed_offset
            == -1
        )
        assert (
            fetch(client, lasting, [(topic_name, 1)]).topics[0].partitions[0].committed_offset == 6
        )
