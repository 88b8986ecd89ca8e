"""Handlers called directly, as the dispatcher calls them: a request decoded from its wire
bytes, a HandlerContext of real (unstarted) collaborators, the response encoded and decoded
back. Collaborators a handler under test does not read are left out (None): reading one
fails the test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from brokerd.config import BrokerConfig, Endpoint
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import BrokerInfo
from brokerd.protocol import framing
from brokerd.server.connection import ResponseParts, current_listener
from brokerd.server.fetch_session import FetchSessionCache
from brokerd.server.handlers.context import HandlerContext

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
    zk = ZkClient(config.zookeeper_hosts, config.zookeeper_chroot, 6000, 1000)
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
    if isinstance(response, ResponseParts):  # Fetch: written piecewise, bytes only here
        response = b"".join(response.parts)
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
