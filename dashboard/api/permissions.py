"""Roles on the API: reading needs view_cluster, changing needs operate_cluster."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION


class ClusterRole(BasePermission):
    message = "your role does not allow this (viewer reads; operator changes)"

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        needed = VIEW_PERMISSION if request.method in SAFE_METHODS else OPERATE_PERMISSION
        return user.has_perm(needed)
