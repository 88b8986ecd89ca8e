"""Znode paths and payloads against the JSON Kafka 2.x writes and reads (its ZkData).

The expected documents are Kafka's own formats, so a Kafka broker or tool sharing the
ZooKeeper ensemble reads what this broker writes and the other way round."""

from __future__ import annotations

import json
import uuid

from brokerd.config import Endpoint
from brokerd.coordination import zk_data
from brokerd.coordination.zk_data import BrokerInfo, PartitionState


def _as_kafka_reads(payload: dict) -> dict:
    """Through the bytes that go to ZooKeeper and back."""
    return json.loads(zk_data.encode(payload))


def test_paths_are_kafkas():
    assert zk_data.broker_path(3) == "/brokers/ids/3"
    assert zk_data.topic_path("t") == "/brokers/topics/t"
    assert zk_data.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert zk_data.topic_config_path("t") == "/config/topics/t"
    assert zk_data.broker_config_path("<default>") == "/config/brokers/<default>"
    assert zk_data.delete_topic_path("t") == "/admin/delete_topics/t"
    assert zk_data.ISR_CHANGE_PREFIX == "/isr_change_notification/isr_change_"
    assert f"{zk_data.CONFIG_CHANGES}/{zk_data.CONFIG_CHANGE_PREFIX}" == (
        "/config/changes/config_change_"
    )
    for path in (zk_data.BROKER_IDS, zk_data.DELETE_TOPICS, zk_data.LATEST_PRODUCER_ID_BLOCK):
        assert path in zk_data.PERSISTENT_PATHS


def test_encoding_is_compact_json_and_empty_nodes_decode_to_none():
    assert zk_data.encode({"a": [1, 2], "b": "x"}) == b'{"a":[1,2],"b":"x"}'
    assert zk_data.decode(zk_data.encode({"b": "é"})) == {"b": "é"}
    assert zk_data.decode('{"b":"é"}'.encode()) == {"b": "é"}  # Kafka writes raw UTF-8
    assert zk_data.decode(b"") is None
    assert zk_data.decode(None) is None


def test_partition_state_reads_kafkas_document_and_writes_it_back():
    kafka = {"controller_epoch": 4, "leader": 1, "version": 1, "leader_epoch": 7, "isr": [1, 2]}
    state = PartitionState.from_json(kafka, zk_version=12)
    assert state == PartitionState(
        leader=1, leader_epoch=7, isr=[1, 2], controller_epoch=4, zk_version=12
    )
    assert _as_kafka_reads(state.to_json()) == kafka


def test_broker_registration_is_version_5_with_the_plaintext_host_on_top():
    endpoints = [
        Endpoint("INTERNAL", "SASL_SSL", "10.0.0.1", 9094),
        Endpoint("PLAINTEXT", "PLAINTEXT", "broker1", 9092),
    ]
    data = _as_kafka_reads(zk_data.broker_registration(endpoints, "r1", timestamp_ms=1700000000000))
    assert data == {
        "features": {},
        "listener_security_protocol_map": {"INTERNAL": "SASL_SSL", "PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["INTERNAL://10.0.0.1:9094", "PLAINTEXT://broker1:9092"],
        "jmx_port": -1,
        "host": "broker1",
        "port": 9092,
        "timestamp": "1700000000000",
        "version": 5,
        "rack": "r1",
    }
    # Without a PLAINTEXT listener Kafka writes a null host and port -1; no rack, no key.
    only_tls = zk_data.broker_registration([Endpoint("SSL", "SSL", "h", 1)], None, 0)
    assert (only_tls["host"], only_tls["port"]) == (None, -1)
    assert "rack" not in only_tls
    assert "admin_endpoint" not in only_tls
    assert zk_data.broker_registration([], None, 0, admin_endpoint="http://h:1")[
        "admin_endpoint"
    ] == ("http://h:1")


def test_broker_info_reads_what_kafka_registers():
    kafka_v4 = {
        "listener_security_protocol_map": {"CLIENT": "SSL", "REPLICATION": "PLAINTEXT"},
        "endpoints": ["CLIENT://host1:9092", "REPLICATION://[::1]:9093"],
        "jmx_port": 9999,
        "host": None,
        "port": -1,
        "timestamp": "2233345666",
        "version": 4,
        "rack": "dc1",
    }
    info = BrokerInfo.from_json(5, kafka_v4)
    assert info == BrokerInfo(
        5,
        (
            Endpoint("CLIENT", "SSL", "host1", 9092),
            Endpoint("REPLICATION", "PLAINTEXT", "::1", 9093),
        ),
        "dc1",
    )
    assert info.endpoint("REPLICATION").port == 9093
    assert info.endpoint("MISSING") is None
    # Version 1: host and port only, PLAINTEXT implied.
    v1 = BrokerInfo.from_json(1, {"version": 1, "host": "old", "port": 9092, "jmx_port": -1})
    assert v1.endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", "old", 9092),)
    assert v1.rack is None


def test_broker_registration_round_trips_through_broker_info():
    endpoints = (Endpoint("PLAINTEXT", "PLAINTEXT", "a", 1), Endpoint("SSL", "SSL", "b", 2))
    registration = zk_data.broker_registration(list(endpoints), "r2", 0)
    assert BrokerInfo.from_json(7, _as_kafka_reads(registration)) == BrokerInfo(7, endpoints, "r2")


def test_topic_assignment_is_version_3_with_the_topic_id():
    data = _as_kafka_reads(zk_data.topic_assignment("AAAAAAAAAAAAAAAAAAAAAA", {1: [2, 3], 0: [3]}))
    assert data == {
        "version": 3,
        "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
        "partitions": {"0": [3], "1": [2, 3]},
        "adding_replicas": {},
        "removing_replicas": {},
    }


def test_controller_znodes():
    data = _as_kafka_reads(zk_data.controller_registration(2, 1700000000000))
    assert data == {"version": 1, "brokerid": 2, "timestamp": "1700000000000"}
    assert zk_data.controller_id_of(data) == 2
    assert zk_data.controller_id_of(None) == -1
    assert zk_data.controller_id_of({"version": 1}) == -1
    # /controller_epoch is a bare number, as Kafka's ControllerEpochZNode writes it.
    assert zk_data.encode_controller_epoch(17) == b"17"
    assert zk_data.decode_controller_epoch(b"17") == 17
    assert zk_data.decode_controller_epoch(b"") == 0


def test_cluster_id_config_and_producer_id_documents():
    assert _as_kafka_reads(zk_data.cluster_id_payload("abc")) == {"version": "1", "id": "abc"}
    assert _as_kafka_reads(zk_data.entity_config({"retention.ms": "1"})) == {
        "version": 1,
        "config": {"retention.ms": "1"},
    }
    assert _as_kafka_reads(zk_data.config_change_notification("topics/t")) == {
        "version": 2,
        "entity_path": "topics/t",
    }
    assert _as_kafka_reads(zk_data.producer_id_block(3, 1000, 1999)) == {
        "version": 1,
        "broker": 3,
        "block_start": "1000",
        "block_end": "1999",
    }


def test_isr_change_notification_round_trip_and_malformed_entries():
    payload = zk_data.isr_change_notification([("t", 0), ("u", 3)])
    assert _as_kafka_reads(payload) == {
        "version": 1,
        "partitions": [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 3}],
    }
    assert zk_data.parse_isr_change_notification(payload) == {("t", 0), ("u", 3)}
    kafka = {"version": 1, "partitions": [{"topic": "t", "partition": 1}, {"topic": "t"}]}
    assert zk_data.parse_isr_change_notification(kafka) == {("t", 1)}
    for junk in (None, [], {"partitions": 5}, {"partitions": [None, "x"]}):
        assert zk_data.parse_isr_change_notification(junk) == set()


def test_legacy_reassignment_document():
    entries = {("t", 0): [1, 2], ("u", 3): [3]}
    payload = zk_data.reassign_partitions_payload(entries)
    assert _as_kafka_reads(payload) == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 2]},
            {"topic": "u", "partition": 3, "replicas": [3]},
        ],
    }
    assert zk_data.parse_reassign_partitions(payload) == entries
    bad = {"partitions": [{"topic": "t", "partition": "x", "replicas": [1]}]}
    assert zk_data.parse_reassign_partitions(bad) == {}


def test_kafka_uuids():
    text = zk_data.new_kafka_uuid()
    assert len(text) == 22 and "=" not in text and not text.startswith("-")
    value = zk_data.kafka_uuid_to_uuid(text)
    assert zk_data.uuid_to_kafka(value) == text
    # Kafka's Uuid.toString of the all-zero id.
    assert zk_data.uuid_to_kafka(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
