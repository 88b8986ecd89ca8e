"""Requests on one connection take effect in request order, as in Kafka.

Kafka mutes a connection while one of its requests is being handled, so a request never acts
before the one sent ahead of it on the same connection. Each test pipelines many pairs of
dependent requests in one write (the second of each pair reads what the first changed) and
checks every answer, against two real brokers (replication factor 2, so acks=all produces,
offset commits and topic creation really wait on something).
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from brokerd.protocol.errors import ErrorCode
from tests.harness import BrokerProcess
from tests.integration.wire import WireClient, encode_request, nested, request
from tests.integration.wire_calls import batch

PAIRS = 40  # per burst
SECOND = datetime.timedelta(seconds=1)
TEN_SECONDS = datetime.timedelta(seconds=10)
EARLIEST = -2


class TwoBrokers:
    def __init__(self, zookeeper, tmp_path_factory):
        chroot = f"/request-order-{uuid.uuid4().hex[:8]}"
        props = {
            "num_partitions": "1",
            "default_replication_factor": "2",
            "min_insync_replicas": "1",
            "offsets_topic_replication_factor": "2",
            "offsets_topic_num_partitions": "1",
            "replica_fetch_backoff_ms": "100",
            "group_initial_rebalance_delay_ms": "0",
        }
        self.brokers = {
            broker_id: BrokerProcess(
                tmp_path_factory.mktemp(f"order-broker{broker_id}"),
                f"{zookeeper.connect}{chroot}",
                broker_id=broker_id,
                **props,
            )
            for broker_id in (1, 2)
        }

    def start(self) -> TwoBrokers:
        for broker in self.brokers.values():
            broker.start()
        return self

    def kill(self) -> None:
        for broker in self.brokers.values():
            broker.kill()

    def client(self, broker_id: int) -> WireClient:
        return WireClient(self.brokers[broker_id].bootstrap, timeout=30)

    def topic_state(self, topic: str):
        """(leader id, ISR) of partition 0 as broker 1 sees it, or None."""
        with self.client(1) as client:
            response = client.call(metadata(topic))
        found = response.topics[0]
        if found.error_code or not found.partitions:
            return None
        partition = found.partitions[0]
        return partition.leader_id, sorted(partition.isr_nodes)

    def create_topic(self, topic: str, replication_factor: int) -> int:
        """Create, wait until every replica is in the ISR; the leader's id."""
        with self.client(1) as client:
            response = client.call(create_topics(topic, replication_factor))
        assert response.topics[0].error_code == ErrorCode.none, response
        deadline = time.monotonic() + 60
        while True:
            state = self.topic_state(topic)
            if state is not None and len(state[1]) == replication_factor and state[0] >= 0:
                break
            assert time.monotonic() < deadline, f"{topic}: no full ISR, last {state}"
            time.sleep(0.1)
        leader = state[0]
        with self.client(leader) as client:  # metadata can name it before it has taken over
            while client.call(list_earliest(topic)).topics[0].partitions[0].error_code:
                assert time.monotonic() < deadline, f"{topic}: broker {leader} does not lead it"
                time.sleep(0.1)
        return leader


@pytest.fixture(scope="module")
def brokers(zookeeper, tmp_path_factory):
    made = TwoBrokers(zookeeper, tmp_path_factory).start()
    yield made
    made.kill()


def new_topic() -> str:
    return f"order-{uuid.uuid4().hex[:10]}"


def metadata(*topics: str):
    return request(
        3,
        12,
        topics=tuple(nested(3, 12, "MetadataRequestTopic", name=t, topic_id=None) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def create_topics(topic: str, replication_factor: int):
    creatable = nested(
        19,
        7,
        "CreatableTopic",
        name=topic,
        num_partitions=1,
        replication_factor=replication_factor,
        assignments=(),
        configs=(),
    )
    return request(19, 7, topics=(creatable,), timeout=TEN_SECONDS, validate_only=False)


def produce(topic: str, acks: int, value: bytes):
    data = nested(0, 9, "PartitionProduceData", index=0, records=bytes(batch(value)))
    topic_data = nested(0, 9, "TopicProduceData", name=topic, partition_data=(data,))
    return request(
        0, 9, transactional_id=None, acks=acks, timeout=TEN_SECONDS, topic_data=(topic_data,)
    )


def fetch(topic: str, offset: int):
    """A consumer's Fetch that does not wait: it answers with what the HW lets it see now."""
    partition = nested(
        1,
        12,
        "FetchPartition",
        partition=0,
        fetch_offset=offset,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
        log_start_offset=-1,
        last_fetched_epoch=-1,
    )
    return request(
        1,
        12,
        replica_id=-1,
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(nested(1, 12, "FetchTopic", topic=topic, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def delete_records(topic: str, offset: int):
    partition = nested(21, 2, "DeleteRecordsPartition", partition_index=0, offset=offset)
    deleted = nested(21, 2, "DeleteRecordsTopic", name=topic, partitions=(partition,))
    return request(21, 2, topics=(deleted,), timeout=TEN_SECONDS)


def list_earliest(topic: str):
    partition = nested(
        2, 7, "ListOffsetsPartition", partition_index=0, current_leader_epoch=-1, timestamp=EARLIEST
    )
    listed = nested(2, 7, "ListOffsetsTopic", name=topic, partitions=(partition,))
    return request(2, 7, replica_id=-1, isolation_level=0, topics=(listed,))


def offset_commit(group: str, topic: str, offset: int):
    partition = nested(
        8,
        8,
        "OffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata=f"m{offset}",
    )
    committed = nested(8, 8, "OffsetCommitRequestTopic", name=topic, partitions=(partition,))
    return request(
        8,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(committed,),
    )


def offset_fetch(group: str, topic: str):
    fetched = nested(9, 7, "OffsetFetchRequestTopic", name=topic, partition_indexes=(0,))
    return request(9, 7, group_id=group, topics=(fetched,), require_stable=False)


def pipelined(client: WireClient, bodies: list) -> list:
    """Send every request in one write, then read every answer (in order, as Kafka sends)."""
    first = client.correlation_id + 1
    client.send_raw(b"".join(encode_request(b, first + i) for i, b in enumerate(bodies)))
    client.correlation_id += len(bodies)
    answers = []
    for i, body in enumerate(bodies):
        correlation_id, answer = client.receive(body.__api_key__, body.__version__)
        assert correlation_id == first + i
        answers.append(answer)
    return answers


def produced(client: WireClient, topic: str, count: int) -> None:
    for i in range(count):
        answer = client.call(produce(topic, -1, b"v%d" % i))
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none


def test_delete_records_then_list_offsets_earliest(brokers):
    topic = new_topic()
    leader = brokers.create_topic(topic, replication_factor=2)
    with brokers.client(leader) as client:
        produced(client, topic, PAIRS + 1)
        bodies = []
        for offset in range(1, PAIRS + 1):
            bodies += [delete_records(topic, offset), list_earliest(topic)]
        answers = pipelined(client, bodies)
    for offset, (deleted, listed) in enumerate(
        zip(answers[::2], answers[1::2], strict=True), start=1
    ):
        result = deleted.topics[0].partitions[0]
        assert (result.error_code, result.low_watermark) == (ErrorCode.none, offset)
        earliest = listed.topics[0].partitions[0]
        assert (earliest.error_code, earliest.offset) == (ErrorCode.none, offset), (
            f"ListOffsets(EARLIEST) after DeleteRecords({offset}) on the same connection"
        )


def test_create_topics_then_metadata(brokers):
    topics = [new_topic() for _ in range(PAIRS // 4)]  # each creation writes to ZooKeeper
    bodies = []
    for topic in topics:
        bodies += [create_topics(topic, 2), metadata(topic)]
    with brokers.client(1) as client:
        answers = pipelined(client, bodies)
    for topic, created, described in zip(topics, answers[::2], answers[1::2], strict=True):
        assert created.topics[0].error_code == ErrorCode.none, created
        found = described.topics[0]
        assert (found.name, found.error_code) == (topic, ErrorCode.none), (
            f"Metadata after CreateTopics({topic}) on the same connection: {found}"
        )
        assert len(found.partitions) == 1


@pytest.mark.parametrize(
    ("acks", "replication_factor"),
    [(-1, 2), (1, 1), (0, 1)],
    ids=["acks=all-rf2", "acks=1-rf1", "acks=0-rf1"],
)
def test_produce_then_fetch(brokers, acks, replication_factor):
    """A consumer's Fetch right after a produce sees the record: at once for a lone replica
    (the HW moves on append), after the acks=all wait for two (the answer is sent, and the
    next request handled, once the follower has it)."""
    topic = new_topic()
    leader = brokers.create_topic(topic, replication_factor=replication_factor)
    with brokers.client(leader) as client:
        bodies = []
        for offset in range(PAIRS):
            bodies += [produce(topic, acks, b"v%d" % offset), fetch(topic, offset)]
        # acks=0 produces have no answer: only the fetches are read back.
        answers = pipelined_skipping_acks0(client, bodies)
    for offset, answer in enumerate(answers):
        partition = answer.responses[0].partitions[0]
        assert partition.error_code == ErrorCode.none
        assert partition.high_watermark >= offset + 1, (
            f"Fetch at {offset} after Produce(acks={acks}) on the same connection saw HW "
            f"{partition.high_watermark}"
        )
        assert partition.records, f"no records at {offset} after Produce(acks={acks})"


def pipelined_skipping_acks0(client: WireClient, bodies: list) -> list:
    """Like `pipelined`, for produce/fetch pairs: the fetch answers (acks=0 produces get
    none); produce answers, where there are some, must be free of errors."""
    first = client.correlation_id + 1
    client.send_raw(b"".join(encode_request(b, first + i) for i, b in enumerate(bodies)))
    client.correlation_id += len(bodies)
    fetches = []
    for i, body in enumerate(bodies):
        if body.__api_key__ == 0 and body.acks == 0:
            continue
        correlation_id, answer = client.receive(body.__api_key__, body.__version__)
        assert correlation_id == first + i
        if body.__api_key__ == 0:
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
        else:
            fetches.append(answer)
    return fetches


def test_offset_commit_then_offset_fetch(brokers):
    group = f"order-group-{uuid.uuid4().hex[:8]}"
    topic = new_topic()
    brokers.create_topic(topic, replication_factor=1)  # commits name existing partitions
    with brokers.client(1) as client:
        deadline = time.monotonic() + 60
        while True:  # the first lookup creates __consumer_offsets
            found = client.call(request(10, 4, key_type=0, coordinator_keys=(group,)))
            coordinator = found.coordinators[0]
            if coordinator.error_code == ErrorCode.none:
                break
            assert time.monotonic() < deadline, coordinator
            time.sleep(0.1)
    with brokers.client(coordinator.node_id) as client:
        while client.call(offset_fetch(group, topic)).error_code:  # loading
            assert time.monotonic() < deadline
            time.sleep(0.1)
        bodies = []
        for offset in range(1, PAIRS + 1):
            bodies += [offset_commit(group, topic, offset), offset_fetch(group, topic)]
        answers = pipelined(client, bodies)
    for offset, (committed, fetched) in enumerate(
        zip(answers[::2], answers[1::2], strict=True), start=1
    ):
        assert committed.topics[0].partitions[0].error_code == ErrorCode.none
        partition = fetched.topics[0].partitions[0]
        assert (partition.committed_offset, partition.metadata) == (offset, f"m{offset}"), (
            f"OffsetFetch after OffsetCommit({offset}) on the same connection"
        )


def test_every_kind_interleaved(brokers):
    """All four pairs in one burst, a few times over: no request overtakes another."""
    topic = new_topic()
    leader = brokers.create_topic(topic, replication_factor=2)
    group = f"order-mixed-{uuid.uuid4().hex[:8]}"
    with brokers.client(leader) as client:
        produced(client, topic, 1)
        coordinator = client.call(request(10, 4, key_type=0, coordinator_keys=(group,)))
        commit_here = coordinator.coordinators[0].node_id == leader
        for round_ in range(3):
            bodies = []
            for i in range(PAIRS // 4):
                offset = 1 + round_ * (PAIRS // 4) + i
                bodies += [produce(topic, -1, b"x"), fetch(topic, offset)]
                bodies += [delete_records(topic, offset), list_earliest(topic)]
                if commit_here:
                    bodies += [offset_commit(group, topic, offset), offset_fetch(group, topic)]
            answers = pipelined(client, bodies)
            step = 6 if commit_here else 4
            for i in range(PAIRS // 4):
                offset = 1 + round_ * (PAIRS // 4) + i
                chunk = answers[i * step : (i + 1) * step]
                assert chunk[1].responses[0].partitions[0].high_watermark >= offset + 1
                assert chunk[3].topics[0].partitions[0].offset == offset
                if commit_here:
                    assert chunk[5].topics[0].partitions[0].committed_offset == offset
