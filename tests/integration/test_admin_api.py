"""The broker's HTTP admin API and /metrics against a real broker, real ZooKeeper and
real Kafka clients: values are checked against what was produced and what is on disk."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from tests.client_reads import kafka_python_all
from tests.harness import free_port


# Helpers --------------------------------------------------------------------------------
class Admin:
    def __init__(self, url: str, token: str | None):
        self.url = url
        self.token = token

    def call(self, method: str, path: str, body=None, token: str | None = "default", raw=None):
        headers = {}
        token = self.token if token == "default" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, content_type, payload = (
                    response.status,
                    response.headers["Content-Type"],
                    response.read(),
                )
        except urllib.error.HTTPError as exc:
            status, content_type, payload = exc.code, exc.headers["Content-Type"], exc.read()
        if content_type.startswith("application/json"):
            return status, json.loads(payload)
        return status, payload.decode()

    def get(self, path: str, **kw):
        return self.call("GET", path, **kw)

    def post(self, path: str, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def ok(self, method: str, path: str, body=None):
        status, payload = self.call(method, path, body)
        assert status == 200, (status, payload)
        return payload


def registration(broker) -> dict:
    client = KazooClient(hosts=broker.props["zookeeper.connect"])
    client.start(timeout=15)
    try:
        data, _ = client.get(f"/brokers/ids/{broker.broker_id}")
    finally:
        client.stop()
        client.close()
    return json.loads(data)


def admin_for(broker) -> Admin:
    """Found the way the platform finds it: the URL in ZooKeeper, the token file."""
    url = registration(broker)["admin_endpoint"]
    token_file = Path(broker.props["log.dirs"]) / "admin.token"
    return Admin(url, token_file.read_text().strip())


def wait_cleaner_done_with(broker, topic: str, timeout: float = 30) -> None:
    """After `topic` stopped being compacted (cleanup.policy changed): until the broker's
    log of partition 0 has the new policy and no cleaner pass that began before that is
    still running (such a pass would change the log after the caller reads it)."""
    admin = admin_for(broker)
    deadline = time.monotonic() + timeout
    while admin.get(f"/v1/cleaner/{topic}/0")[0] != 400:  # 400: not compacted any more
        assert time.monotonic() < deadline, "the broker never applied the new cleanup.policy"
        time.sleep(0.1)
    passes = admin.ok("GET", "/v1/cleaner")["thread"]["passes"]
    while True:
        cleaner = admin.ok("GET", "/v1/cleaner")
        if cleaner["thread"]["passes"] > passes and f"{topic}-0" not in cleaner["in_progress"]:
            return
        assert time.monotonic() < deadline, f"the cleaner is still busy: {cleaner}"
        time.sleep(0.1)


def create_topic(broker, name, partitions=1, **configs):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(15)


def produce(broker, topic, records, partition=0):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=1)
    for key, value in records:
        producer.send(topic, key=key, value=value, partition=partition)
    producer.flush()
    producer.close()


def consume_all(broker, topic):
    return kafka_python_all(broker.bootstrap, topic)


def log_files(broker, topic, partition=0) -> list[Path]:
    directory = Path(broker.props["log.dirs"]) / f"{topic}-{partition}"
    return sorted(directory.glob("*.log"))


def metric_samples(text: str) -> dict:
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


# Discovery and auth -------------------------------------------------------------------------
def test_admin_endpoint_in_zookeeper_and_token_file(make_broker):
    broker = make_broker().start()
    data = registration(broker)
    assert data["admin_endpoint"].startswith("http://127.0.0.1:")
    assert data["endpoints"] == [  # Kafka's keys intact
        f"PLAINTEXT://127.0.0.1:{broker.port}",
        f"INTERNAL://127.0.0.1:{broker.internal_port}",
    ]
    token_file = Path(broker.props["log.dirs"]) / "admin.token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    assert data["admin_endpoint"] in broker.output and str(token_file) in broker.output

    admin = admin_for(broker)
    health = admin.get("/v1/health", token=None)
    assert health == (
        200,
        {
            "status": "ok",
            "broker_id": 1,
            "started": True,
            "zookeeper_connected": True,
            "offline_partitions": 0,
        },
    )
    brokers = admin.ok("GET", "/v1/brokers")
    (me,) = brokers["brokers"]
    assert me["broker_id"] == 1 and me["is_self"] and me["is_controller"]
    assert brokers["controller_id"] == 1 and brokers["cluster_id"]
    assert me["admin_endpoint"] == data["admin_endpoint"]
    assert me["listeners"] == [
        {
            "name": "PLAINTEXT",
            "security_protocol": "PLAINTEXT",
            "host": "127.0.0.1",
            "port": broker.port,
        },
        {
            "name": "INTERNAL",
            "security_protocol": "PLAINTEXT",
            "host": "127.0.0.1",
            "port": broker.internal_port,
        },
    ]
    assert me["uptime_ms"] >= 0 and me["version"]

    # The token survives a restart (the platform keeps the one it stored).
    token = admin.token
    assert broker.terminate() == 0
    broker.start()
    assert admin_for(broker).token == token


def test_token_is_required(make_broker):
    broker = make_broker().start()
    admin = admin_for(broker)
    for path in ("/v1/partitions", "/v1/brokers", "/v1/cleaner", "/v1/nowhere"):
        for token in (None, "wrong", ""):
            status, body = admin.get(path, token=token)
            assert status == 401 and "token" in body["error"]["message"], (path, token)
    status, body = admin.post("/v1/maintenance/retention", {}, token="wrong")
    assert status == 401
    status, _ = admin.call("GET", "/v1/brokers", token=None)
    assert status == 401
    assert admin.get("/metrics", token=None)[0] == 200
    assert admin.get("/v1/health", token=None)[0] == 200


def test_configured_listener_and_token(make_broker):
    port = free_port()
    broker = make_broker(admin_listener=f"127.0.0.1:{port}", admin_token="s3cret-token").start()
    assert registration(broker)["admin_endpoint"] == f"http://127.0.0.1:{port}"
    assert not (Path(broker.props["log.dirs"]) / "admin.token").exists()
    admin = Admin(f"http://127.0.0.1:{port}", "s3cret-token")
    assert admin.get("/v1/brokers")[0] == 200
    assert admin.get("/v1/brokers", token="s3cret-toke")[0] == 401
    # Kafka clients see the config, never the token.
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = client.describe_configs([resource])[resource].result(15)
    token_entry = entries["admin.token"]
    assert token_entry.is_sensitive and token_entry.value is None
    assert entries["admin.listener"].value == f"127.0.0.1:{port}"


def test_invalid_admin_listener_is_refused(make_broker):
    broker = make_broker(admin_listener="localhost")
    with pytest.raises(RuntimeError, match="admin.listener"):
        broker.start()


# Partitions and segments --------------------------------------------------------------------
def test_partitions_and_segments_match_what_was_produced(make_broker, topic_name):
    broker = make_broker().start()
    create_topic(broker, topic_name, 2, **{"segment.bytes": "4096", "index.interval.bytes": "256"})
    before_ms = int(time.time() * 1000)
    produce(broker, topic_name, [(b"k%d" % i, b"v" * 100 + b"%d" % i) for i in range(150)])
    after_ms = int(time.time() * 1000)
    admin = admin_for(broker)

    everything = admin.ok("GET", "/v1/partitions")
    mine = [p for p in everything["partitions"] if p["topic"] == topic_name]
    assert [p["partition"] for p in mine] == [0, 1]
    by_topic = admin.ok("GET", f"/v1/partitions/{topic_name}")
    assert by_topic["partitions"] == mine

    files = log_files(broker, topic_name)
    p0 = admin.ok("GET", f"/v1/partitions/{topic_name}/0")
    assert p0["status"] == "online" and p0["is_leader"]
    assert (p0["leader"], p0["leader_epoch"], p0["isr"]) == (1, 0, [1])
    assert (p0["high_watermark"], p0["log_end_offset"], p0["log_start_offset"]) == (150, 150, 0)
    assert p0["size_bytes"] == sum(f.stat().st_size for f in files)
    assert p0["segment_count"] == len(files) > 3
    assert p0["under_replicated"] is False
    assert p0["replicas"] == [
        {
            "broker_id": 1,
            "is_leader": True,
            "local": True,
            "in_sync": True,
            "log_end_offset": 150,
            "lag": 0,
            "last_caught_up_ms": None,
        }
    ]
    p1 = admin.ok("GET", f"/v1/partitions/{topic_name}/1")
    assert (p1["high_watermark"], p1["log_end_offset"], p1["segment_count"]) == (0, 0, 1)

    view = admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments")
    segments = view["segments"]
    assert [s["file"] for s in segments] == [f.name for f in files]
    assert [s["size_bytes"] for s in segments] == [f.stat().st_size for f in files]
    assert [s["base_offset"] for s in segments] == [int(f.stem) for f in files]
    assert segments[0]["base_offset"] == 0 and segments[-1]["last_offset"] == 149
    for previous, following in zip(segments, segments[1:], strict=False):
        assert previous["next_offset"] == following["base_offset"]
        assert previous["last_offset"] == following["base_offset"] - 1
    assert [s["is_active"] for s in segments] == [False] * (len(segments) - 1) + [True]
    for segment in segments:
        assert before_ms - 1000 <= segment["first_timestamp"] <= segment["max_timestamp"]
        assert segment["max_timestamp"] <= after_ms + 1000
        # ~120-byte batches, an entry every 256 bytes: every full segment has some.
        assert segment["offset_index"]["entries"] >= 1
        assert segment["time_index"]["entries"] >= 1
        assert segment["created_ms"] > 0 and segment["modified_ms"] > 0
        retention = segment["retention"]
        assert retention["deletable_now"] is False and retention["reasons"] == []
        assert retention["retention_ms"]["applies"] is True
        assert retention["retention_ms"]["eligible_at_ms"] == (
            segment["max_timestamp"] + 604800000 + 1
        )
        assert retention["retention_bytes"]["applies"] is False
    assert segments[-1]["retention"]["blocked_by"] is None
    assert view["size_bytes"] == p0["size_bytes"]
    assert view["config"]["segment.bytes"] == 4096
    assert "index_entries" not in segments[0]

    detailed = admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments?entries=true&limit=2")
    first = detailed["segments"][0]
    entries = first["index_entries"]
    assert entries["limit"] == 2 and len(entries["offset_index"]) <= 2
    assert entries["truncated"] == (first["offset_index"]["entries"] > 2)
    for entry in entries["offset_index"]:
        assert first["base_offset"] <= entry["offset"] <= first["last_offset"]
        assert 0 < entry["position"] < first["size_bytes"]
    for entry in entries["time_index"]:
        assert first["first_timestamp"] <= entry["timestamp"] <= first["max_timestamp"]


def test_bad_requests_get_4xx_with_a_message(make_broker, topic_name):
    broker = make_broker().start()
    create_topic(broker, topic_name, 1)
    admin = admin_for(broker)
    cases = [
        ("GET", f"/v1/partitions/{topic_name}/abc", None, 400),
        ("GET", f"/v1/partitions/{topic_name}/-1", None, 400),
        ("GET", f"/v1/partitions/{topic_name}/%E2%91%A0", None, 400),  # a Unicode digit
        ("GET", f"/v1/partitions/{topic_name}/99999999999999999999", None, 400),
        ("GET", f"/v1/partitions/{topic_name}/7", None, 404),
        ("GET", "/v1/partitions/no-such-topic", None, 404),
        ("GET", "/v1/partitions/no-such-topic/0/segments", None, 404),
        ("GET", f"/v1/partitions/{topic_name}/0/segments?entries=maybe", None, 400),
        ("GET", f"/v1/partitions/{topic_name}/0/segments?limit=0", None, 400),
        ("GET", f"/v1/partitions/{topic_name}/0/segments?limit=x", None, 400),
        ("GET", f"/v1/cleaner/{topic_name}/0", None, 400),  # not compacted
        ("GET", "/v1/cleaner/no-such-topic/0", None, 404),
        ("GET", "/v1/no-such-route", None, 404),
        ("POST", "/v1/partitions", {}, 405),
        ("GET", "/v1/maintenance/retention", None, 405),
        ("POST", "/v1/maintenance/retention", b"{not json", 400),
        ("POST", "/v1/maintenance/retention", b"\xff\xfe", 400),
        ("POST", "/v1/maintenance/retention", [1, 2], 400),
        ("POST", "/v1/maintenance/retention", {"partition": 0}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": 5}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": ""}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": topic_name, "partition": "0"}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": topic_name, "partition": True}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": topic_name, "partition": -1}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": topic_name, "extra": 1}, 400),
        ("POST", "/v1/maintenance/retention", {"topic": "no-such-topic"}, 404),
        ("POST", "/v1/maintenance/retention", {"topic": topic_name, "partition": 3}, 404),
        ("POST", "/v1/maintenance/compaction", {}, 400),
        ("POST", "/v1/maintenance/compaction", {"topic": topic_name}, 400),  # not compacted
        ("POST", "/v1/maintenance/compaction", {"topic": "no-such-topic"}, 404),
        ("POST", "/v1/maintenance/compaction", b"x" * (128 << 10), 413),
    ]
    for method, path, body, expected in cases:
        raw = body if isinstance(body, bytes) else None
        status, payload = admin.call(method, path, None if raw else body, raw=raw)
        assert status == expected, (method, path, body, status, payload)
        assert payload["error"]["code"] == expected and payload["error"]["message"]
    # The broker is unharmed.
    assert admin.get("/v1/health", token=None)[0] == 200
    assert "Internal" not in broker.output and "Traceback" not in broker.output


# Maintenance on demand ----------------------------------------------------------------------
def test_retention_on_demand_deletes_segments(make_broker, topic_name):
    broker = make_broker().start()
    create_topic(broker, topic_name, 1, **{"segment.bytes": "2048", "retention.bytes": "4096"})
    produce(broker, topic_name, [(None, b"x" * 200) for _ in range(100)])
    admin = admin_for(broker)
    path = f"/v1/partitions/{topic_name}/0/segments"

    before = admin.ok("GET", path)
    count = len(before["segments"])
    forecast = [s for s in before["segments"] if s["retention"]["deletable_now"]]
    assert count > 4 and forecast, before
    assert all(s["retention"]["reasons"] == ["retention.bytes"] for s in forecast)
    # The forecast deleted nothing.
    assert len(log_files(broker, topic_name)) == count

    report = admin.ok("POST", "/v1/maintenance/retention", {"topic": topic_name, "partition": 0})
    (only,) = report["reports"]
    assert only["segments_deleted"] == len(forecast) == report["segments_deleted"]
    assert only["bytes_freed"] == sum(s["size_bytes"] for s in forecast) == report["bytes_freed"]
    assert only["reasons"] == {"retention.bytes": len(forecast)}
    new_start = before["segments"][len(forecast)]["base_offset"]
    assert only["log_start_offset"] == new_start

    after = admin.ok("GET", path)
    assert len(after["segments"]) == count - len(forecast)
    assert after["log_start_offset"] == new_start and after["size_bytes"] <= 4096 + 2048
    assert not any(s["retention"]["deletable_now"] for s in after["segments"])
    partition = admin.ok("GET", f"/v1/partitions/{topic_name}/0")
    assert partition["log_start_offset"] == new_start
    assert partition["segment_count"] == count - len(forecast)
    # A Kafka client sees the new log start.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    tp = TopicPartition(topic_name, 0)
    assert consumer.beginning_offsets([tp])[tp] == new_start
    consumer.close()

    # Nothing left to do: a second run reports nothing; all topics at once works too.
    again = admin.ok("POST", "/v1/maintenance/retention", {})
    assert again["segments_deleted"] == 0
    assert any(r["topic"] == topic_name for r in again["reports"])


def test_time_retention_forecast_and_run(make_broker, topic_name):
    broker = make_broker().start()
    create_topic(broker, topic_name, 1, **{"segment.bytes": "1024", "retention.ms": "3600000"})
    old_ms = int(time.time() * 1000) - 2 * 3600000  # CreateTime two hours ago
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=1)
    for i in range(30):
        producer.send(topic_name, b"old" * 50, partition=0, timestamp_ms=old_ms + i)
    producer.flush()
    producer.close()
    admin = admin_for(broker)

    before = admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments")["segments"]
    assert len(before) > 2
    for segment in before:
        retention = segment["retention"]
        # Everything is older than retention.ms, the active segment too (it is below the HW).
        assert retention["deletable_now"] and retention["reasons"] == ["retention.ms"]
        assert retention["retention_ms"]["eligible_at_ms"] <= old_ms + 29 + 3600000 + 1
    result = admin.ok("POST", "/v1/maintenance/retention", {"topic": topic_name})
    assert result["segments_deleted"] == len(before)
    assert result["reports"][0]["log_start_offset"] == 30
    after = admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments")
    # The log rolled a new empty active segment, which retention never takes.
    assert [s["base_offset"] for s in after["segments"]] == [30]
    assert after["segments"][0]["retention"]["blocked_by"] == "empty active segment"
    assert after["log_start_offset"] == after["log_end_offset"] == 30


def test_compaction_on_demand_reduces_records(make_broker, topic_name):
    broker = make_broker().start()
    # A dirty ratio above 1 never happens: the cleaner thread leaves this log to us.
    create_topic(
        broker,
        topic_name,
        1,
        **{
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "1.0",
        },
    )
    keys = [b"key-%d" % (i % 10) for i in range(300)]
    produce(broker, topic_name, [(k, b"value-%d" % i) for i, k in enumerate(keys)])
    admin = admin_for(broker)
    before = len(consume_all(broker, topic_name))
    assert before == 300

    segments = admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments")["segments"]
    sections = [s["compaction"]["section"] for s in segments]
    assert sections[-1] == "uncleanable" and set(sections[:-1]) == {"dirty"}
    dirty = admin.ok("GET", f"/v1/cleaner/{topic_name}/0")
    assert dirty["dirty_bytes"] > 0 and dirty["clean_bytes"] == 0 and dirty["last_report"] is None
    assert 0 < dirty["dirty_ratio"] <= 1

    result = admin.ok("POST", "/v1/maintenance/compaction", {"topic": topic_name})
    (report,) = result["reports"]
    assert report["topic"] == topic_name and report["partition"] == 0
    assert report["records_read"] > report["records_kept"] > 0
    assert report["records_removed"] == report["records_read"] - report["records_kept"]
    assert result["records_removed"] == report["records_removed"] > 0
    assert report["bytes_after"] < report["bytes_before"]

    messages = consume_all(broker, topic_name)
    assert len(messages) == before - report["records_removed"]
    latest = {}
    for i, key in enumerate(keys):
        latest[key] = b"value-%d" % i
    assert {m.key: m.value for m in messages} == latest  # the last value of each key stays

    cleaned = admin.ok("GET", f"/v1/cleaner/{topic_name}/0")
    assert cleaned["last_report"]["records_removed"] == report["records_removed"]
    assert cleaned["clean_bytes"] > 0 and cleaned["last_run_ms"] > 0
    overview = admin.ok("GET", "/v1/cleaner")
    assert overview["enabled"] is True and overview["thread"]["alive"] is True
    assert [log["topic"] for log in overview["logs"]] == [topic_name]
    assert overview["last_run_ms"] >= cleaned["last_run_ms"]
    sections = [
        s["compaction"]["section"]
        for s in admin.ok("GET", f"/v1/partitions/{topic_name}/0/segments")["segments"]
    ]
    assert sections[0] == "clean" and sections[-1] == "uncleanable"


# Metrics --------------------------------------------------------------------------------------
def test_metrics_parse_and_count(make_broker, topic_name):
    broker = make_broker().start()
    create_topic(broker, topic_name, 1)
    produce(broker, topic_name, [(None, b"m%d" % i) for i in range(20)])
    admin = admin_for(broker)

    status, text = admin.get("/metrics", token=None)
    assert status == 200
    first = metric_samples(text)
    produced = first[("brokerd_requests_total", (("api", "produce"), ("outcome", "ok")))]
    assert produced >= 20  # batch_size=1: a request per record
    assert first[("brokerd_request_duration_seconds_count", (("api", "produce"),))] == produced
    assert first[("brokerd_network_request_bytes_total", (("api", "produce"),))] > 20 * 60
    assert first[("brokerd_network_response_bytes_total", (("api", "produce"),))] > 0
    partition = (("partition", "0"), ("topic", topic_name))
    assert first[("brokerd_partition_log_end_offset", partition)] == 20
    assert first[("brokerd_partition_high_watermark", partition)] == 20
    assert first[("brokerd_partition_log_start_offset", partition)] == 0
    size = sum(f.stat().st_size for f in log_files(broker, topic_name))
    assert first[("brokerd_partition_size_bytes", partition)] == size
    for name in (
        "brokerd_under_replicated_partitions",
        "brokerd_offline_partitions",
        "brokerd_isr_shrinks_total",
        "brokerd_isr_expands_total",
        "brokerd_fetch_purgatory_size",
    ):
        assert first[(name, ())] == 0, name
    assert first[("brokerd_leader_partitions", ())] >= 1
    assert first[("brokerd_controller_active", ())] == 1
    assert ("brokerd_log_cleaner_passes_total", ()) in first

    # More traffic: the counters move.
    produce(broker, topic_name, [(None, b"more")])
    admin.get("/v1/partitions")
    second = metric_samples(admin.get("/metrics", token=None)[1])
    assert second[("brokerd_requests_total", (("api", "produce"), ("outcome", "ok")))] > produced
    assert second[("brokerd_partition_log_end_offset", partition)] == 21
    route = (("route", "/v1/partitions"), ("status", "200"))
    assert second[("brokerd_admin_http_requests_total", route)] >= 1

    # A long poll parks in the fetch purgatory while it waits.
    stop = threading.Event()

    def long_poll():
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap, group_id=None, fetch_max_wait_ms=5000
        )
        tp = TopicPartition(topic_name, 0)
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        while not stop.is_set():
            consumer.poll(timeout_ms=500)
        consumer.close()

    poller = threading.Thread(target=long_poll, daemon=True)
    poller.start()
    try:
        deadline = time.monotonic() + 20
        parked = 0
        while time.monotonic() < deadline and not parked:
            parked = metric_samples(admin.get("/metrics", token=None)[1])[
                ("brokerd_fetch_purgatory_size", ())
            ]
            time.sleep(0.1)
        assert parked >= 1
    finally:
        stop.set()
        poller.join(15)
