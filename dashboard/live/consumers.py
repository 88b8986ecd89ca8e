"""WebSocket consumers: a signed-in viewer joins a snapshot group and gets every push."""

from __future__ import annotations

import datetime
from urllib.parse import parse_qsl

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.db.models import Q
from django.utils import timezone

from dashboard.api.serializers import BrowseQuerySerializer
from dashboard.core.live_updates import (
    load_payload,
    maintenance_group,
    run_payload,
    spark_load_group,
    spark_loads_group,
)
from dashboard.core.models import (
    ACTIVE_LOAD_STATUSES,
    Cluster,
    MaintenanceRun,
    RunStatus,
    SparkLoad,
)
from dashboard.core.records import record_filter, render_record
from dashboard.core.roles import VIEW_PERMISSION

from .collector import (
    Watch,
    collector_for,
    overview_group,
    segments_key,
    watch_group,
)
from .tail import unpack

BAD_REQUEST = 4400
FORBIDDEN = 4403
NOT_FOUND = 4404


@database_sync_to_async
def _allowed(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(VIEW_PERMISSION))


@database_sync_to_async
def _cluster_exists(name: str) -> bool:
    return Cluster.objects.filter(name=name).exists()


class _ClusterConsumer(AsyncJsonWebsocketConsumer):
    """Checks the user's role and the cluster, then joins `self.channel_group()`."""

    group: str | None = None
    cluster_name: str = ""

    def channel_group(self) -> str:
        raise NotImplementedError

    async def joined(self) -> None:
        """After accepting: subscribe to whatever feeds the group."""

    async def connect(self) -> None:
        self.cluster_name = self.scope["url_route"]["kwargs"]["cluster_id"]
        if not await _allowed(self.scope.get("user")):
            await self.close(code=FORBIDDEN)
            return
        if not await _cluster_exists(self.cluster_name):
            await self.close(code=NOT_FOUND)
            return
        self.group = self.channel_group()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.joined()

    async def disconnect(self, code) -> None:
        if self.group is None:
            return
        await self.channel_layer.group_discard(self.group, self.channel_name)
        await self.left()
        self.group = None

    async def left(self) -> None:
        """After leaving the group."""

    async def receive_json(self, content, **kwargs) -> None:
        """Pages only listen; anything sent is ignored."""

    async def snapshot(self, event) -> None:
        await self.send_json(event["payload"])


class SnapshotConsumer(_ClusterConsumer):
    """ws/clusters/<id>/overview/, .../topics/<topic>/, .../groups/<group>/ and
    .../topics/<topic>/partitions/<n>/segments/: snapshots from the cluster's collector."""

    watch: Watch | None = None

    def channel_group(self) -> str:
        kwargs = self.scope["url_route"]["kwargs"]
        if "partition_id" in kwargs:
            key = segments_key(kwargs["topic_name"], kwargs["partition_id"])
            self.watch = ("segments", key)
        elif "topic_name" in kwargs:
            self.watch = ("topic", kwargs["topic_name"])
        elif "group_id" in kwargs:
            self.watch = ("group", kwargs["group_id"])
        if self.watch is None:
            return overview_group(self.cluster_name)
        return watch_group(self.cluster_name, self.watch)

    async def joined(self) -> None:
        collector = collector_for(self.cluster_name)
        collector.subscribe(self.watch)
        latest = collector.snapshot_for(self.watch)
        if latest is not None:
            await self.send_json(latest)

    async def left(self) -> None:
        collector_for(self.cluster_name).unsubscribe(self.watch)


def _tail_query(scope) -> dict | None:
    """The tail's filters from the WebSocket's query string (the browse API's names and
    rules: partition_id, key, key_match, value, value_match, filter); None if invalid."""
    allowed = ("partition", "key", "key_match", "value", "value_match", "filter")
    raw = dict(parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace")))
    data = {k: v for k, v in raw.items() if k in allowed and v != ""}
    if "partition" in data:
        data["partition_id"] = data.pop("partition")
    query = BrowseQuerySerializer(data=data)
    return query.validated_data if query.is_valid() else None


class MessagesTailConsumer(_ClusterConsumer):
    """ws/clusters/<id>/topics/<topic>/messages/?filters: the topic's new records while the
    message browser's tail is on (the collector tails a topic only while someone listens);
    each viewer gets those of its partition and filters."""

    topic = ""
    partition: int | None = None
    matches = None

    def channel_group(self) -> str:
        return watch_group(self.cluster_name, ("tail", self.topic))

    async def connect(self) -> None:
        self.topic = self.scope["url_route"]["kwargs"]["topic_name"]
        query = _tail_query(self.scope)
        if query is None:
            await self.close(code=BAD_REQUEST)
            return
        self.partition = query.get("partition_id")
        self.matches = record_filter(query)
        await super().connect()

    async def joined(self) -> None:
        collector = collector_for(self.cluster_name)
        collector.subscribe(("tail", self.topic))
        if collector.tail_armed(self.topic):
            await self.send_json(_tail_message([], 0, None))

    async def left(self) -> None:
        collector_for(self.cluster_name).unsubscribe(("tail", self.topic))

    async def tail(self, event) -> None:
        payload = event["payload"]
        shown = []
        for packed in payload["records"]:
            record = unpack(self.topic, packed)
            if self.partition is not None and record.partition != self.partition:
                continue
            if self.matches is None or self.matches(record):
                shown.append(render_record(record))
        if shown or not payload["records"]:
            await self.send_json(_tail_message(shown, payload["skipped"], payload["error"]))


def _tail_message(records: list[dict], skipped: int, error: str | None) -> dict:
    return {"kind": "tail", "data": {"records": records, "skipped": skipped, "error": error}}


class MaintenanceConsumer(_ClusterConsumer):
    """ws/clusters/<id>/maintenance/: maintenance runs as Celery's tasks report them; on
    joining, the runs that may have changed since the page was rendered (read after joining,
    so a run that ended between the render and the join is not left showing "pending")."""

    def channel_group(self) -> str:
        return maintenance_group(self.cluster_name)

    async def joined(self) -> None:
        for payload in await _changing_runs(self.cluster_name):
            await self.send_json({"kind": "run", "data": payload})


@database_sync_to_async
def _load_payload(cluster_name: str, load_id: int) -> dict | None:
    load = SparkLoad.objects.select_related("cluster").filter(
        cluster__name=cluster_name, pk=load_id
    )
    return load_payload(load[0]) if load else None


class SparkLoadConsumer(_ClusterConsumer):
    """ws/clusters/<id>/spark-loads/<load_id>/: the load's state as its Celery task pushes it
    (status, progress, result); the current state first, read after joining the group, so
    nothing between the page's render and the join is missed."""

    def channel_group(self) -> str:
        return spark_load_group(self.scope["url_route"]["kwargs"]["load_id"])

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        if await _allowed(self.scope.get("user")):
            self.current = await _load_payload(kwargs["cluster_id"], kwargs["load_id"])
            if self.current is None:
                await self.close(code=NOT_FOUND)
                return
        await super().connect()

    async def joined(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        latest = await _load_payload(kwargs["cluster_id"], kwargs["load_id"])  # read after joining
        await self.send_json({"kind": "spark_load", "data": latest or self.current})


RECENTLY_ENDED_S = 60


def _active_or_recently_ended(rows, active_statuses):
    """The rows (loads, maintenance runs) that may have changed since a page was rendered:
    those still in `active_statuses`, and those that ended a moment ago."""
    recently = timezone.now() - datetime.timedelta(seconds=RECENTLY_ENDED_S)
    return rows.filter(Q(status__in=active_statuses) | Q(finished_at__gte=recently)).select_related(
        "cluster", "requested_by"
    )


@database_sync_to_async
def _changing_loads(cluster_name: str) -> list[dict]:
    loads = SparkLoad.objects.filter(cluster__name=cluster_name)
    return [load_payload(load) for load in _active_or_recently_ended(loads, ACTIVE_LOAD_STATUSES)]


@database_sync_to_async
def _changing_runs(cluster_name: str) -> list[dict]:
    runs = MaintenanceRun.objects.filter(cluster__name=cluster_name)
    changing = _active_or_recently_ended(runs, (RunStatus.PENDING, RunStatus.RUNNING))
    # Oldest first: the page prepends runs it has not rendered, newest on top.
    return [run_payload(run) for run in changing.order_by("created_at")]


class SparkLoadsConsumer(_ClusterConsumer):
    """ws/clusters/<id>/spark-loads/: every change of the cluster's loads (new ones, status,
    progress) for the loads list; on joining, the loads that may have changed meanwhile."""

    def channel_group(self) -> str:
        return spark_loads_group(self.cluster_name)

    async def joined(self) -> None:
        for payload in await _changing_loads(self.cluster_name):
            await self.send_json({"kind": "spark_load", "data": payload})
