"""Produce and Fetch over the wire client, and the topics and batches they work on, for the
protocol-level tests."""

import datetime

from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.records.batch import SimpleRecord, build_batch
from tests.integration.wire import nested, request

SECOND = datetime.timedelta(seconds=1)
FETCH_VERSION = 12


def create(broker, name, partitions=1, **configs):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(15)


def batch(*values, key=b"k"):
    return build_batch([SimpleRecord(v, key) for v in values])


def produce(client, topic, records, partition=0, acks=1):
    """Produce v9 of one batch; the partition's answer (None for acks=0, which has none)."""
    data = nested(0, 9, "PartitionProduceData", index=partition, records=bytes(records))
    body = request(
        0,
        9,
        transactional_id=None,
        acks=acks,
        timeout=SECOND,
        topic_data=(nested(0, 9, "TopicProduceData", name=topic, partition_data=(data,)),),
    )
    if acks == 0:
        client.send(body)
        return None
    return client.call(body).responses[0].partition_responses[0]


def fetch_partitions(
    client,
    wanted,
    max_bytes=1 << 20,
    min_bytes=1,
    wait_ms=0,
    session_id=0,
    epoch=-1,
    version=FETCH_VERSION,
):
    """One Fetch as a consumer sends it; wanted: [(topic, partition, offset,
    partition_max_bytes)] in request order. The whole response."""
    topics = {}
    for topic, partition, offset, partition_max in wanted:
        topics.setdefault(topic, []).append(
            nested(
                1,
                version,
                "FetchPartition",
                partition=partition,
                fetch_offset=offset,
                partition_max_bytes=partition_max,
                current_leader_epoch=-1,
                log_start_offset=-1,
                last_fetched_epoch=-1,
            )
        )
    body = request(
        1,
        version,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=tuple(
            nested(1, version, "FetchTopic", topic=t, partitions=tuple(p))
            for t, p in topics.items()
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    return client.call(body)


def fetch(client, topic, offset, partition=0, partition_max=1 << 20, **options):
    """A Fetch of one partition (options as fetch_partitions takes them)."""
    return fetch_partitions(client, [(topic, partition, offset, partition_max)], **options)


def fetch_many(client, wanted, max_bytes, **options):
    """fetch_partitions' answers by (topic, partition)."""
    response = fetch_partitions(client, wanted, max_bytes, **options)
    return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}
