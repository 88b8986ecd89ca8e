"""The collector: polls one cluster about once a second and pushes snapshots to Channels groups.

It runs inside daphne, one per cluster, started by the first WebSocket subscriber and
stopped a little after the last one leaves (`subscribe` / `unsubscribe`); browsers never
talk to brokers. The cluster overview is always collected; topic snapshots (partitions with
HW and per-replica LEO), consumer-group snapshots (members, per-partition lag) and segment
snapshots only for what someone is watching, and a topic's new records (tail.py) only while
a message browser has its live tail on. Chosen over a separate management command
because the subscribers, and so the things worth polling, live in the daphne process; with
several daphnes each polls for its own viewers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections import Counter
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from brokerd.client.errors import KafkaClientError
from brokerd.util.background import BackgroundTasks
from dashboard.core import groups, snapshots, throughput
from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import KafkaOps, kafka_client
from dashboard.core.live_updates import group_digest
from dashboard.core.models import Cluster

from . import platform_status
from .tail import TopicTail

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
# A collector round must not wait on a hung broker: its admin API answers fast or is down.
ADMIN_TIMEOUT_S = 2.0
# A watch: ("topic", name), ("group", id), ("segments", "topic\0partition") or ("tail", name).
Watch = tuple[str, str]


def overview_group(cluster_name: str) -> str:
    return f"overview.{group_digest(cluster_name)}"


def watch_group(cluster_name: str, watch: Watch) -> str:
    kind, key = watch
    return f"{kind}.{group_digest(cluster_name + chr(0) + key)}"


def topic_group(cluster_name: str, topic: str) -> str:
    return watch_group(cluster_name, ("topic", topic))


def segments_key(topic: str, partition: int) -> str:
    return f"{topic}\0{partition}"


async def _snapshot(ops: KafkaOps, admin: AdminApi, watch: Watch) -> dict[str, Any]:
    kind, key = watch
    try:
        if kind == "topic":
            partitions = await snapshots.topic_partitions(ops, admin, key)
            return {"topic_name": key, "partitions": partitions, "error": None}
        if kind == "group":
            return {**await groups.group_snapshot(ops.admin, key), "error": None}
        topic, _, partition = key.partition("\0")
        view = await snapshots.partition_segments(ops, admin, topic, int(partition))
        return {**view, "error": None}
    except (KafkaClientError, AdminApiError, groups.GroupNotFound) as exc:
        return {"error": str(exc)}


def _connection_settings(cluster: Cluster) -> tuple:
    return (
        cluster.security_fingerprint,
        cluster.admin_endpoints,
        cluster.admin_token_ref,
        cluster.zookeeper_connect,
    )


class ClusterCollector:
    def __init__(self, cluster_name: str, interval: float | None = None):
        self.cluster_name = cluster_name
        self.interval = interval if interval is not None else settings.COLLECTOR_INTERVAL_S
        self.watches: Counter[Watch] = Counter()  # what is watched -> subscribers
        self.subscribers = 0
        self.latest_overview: dict[str, Any] | None = None
        self.latest: dict[Watch, dict[str, Any]] = {}
        self.tails: dict[str, TopicTail] = {}  # topic -> its tail, while one is watched
        self.known_brokers: set[int] = set()  # once seen, a broker stays listed (as down)
        # The brokers' BrokerTopicMetrics at the last round: rates are the next read's
        # difference from it (dashboard/core/throughput.py).
        self.counters: throughput.Counters | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._stop_timer: asyncio.TimerHandle | None = None
        self._idle_stops = BackgroundTasks(
            log, f"collector {cluster_name}: stopping when idle failed"
        )

    # Lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            # The flag too: on Python 3.11 an asyncio.wait_for whose inner future completes
            # as the cancel arrives returns the result and drops the cancel (fixed in 3.12);
            # the loop then ends after its round instead of collecting on, stop() waiting.
            self._stopping = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._task = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # The loop ----------------------------------------------------------------------------
    async def run(self) -> None:
        layer = get_channel_layer()
        cluster = await database_sync_to_async(Cluster.objects.get)(name=self.cluster_name)
        admin = AdminApi(cluster, timeout=ADMIN_TIMEOUT_S)
        client = kafka_client(cluster)
        ops = KafkaOps(client)
        unusable: tuple | None = None  # settings a client could not be built from
        try:
            while not self._stopping:
                # The cluster's row is read again each round: changed bootstrap servers,
                # security settings (a rotated password, a new certificate) or admin API
                # settings take effect without restarting the platform.
                changed = await self._changed_cluster(cluster)
                if changed is not None:
                    if _connection_settings(changed) != unusable:
                        log.info("collector %s: connection settings changed", self.cluster_name)
                    # The new client first: settings it cannot be built from (a malformed
                    # bootstrap address, a broken certificate) keep the old one and are
                    # tried again next round, instead of ending the collector for good.
                    try:
                        new_admin = AdminApi(changed, timeout=ADMIN_TIMEOUT_S)
                        new_client = kafka_client(changed)
                    except Exception:
                        if _connection_settings(changed) != unusable:  # logged once
                            log.exception("collector %s: settings unusable", self.cluster_name)
                        unusable = _connection_settings(changed)
                    else:
                        await client.close()
                        cluster, admin, client = changed, new_admin, new_client
                        ops = KafkaOps(client)
                try:
                    await self.collect_once(ops, admin, layer)
                except Exception:  # one bad round must not end the page's updates
                    log.exception("collector %s: round failed", self.cluster_name)
                await asyncio.sleep(self.interval)
        finally:
            await client.close()

    async def _changed_cluster(self, cluster: Cluster) -> Cluster | None:
        """The cluster's row when what the collector connects with has changed since
        `cluster` was read, else None (also when it cannot be read: the old settings stay)."""
        try:
            current = await database_sync_to_async(Cluster.objects.get)(pk=cluster.pk)
        except Exception:  # the database away for a moment, or the cluster deleted
            log.warning("collector %s: cannot re-read the cluster", self.cluster_name)
            return None
        return None if _connection_settings(current) == _connection_settings(cluster) else current

    async def collect_once(self, ops: KafkaOps, admin: AdminApi, layer) -> None:
        try:
            overview = await snapshots.cluster_overview(ops, admin, self.known_brokers)
            self.known_brokers.update(b["broker_id"] for b in overview["brokers"])
            overview["error"] = None
        except KafkaClientError as exc:
            overview = {**(self.latest_overview or {}), "error": f"cluster unreachable: {exc}"}
        watches = [w for w, n in self.watches.items() if n > 0 and w[0] != "tail"]
        rates = await self._throughput(admin, [w[1] for w in watches if w[0] == "topic"])
        overview["throughput"] = {  # string keys: the channel layer's msgpack wants them
            "brokers": {str(b): r for b, r in rates["brokers"].items()},
            "total": rates["total"],
        }
        overview["cluster_id"] = self.cluster_name
        overview["platform"] = platform_status.read(self.cluster_name)  # a small local file
        self.latest_overview = overview
        await layer.group_send(
            overview_group(self.cluster_name),
            {"type": "snapshot", "payload": self._wrap("overview", overview)},
        )
        tails = [w for w, n in self.watches.items() if n > 0 and w[0] == "tail"]
        results, tailed = await asyncio.gather(
            asyncio.gather(*(_snapshot(ops, admin, w) for w in watches)),
            asyncio.gather(*(self._tail(w[1]).poll(ops) for w in tails)),
        )
        for watch, payload in zip(tails, tailed, strict=True):
            if payload is not None:
                await layer.group_send(
                    watch_group(self.cluster_name, watch), {"type": "tail", "payload": payload}
                )
        for watch, data in zip(watches, results, strict=True):
            if watch[0] == "topic":
                data["throughput"] = rates["topics"].get(watch[1])
            self.latest[watch] = data
            await layer.group_send(
                watch_group(self.cluster_name, watch),
                {"type": "snapshot", "payload": self._wrap(watch[0], data)},
            )

    async def _throughput(self, admin: AdminApi, topics: list[str]) -> dict:
        """Bytes in/out and records in per second since the last round, per broker and for
        the watched topics; empty at the first round or without an admin API."""
        brokers = self.known_brokers | {
            b["broker_id"] for b in (self.latest_overview or {}).get("brokers", [])
        }
        counters = await throughput.read_counters(admin, brokers, topics=topics)
        rates = throughput.rates(self.counters, counters)
        self.counters = counters
        return rates

    def _tail(self, topic: str) -> TopicTail:
        tail = self.tails.get(topic)
        if tail is None:
            tail = self.tails[topic] = TopicTail(topic)
        return tail

    def tail_armed(self, topic: str) -> bool:
        """Whether the topic's tail has its starting positions (records after them will be
        pushed); until then a new tail viewer waits for the first push."""
        tail = self.tails.get(topic)
        return tail is not None and tail.armed

    def _wrap(self, kind: str, data: dict) -> dict:
        return {"kind": kind, "cluster_id": self.cluster_name, "data": data}

    # Subscriptions -----------------------------------------------------------------------
    def subscribe(self, watch: Watch | None = None) -> None:
        self.subscribers += 1
        if watch is not None:
            self.watches[watch] += 1
        if self._stop_timer is not None:
            self._stop_timer.cancel()
            self._stop_timer = None
        self.start()

    def unsubscribe(self, watch: Watch | None = None) -> None:
        self.subscribers -= 1
        if watch is not None:
            self.watches[watch] -= 1
            if self.watches[watch] <= 0:
                del self.watches[watch]
                self.latest.pop(watch, None)
                if watch[0] == "tail":
                    self.tails.pop(watch[1], None)
        if self.subscribers <= 0:
            loop = asyncio.get_running_loop()
            self._stop_timer = loop.call_later(
                STOP_GRACE_S, lambda: self._idle_stops.spawn(self._stop_if_idle())
            )

    async def _stop_if_idle(self) -> None:
        if self.subscribers <= 0:
            await self.stop()
            _registry().pop(self.cluster_name, None)

    def snapshot_for(self, watch: Watch | None) -> dict | None:
        if watch is None:
            return self.latest_overview and self._wrap("overview", self.latest_overview)
        data = self.latest.get(watch)
        return data and self._wrap(watch[0], data)


# Per event loop (daphne has one; tests make several), then per cluster.
_collectors: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ClusterCollector]] = (
    weakref.WeakKeyDictionary()
)


def _registry() -> dict[str, ClusterCollector]:
    return _collectors.setdefault(asyncio.get_running_loop(), {})


def collector_for(cluster_name: str) -> ClusterCollector:
    """The collector of a cluster in this process (started by its first subscriber)."""
    registry = _registry()
    collector = registry.get(cluster_name)
    if collector is None:
        collector = registry[cluster_name] = ClusterCollector(cluster_name)
    return collector
