"""A confluent-kafka consumer of the new group protocol (KIP-848, `group.protocol=consumer`)
as a subprocess with tests.compat.group_member's interface (flags in, JSON lines out):

    python -m tests.compat.consumer_protocol_member --bootstrap H:P --group G --topic T

It prints {"ready": true} once subscribed, {"assigned": [[topic, partition], ...]} whenever
its assignment changes and {"record": [partition, offset, value]} per record (with --commit
the record's offset is committed after it is printed). SIGTERM closes the consumer (it
leaves the group); SIGKILL is a crash (the coordinator's session timeout removes it).
"""

from __future__ import annotations

import argparse
import signal
import time

from tests.compat.group_member import Tracker, emit

STOP = False


def _stop(*_) -> None:
    global STOP
    STOP = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", default="confluent", choices=("confluent",))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--assignor", default="", help="group.remote.assignor (uniform, range)")
    parser.add_argument("--client-id", default="consumer-protocol-member")
    parser.add_argument("--instance-id", help="group.instance.id (a static member)")
    parser.add_argument("--commit", action="store_true", help="commit after each record")
    parser.add_argument("--delay-ms", type=int, default=0, help="processing time per record")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)

    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000,
        "client.id": args.client_id,
        "debug": "cgrp",
    }
    if args.assignor:
        config["group.remote.assignor"] = args.assignor
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
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
            if args.commit:
                try:
                    consumer.commit(
                        offsets=[
                            TopicPartition(
                                message.topic(), message.partition(), message.offset() + 1
                            )
                        ],
                        asynchronous=False,
                    )
                except KafkaException as exc:
                    # At least once: the record comes again from the last commit.
                    emit(commit_failed=str(exc))
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
