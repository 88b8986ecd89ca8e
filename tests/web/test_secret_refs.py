"""A cluster's secret references reach only the platform's secrets directory and its own
BROKERD_ variables: nobody who registers a cluster can make the dashboard send another file
(the Django secret key, the database) or variable as a bearer token."""

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from dashboard.core.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def secrets_dir(settings, tmp_path):
    allowed = tmp_path / "secrets"
    allowed.mkdir()
    settings.SECRETS_DIRS = [allowed]
    return allowed


def cluster_with(ref: str) -> Cluster:
    return Cluster(name="c1", bootstrap_servers="127.0.0.1:9092", admin_token_ref=ref)


def test_a_file_in_the_secrets_directory_is_read(secrets_dir):
    (secrets_dir / "token").write_text("s3cret\n")
    cluster = cluster_with(f"file:{secrets_dir / 'token'}")
    cluster.full_clean()
    assert cluster.admin_token() == "s3cret"


@pytest.mark.parametrize(
    "ref",
    [
        "file:{outside}",
        "file:{secrets}/../outside-token",
        "file:{secrets}",
        "file:relative/token",
        "env:DJANGO_SECRET_KEY",
        "env:DATABASE_URL",
        "ftp:whatever",
    ],
)
def test_references_outside_are_refused_and_never_read(secrets_dir, tmp_path, monkeypatch, ref):
    outside = tmp_path / "outside-token"
    outside.write_text("not yours")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "not yours")
    monkeypatch.setenv("DATABASE_URL", "not yours")
    ref = ref.format(outside=outside, secrets=secrets_dir)
    cluster = cluster_with(ref)
    with pytest.raises(ValidationError):
        cluster.full_clean()
    # A row stored before the rule (or written around the model) is not read either.
    assert cluster.admin_token() is None


def test_a_symlink_out_of_the_secrets_directory_is_refused(secrets_dir, tmp_path):
    target = tmp_path / "django-secret-key"
    target.write_text("not yours")
    (secrets_dir / "link").symlink_to(target)
    cluster = cluster_with(f"file:{secrets_dir / 'link'}")
    with pytest.raises(ValidationError):
        cluster.full_clean()
    assert cluster.admin_token() is None


def test_env_references_with_the_prefix_work(secrets_dir, monkeypatch):
    monkeypatch.setenv("BROKERD_PROD_ADMIN_TOKEN", "tok")
    cluster = cluster_with("env:BROKERD_PROD_ADMIN_TOKEN")
    cluster.full_clean()
    assert cluster.admin_token() == "tok"


def test_register_cluster_refuses_a_file_outside(secrets_dir):
    settings_key = Path(__file__)  # any readable file outside the secrets directory
    with pytest.raises(CommandError, match="secrets directory"):
        call_command(
            "register_cluster",
            "evil",
            "--bootstrap-servers=127.0.0.1:9092",
            f"--admin-token-ref=file:{settings_key}",
        )
    assert not Cluster.objects.filter(name="evil").exists()
