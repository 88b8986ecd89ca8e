"""The base of every API view: DRF auth and roles, and the audit trail for changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from dashboard.core import audit
from dashboard.core.models import Cluster

T = TypeVar("T")


class ApiView(APIView):
    # DRF marks its views login_not_required: it authenticates (token or session) and
    # answers 401/403 itself instead of LoginRequiredMiddleware's redirect to the login page.

    def audited(
        self,
        cluster: Cluster,
        action: str,
        target: str,
        details: dict,
        operation: Callable[[], T],
    ) -> T:
        """Run a change and record who did it, to what, and how it went."""
        try:
            result = operation()
        except Exception as exc:
            audit.record(
                self.request.user,
                action,
                target,
                cluster=cluster,
                details=details,
                succeeded=False,
                result=str(exc),
            )
            raise
        audit.record(
            self.request.user,
            action,
            target,
            cluster=cluster,
            details=details,
            succeeded=True,
            result="ok",
        )
        return result


class ErrorSerializer(serializers.Serializer):
    error_code = serializers.IntegerField(help_text="the HTTP status")
    message = serializers.CharField()
    kafka_error = serializers.CharField(required=False, help_text="Kafka's error name")
    errors = serializers.JSONField(required=False, help_text="per-field validation errors")


ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 404, 409, 503)}


def api_doc(summary: str, *, responses=None, **kwargs):
    """extend_schema with the error shape every operation shares and a JSON object body."""
    answers = {200: OpenApiTypes.OBJECT} if responses is None else dict(responses)
    return extend_schema(summary=summary, responses={**ERRORS, **answers}, **kwargs)
