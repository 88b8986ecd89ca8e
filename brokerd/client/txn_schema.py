"""DescribeTransactions v0's response with its times as plain integers.

Kafka answers transaction_start_time -1 for an id with no open transaction (and for every
error), which kio's datetime_i64 reader refuses ("Cannot parse negative timestamp"); this
copy of the layout, in kio's schema style, reads the same bytes with int64/int32 fields.
No `from __future__ import annotations`: kio's native reader resolves the field types.
"""

from dataclasses import field

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.primitive import i16, i32, i64

from brokerd.protocol.kio_style import Message, response, response_part

DESCRIBE_TRANSACTIONS_V0 = Message(65, 0, True, RequestHeader, ResponseHeader)


@response_part(DESCRIBE_TRANSACTIONS_V0)
class TopicData:
    topic: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@response_part(DESCRIBE_TRANSACTIONS_V0)
class TransactionState:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    transactional_id: str = field(metadata={"kafka_type": "string"})
    transaction_state: str = field(metadata={"kafka_type": "string"})
    transaction_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_start_time_ms: i64 = field(metadata={"kafka_type": "int64"})
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[TopicData, ...]


@response(DESCRIBE_TRANSACTIONS_V0)
class DescribeTransactionsResponse:
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_states: tuple[TransactionState, ...]
