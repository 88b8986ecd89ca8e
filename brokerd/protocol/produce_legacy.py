"""Produce v0-v2, which kio (like Kafka 4) no longer ships, written in kio's schema style so
kio's reader and writer handle them (as interbroker.py does for the controller's APIs).

Older librdkafka (2.0.x, the one kcat here links) compresses gzip, snappy and lz4 only when
the broker's Produce range includes v0, although it then sends v3+ anyway. The layouts are
those of Kafka 2.x's ProduceRequest/ProduceResponse JSON at v0-v2:
- request: acks, timeout_ms, [topic: name, [partition: index, records]] (v3 adds
  transactional_id in front);
- response: [topic: name, [partition: index, error_code, base_offset]]; v1 appends
  throttle_time_ms; v2 adds log_append_time_ms to each partition.
A v0/v1 request carries message sets of magic 0/1; the log up-converts them to v2 batches.
No `from __future__ import annotations`: kio's native reader resolves the field types.
"""

import datetime
from dataclasses import field
from types import SimpleNamespace

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import TopicName
from kio.static.primitive import Records, TZAware, i16, i32, i32Timedelta, i64

from .kio_style import Message, request, request_part, response, response_part

_PRODUCE = {
    version: Message(0, version, False, RequestHeader, ResponseHeader) for version in (0, 1, 2)
}
PRODUCE_V0, PRODUCE_V1, PRODUCE_V2 = _PRODUCE.values()


def _int32():
    return field(metadata={"kafka_type": "int32"})


# Requests: the same layout for v0, v1 and v2 -----------------------------------------------


@request_part(PRODUCE_V0)
class PartitionProduceData:
    index: i32 = _int32()
    records: Records | None = field(metadata={"kafka_type": "records"})


@request_part(PRODUCE_V0)
class TopicProduceData:
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_data: tuple[PartitionProduceData, ...]


def _request(version: int) -> type:
    @request(_PRODUCE[version])
    class ProduceRequest:
        acks: i16 = field(metadata={"kafka_type": "int16"})
        timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
        topic_data: tuple[TopicProduceData, ...]

    ProduceRequest.__qualname__ = f"ProduceRequestV{version}"
    return ProduceRequest


# Responses ---------------------------------------------------------------------------------


@response_part(PRODUCE_V0)
class PartitionProduceResponseV0:
    index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})


@response_part(PRODUCE_V2)
class PartitionProduceResponseV2:
    index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})
    log_append_time: TZAware | None = field(metadata={"kafka_type": "datetime_i64"}, default=None)


@response_part(PRODUCE_V0)
class TopicProduceResponseV0:
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionProduceResponseV0, ...]


@response_part(PRODUCE_V2)
class TopicProduceResponseV2:
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionProduceResponseV2, ...]


@response(PRODUCE_V0)
class ProduceResponseV0:
    responses: tuple[TopicProduceResponseV0, ...]


_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


@response(PRODUCE_V1)
class ProduceResponseV1:
    responses: tuple[TopicProduceResponseV0, ...]
    throttle_time: i32Timedelta = field(
        metadata={"kafka_type": "timedelta_i32"}, default=_NO_THROTTLE
    )


@response(PRODUCE_V2)
class ProduceResponseV2:
    responses: tuple[TopicProduceResponseV2, ...]
    throttle_time: i32Timedelta = field(
        metadata={"kafka_type": "timedelta_i32"}, default=_NO_THROTTLE
    )


# version -> (request, response), and the per-version names handlers build answers with ---
SCHEMAS: dict[int, tuple[type, type]] = {
    0: (_request(0), ProduceResponseV0),
    1: (_request(1), ProduceResponseV1),
    2: (_request(2), ProduceResponseV2),
}

RESPONSE_MODULES = {
    version: SimpleNamespace(
        ProduceResponse=response,
        TopicProduceResponse=topic,
        PartitionProduceResponse=partition,
    )
    for version, response, topic, partition in (
        (0, ProduceResponseV0, TopicProduceResponseV0, PartitionProduceResponseV0),
        (1, ProduceResponseV1, TopicProduceResponseV0, PartitionProduceResponseV0),
        (2, ProduceResponseV2, TopicProduceResponseV2, PartitionProduceResponseV2),
    )
}
