"""Kafka error codes by name, and the exception handlers raise to answer with one.

`ErrorCode` is kio's enum (generated from Kafka's `Errors`); members are lower-case names,
e.g. `ErrorCode.unknown_topic_or_partition`.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError", "error_code_of"]


class KafkaError(Exception):
    """A failure that maps to one Kafka error code (and an optional message for clients)."""

    def __init__(self, error_code: ErrorCode, message: str | None = None):
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.message = message


def error_code_of(exc: BaseException) -> ErrorCode:
    """The Kafka error code for an exception: its own `.error_code`, else UNKNOWN_SERVER_ERROR."""
    code = getattr(exc, "error_code", None)
    if code is None:
        return ErrorCode.unknown_server_error
    if isinstance(code, ErrorCode):
        return code
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.unknown_server_error
