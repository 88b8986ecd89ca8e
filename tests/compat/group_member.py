"""One consumer-group member in its own process, for tests that kill members.

    python -m tests.compat.group_member --client confluent --bootstrap H:P --group G --topic T

Prints JSON lines on stdout: {"assigned": [[topic, partition], ...]} whenever the assignment
changes, {"record": [partition, offset, value]} for each record processed (printed *before*
its offset is committed, so a kill between the two re-delivers it: at-least-once), and
{"ready": true} once subscribed. SIGTERM closes the consumer cleanly (LeaveGroup unless
static); SIGKILL is the crash.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time

STOP = False


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
    from confluent_kafka import Consumer

    strategy = {
        "range": "range",
        "roundrobin": "roundrobin",
        "cooperative-sticky": "cooperative-sticky",
    }
    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": args.max_poll_ms,
        "topic.metadata.refresh.interval.ms": 1000,
        "partition.assignment.strategy": strategy[args.assignor],
        "client.id": args.client_id,
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consume_with_confluent(Consumer(config), args)


def consume_with_confluent(consumer, args, report_failed_commits: bool = False) -> None:
    """Subscribe, then print assignments and records until SIGTERM (committing each record
    after it is printed with --commit). With `report_failed_commits`, a refused commit is
    printed ({"commit_failed": ...}) and consuming goes on: the record comes again from
    the last commit; else it ends the member."""
    from confluent_kafka import KafkaException, TopicPartition

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
                next_offset = message.offset() + 1
                try:
                    consumer.commit(
                        offsets=[TopicPartition(message.topic(), message.partition(), next_offset)],
                        asynchronous=False,
                    )
                except KafkaException as exc:
                    if not report_failed_commits:
                        raise
                    emit(commit_failed=str(exc))
    finally:
        consumer.close()


def await_inflight_joins(consumer) -> None:
    """Work around a kafka-python 3.0.12 bug that strands a group leader.

    A leader that sees new partitions rejoins because its assignment snapshot differs from
    its metadata. poll() runs the JoinGroup -> SyncGroup round trip as a task and, when its
    own timeout expires first, re-awaits that task on later polls only while need_rejoin()
    holds. But the leader records the new snapshot when it computes the assignment, before
    its SyncGroup is answered: a poll that gives up in that window never awaits the task
    again. The join never completes, heartbeats stay disabled, the coordinator evicts the
    member after its session timeout and it never rejoins (1 in 5-20 partition-count
    rebalances under load). Counting a join task whose result poll() has not taken yet as a
    reason to rejoin makes poll() await it to the end, as the Java client does. That
    includes a task that finished between two polls: kafka-python clears `_join_task` only
    once it has applied the result (heartbeats on, assignment handed over), so a done task
    still set is a result nobody has applied.
    """
    coordinator = consumer._coordinator
    need_rejoin = coordinator.need_rejoin

    def need_rejoin_or_joining() -> bool:
        return coordinator._join_task is not None or need_rejoin()

    coordinator.need_rejoin = need_rejoin_or_joining


def run_kafka_python(args) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignors = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    extra = {"group_instance_id": args.instance_id} if args.instance_id else {}
    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=args.max_poll_ms,
        metadata_max_age_ms=1000,
        partition_assignment_strategy=[assignors[args.assignor]],
        **extra,
    )
    await_inflight_joins(consumer)
    emit(ready=True)
    tracker = Tracker()
    try:
        while not STOP:
            batches = consumer.poll(200)
            tracker.update((tp.topic, tp.partition) for tp in consumer.assignment())
            for tp, records in batches.items():
                for record in records:
                    time.sleep(args.delay_ms / 1000)
                    emit(record=[tp.partition, record.offset, record.value.decode()])
                    if args.commit:
                        consumer.commit(
                            {
                                TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(
                                    record.offset + 1, "", -1
                                )
                            }
                        )
    finally:
        consumer.close()


async def run_aiokafka(args) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from aiokafka.structs import OffsetAndMetadata

    assignors = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }
    extra = {"group_instance_id": args.instance_id} if args.instance_id else {}
    consumer = AIOKafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=args.max_poll_ms,
        metadata_max_age_ms=1000,
        partition_assignment_strategy=(assignors[args.assignor],),
        **extra,
    )
    await consumer.start()
    emit(ready=True)
    tracker = Tracker()
    try:
        while not STOP:
            batches = await consumer.getmany(timeout_ms=200)
            tracker.update((tp.topic, tp.partition) for tp in consumer.assignment())
            for tp, records in batches.items():
                for record in records:
                    await asyncio.sleep(args.delay_ms / 1000)
                    emit(record=[tp.partition, record.offset, record.value.decode()])
                    if args.commit:
                        await consumer.commit(
                            {
                                TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(
                                    record.offset + 1, ""
                                )
                            }
                        )
    finally:
        await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--client", choices=("confluent", "kafka-python", "aiokafka"), required=True
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--instance-id")
    parser.add_argument("--client-id", default="group-member")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--max-poll-ms", type=int, default=10000)
    parser.add_argument("--commit", action="store_true", help="commit after each record")
    parser.add_argument("--delay-ms", type=int, default=0, help="processing time per record")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    # Kept by the test (Member.log) for a failure's report: the group protocol in detail.
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    for name in ("kafka.coordinator", "aiokafka.consumer.group_coordinator"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    if args.client == "confluent":
        run_confluent(args)
    elif args.client == "kafka-python":
        run_kafka_python(args)
    else:
        asyncio.run(run_aiokafka(args))


if __name__ == "__main__":
    main()
