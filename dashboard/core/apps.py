from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    name = "dashboard.core"
    label = "core"
    verbose_name = "Clusters"

    def ready(self) -> None:
        from .roles import ensure_roles

        # Permissions exist only after post_migrate has run for every app; groups follow.
        post_migrate.connect(ensure_roles, dispatch_uid="dashboard.core.ensure_roles")
