"""A minimal Kafka-protocol client for tests: our own framing over kio schemas."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from brokerd.protocol.messages import build, request_module


def encode_request(body: Any, correlation_id: int, client_id: str = "wire-test") -> bytes:
    header_type = type(body).__header_schema__
    header = build(
        header_type,
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buffer = io.BytesIO()
    entity_writer(header_type)(buffer, header)
    entity_writer(type(body))(buffer, body)
    payload = buffer.getvalue()
    return struct.pack(">i", len(payload)) + payload


class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 10):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, body: Any) -> int:
        self.correlation_id += 1
        self.send_raw(encode_request(body, self.correlation_id))
        return self.correlation_id

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, size: int) -> bytes:
        chunks = []
        while size:
            chunk = self.sock.recv(size)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def receive(self, api_key: int, api_version: int) -> tuple[int, Any]:
        frame = self.read_frame()
        response_type = load_response_schema(api_key, api_version)
        header, used = entity_reader(response_type.__header_schema__)(frame, 0)
        body, body_used = entity_reader(response_type)(frame, used)
        assert used + body_used == len(frame), "response has trailing bytes"
        return header.correlation_id, body

    def call(self, body: Any) -> Any:
        correlation_id = self.send(body)
        got, response = self.receive(body.__api_key__, body.__version__)
        assert got == correlation_id
        return response

    def is_closed_by_peer(self, wait: float = 5) -> bool:
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def request(api_key: int, api_version: int, **values: Any) -> Any:
    """A kio request of that version from the values it has fields for (nested built by
    the caller with `nested`)."""
    return build(load_request_schema(api_key, api_version), **values)


def nested(api_key: int, api_version: int, class_name: str, **values: Any) -> Any:
    return build(getattr(request_module(api_key, api_version), class_name), **values)
