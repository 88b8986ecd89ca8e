"""A coordinator that is still loading its __consumer_offsets partition.

The broker restarts with the `group_coordinator.load` failure probe armed, so the load of
every offsets partition it gains is held until the test releases it through the admin API:
the loading window is as long as the test needs, not a race. While it lasts, each group API
answers as Kafka's GroupCoordinator does; real clients retry, and once the load completes
they join and resume from the offsets committed before the restart.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer

from brokerd.protocol.errors import ErrorCode as E
from tests.compat.test_groups_clients import create_topic, produce
from tests.integration.test_admin_api import admin_for
from tests.integration.test_groups_protocol import (
    commit,
    fetch,
    heartbeat,
    join,
    new_group,
    ready_coordinator,
    sync,
)
from tests.integration.wire import WireClient, request

HOLD_LOAD = {"failure.probes": "group_coordinator.load=suspend"}
PARTITIONS = 3
COMMITTED = {0: 4, 1: 5, 2: 6}


class LogLines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def _commit_standalone(bootstrap: str, group: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in COMMITTED.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def _until_coordinator_answers(client: WireClient, group: str) -> int:
    """The OffsetFetch error once this broker leads the group's partition (it may answer
    NOT_COORDINATOR for a moment after start-up, before the controller gives it the role)."""
    deadline = time.monotonic() + 60  # the controller's LeaderAndIsr after a broker start
    while True:
        error = fetch(client, group, [("t", 0)]).error_code
        if error not in (E.not_coordinator, E.coordinator_not_available):
            return error
        assert time.monotonic() < deadline, "the broker never became coordinator"
        time.sleep(0.05)


def _assert_group_apis_answer_loading(client: WireClient, group: str, topic: str) -> None:
    """What Kafka's GroupCoordinator answers while the group's partition loads."""
    assert _until_coordinator_answers(client, group) == E.coordinator_load_in_progress
    found = client.call(request(10, 3, key=group, key_type=0))
    assert found.error_code == E.none  # it is the coordinator, just not ready
    assert join(client, group, topics=(topic,)).error_code == E.coordinator_load_in_progress
    assert commit(client, group, 1, "m", {(topic, 0): (1, "")}) == {
        (topic, 0): E.coordinator_load_in_progress
    }
    # Heartbeats are answered blindly; SyncGroup asks the member to rejoin.
    assert heartbeat(client, group, 1, "m") == E.none
    assert sync(client, group, 1, "m").error_code == E.rebalance_in_progress
    left = client.call(request(13, 1, group_id=group, member_id="m"))
    assert left.error_code == E.coordinator_load_in_progress
    described = client.call(request(15, 5, groups=(group,), include_authorized_operations=False))
    assert described.groups[0].error_code == E.coordinator_load_in_progress
    assert client.call(request(16, 4, states_filter=())).error_code == (
        E.coordinator_load_in_progress
    )
    deleted = client.call(request(42, 2, groups_names=(group,)))
    assert deleted.results[0].error_code == E.coordinator_load_in_progress


def _first_offsets(records: dict[int, int], consumed) -> None:
    for partition, offset in consumed:
        records.setdefault(partition, offset)


def test_clients_wait_out_the_load_and_resume_from_committed_offsets(make_broker, topic_name):
    broker = make_broker(num_partitions="3", group_initial_rebalance_delay_ms="0").start()
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, PARTITIONS)
    produce(bootstrap, topic_name, 30, PARTITIONS)
    confluent_group, kafka_python_group = new_group(), new_group()
    with WireClient(bootstrap) as client:
        ready_coordinator(client, confluent_group)
    for group in (confluent_group, kafka_python_group):
        _commit_standalone(bootstrap, group, topic_name)

    assert broker.terminate() == 0
    broker.start(overrides=HOLD_LOAD)
    with WireClient(bootstrap) as client:
        for group in (confluent_group, kafka_python_group):
            _assert_group_apis_answer_loading(client, group, topic_name)

    confluent_log = LogLines()
    confluent_logger = logging.getLogger(f"confluent.{confluent_group}")
    confluent_logger.addHandler(confluent_log)
    confluent_logger.setLevel(logging.DEBUG)
    kafka_python_log = LogLines()
    kafka_python_logger = logging.getLogger("kafka.coordinator")
    kafka_python_logger.addHandler(kafka_python_log)
    kafka_python_logger.setLevel(logging.INFO)
    confluent = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": confluent_group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "debug": "cgrp",
            "logger": confluent_logger,
        }
    )
    kafka_python = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=kafka_python_group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        confluent.subscribe([topic_name])
        kafka_python.subscribe([topic_name])
        consumed = {"confluent": {}, "kafka-python": {}}

        def poll_both() -> None:
            message = confluent.poll(0.1)
            if message is not None and not message.error():
                _first_offsets(consumed["confluent"], [(message.partition(), message.offset())])
            for tp, records in kafka_python.poll(100).items():
                _first_offsets(
                    consumed["kafka-python"], [(tp.partition, r.offset) for r in records]
                )

        # Both clients are told the coordinator is loading, and consume nothing meanwhile.
        deadline = time.monotonic() + 30
        while not (
            confluent_log.saw("Coordinator load in progress")
            and kafka_python_log.saw("is loading the group")
        ):
            assert time.monotonic() < deadline, (confluent_log.lines[-5:], kafka_python_log.lines)
            poll_both()
        assert consumed == {"confluent": {}, "kafka-python": {}}

        admin = admin_for(broker)
        assert admin.ok("GET", "/v1/failure-probes")["probes"] == [
            {"module": "group_coordinator", "point": "load", "type": "suspend", "released": False}
        ]
        assert admin.call("DELETE", "/v1/failure-probes/log/append")[0] == 404
        admin.ok("DELETE", "/v1/failure-probes/group_coordinator/load")

        deadline = time.monotonic() + 40
        while any(len(first) < PARTITIONS for first in consumed.values()):
            assert time.monotonic() < deadline, consumed
            poll_both()
        # Each resumed exactly where its group had committed before the restart.
        assert consumed == {"confluent": COMMITTED, "kafka-python": COMMITTED}
    finally:
        confluent.close()
        kafka_python.close()
        kafka_python_logger.removeHandler(kafka_python_log)
        kafka_python_logger.setLevel(logging.NOTSET)
