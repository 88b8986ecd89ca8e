"""Create the first admin user when there is none, and print its password once."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from dashboard.core.roles import ADMIN, ensure_roles


class Command(BaseCommand):
    help = "Create the first admin user (role admin, superuser) unless an admin exists."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument(
            "--password", help="use this password instead of a generated one (tests, CI)"
        )

    def handle(self, *args, username: str, password: str | None, **options):
        ensure_roles()
        users = get_user_model()
        admins = users.objects.filter(is_superuser=True) | users.objects.filter(groups__name=ADMIN)
        if admins.exists():
            names = ", ".join(sorted({u.username for u in admins}))
            self.stdout.write(f"admin user exists ({names}); password unchanged")
            return
        password = password or secrets.token_urlsafe(12)
        user = users.objects.create_superuser(username=username, email="", password=password)
        user.groups.add(Group.objects.get(name=ADMIN))
        self.stdout.write(f"created admin user {username!r} with password {password}")
