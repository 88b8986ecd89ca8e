"""The audit log: every change made through the platform, whether it worked or not."""

from __future__ import annotations

from typing import Any

from .models import AuditLog, Cluster


def record(
    user: Any,
    action: str,
    target: str,
    *,
    cluster: Cluster | None = None,
    details: dict | None = None,
    succeeded: bool,
    result: str = "",
) -> AuditLog:
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    return AuditLog.objects.create(
        user=user if authenticated else None,
        username=user.get_username() if authenticated else "",
        cluster=cluster,
        action=action,
        target=target,
        details=details or {},
        succeeded=succeeded,
        result=result[:10000],
    )
