"""Roles as Django groups: viewer reads, operator changes the clusters, admin manages users."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
VIEW_PERMISSION = "core.view_cluster"
OPERATE_PERMISSION = "core.operate_cluster"
MANAGE_USERS_PERMISSION = "core.manage_users"

_VIEW = [
    ("core", "view_cluster"),
    ("core", "view_maintenanceschedule"),
    ("core", "view_maintenancerun"),
    ("core", "view_sparkload"),
    ("core", "view_historysample"),
]
_OPERATE = [
    ("core", "operate_cluster"),
    ("core", "add_maintenanceschedule"),
    ("core", "change_maintenanceschedule"),
    ("core", "delete_maintenanceschedule"),
    ("core", "add_maintenancerun"),
    ("core", "add_sparkload"),
    ("core", "change_sparkload"),
]
_ADMIN = [
    ("core", "manage_users"),
    ("core", "view_auditlog"),
    ("core", "add_cluster"),
    ("core", "change_cluster"),
    ("core", "delete_cluster"),
    ("auth", "view_user"),
    ("auth", "add_user"),
    ("auth", "change_user"),
    ("auth", "delete_user"),
    ("auth", "view_group"),
]
ROLE_PERMISSIONS = {
    VIEWER: _VIEW,
    OPERATOR: _VIEW + _OPERATE,
    ADMIN: _VIEW + _OPERATE + _ADMIN,
}


def ensure_roles(sender=None, **_kwargs) -> None:
    """Create or update the three groups (idempotent; runs after every migrate)."""
    if sender is not None and sender.label != "core":
        return
    for role, wanted in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in wanted
        ]
        group.permissions.set(permissions)
