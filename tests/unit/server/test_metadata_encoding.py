"""Metadata answers are spliced from partition entries encoded once and kept while their
values stay the same (brokerd/server/handlers/metadata.py): every version's frame is what
kio encodes for the same answer, and a changed leader, ISR, epoch or live broker set shows
at once (the kept bytes are keyed by their values, never stale)."""

import base64
import uuid

from brokerd.coordination.metadata import TopicInfo
from brokerd.coordination.zk_data import PartitionState
from brokerd.protocol import framing
from brokerd.protocol.errors import ErrorCode
from brokerd.server.handlers import metadata as metadata_handler
from brokerd.server.handlers.metadata import handle_metadata
from tests.integration.wire import nested, request
from tests.unit.server.handler_context import (
    as_received,
    broker_config,
    broker_info,
    context,
    metadata_cache,
    on_listener,
)

WIDE = 300


def _ctx():
    config = broker_config({"auto.create.topics.enable": "false"})
    metadata = metadata_cache(config)
    metadata.cluster_id = "cluster-1"
    metadata.controller_id = 1
    metadata.brokers = {b: broker_info(b) for b in (1, 2, 3)}
    assignment = {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(WIDE)}
    metadata.topics["wide"] = TopicInfo(
        "wide",
        "AAAAAAAAAAAAAAAAAAAAAQ",
        assignment,
        states={p: PartitionState(r[0], 1, list(r), 1) for p, r in assignment.items() if p != 7},
    )
    metadata.topics["__consumer_offsets"] = TopicInfo(
        "__consumer_offsets",
        "AAAAAAAAAAAAAAAAAAAAAg",
        {0: [1]},
        states={0: PartitionState(1, 0, [1], 1)},
    )
    return context(config, metadata=metadata)


def _request(version: int, names=None):
    topics = None
    if names is not None:
        topics = tuple(
            nested(3, version, "MetadataRequestTopic", name=n, topic_id=None) for n in names
        )
    return as_received(
        request(
            3,
            version,
            topics=topics,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
    )


async def _answer(ctx, version: int, names=None):
    received = _request(version, names)
    with on_listener("PLAINTEXT"):
        frame = await handle_metadata(ctx, received)
    response = framing.decode_response(frame[4:], 3, version)
    # Byte for byte what kio writes for the same answer, header and size prefix included.
    assert framing.encode_response(received, response) == frame
    return response


def _partitions(response, name="wide"):
    (topic,) = [t for t in response.topics if t.name == name]
    return {p.partition_index: p for p in topic.partitions}


async def test_every_version_is_encoded_as_kio_encodes_it():
    ctx = _ctx()
    for version in range(13):
        for names in (None, ["wide", "missing"]):
            if version == 0 and names is None:
                names = []  # v0: an empty list means all topics
            response = await _answer(ctx, version, names)
            partitions = _partitions(response)
            assert len(partitions) == WIDE
            assert partitions[4].leader_id == 2 and list(partitions[4].isr_nodes) == [2, 3]
            assert partitions[7].error_code == ErrorCode.leader_not_available
            if names:
                (missing,) = [t for t in response.topics if t.name == "missing"]
                assert missing.error_code == ErrorCode.unknown_topic_or_partition
            # asked twice: the second answer comes from the kept entries, and is the same
            assert await _answer(ctx, version, names) == response


async def test_a_change_shows_at_once_in_the_next_answer():
    ctx = _ctx()
    await _answer(ctx, 12)
    states = ctx.metadata.topics["wide"].states
    states[0] = PartitionState(2, 5, [2], 2)  # a new leader, epoch and ISR
    states[1].isr.remove(states[1].isr[-1])  # an ISR shrunk in place
    states[7] = PartitionState(2, 1, [2], 1)  # a state that was missing
    del ctx.metadata.brokers[3]  # broker 3 gone: its leaderships and replicas offline
    partitions = _partitions(await _answer(ctx, 12))
    assert (partitions[0].leader_id, partitions[0].leader_epoch) == (2, 5)
    assert list(partitions[0].isr_nodes) == [2]
    assert list(partitions[1].isr_nodes) == [2]
    assert (partitions[7].error_code, partitions[7].leader_id) == (ErrorCode.none, 2)
    assert (partitions[2].error_code, partitions[2].leader_id) == (
        ErrorCode.leader_not_available,
        -1,
    )
    assert list(partitions[2].offline_replicas) == [3]


class _CountingTopics(dict):
    """The metadata cache's topics, counting the scans of every topic (values())."""

    scans = 0

    def values(self):
        self.scans += 1
        return super().values()


def _small_topic(name: str, number: int) -> TopicInfo:
    topic_id = base64.urlsafe_b64encode(uuid.UUID(int=1000 + number).bytes).decode().rstrip("=")
    return TopicInfo(name, topic_id, {0: [1]}, states={0: PartitionState(1, 0, [1], 1)})


async def test_kept_entries_are_not_pruned_at_every_miss_whatever_the_versions_asked():
    metadata_handler._PARTITIONS.clear()
    ctx = _ctx()
    topics = _CountingTopics(ctx.metadata.topics)
    for n in range(100):
        topics[f"t{n}"] = _small_topic(f"t{n}", n)
    ctx.metadata.topics = topics
    names = sorted(topics)
    # Clients of twelve versions: 1,200 first encodings. Each used to scan every topic and
    # every kept entry once the kept entries outnumbered twice the topics (quadratic).
    for version in range(1, 13):
        await _answer(ctx, version, names)
    assert topics.scans == 0
    # Topics deleted and created round after round: the entries of those gone are dropped
    # now and then (a scan per at least as many new topics as are kept), never every miss.
    number = 100
    for _ in range(10):
        for name in [n for n in topics if n.startswith("t")]:
            del topics[name]
        for _ in range(100):
            topics[f"t{number}"] = _small_topic(f"t{number}", number)
            number += 1
        await _answer(ctx, 12, sorted(topics))
    assert 1 <= topics.scans <= 10
    assert len(metadata_handler._PARTITIONS) <= 2 * len(topics) + 65
