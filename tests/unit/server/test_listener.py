"""A listener and its connections built from plain collaborators (no broker): a client's
ApiVersions over a real socket is dispatched to the handler table and counted by the
metrics, and an unsupported API closes only that connection."""

import asyncio
import struct

from brokerd.admin import BrokerMetrics
from brokerd.protocol import framing
from brokerd.server.connection import ConnectionServices
from brokerd.server.connection_quotas import ConnectionQuotas
from brokerd.server.dispatcher import Dispatcher
from brokerd.server.listener import Listener
from brokerd.server.memory_pool import RequestMemoryPool
from tests.integration.wire import request
from tests.unit.server.handler_context import broker_config, context, metadata_cache

LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
}


async def _exchange(port: int, frame: bytes) -> bytes | None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(frame)
        await writer.drain()
        size = await reader.read(4)
        if not size:
            return None  # closed by the broker
        return await reader.readexactly(struct.unpack(">i", size)[0])
    finally:
        writer.close()


async def test_requests_reach_the_handlers_through_a_listener_without_a_broker():
    config = broker_config(LISTENERS)
    metrics = BrokerMetrics()
    dispatcher = Dispatcher(context(config))
    dispatcher.observers.append(metrics.observe_request)
    services = ConnectionServices.of(config, dispatcher.dispatch, RequestMemoryPool(-1), metrics)
    listeners: list[Listener] = []
    zk = metadata_cache(config).zk  # never started: only SASL listeners read credentials
    listeners.append(
        Listener(config.listeners[0], config, zk, ConnectionQuotas(config), services, listeners)
    )
    listener = listeners[0]
    await listener.start()
    try:
        body = request(18, 3, client_software_name="unit", client_software_version="1")
        frame = await _exchange(listener.bound_port, framing.encode_request(body, 42, "t"))
        assert frame is not None and framing.response_correlation_id(frame) == 42
        response = framing.decode_response(frame, 18, 3)
        assert response.error_code == 0 and len(response.api_keys) > 10

        # An API the broker does not speak ends this connection, not the listener.
        assert await _exchange(listener.bound_port, struct.pack(">ihhi", 8, 999, 0, 1)) is None
        frame = await _exchange(listener.bound_port, framing.encode_request(body, 43, "t"))
        assert frame is not None and framing.response_correlation_id(frame) == 43
    finally:
        listener.stop_accepting()
        await listener.drain()

    counted = {
        (s.name, s.labels.get("outcome")): s.value
        for family in metrics.registry.collect()
        for s in family.samples
        if s.labels.get("api") == "api_versions"
    }
    assert counted[("brokerd_requests_total", "ok")] == 2
    assert counted[("brokerd_network_request_bytes_total", None)] > 0
    assert counted[("brokerd_network_response_bytes_total", None)] > 0
