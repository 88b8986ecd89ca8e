"""Per-group configs (the GROUP config resource, type 32, KIP-848): stored in ZooKeeper as
every entity config is, /config/groups/<group> = {"version":1,"config":{...}}, with a
/config/changes notification ({"version":2,"entity_path":"groups/<group>"}) like Kafka's
other entity types. (Kafka keeps them in its KRaft metadata log; in ZooKeeper mode it has no
group configs, so this is the entity layout applied to the new type.)

A broker reads a group's configs the first time one of its requests needs them, keeps them
with a ZooKeeper watch on the znode (its creation, change or deletion re-reads it), so a
change made through any broker reaches the group's coordinator; lookups are then local.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from brokerd.util.background import BackgroundTasks

from . import zk_data
from .zk_client import ZkClient

log = logging.getLogger(__name__)

# Kafka's GroupConfig names (the consumer group ones; share groups are not served).
CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
GROUP_CONFIG_NAMES = (CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS)
# A broker keeps (and watches) at most this many groups' configs; beyond, the oldest go.
MAX_CACHED_GROUPS = 100_000


def group_config_path(group_id: str) -> str:
    return f"/config/groups/{group_id}"


class GroupConfigStore:
    def __init__(self, zk: ZkClient):
        self.zk = zk
        self._configs: dict[str, dict[str, str]] = {}
        self._tasks = BackgroundTasks(log, "reading a group's configs failed")
        self._lock = asyncio.Lock()

    def values(self, group_id: str) -> Mapping[str, str]:
        """The group's stored configs (empty when none, or not read yet)."""
        return self._configs.get(group_id, {})

    async def ensure(self, group_id: str) -> Mapping[str, str]:
        """Read (and watch) the group's configs unless already kept."""
        if group_id not in self._configs:
            await self._read(group_id)
        return self.values(group_id)

    async def _read(self, group_id: str) -> None:
        path = group_config_path(group_id)

        def changed(*_args) -> None:
            self._tasks.spawn(self._read(group_id))

        found = await self.zk.get_json(path, watch=changed)
        if found is None:
            # Watch its creation: exists() arms the watch for a node not there yet.
            if await self.zk.exists(path, watch=changed):
                found = await self.zk.get_json(path)
        configs = ((found[0] or {}).get("config") or {}) if found is not None else {}
        if len(self._configs) >= MAX_CACHED_GROUPS and group_id not in self._configs:
            self._configs.pop(next(iter(self._configs)))
        self._configs[group_id] = {str(k): str(v) for k, v in configs.items()}

    async def alter(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replace the group's stored configs (an empty mapping keeps an empty entity)."""
        async with self._lock:
            await self.zk.upsert_json(group_config_path(group_id), zk_data.entity_config(configs))
            await self.zk.create_json(
                f"{zk_data.CONFIG_CHANGES}/{zk_data.CONFIG_CHANGE_PREFIX}",
                zk_data.config_change_notification(f"groups/{group_id}"),
                sequence=True,
            )
        self._configs[group_id] = dict(configs)

    def shutdown(self) -> None:
        self._tasks.cancel_all()
