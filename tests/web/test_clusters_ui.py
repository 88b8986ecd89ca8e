"""Clusters registered, edited, switched between and removed in the UI (issue 17's "Access").

Django's test client for the forms' rules (operator role, errors beside the fields keeping
what was typed, secrets stored sealed and never rendered back, files never read from a
form), and chromium on a live daphne: an operator registers a second cluster from the
form, switches between the two from the header keeping the page, edits it and removes it.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client
from playwright.sync_api import expect

from dashboard.core.cluster_secrets import unseal
from dashboard.core.models import AuditLog, Cluster

from .conftest import make_user
from .test_browser import browser_page, log_in, submit_and_reload  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

PASSWORD = "s3cret-Sasl-pw-do-not-show"

FORM = {
    "name": "",
    "bootstrap_servers": "127.0.0.1:9092",
    "zookeeper_connect": "",
    "admin_endpoints": "",
    "admin_token_ref": "",
    "client_properties": "",
    "security_protocol": "PLAINTEXT",
    "sasl_mechanism": "",
    "sasl_username": "",
    "sasl_password": "",
    "ssl_ca_pem": "",
    "ssl_certificate_pem": "",
    "ssl_key_pem": "",
    "ssl_check_hostname": "on",
}


def operator_client(name: str = "opal") -> Client:
    client = Client()
    client.force_login(make_user(name, "operator"))
    return client


def field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="error field-error" id="id_{field}-error"[^>]*>([^<]*)</p>', html)
    return found.group(1) if found else ""


def test_register_refusals_keep_what_was_typed_but_never_a_secret():
    client = operator_client()
    typed = {**FORM, "name": "bad name!", "bootstrap_servers": "kafka-1:9092,kafka-2:9092",
             "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
             "sasl_username": "svc-dash", "sasl_password": PASSWORD,
             "admin_endpoints": '{"one": 5}'}  # fmt: skip
    refused = client.post("/clusters/", typed)
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "letters, digits" in field_error(html, "name")
    assert "broker id -&gt; URL" in field_error(html, "admin_endpoints")
    assert 'value="kafka-1:9092,kafka-2:9092"' in html and 'value="svc-dash"' in html
    assert PASSWORD not in html and 'id="cluster-secrets-again"' in html
    assert not Cluster.objects.exists()

    # SASL without a password: the model's rule, beside the form.
    no_password = client.post("/clusters/", {**typed, "name": "prod", "admin_endpoints": "",
                                             "sasl_password": ""})  # fmt: skip
    assert no_password.status_code == 400
    assert "needs the SASL user&#x27;s password" in no_password.content.decode()

    # A .properties naming a file on the server is refused (a form never reads files).
    properties = "security.protocol=SSL\nssl.truststore.location=/etc/passwd\n"
    by_file = client.post("/clusters/", {**FORM, "name": "prod", "client_properties": properties})
    assert by_file.status_code == 400
    assert "does not read files" in field_error(by_file.content.decode(), "client_properties")
    assert "root:" not in by_file.content.decode() and not Cluster.objects.exists()

    # Viewers cannot register.
    viewer = Client()
    viewer.force_login(make_user("vic", "viewer"))
    assert viewer.post("/clusters/", {**FORM, "name": "prod"}).status_code == 403
    assert viewer.get("/clusters/").status_code == 200


def test_register_edit_and_remove_keep_secrets_sealed():
    client = operator_client()
    form = {**FORM, "name": "prod", "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "svc-dash",
            "sasl_password": PASSWORD, "admin_endpoints": '{"1": "http://10.0.0.1:9644"}'}  # fmt: skip
    created = client.post("/clusters/", form)
    assert created.status_code == 302 and created.url == "/clusters/prod/"
    cluster = Cluster.objects.get(name="prod")
    assert cluster.sasl_password_sealed and PASSWORD not in cluster.sasl_password_sealed
    assert unseal(cluster.sasl_password_sealed) == PASSWORD
    assert cluster.admin_endpoints == {"1": "http://10.0.0.1:9644"}

    for url in ("/clusters/", "/clusters/prod/settings/"):
        html = client.get(url).content.decode()
        assert PASSWORD not in html and cluster.sasl_password_sealed not in html
    settings_page = client.get("/clusters/prod/settings/").content.decode()
    assert "stored (never shown): leave empty to keep it" in settings_page
    assert 'value="svc-dash"' in settings_page

    # An edit without the password keeps the stored one; a new one replaces it.
    edited = client.post("/clusters/prod/settings/", {**form, "sasl_password": "",
                                                       "bootstrap_servers": "10.0.0.2:9092"})  # fmt: skip
    assert edited.status_code == 302
    cluster.refresh_from_db()
    assert cluster.bootstrap_servers == "10.0.0.2:9092"
    assert unseal(cluster.sasl_password_sealed) == PASSWORD
    client.post("/clusters/prod/settings/", {**form, "sasl_password": "new-pw-123"})
    cluster.refresh_from_db()
    assert unseal(cluster.sasl_password_sealed) == "new-pw-123"

    # Back to PLAINTEXT: the SASL settings it no longer uses are cleared.
    client.post("/clusters/prod/settings/", {**form, "security_protocol": "PLAINTEXT"})
    cluster.refresh_from_db()
    assert (cluster.sasl_username, cluster.sasl_password_sealed) == ("", "")

    # A rename refused for a name already taken, beside the field.
    client.post("/clusters/", {**FORM, "name": "staging"})
    clash = client.post("/clusters/prod/settings/", {**FORM, "name": "staging"})
    assert clash.status_code == 400 and "already exists" in field_error(
        clash.content.decode(), "name"
    )

    # Removing asks for the name.
    wrong = client.post("/clusters/prod/settings/delete", {"confirm": "staging"})
    assert (
        wrong.status_code == 400 and "type the cluster&#x27;s name, prod" in wrong.content.decode()
    )
    assert client.post("/clusters/prod/settings/delete", {"confirm": "prod"}).status_code == 302
    assert list(Cluster.objects.values_list("name", flat=True)) == ["staging"]
    actions = list(AuditLog.objects.order_by("timestamp").values_list("action", "target"))
    assert actions[0] == ("cluster.register", "prod") and actions[-1] == ("cluster.remove", "prod")
    assert not any(PASSWORD in str(a.details) for a in AuditLog.objects.all())


def test_switch_keeps_the_page():
    client = operator_client()
    for name in ("east", "west"):
        Cluster.objects.create(name=name, bootstrap_servers="127.0.0.1:1")
    assert client.get("/clusters/switch?to=west&page=topic-list").url == "/clusters/west/topics/"
    assert client.get("/clusters/switch?to=west&page=topic-page").url == "/clusters/west/"
    assert client.get("/clusters/switch?to=nowhere&page=topic-list").status_code == 404
    menu = client.get("/clusters/east/maintenance/").content.decode()
    assert '<option value="east" selected>' in menu and '<option value="west">' in menu
    assert 'name="page" value="maintenance"' in menu


@pytest.mark.django_db(transaction=False)
def test_an_operator_registers_and_switches_clusters_in_chromium(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    name = f"second-{uuid.uuid4().hex[:6]}"
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/")
    form = page.locator("#register-cluster")
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Bootstrap servers").fill("127.0.0.1:1")  # wrong at first: fixed below
    form.get_by_label("security.protocol").select_option("SASL_PLAINTEXT")
    form.get_by_label("SASL password").fill(PASSWORD)
    submit_and_reload(page, page.locator("#register-cluster-submit"))
    # Refused (no mechanism or user): the error beside the form, the name kept, no password.
    expect(page.locator("#cluster-form-error")).to_contain_text("needs a SASL mechanism")
    expect(form.get_by_label("Name", exact=True)).to_have_value(name)
    expect(form.get_by_label("SASL password")).to_have_value("")
    assert PASSWORD not in page.content()
    form.get_by_label("security.protocol").select_option("PLAINTEXT")
    submit_and_reload(page, page.locator("#register-cluster-submit"))
    assert page.url.endswith(f"/clusters/{name}/")
    expect(page.locator(".messages")).to_contain_text(f"Cluster {name} registered.")

    # Its settings: the right bootstrap servers; the overview then shows the broker.
    page.goto(f"{live_dashboard.url}/clusters/{name}/settings/")
    settings = page.locator("#cluster-settings")
    settings.get_by_label("Bootstrap servers").fill(live_dashboard.broker.bootstrap)
    submit_and_reload(page, page.locator("#cluster-settings-submit"))
    expect(page.locator(".messages")).to_contain_text(f"Cluster {name} saved.")
    page.goto(f"{live_dashboard.url}/clusters/{name}/")
    expect(page.locator("#brokers tbody tr[data-broker]").first).to_be_visible()

    # The header's menu switches cluster, keeping the page.
    page.goto(f"{live_dashboard.url}/clusters/local/topics/")
    page.select_option("#cluster-switch select[name=to]", name)
    page.click("#cluster-switch-submit")
    page.wait_for_url(f"{live_dashboard.url}/clusters/{name}/topics/")
    expect(page.locator("#cluster-switch select[name=to]")).to_have_value(name)
    page.select_option("#cluster-switch select[name=to]", "local")
    page.click("#cluster-switch-submit")
    page.wait_for_url(f"{live_dashboard.url}/clusters/local/topics/")

    # Removed again (other tests see only `local`).
    page.goto(f"{live_dashboard.url}/clusters/{name}/settings/")
    page.fill("#cluster-delete input[name=confirm]", name)
    page.click("#cluster-delete-submit")
    page.wait_for_url(f"{live_dashboard.url}/clusters/")
    expect(page.locator(f"#cluster-list tr[data-cluster='{name}']")).to_have_count(0)
