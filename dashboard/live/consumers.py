"""WebSocket consumers: a signed-in viewer joins a snapshot group and gets every push."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from dashboard.core.models import Cluster
from dashboard.core.roles import VIEW_PERMISSION

from .collector import collector_for, overview_group, topic_group

FORBIDDEN = 4403
NOT_FOUND = 4404


@database_sync_to_async
def _allowed(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(VIEW_PERMISSION))


@database_sync_to_async
def _cluster_exists(name: str) -> bool:
    return Cluster.objects.filter(name=name).exists()


class SnapshotConsumer(AsyncJsonWebsocketConsumer):
    """ws/clusters/<cluster_id>/overview/ and ws/clusters/<cluster_id>/topics/<topic>/."""

    group: str | None = None
    topic: str | None = None
    cluster_name: str = ""

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster_name = kwargs["cluster_id"]
        self.topic = kwargs.get("topic_name")
        if not await _allowed(self.scope.get("user")):
            await self.close(code=FORBIDDEN)
            return
        if not await _cluster_exists(self.cluster_name):
            await self.close(code=NOT_FOUND)
            return
        self.group = (
            topic_group(self.cluster_name, self.topic)
            if self.topic is not None
            else overview_group(self.cluster_name)
        )
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        collector = collector_for(self.cluster_name)
        collector.subscribe(self.topic)
        latest = collector.snapshot_for(self.topic)
        if latest is not None:
            await self.send_json(latest)

    async def disconnect(self, code) -> None:
        if self.group is None:
            return
        await self.channel_layer.group_discard(self.group, self.channel_name)
        collector_for(self.cluster_name).unsubscribe(self.topic)
        self.group = None

    async def receive_json(self, content, **kwargs) -> None:
        """Pages only listen; anything sent is ignored."""

    async def snapshot(self, event) -> None:
        await self.send_json(event["payload"])
