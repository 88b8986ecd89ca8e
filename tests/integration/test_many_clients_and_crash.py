"""Many connections at once, and kill -9: nothing acknowledged is lost."""

import asyncio
import struct

from kafka import KafkaProducer
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from brokerd.protocol.messages import build
from tests.client_reads import kafka_python_values_by_offset

from .wire import encode_request

CLIENTS = 500


async def _api_versions_roundtrip(host: str, port: int, number: int) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        body = build(ApiVersionsRequest, client_software_name="many", client_software_version="1")
        writer.write(encode_request(body, correlation_id=number))
        await writer.drain()
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        payload = await reader.readexactly(size)
        return struct.unpack(">i", payload[:4])[0]  # the echoed correlation id
    finally:
        writer.close()


def test_five_hundred_concurrent_clients(broker):
    host, port = broker.bootstrap.rsplit(":", 1)

    async def main():
        # Open every connection before any answer is read: all 500 are live together.
        return await asyncio.gather(
            *(_api_versions_roundtrip(host, int(port), n) for n in range(CLIENTS))
        )

    answered = asyncio.run(main())
    assert answered == list(range(CLIENTS))


def test_kill_9_then_restart_loses_nothing_acknowledged(make_broker, topic_name):
    broker = make_broker(num_partitions="1").start()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=2)
    acked = []
    for i in range(2000):
        future = producer.send(topic_name, value=b"record-%d" % i)
        if i % 100 == 99:
            producer.flush()
        acked.append(future)
    producer.flush()
    offsets = [f.get(10).offset for f in acked]
    producer.close()
    broker.kill()  # SIGKILL: no checkpoints, no clean-shutdown marker
    broker.start()
    seen = kafka_python_values_by_offset(broker.bootstrap, topic_name)
    for i, offset in enumerate(offsets):
        assert seen.get(offset) == b"record-%d" % i
    assert sorted(seen) == list(range(len(seen)))
