"""A topic's life on a real broker: creation bounded before anything is allocated, deletion
of any legal name, and a start-up that deletes what a missed deletion left behind."""

from __future__ import annotations

import datetime
import shutil
import time
import uuid

from brokerd.protocol.errors import ErrorCode
from tests.integration.wire import WireClient, nested, request
from tests.integration.wire_calls import batch, fetch, produce

INT32_MAX = 2**31 - 1
TIMEOUT = datetime.timedelta(seconds=30)


def creatable(name: str, partitions: int, replication: int = 1):
    return nested(
        19,
        7,
        "CreatableTopic",
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        assignments=(),
        configs=(),
    )


def create(client: WireClient, name: str, partitions: int, validate_only: bool = False):
    """CreateTopics v7 of one topic: its result."""
    body = request(
        19, 7, topics=(creatable(name, partitions),), timeout=TIMEOUT, validate_only=validate_only
    )
    return client.call(body).topics[0]


def grow(client: WireClient, name: str, count: int, validate_only: bool = False):
    """CreatePartitions v3 to `count` partitions: its result."""
    topic = nested(37, 3, "CreatePartitionsTopic", name=name, count=count, assignments=None)
    body = request(37, 3, topics=(topic,), timeout=TIMEOUT, validate_only=validate_only)
    return client.call(body).results[0]


def delete(client: WireClient, name: str):
    """DeleteTopics v6 of one topic by name: its result."""
    body = request(
        20,
        6,
        topics=(nested(20, 6, "DeleteTopicState", name=name, topic_id=None),),
        timeout=TIMEOUT,
    )
    return client.call(body).responses[0]


def topic_names(client: WireClient) -> set[str]:
    body = request(
        3,
        12,
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return {t.name for t in client.call(body).topics}


def high_watermark(client: WireClient, name: str, partition: int = 0) -> int | None:
    """The partition's high watermark, None while it has no leader here."""
    answer = fetch(client, name, 0, partition).responses[0].partitions[0]
    return answer.high_watermark if answer.error_code == ErrorCode.none else None


def entries(broker, prefix: str) -> list[str]:
    """What the broker's log dir holds whose name starts with `prefix`."""
    return sorted(p.name for p in (broker.dir / "logs").iterdir() if p.name.startswith(prefix))


def wait_until(predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout}s"
        time.sleep(0.1)


def test_absurd_partition_counts_are_refused_before_anything_is_made(make_broker):
    broker = make_broker().start()
    name = f"huge-{uuid.uuid4().hex[:8]}"
    with (
        WireClient(broker.bootstrap, timeout=30) as client,
        WireClient(broker.bootstrap, timeout=30) as bystander,
    ):
        # Kafka's controller takes at most 10,000 partitions in one operation.
        assert create(client, name, 10_000, validate_only=True).error_code == ErrorCode.none
        over = create(client, name, 10_001, validate_only=True)
        assert over.error_code == ErrorCode.policy_violation
        assert over.error_message == "Unable to perform excessively large batch operation."

        # 2^31-1, checked or for real, is refused at once; another client is served meanwhile.
        for validate_only in (True, False):
            correlation = client.send(
                request(
                    19,
                    7,
                    topics=(creatable(name, INT32_MAX),),
                    timeout=TIMEOUT,
                    validate_only=validate_only,
                )
            )
            assert (
                bystander.call(
                    request(18, 3, client_software_name="b", client_software_version="1")
                ).error_code
                == ErrorCode.none
            )
            got, answer = client.receive(19, 7)
            assert got == correlation
            assert answer.topics[0].error_code == ErrorCode.policy_violation

        assert create(client, name, 2).error_code == ErrorCode.none
        grown = grow(client, name, INT32_MAX)
        assert grown.error_code == ErrorCode.policy_violation
        assert grow(client, name, 3).error_code == ErrorCode.none
    assert entries(broker, name) == [f"{name}-{p}" for p in range(3)]
    assert "Traceback" not in broker.output


def test_max_partitions_bounds_the_cluster(make_broker):
    broker = make_broker(max_partitions="4").start()
    with WireClient(broker.bootstrap) as client:
        assert create(client, "first", 3).error_code == ErrorCode.none
        refused = create(client, "second", 2, validate_only=True)
        assert refused.error_code == ErrorCode.policy_violation
        assert "max.partitions=4" in refused.error_message
        assert grow(client, "first", 5).error_code == ErrorCode.policy_violation
        assert create(client, "second", 1).error_code == ErrorCode.none
        assert topic_names(client) == {"first", "second"}
    assert entries(broker, "second") == ["second-0"]


def test_max_broker_partitions_bounds_each_broker(make_broker):
    broker = make_broker(max_broker_partitions="4").start()
    with WireClient(broker.bootstrap) as client:
        assert create(client, "first", 2).error_code == ErrorCode.none
        refused = create(client, "second", 3)
        assert refused.error_code == ErrorCode.policy_violation
        assert "max.broker.partitions=4" in refused.error_message
        assert grow(client, "first", 5).error_code == ErrorCode.policy_violation
        assert grow(client, "first", 4).error_code == ErrorCode.none
        assert create(client, "second", 1).error_code == ErrorCode.policy_violation
        assert topic_names(client) == {"first"}
    assert entries(broker, "second") == []


def test_a_topic_with_the_longest_legal_name_is_deleted(make_broker):
    """249 characters fit `<topic>-<p>` but not Kafka's `<topic>-<p>.<uuid>-delete`: the
    rename shortens the topic part, as Kafka's does."""
    broker = make_broker(log_segment_delete_delay_ms="0").start()
    name = uuid.uuid4().hex + "x" * (249 - 32)
    with WireClient(broker.bootstrap) as client:
        assert create(client, name + "y", 1).error_code == ErrorCode.invalid_topic_exception
        assert create(client, name, 2).error_code == ErrorCode.none
        wait_until(
            lambda: produce(client, name, batch(b"v")).error_code == ErrorCode.none,
            "a leader taking writes",
        )
        result = delete(client, name)
        assert (result.error_code, result.error_message) == (ErrorCode.none, None)
        assert name not in topic_names(client)
    wait_until(lambda: entries(broker, name[:32]) == [], "the partition directories removed")
    assert "Traceback" not in broker.output


def test_a_name_deleted_and_created_again_and_again(make_broker):
    """Delete then create the same name, many times over one connection: each answer is
    Kafka's, nothing is left behind, and the last topic is whole."""
    broker = make_broker(log_segment_delete_delay_ms="0").start()
    name = f"again-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as client:
        for _ in range(15):
            assert create(client, name, 3).error_code == ErrorCode.none
            assert delete(client, name).error_code == ErrorCode.none
        assert create(client, name, 3).error_code == ErrorCode.none
        wait_until(lambda: produce(client, name, batch(b"last")).error_code == 0, "a leader")
        assert high_watermark(client, name) == 1
    wait_until(lambda: entries(broker, name) == [f"{name}-{p}" for p in range(3)], "one topic")
    assert "Traceback" not in broker.output


def test_leftovers_are_deleted_at_start_up(make_broker):
    """Directories of a topic ZooKeeper no longer has, of a partition its topic does not
    have, and of a deletion cut short are removed when the broker starts; the rest stays."""
    broker = make_broker(log_segment_delete_delay_ms="0").start()
    with WireClient(broker.bootstrap) as client:
        assert create(client, "kept", 2).error_code == ErrorCode.none
        wait_until(
            lambda: produce(client, "kept", batch(b"a", b"b")).error_code == ErrorCode.none,
            "a leader taking writes",
        )
    broker.terminate()
    logs = broker.dir / "logs"
    shutil.copytree(logs / "kept-0", logs / "ghost-0")  # its topic was deleted meanwhile
    shutil.copytree(logs / "kept-0", logs / "kept-7")  # kept has partitions 0 and 1 only
    shutil.copytree(logs / "kept-0", logs / f"kept-1.{uuid.uuid4().hex}-delete")
    broker.start()
    wait_until(lambda: entries(broker, "ghost") == [], "the stray topic's directory removed")
    wait_until(lambda: entries(broker, "kept") == ["kept-0", "kept-1"], "only kept's partitions")
    with WireClient(broker.bootstrap) as client:
        assert topic_names(client) == {"kept"}
        wait_until(lambda: high_watermark(client, "kept") == 2, "kept's records served")
    assert "stray partition ghost-0" in broker.output
    assert "Traceback" not in broker.output
