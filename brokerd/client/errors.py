"""Exceptions of the client: a Kafka error code from a broker, or a transport failure."""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode

__all__ = [
    "ErrorCode",
    "KafkaClientError",
    "KafkaConnectionError",
    "KafkaResponseError",
    "KafkaTimeoutError",
    "UnsupportedVersionError",
    "check",
    "error_code",
]

# Errors after which fresh metadata may route the request to the right broker.
METADATA_REFRESH_ERRORS = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.leader_not_available,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.not_controller,
        ErrorCode.kafka_storage_error,
    }
)
# Errors after which the group coordinator must be looked up again.
COORDINATOR_ERRORS = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.coordinator_load_in_progress,
    }
)


class KafkaClientError(Exception):
    """Base of every error the client raises."""

    retriable = False


class KafkaResponseError(KafkaClientError):
    """A broker answered with a Kafka error code (kept as `error_code`, named by `name`)."""

    def __init__(self, code: int | ErrorCode, message: str | None = None, context: str = ""):
        self.error_code = error_code(code)
        self.message = message
        self.context = context
        detail = f"{self.name} ({int(self.error_code)})"
        if context:
            detail = f"{context}: {detail}"
        if message:
            detail += f": {message}"
        super().__init__(detail)

    @property
    def name(self) -> str:
        return self.error_code.name.upper()

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        return bool(self.error_code.retriable)

    @property
    def needs_metadata_refresh(self) -> bool:
        return self.error_code in METADATA_REFRESH_ERRORS


class KafkaConnectionError(KafkaClientError):
    """The connection to a broker failed or was lost; the request may or may not have run."""

    retriable = True


class KafkaTimeoutError(KafkaClientError):
    """No answer within the request timeout."""

    retriable = True


class UnsupportedVersionError(KafkaClientError):
    """The broker speaks no version of an API that this client implements."""


def error_code(code: int | ErrorCode) -> ErrorCode:
    if isinstance(code, ErrorCode):
        return code
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.unknown_server_error


def check(code: int | ErrorCode, message: str | None = None, context: str = "") -> None:
    """Raise KafkaResponseError unless `code` is NONE."""
    if int(code) != 0:
        raise KafkaResponseError(code, message, context)
