"""A group member that rides out a whole-cluster outage, in its own process.

    python -m tests.cluster.restart_member --client confluent --bootstrap H:P --group G --topic T

Like tests/compat/group_member.py (same JSON lines on stdout: {"ready": true},
{"assigned": [[topic, partition], ...]}, {"record": [partition, offset, value]} printed
before the record's offset is committed, with --commit), but it keeps going through errors a client
raises while every broker is down (kafka-python's poll raises KafkaConnectionError then),
and it logs its group protocol to stderr (librdkafka's cgrp debug, kafka-python's
coordinator at DEBUG) for a failure's report. Commits follow every record: asynchronous
with confluent-kafka (a synchronous one blocks the poll loop for the whole outage),
synchronous with kafka-python.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time

STOP = False
# A member commits each record it processes: on a loaded machine a poll's batch takes a
# while, which must not make it leave its group (a member that does is not stuck, but the
# test would wait on its rebalances rather than on the brokers).
MAX_POLL_INTERVAL_MS = 30000
MAX_POLL_RECORDS = 20


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def _stop(*_) -> None:
    global STOP
    STOP = True


class Tracker:
    def __init__(self):
        self.last = None

    def update(self, partitions) -> None:
        current = sorted([tp[0], tp[1]] for tp in partitions)
        if current != self.last:
            self.last = current
            emit(assigned=current)


def run_confluent(args) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
            "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.max.ms": 1000,
            "debug": "cgrp",
            "client.id": args.client_id,
        }
    )
    consumer.subscribe([args.topic])
    emit(ready=True)
    tracker = Tracker()
    try:
        while not STOP:
            message = consumer.poll(0.2)
            tracker.update((tp.topic, tp.partition) for tp in consumer.assignment())
            if message is None or message.error():
                continue
            time.sleep(args.delay_ms / 1000)
            emit(record=[message.partition(), message.offset(), message.value().decode()])
            if not args.commit:
                continue
            position = TopicPartition(message.topic(), message.partition(), message.offset() + 1)
            try:
                consumer.commit(offsets=[position], asynchronous=True)
            except KafkaException as exc:
                logging.warning("commit failed: %s", exc)
    finally:
        consumer.close()


def run_kafka_python(args) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    from tests.compat.group_member import await_inflight_joins

    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
        max_poll_records=MAX_POLL_RECORDS,
        metadata_max_age_ms=1000,
        reconnect_backoff_max_ms=1000,
    )
    await_inflight_joins(consumer)
    emit(ready=True)
    tracker = Tracker()
    try:
        while not STOP:
            try:
                batches = consumer.poll(200)
            except KafkaError as exc:  # every broker down: try again
                logging.warning("poll failed: %r", exc)
                time.sleep(0.2)
                continue
            tracker.update((tp.topic, tp.partition) for tp in consumer.assignment())
            for tp, records in batches.items():
                for record in records:
                    time.sleep(args.delay_ms / 1000)
                    emit(record=[tp.partition, record.offset, record.value.decode()])
                    if not args.commit:
                        continue
                    position = OffsetAndMetadata(record.offset + 1, "", -1)
                    try:
                        consumer.commit({TopicPartition(tp.topic, tp.partition): position})
                    except KafkaError as exc:  # a rebalance took the partition: go on
                        logging.warning("commit failed: %r", exc)
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=("confluent", "kafka-python"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-id", default="restart-member")
    parser.add_argument("--commit", action="store_true", help="commit after each record")
    parser.add_argument("--delay-ms", type=int, default=0, help="processing time per record")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("kafka.coordinator").setLevel(logging.DEBUG)
    if args.client == "confluent":
        run_confluent(args)
    else:
        run_kafka_python(args)


if __name__ == "__main__":
    main()
