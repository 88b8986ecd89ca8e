"""Handlers called directly, as the dispatcher calls them: a request decoded from its wire
bytes, a HandlerContext of real (unstarted) collaborators, the response encoded and decoded
back. Collaborators a handler under test does not read are left out (None): reading one
fails the test."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

from brokerd.admin.topic_metrics import BrokerTopicStats
from brokerd.config import BrokerConfig, Endpoint
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import BrokerInfo
from brokerd.protocol import framing
from brokerd.server.authorization import NO_AUTHORIZER
from brokerd.server.connection import ResponseParts, current_listener
from brokerd.server.fetch_session import FetchSessionCache
from brokerd.server.handlers.context import HandlerContext
from tests.integration.wire import nested, request

BASE = {
    "broker.id": "1",
    "zookeeper.connect": "127.0.0.1:1/unused",  # never connected: nothing here starts it
    "log.dirs": "/nonexistent",
    "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


def broker_config(overrides: dict[str, str] | None = None) -> BrokerConfig:
    return BrokerConfig({**BASE, **(overrides or {})})


def metadata_cache(config: BrokerConfig) -> MetadataCache:
    zk = ZkClient(config.zookeeper.hosts, config.zookeeper.chroot, 6000, 1000)
    return MetadataCache(zk)


def broker_info(broker_id: int, rack: str | None = None) -> BrokerInfo:
    """A registered broker with a PLAINTEXT (client-<id>) and an INTERNAL (internal-<id>)
    endpoint."""
    return BrokerInfo(
        broker_id,
        (
            Endpoint("PLAINTEXT", "PLAINTEXT", f"client-{broker_id}", 9092),
            Endpoint("INTERNAL", "PLAINTEXT", f"internal-{broker_id}", 9093),
        ),
        rack,
    )


def context(config: BrokerConfig | None = None, **collaborators: Any) -> HandlerContext:
    config = config or broker_config()
    values: dict[str, Any] = dict.fromkeys(HandlerContext.__dataclass_fields__)
    values.update(config=config, broker_id=config.broker_id)
    values.setdefault("metadata", None)
    values["auth"] = NO_AUTHORIZER  # no authorizer.class.name: every ACL check passes
    values["topic_stats"] = BrokerTopicStats()
    values.update(collaborators)
    if values["metadata"] is None:
        values["metadata"] = metadata_cache(config)
    if values["fetch_sessions"] is None:
        values["fetch_sessions"] = FetchSessionCache(
            config.get("max.incremental.fetch.session.cache.slots")
        )
    return HandlerContext(**values)


def as_received(body: Any) -> framing.Request:
    """The request as the dispatcher sees it: encoded as a client sends it, then decoded."""
    return framing.decode_request(framing.encode_request(body, 7, "unit-test")[4:])


async def call(handler, ctx: HandlerContext, body: Any) -> Any:
    """The handler's response to `body`, through the wire encoding both ways."""
    request = as_received(body)
    response = await handler(ctx, request)
    if isinstance(response, ResponseParts):  # Fetch: bytes and file regions, in order
        parts = response
        response = b"".join(p if isinstance(p, bytes) else p.read() for p in parts.parts)
        parts.release()
    if not isinstance(response, bytes):
        response = framing.encode_response(request, response)
    return framing.decode_response(response[4:], request.api_key, request.api_version)


@contextlib.contextmanager
def on_listener(name: str) -> Iterator[None]:
    token = current_listener.set(name)
    try:
        yield
    finally:
        current_listener.reset(token)


def produce_request(records: bytes, acks: int = 1, version: int = 9, topic: str = "t") -> Any:
    """Produce of one partition (0) of `topic`."""
    data = nested(0, version, "PartitionProduceData", index=0, records=records)
    return request(
        0,
        version,
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(nested(0, version, "TopicProduceData", name=topic, partition_data=(data,)),),
    )


def fetch_request(
    replica_id=-1,
    session_id=0,
    epoch=-1,
    topics=(),
    offset=0,
    *,
    offsets: dict[str, int] | None = None,
    wait_ms=0,
    max_bytes=1 << 20,
) -> Any:
    """Fetch v12 of partition 0 of each of `topics` from `offset` (or of each topic in
    `offsets` from its own), waiting at most `wait_ms`."""
    if offsets is None:
        offsets = dict.fromkeys(topics, offset)
    return request(
        1,
        12,
        replica_id=replica_id,
        max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=tuple(
            nested(
                1,
                12,
                "FetchTopic",
                topic=name,
                partitions=(
                    nested(
                        1,
                        12,
                        "FetchPartition",
                        partition=0,
                        fetch_offset=fetch_offset,
                        partition_max_bytes=1 << 20,
                        current_leader_epoch=-1,
                        log_start_offset=-1,
                        last_fetched_epoch=-1,
                    ),
                ),
            )
            for name, fetch_offset in offsets.items()
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
