"""Carrying out a topic deletion the controller has taken up (Kafka's TopicDeletionManager).

The topic is marked (nothing makes replicas of it any more), this broker's own replicas go
through the `on_topic_deleted` callbacks, the other replicas get StopReplica(delete), then
the znodes go: assignment and states, config, and the /admin/delete_topics marker last, so
a deletion cut short is found and finished by the next controller.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from . import zk_data
from .channel import BrokerRequests
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .zk_client import ZkClient

log = logging.getLogger(__name__)

# (topic, its partitions): this broker removes its replicas of a deleted topic.
PartitionsCallback = Callable[[str, Sequence[int]], Awaitable[None]]


class TopicDeletionManager:
    def __init__(
        self,
        zk: ZkClient,
        cache: MetadataCache,
        context: ControllerContext,
        requests: BrokerRequests,
        forget: Callable[[str], None],
    ):
        self.zk = zk
        self.cache = cache
        self.context = context
        self.requests = requests
        self.forget = forget  # the controller's own bookkeeping of the topic goes
        self.on_topic_deleted: list[PartitionsCallback] = []

    async def delete(self, name: str) -> None:
        """Called inside a controller event while the marker exists."""
        info = self.cache.topic(name) or await self.cache.refresh_topic(name)
        if info is not None:
            info.marked_for_deletion = True  # nothing here makes replicas of it any more
            for callback in self.on_topic_deleted:
                await callback(name, sorted(info.assignment))
            for broker_id in self.context.live:
                if broker_id == self.context.broker_id:
                    continue
                mine = [p for p, rs in info.assignment.items() if broker_id in rs]
                if mine:
                    self.requests.send_stop_replica(broker_id, name, mine, delete=True)
        await self.zk.delete_tree(zk_data.topic_path(name))  # a batch per level, not per znode
        await self.zk.delete(zk_data.topic_config_path(name))
        await self.zk.delete(zk_data.delete_topic_path(name))
        self.cache.forget_topic(name)
        self.forget(name)
        log.info("deleted topic %s", name)
