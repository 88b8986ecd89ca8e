"""Dynamic broker configs: /config/brokers/<default> and /config/brokers/<id>, kept live.

Kafka's brokers reread these when a config-change notification arrives, so a cluster-wide
default set through any broker reaches all of them. Here each broker watches both znodes
and, on a change, rereads them and applies the log configs they feed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from brokerd.config import BrokerConfig
from brokerd.coordination import zk_data
from brokerd.coordination.group_configs import GroupConfigStore
from brokerd.coordination.zk_client import ZkClient

log = logging.getLogger(__name__)


class DynamicBrokerConfigs:
    def __init__(
        self,
        config: BrokerConfig,
        broker_id: int,
        zk_client: ZkClient,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
        on_reloaded: Callable[[], None],
    ):
        self.config = config
        self.broker_id = broker_id
        self.zk = zk_client
        self._spawn = spawn  # the broker's background tasks (a watch callback cannot await)
        self._on_reloaded = on_reloaded  # e.g. logs take the new defaults
        self._armed: set[str] = set()  # paths with a watch pending (a watch fires once)
        self._closed = False
        # The GROUP entities' configs (KIP-848's per-group consumer.* settings).
        self.groups = GroupConfigStore(zk_client)

    async def load(self) -> None:
        """Read both entities (watching them) into the broker's config layers."""
        config = self.config
        layers = []
        for entity in (zk_data.DEFAULT_BROKER_ENTITY, str(self.broker_id)):
            path = zk_data.broker_config_path(entity)
            await self._watch(path)  # before reading: a change in between reloads again
            found = await self.zk.get_json(path)
            stored = ((found[0] or {}).get("config") or {}) if found is not None else {}
            raw = {str(k): str(v) for k, v in stored.items()}
            per_broker = entity != zk_data.DEFAULT_BROKER_ENTITY
            layers.append(config.validate_dynamic_lenient(raw, per_broker=per_broker))
        config.set_dynamic_layers(*layers)

    async def _watch(self, path: str) -> None:
        if path in self._armed:
            return
        self._armed.add(path)

        def fired(*_: object) -> None:
            self._armed.discard(path)
            if not self._closed:
                self._spawn(self._changed())

        await self.zk.exists(path, watch=fired)

    def close(self) -> None:
        """Shutting down: a watch that fires from now on reloads nothing."""
        self._closed = True
        self.groups.shutdown()

    async def _changed(self) -> None:
        await self.load()
        self._on_reloaded()
        log.info("dynamic broker configs reloaded")
