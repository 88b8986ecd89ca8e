"""Each user's API token from the UI (/account/token/): created and shown once, acting with
the user's role on the REST admin, replaced (the old key stops working) and revoked; every
change audited. Django's test client against a real broker."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from dashboard.core.models import AuditLog
from tests.web.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(username: str, role: str | None) -> Client:
    make_user(username, role)
    client = Client()
    assert client.login(username=username, password=f"{username}-pw-123")
    return client


def created_key(client: Client, button: str = "create") -> str:
    page = client.post(f"/account/token/{button}", follow=True).content.decode()
    (key,) = re.findall(r'<code id="new-token-key">([0-9a-f]{40})</code>', page)
    return key


def api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_viewer_creates_a_token_that_reads_but_never_writes(kafka_cluster):
    client = signed_in("vic", "viewer")
    assert "You have no API token." in client.get("/account/token/").content.decode()
    key = created_key(client)
    # Shown once: the next visit names its first characters only.
    again = client.get("/account/token/").content.decode()
    assert key not in again and key[:6] in again

    assert api(key).get("/api/v3/clusters/local/topics").status_code == 200
    created = api(key).post(
        "/api/v3/clusters/local/topics",
        {"topic_name": "by-a-viewer", "partitions_count": 1},
        format="json",
    )
    assert created.status_code == 403


def test_replacing_and_revoking_stop_the_old_key(kafka_cluster):
    client = signed_in("olga", "operator")
    first = created_key(client)
    second = created_key(client)
    assert first != second
    assert api(first).get("/api/v3/clusters").status_code == 401
    assert api(second).get("/api/v3/clusters").status_code == 200

    page = client.post("/account/token/revoke", follow=True).content.decode()
    assert "API token revoked" in page
    assert api(second).get("/api/v3/clusters").status_code == 401
    actions = list(
        AuditLog.objects.filter(username="olga").order_by("id").values_list("action", flat=True)
    )
    assert actions == ["api_token.create", "api_token.create", "api_token.revoke"]


def test_token_pages_need_a_login_and_a_post(kafka_cluster):
    anonymous = Client()
    assert anonymous.get("/account/token/").status_code == 302  # to the login page
    assert anonymous.post("/account/token/create").status_code == 302
    client = signed_in("gus", None)
    assert client.get("/account/token/create").status_code == 405
