"""End-to-end latency produce -> consume at 5,000 records/s, vs Redis Streams.

One broker (see broker_throughput). A confluent-kafka producer (linger.ms=0, acks=1,
socket.nagle.disable like the Java client's TCP_NODELAY; with Nagle, librdkafka's small
produce requests wait for ACKs and p99 grows by tens of ms) sends
100-byte records paced at 5,000/s, each carrying its send time (perf_counter_ns, one clock
for the whole machine); a confluent-kafka consumer in another thread, parked in the
broker's fetch purgatory, notes each arrival. Peer: the same pacing through our own
redis-server with redis-py, XADD on one connection and XREAD BLOCK on another. Cases: p50
and p99 (ratio broker / Redis), and broker p99 against the 10 ms target (aim <= 1.0).
"""

from __future__ import annotations

import struct
import threading
import time

from bench import Result, say, scratch_dir
from bench.broker_throughput import BrokerUnderTest, RedisServer

RATE = 5_000
TOPIC = "latency"
PADDING = b"p" * 92  # 8-byte timestamp + 92 = 100-byte values


def _paced(count: int, send) -> None:
    start = time.perf_counter()
    for i in range(count):
        due = start + i / RATE
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        send(struct.pack(">q", time.perf_counter_ns()) + PADDING)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _kafka_latencies(bootstrap: str, count: int) -> list[float]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    latencies: list[float] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-latency",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
            "fetch.min.bytes": 1,
            "socket.nagle.disable": True,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    ready = threading.Event()

    def consume():
        ready.set()
        while len(latencies) < count:
            # poll(), not consume(n): consume waits for n messages or its timeout.
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                sent = struct.unpack_from(">q", message.value())[0]
                latencies.append((time.perf_counter_ns() - sent) / 1e6)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    ready.wait()
    time.sleep(1)  # the consumer has fetched once and is parked in the purgatory
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "acks": 1,
            "socket.nagle.disable": True,  # TCP_NODELAY, as the Java client always sets
        }
    )

    def send(value: bytes) -> None:
        producer.produce(TOPIC, value, partition=0)
        producer.poll(0)

    _paced(count, send)
    producer.flush(30)
    thread.join(60)
    consumer.close()
    return latencies


def _redis_latencies(port: int, count: int) -> list[float]:
    import redis

    latencies: list[float] = []
    reader = redis.Redis(port=port)
    writer = redis.Redis(port=port)

    def consume():
        last = "$"
        while len(latencies) < count:
            for _, entries in reader.xread({"lat": last}, block=500, count=1000) or ():
                for entry_id, fields in entries:
                    sent = struct.unpack_from(">q", fields[b"v"])[0]
                    latencies.append((time.perf_counter_ns() - sent) / 1e6)
                    last = entry_id

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    time.sleep(0.5)
    _paced(count, lambda value: writer.xadd("lat", {"v": value}))
    thread.join(60)
    return latencies


def run(quick: bool) -> list[Result]:
    count = RATE * (2 if quick else 6)
    with scratch_dir("broker-latency") as base:
        env = BrokerUnderTest(base)
        redis_server = RedisServer(base)
        try:
            env.create_topic(TOPIC)
            say(f"broker_latency: {count:,} records at {RATE:,}/s through the broker, then Redis")
            kafka = _kafka_latencies(env.bootstrap, count)
            peer = _redis_latencies(redis_server.port, count)
        finally:
            redis_server.stop()
            env.stop()
    assert len(kafka) >= count and len(peer) >= count, (len(kafka), len(peer))
    results = []
    for label, q in (("p50", 0.50), ("p99", 0.99)):
        mine, theirs = _percentile(kafka, q), _percentile(peer, q)
        results.append(
            Result(
                "broker_latency",
                f"produce->consume {label} at {RATE:,}/s",
                "ms",
                f"{mine:.2f} ms",
                mine,
                f"{theirs:.2f} ms (redis XADD -> XREAD BLOCK)",
                theirs,
                mine / theirs,
                note="lower is better",
            )
        )
    p99 = _percentile(kafka, 0.99)
    results.append(
        Result(
            "broker_latency",
            "p99 vs the 10 ms target",
            "ms",
            f"{p99:.2f} ms",
            p99,
            "10 ms (target)",
            10.0,
            p99 / 10.0,
            aim_at_most=1.0,
        )
    )
    return results
