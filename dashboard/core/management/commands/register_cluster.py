"""Add or update a cluster the dashboard watches (used by `make run` for the local one)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from dashboard.core.client_properties import ClientPropertiesError, read_client_properties
from dashboard.core.models import Cluster


class Command(BaseCommand):
    help = "Register a cluster by name (created, or updated when it exists)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--bootstrap-servers", required=True)
        parser.add_argument("--zookeeper-connect", default="")
        parser.add_argument(
            "--admin-endpoints", default="{}", help='JSON: {"1": "http://127.0.0.1:9644"}'
        )
        parser.add_argument(
            "--admin-token-ref",
            default="",
            help="env:BROKERD_NAME, or file:/path in the secrets directory (DASHBOARD_SECRETS_DIRS)",
        )
        parser.add_argument(
            "--command-config",
            help="a Kafka client .properties with the cluster's security settings "
            "(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, "
            "...); the password and private key are stored encrypted. Without it: PLAINTEXT",
        )

    def handle(
        self,
        *args,
        name,
        bootstrap_servers,
        zookeeper_connect,
        admin_endpoints,
        admin_token_ref,
        command_config,
        **options,
    ):
        try:
            endpoints = json.loads(admin_endpoints)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--admin-endpoints is not JSON: {exc}") from exc
        cluster = Cluster.objects.filter(name=name).first() or Cluster(name=name)
        cluster.bootstrap_servers = bootstrap_servers
        cluster.zookeeper_connect = zookeeper_connect
        cluster.admin_endpoints = endpoints
        cluster.admin_token_ref = admin_token_ref
        try:
            text = Path(command_config).read_text() if command_config else ""
            read_client_properties(text).apply_to(cluster)
        except OSError as exc:
            raise CommandError(f"--command-config {command_config}: {exc.strerror}") from exc
        except ClientPropertiesError as exc:
            raise CommandError(f"--command-config {command_config}: {exc}") from exc
        try:
            cluster.full_clean()
        except ValidationError as exc:
            raise CommandError(str(exc)) from exc
        created = cluster.pk is None
        cluster.save()
        self.stdout.write(f"{'registered' if created else 'updated'} cluster {name!r}")
