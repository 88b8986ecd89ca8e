"""Every page, API call and command needs the right role; CSRF guards session writes."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from dashboard.core.models import AuditLog

from .conftest import make_user, token_client

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v3/clusters/local"


def test_anonymous_callers_are_refused_everywhere(kafka_cluster):
    api = token_client(None)
    for path in ("/api/v3/clusters", f"{API}/topics"):
        response = api.get(path)
        assert response.status_code == 401, path
        assert response["WWW-Authenticate"] == "Token"
        assert "credentials" in response.json()["message"]
    assert api.get("/api/schema/").status_code == 401
    assert api.post(f"{API}/topics", {"topic_name": "x"}, format="json").status_code == 401
    pages = Client()
    for path in ("/", "/clusters/local/topics/anything/", "/api/docs/"):
        response = pages.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), path
    assert pages.get("/login/").status_code == 200


def test_viewer_reads_but_cannot_change(kafka_cluster, viewer_api, topic_name):
    assert viewer_api.get(f"{API}/topics").status_code == 200
    refused = viewer_api.post(
        f"{API}/topics", {"topic_name": topic_name, "partitions_count": 1}, format="json"
    )
    assert refused.status_code == 403 and "role" in refused.json()["message"]
    assert viewer_api.delete(f"{API}/topics/{topic_name}").status_code == 403
    assert not AuditLog.objects.exists()  # refused before anything was attempted


def test_user_without_role_sees_nothing(kafka_cluster):
    nobody = token_client(make_user("nora", None))
    assert nobody.get(f"{API}/topics").status_code == 403
    client = Client()
    client.force_login(make_user("nina", None))
    assert client.get("/").status_code == 403


def test_operator_changes_and_admin_manages_users(kafka_cluster, operator_api, topic_name):
    created = operator_api.post(
        f"{API}/topics", {"topic_name": topic_name, "partitions_count": 1}, format="json"
    )
    assert created.status_code == 201
    operator = make_user("olga", "operator")
    admin = make_user("ada", "admin")
    assert not operator.has_perm("core.manage_users") and operator.has_perm("core.operate_cluster")
    assert admin.has_perm("core.manage_users") and admin.has_perm("auth.add_user")


def test_session_login_page_and_csrf(kafka_cluster, viewer, broker):
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/")
    token = page.cookies["csrftoken"].value
    logged_in = client.post(
        "/login/",
        {"username": "vera", "password": "vera-pw-123", "csrfmiddlewaretoken": token},
    )
    assert logged_in.status_code == 302
    overview = client.get("/")
    assert overview.status_code == 200
    assert b'id="topic-count"' in overview.content and b"Cluster local" in overview.content
    # A session-authenticated write without the CSRF token is refused before the role check.
    refused = client.post(f"{API}/topics", {"topic_name": "x"}, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["message"]


def test_bootstrap_admin_creates_the_first_admin_once(db, capsys):
    call_command("bootstrap_admin")
    first = capsys.readouterr().out
    assert "created admin user 'admin' with password" in first
    password = first.rsplit(" ", 1)[1].strip()
    assert Client().login(username="admin", password=password)
    call_command("bootstrap_admin")
    assert "password unchanged" in capsys.readouterr().out
