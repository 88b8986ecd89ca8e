"""The Spark loads page's launch form (Django's test client): exports and ingests go through
the REST API's own validation, a refused launch shows the page again (HTTP 400) with each error
at its field and the values kept, an accepted one is queued on Celery (real Redis)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from .conftest import make_user
from .test_spark_api import celery_queue, make_topic, queued_load_ids  # noqa: F401 - fixture

LAUNCH = "/clusters/local/spark-loads/launch"


@pytest.fixture
def operator_browser(client, db):
    client.force_login(make_user("opal", "operator"))
    return client


class LaunchFormPage(HTMLParser):
    """The launch form's error list (field -> messages) and its inputs' values."""

    def __init__(self, html: str):
        super().__init__()
        self.errors: dict[str, list[str]] = {}
        self.values: dict[str, str] = {}
        self._in_errors, self._field = False, None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id") == "launch-errors":
            self._in_errors = True
        elif self._in_errors and tag == "li":
            self._field = attrs.get("data-field", "")
            self.errors.setdefault(self._field, []).append("")
        elif tag == "input" and attrs.get("name"):
            self.values[attrs["name"]] = attrs.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "ul":
            self._in_errors = False
        elif tag == "li":
            self._field = None

    def handle_data(self, data):
        if self._field is not None:
            self.errors[self._field][-1] += data


def test_refused_launches_show_their_errors_on_the_page(
    kafka_cluster,
    broker,
    operator_browser,
    celery_queue,  # noqa: F811
    topic_name,
    tmp_path,
):
    from dashboard.core.models import SparkLoad

    topic = make_topic(broker, topic_name)
    (tmp_path / "data").mkdir()
    cases = [
        ({"kind": "ingest", "topic": topic, "input_path": "in/missing.csv"}, "input_path",
         "does not exist under the data root"),
        ({"kind": "ingest", "topic": topic}, "input_path", "an ingest load needs it"),
        ({"kind": "ingest", "topic": topic, "input_path": "../../etc/passwd"}, "input_path",
         "must be inside the data root"),
        ({"kind": "export", "topic": topic, "output_path": "/etc"}, "output_path",
         "must be inside the data root"),
        ({"kind": "export", "topic": topic, "output_path": "x", "mode": "from_timestamp"},
         "from_time", "needs the time"),
        ({"kind": "export", "topic": topic, "output_path": "x", "records_per_task": "0"},
         "records_per_task", "greater than or equal to 1"),
        ({"kind": "export", "topic": "no-such-topic", "output_path": "x"}, "topic", "not found"),
        ({"kind": "sideways", "topic": topic}, "kind", "not one of the available choices"),
    ]  # fmt: skip
    (tmp_path / "data" / "in").mkdir()
    (tmp_path / "data" / "in" / "x.csv").write_text("id,payload\n1,a\n")
    cases.append(
        (
            {"kind": "ingest", "topic": topic, "input_path": "in/x.csv", "key_column": "1d"},
            "key_column",
            "does not match",
        )  # fmt: skip
    )
    for form, field, message in cases:
        response = operator_browser.post(LAUNCH, form)
        assert response.status_code == 400, form
        page = LaunchFormPage(response.content.decode())
        assert field in page.errors and message in " ".join(page.errors[field]), (form, page)
        for name, value in form.items():  # what was entered is still there
            if name in ("input_path", "output_path"):
                assert page.values[name] == value
    assert not SparkLoad.objects.exists() and queued_load_ids(celery_queue) == []


def test_an_ingest_from_the_page_is_queued_with_its_columns(
    kafka_cluster,
    broker,
    operator_browser,
    celery_queue,  # noqa: F811
    topic_name,
    tmp_path,
):
    from dashboard.core.models import AuditLog, SparkLoad
    from tasks.spark import job_arguments

    topic = make_topic(broker, topic_name)
    source = tmp_path / "data" / "in" / "orders.csv"
    source.parent.mkdir(parents=True)
    source.write_text("id,payload\n1,a\n")
    response = operator_browser.post(
        LAUNCH,
        {
            "kind": "ingest",
            "topic": topic,
            "input_path": "in/orders.csv",
            "input_format": "csv",
            "key_column": "id",
            "value_column": "payload",
        },  # fmt: skip
    )
    load = SparkLoad.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{load.id}/")
    assert (load.direction, load.topic, load.output) == ("import", topic, str(source))
    assert load.range == {"format": "csv", "key_column": "id", "value_column": "payload"}
    assert queued_load_ids(celery_queue) == [load.id]
    job, arguments = job_arguments(load)
    assert job == "ingest" and arguments[arguments.index("--input") + 1] == str(source)
    audit = AuditLog.objects.get(action="spark_load.launch")
    assert audit.details["load_type"] == "ingest" and audit.succeeded
