"""Dynamic broker configs: /config/brokers/<default> and /config/brokers/<id>, kept live.

Kafka's brokers reread these when a config-change notification arrives, so a cluster-wide
default set through any broker reaches all of them. Here each broker watches both znodes
and, on a change, rereads them and applies the log configs they feed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from brokerd.coordination import zk_data

if TYPE_CHECKING:
    from .broker import Broker

log = logging.getLogger(__name__)


class DynamicBrokerConfigs:
    def __init__(self, broker: Broker):
        self.broker = broker
        self._armed: set[str] = set()  # paths with a watch pending (a watch fires once)

    async def load(self) -> None:
        """Read both entities (watching them) into the broker's config layers."""
        config = self.broker.config
        layers = []
        for entity in (zk_data.DEFAULT_BROKER_ENTITY, str(self.broker.broker_id)):
            path = zk_data.broker_config_path(entity)
            await self._watch(path)  # before reading: a change in between reloads again
            found = await self.broker.zk.get_json(path)
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
            if not self.broker._stopping:
                self.broker.spawn(self._changed())

        await self.broker.zk.exists(path, watch=fired)

    async def _changed(self) -> None:
        await self.load()
        self.broker.replicas.refresh_all_configs()
        log.info("dynamic broker configs reloaded")
