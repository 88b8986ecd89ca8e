"""The two hazards of sending from segment files and fsyncing on a busy broker: a segment
deleted by retention while a slow reader still takes its fetch response, and flush.messages
acknowledging only after the fsync (which advances the recovery point)."""

import socket
import time

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch
from tests.integration.wire import WireClient
from tests.integration.wire_calls import create, fetch_many, produce

BATCH_BYTES = 1_000_000
BATCHES = 20


def _slow_client(bootstrap: str) -> WireClient:
    """A client whose tiny receive window makes the broker's sendfile wait on it."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect((host, int(port)))
    client = WireClient.__new__(WireClient)
    client.sock, client.correlation_id = sock, 0
    return client


def _set_topic_config(bootstrap, topic, key, value):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
    )
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)


def test_retention_deletes_a_segment_while_a_slow_reader_takes_it(make_broker, topic_name):
    process = make_broker(log_retention_check_interval_ms="100").start()
    create(process, topic_name, **{"segment.bytes": str(16 << 20), "file.delete.delay.ms": "0"})
    with WireClient(process.bootstrap) as client:
        for i in range(BATCHES):
            records = build_batch([SimpleRecord(bytes([65 + i]) * BATCH_BYTES, b"k%d" % i)])
            assert produce(client, topic_name, records).error_code == ErrorCode.none
    first_segment = process.dir / "logs" / f"{topic_name}-0" / f"{0:020d}.log"
    assert first_segment.exists()

    slow = _slow_client(process.bootstrap)
    # The first segment's ~15 MiB: far more than the socket buffers hold.
    slow.send(_fetch_request(topic_name))
    head = slow._read_exactly(64 << 10)  # the response has started
    _set_topic_config(process.bootstrap, topic_name, "retention.bytes", "1")
    deadline = time.monotonic() + 20
    while first_segment.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not first_segment.exists(), "retention did not delete the segment"
    assert not first_segment.with_name(first_segment.name + ".deleted").exists()

    rest = slow._read_exactly(int.from_bytes(head[:4], "big") + 4 - len(head))
    slow.close()
    records = _decode_fetch(head + rest)
    batches, pos = [], 0
    while pos < len(records):
        found = RecordBatch(records, pos)
        if pos + found.size > len(records):
            break  # a size-limited fetch may end in a partial batch
        found.validate()  # every byte is the segment's, not another file's
        batches.append(found)
        pos += found.size
    assert len(batches) >= 10
    for i, found in enumerate(batches):
        (record,) = list(found)
        assert (found.base_offset, record.key) == (i, b"k%d" % i)
        assert record.value == bytes([65 + i]) * BATCH_BYTES

    # The broker carries on: offset 0 is gone, the tail is served.
    with WireClient(process.bootstrap) as client:
        wanted = [(topic_name, 0, 0, 1 << 20)]
        gone = fetch_many(client, wanted, max_bytes=1 << 20)[(topic_name, 0)]
        assert gone.error_code == ErrorCode.offset_out_of_range
        wanted = [(topic_name, 0, BATCHES - 1, 2 << 20)]
        tail = fetch_many(client, wanted, max_bytes=2 << 20)[(topic_name, 0)]
        assert RecordBatch(tail.records).base_offset == BATCHES - 1


def _fetch_request(topic):
    import datetime

    from tests.integration.wire import nested, request

    body = request(
        1,
        12,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=0),
        min_bytes=1,
        max_bytes=64 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            nested(
                1,
                12,
                "FetchTopic",
                topic=topic,
                partitions=(
                    nested(
                        1,
                        12,
                        "FetchPartition",
                        partition=0,
                        fetch_offset=0,
                        partition_max_bytes=32 << 20,
                        current_leader_epoch=-1,
                        log_start_offset=-1,
                        last_fetched_epoch=-1,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    return body


def _decode_fetch(frame_with_size: bytes) -> bytes:
    from kio.index import load_response_schema
    from kio.serial import entity_reader

    frame = frame_with_size[4:]
    response_type = load_response_schema(1, 12)
    _, used = entity_reader(response_type.__header_schema__)(frame, 0)
    body, _ = entity_reader(response_type)(frame, used)
    (partition,) = body.responses[0].partitions
    assert partition.error_code == ErrorCode.none
    return partition.records


def _recovery_points(process) -> dict[tuple[str, int], int]:
    path = process.dir / "logs" / "recovery-point-offset-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()[2:]
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines)}


def test_flush_messages_acks_after_the_fsync(make_broker, topic_name):
    process = make_broker(log_flush_offset_checkpoint_interval_ms="100").start()
    create(process, topic_name, **{"flush.messages": "1"})
    create(process, topic_name + "-lazy")
    with WireClient(process.bootstrap) as client:
        for i in range(5):
            for topic in (topic_name, topic_name + "-lazy"):
                result = produce(client, topic, build_batch([SimpleRecord(b"v%d" % i)]))
                assert (result.error_code, result.base_offset) == (ErrorCode.none, i)
    deadline = time.monotonic() + 10
    while _recovery_points(process).get((topic_name, 0)) != 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    points = _recovery_points(process)
    assert points[(topic_name, 0)] == 5  # every acknowledged record was fsync'd
    assert points[(topic_name + "-lazy", 0)] == 0  # no flush.messages: left to the OS
