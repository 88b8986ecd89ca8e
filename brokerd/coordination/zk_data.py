"""Kafka 2.x's znodes: their paths and JSON payloads, as pure functions and values.

Paths and payloads are those Kafka writes (its ZkData), so Kafka's own tools (and a later
Kafka broker) read what this broker writes. Nothing here talks to ZooKeeper: zk_client.py
does, and its callers build paths and payloads here.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brokerd.config import Endpoint

log = logging.getLogger(__name__)

# Persistent paths Kafka creates at start-up.
PERSISTENT_PATHS = (
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/brokers/seqid",
    "/config/changes",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/admin/delete_topics",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
)

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"  # Kafka 2.x tools' legacy reassignment
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = f"{ISR_CHANGE_NOTIFICATION}/isr_change_"  # sequential children
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = f"{LOG_DIR_EVENT_NOTIFICATION}/log_dir_event_"  # sequential children
LOG_DIR_FAILURE_EVENT = 1
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DEFAULT_BROKER_ENTITY = "<default>"


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partitions_path(topic)}/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"/config/topics/{topic}"


def broker_config_path(entity: str) -> str:
    return f"/config/brokers/{entity}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


# ACLs (kafka.zk.ZkAclStore): literal patterns under /kafka-acl/<Type>/<name>, the others
# under /kafka-acl-extended/<pattern type in lower case>/<Type>/<name>; change notifications
# (sequential acl_changes_ nodes) under one path for each.
ACL_LITERAL = "/kafka-acl"
ACL_EXTENDED = "/kafka-acl-extended"
ACL_LITERAL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
ACL_PATHS = (ACL_LITERAL, ACL_EXTENDED, ACL_LITERAL_CHANGES, ACL_EXTENDED_CHANGES)


def acl_root(pattern_type_name: str) -> str:
    """The root for a pattern type (`LITERAL`, `PREFIXED`)."""
    if pattern_type_name.upper() == "LITERAL":
        return ACL_LITERAL
    return f"{ACL_EXTENDED}/{pattern_type_name.lower()}"


def acl_resource_path(pattern_type_name: str, resource_type_name: str, name: str) -> str:
    """e.g. /kafka-acl/Topic/orders, /kafka-acl-extended/prefixed/Group/app-"""
    return f"{acl_root(pattern_type_name)}/{resource_type_name}/{name}"


def acl_change_prefix(pattern_type_name: str) -> str:
    root = ACL_LITERAL_CHANGES if pattern_type_name.upper() == "LITERAL" else ACL_EXTENDED_CHANGES
    return f"{root}/{ACL_CHANGE_PREFIX}"


def new_kafka_uuid() -> str:
    """Kafka's Uuid.toString(): 16 random bytes, URL-safe base64 without padding (22 chars)."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka rerolls ids that look like CLI flags
            return text


def kafka_uuid_to_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def uuid_to_kafka(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


# JSON payloads ------------------------------------------------------------------------------


def encode(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode("utf-8")


def decode(raw: bytes | None) -> Any:
    if not raw:
        return None
    return json.loads(raw.decode("utf-8"))


def controller_registration(broker_id: int, timestamp_ms: int) -> dict[str, Any]:
    """/controller (ephemeral): who the controller is."""
    return {"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)}


def controller_id_of(data: Any) -> int:
    """The broker id /controller names; -1 for a vacant or unreadable node."""
    try:
        return int(data["brokerid"])
    except (KeyError, TypeError, ValueError):
        return -1


def encode_controller_epoch(epoch: int) -> bytes:
    """/controller_epoch is a bare decimal, not JSON."""
    return str(epoch).encode("ascii")


def decode_controller_epoch(raw: bytes | None) -> int:
    return int(raw or b"0")


def cluster_id_payload(cluster_id: str) -> dict[str, Any]:
    """/cluster/id; Kafka writes the version as a string here."""
    return {"version": "1", "id": cluster_id}


def broker_registration(
    endpoints: Sequence[Endpoint],
    rack: str | None,
    timestamp_ms: int | None = None,
    admin_endpoint: str | None = None,
) -> dict[str, Any]:
    """/brokers/ids/<id>, version 5 (Kafka 2.8+): endpoints, protocol map, features; plus
    `admin_endpoint` (the admin API's URL), a key Kafka's readers ignore."""
    plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
    data: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {e.listener_name: e.security_protocol for e in endpoints},
        "endpoints": [e.uri for e in endpoints],
        "jmx_port": -1,
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "timestamp": str(timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)),
        "version": 5,
    }
    if rack is not None:
        data["rack"] = rack
    if admin_endpoint is not None:
        data["admin_endpoint"] = admin_endpoint
    return data


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None

    def endpoint(self, listener_name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name), None)

    @classmethod
    def from_json(cls, broker_id: int, data: Mapping[str, Any]) -> BrokerInfo:
        protocols = data.get("listener_security_protocol_map") or {}
        endpoints = []
        for uri in data.get("endpoints") or []:
            name, _, address = uri.partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append(Endpoint(name, protocols.get(name, name), host.strip("[]"), int(port)))
        if not endpoints and data.get("host"):
            endpoints.append(Endpoint("PLAINTEXT", "PLAINTEXT", data["host"], int(data["port"])))
        return cls(broker_id, tuple(endpoints), data.get("rack"))


def topic_assignment(topic_id: str, assignment: Mapping[int, Sequence[int]]) -> dict[str, Any]:
    """/brokers/topics/<t> as Kafka 2.8+ writes it (version 3 carries the topic id)."""
    return {
        "version": 3,
        "topic_id": topic_id,
        "partitions": {str(p): list(replicas) for p, replicas in sorted(assignment.items())},
        "adding_replicas": {},
        "removing_replicas": {},
    }


@dataclass
class PartitionState:
    """/brokers/topics/<t>/partitions/<p>/state, with the znode version for fencing."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = -1

    def to_json(self) -> dict[str, Any]:
        return {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": 1,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], zk_version: int) -> PartitionState:
        return cls(
            leader=int(data["leader"]),
            leader_epoch=int(data["leader_epoch"]),
            isr=[int(b) for b in data["isr"]],
            controller_epoch=int(data["controller_epoch"]),
            zk_version=zk_version,
        )


def entity_config(config: Mapping[str, str]) -> dict[str, Any]:
    """/config/topics/<t> and /config/brokers/<id>: {"version":1,"config":{...}}."""
    return {"version": 1, "config": dict(config)}


def config_change_notification(entity_path: str) -> dict[str, Any]:
    """/config/changes/config_change_<seq>: tells other brokers to reread an entity's config."""
    return {"version": 2, "entity_path": entity_path}


def isr_change_notification(partitions: Iterable[tuple[str, int]]) -> dict[str, Any]:
    """/isr_change_notification/isr_change_<seq>: a leader changed these partitions' ISRs."""
    return {
        "version": 1,
        "partitions": [{"topic": topic, "partition": index} for topic, index in partitions],
    }


def log_dir_event_notification(broker_id: int) -> dict[str, Any]:
    """/log_dir_event_notification/log_dir_event_<seq> (Kafka's
    LogDirEventNotificationSequenceZNode): a log dir of this broker failed."""
    return {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT}


def parse_log_dir_event_notification(data: Any) -> int | None:
    """The broker a log dir event names, None when malformed."""
    try:
        return int(data["broker"]) if isinstance(data, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def parse_isr_change_notification(data: Any) -> set[tuple[str, int]]:
    """The partitions an ISR change notification names; malformed entries are skipped."""
    out = set()
    entries = data.get("partitions") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        try:
            out.add((str(entry["topic"]), int(entry["partition"])))
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring malformed %s entry %r", ISR_CHANGE_NOTIFICATION, entry)
    return out


def producer_id_block(broker_id: int, block_start: int, block_end: int) -> dict[str, Any]:
    """/latest_producer_id_block: the last block claimed; Kafka writes the ids as strings."""
    return {
        "version": 1,
        "broker": broker_id,
        "block_start": str(block_start),
        "block_end": str(block_end),
    }


def parse_reassign_partitions(data: object) -> dict[tuple[str, int], list[int]]:
    """/admin/reassign_partitions: {"version":1,"partitions":[{topic, partition, replicas}]};
    malformed entries are skipped."""
    out: dict[tuple[str, int], list[int]] = {}
    for entry in (data or {}).get("partitions", []) if isinstance(data, dict) else []:
        try:
            out[(str(entry["topic"]), int(entry["partition"]))] = [
                int(r) for r in entry["replicas"]
            ]
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring malformed %s entry %r", REASSIGN_PARTITIONS, entry)
    return out


def reassign_partitions_payload(entries: Mapping[tuple[str, int], Sequence[int]]) -> dict:
    return {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "replicas": list(rs)} for (t, p), rs in entries.items()
        ],
    }
