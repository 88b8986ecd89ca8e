"""Errors as 4xx/503 JSON in REST Proxy v3's shape: {"error_code": status, "message": ...}.

Kafka error codes from the brokers map to the HTTP status a REST client expects (unknown
topic 404, exists 409, invalid input 400, retriable 503); nothing a caller sends turns
into a 500.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from brokerd.client.errors import (
    ErrorCode,
    KafkaConnectionError,
    KafkaResponseError,
    KafkaTimeoutError,
    UnsupportedVersionError,
)
from dashboard.core.admin_api import AdminApiError
from dashboard.core.cluster_secrets import ClusterSecretError
from dashboard.core.groups import GroupNotFound, GroupNotInactive, NothingToShift
from dashboard.core.kafka import error_text
from dashboard.core.transactions import NoTransactionToAbort

KAFKA_STATUS = {
    ErrorCode.unknown_topic_or_partition: status.HTTP_404_NOT_FOUND,
    ErrorCode.topic_already_exists: status.HTTP_409_CONFLICT,
    ErrorCode.group_id_not_found: status.HTTP_404_NOT_FOUND,
    ErrorCode.non_empty_group: status.HTTP_409_CONFLICT,
    ErrorCode.topic_authorization_failed: status.HTTP_403_FORBIDDEN,
    ErrorCode.cluster_authorization_failed: status.HTTP_403_FORBIDDEN,
    ErrorCode.group_authorization_failed: status.HTTP_403_FORBIDDEN,
    ErrorCode.offset_out_of_range: status.HTTP_416_REQUESTED_RANGE_NOT_SATISFIABLE,
    # Elections and reassignments the cluster's state refuses now.
    ErrorCode.preferred_leader_not_available: status.HTTP_409_CONFLICT,
    ErrorCode.eligible_leaders_not_available: status.HTTP_409_CONFLICT,
    ErrorCode.reassignment_in_progress: status.HTTP_409_CONFLICT,
    ErrorCode.no_reassignment_in_progress: status.HTTP_404_NOT_FOUND,
    # The platform's stored credentials for the cluster, not the caller's input.
    ErrorCode.sasl_authentication_failed: status.HTTP_502_BAD_GATEWAY,
    ErrorCode.resource_not_found: status.HTTP_404_NOT_FOUND,
    ErrorCode.transactional_id_not_found: status.HTTP_404_NOT_FOUND,
    ErrorCode.transactional_id_authorization_failed: status.HTTP_403_FORBIDDEN,
}


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the cluster is unavailable"


def kafka_status(exc: KafkaResponseError) -> int:
    if exc.error_code in KAFKA_STATUS:
        return KAFKA_STATUS[exc.error_code]
    if exc.retriable:
        return status.HTTP_503_SERVICE_UNAVAILABLE
    return status.HTTP_400_BAD_REQUEST


def error_body(code: int, message: str, **extra) -> dict:
    return {"error_code": code, "message": message, **extra}


def exception_handler(exc, context):
    if isinstance(exc, KafkaResponseError):
        code = kafka_status(exc)
        message = error_text(exc, subject=True)
        return Response(error_body(code, message, kafka_error=exc.name), status=code)
    if isinstance(exc, KafkaConnectionError | KafkaTimeoutError | UnsupportedVersionError):
        return Response(error_body(503, str(exc)), status=503)
    if isinstance(exc, ClusterSecretError):
        return Response(error_body(502, str(exc)), status=502)
    if isinstance(exc, AdminApiError):
        # Our own misconfiguration (token, endpoint) is a gateway problem, not the caller's.
        code = exc.status if 400 <= exc.status < 500 and exc.status != 401 else 502
        return Response(error_body(code, exc.message), status=code)
    if isinstance(exc, GroupNotFound):
        return Response(error_body(404, str(exc)), status=404)
    if isinstance(exc, NothingToShift):
        return Response(error_body(400, str(exc)), status=400)
    if isinstance(exc, GroupNotInactive | NoTransactionToAbort):
        return Response(error_body(409, str(exc), state=exc.state), status=409)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    if isinstance(detail, dict) and set(detail) == {"detail"}:
        message, extra = str(detail["detail"]), {}
    else:
        message, extra = "invalid request", {"errors": detail}
    response.data = error_body(response.status_code, message, **extra)
    return response
