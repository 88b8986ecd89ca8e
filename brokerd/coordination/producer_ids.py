"""Producer ids in blocks claimed from /latest_producer_id_block, as Kafka 2.x does.

Each broker claims 1000 ids at a time with a conditional write, so ids are unique
cluster-wide without asking ZooKeeper for every producer.
"""

from __future__ import annotations

import asyncio

from kazoo.exceptions import BadVersionError

from . import zk_data
from .zk_client import ZkClient

PATH = zk_data.LATEST_PRODUCER_ID_BLOCK
BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, zk: ZkClient, broker_id: int):
        self.zk = zk
        self.broker_id = broker_id
        self._next = 0
        self._end = -1
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                await self._claim_block()
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _claim_block(self) -> None:
        while True:
            found = await self.zk.get_json(PATH)
            if found is None or found[0] is None:
                start, version = 0, found[1] if found else -1
                if found is None:
                    await self.zk.create_raw(PATH, b"")
                    continue
            else:
                start, version = int(found[0]["block_end"]) + 1, found[1]
            block = zk_data.producer_id_block(self.broker_id, start, start + BLOCK_SIZE - 1)
            try:
                await self.zk.set_json(PATH, block, version)
            except BadVersionError:
                continue  # another broker claimed a block first
            self._next, self._end = start, start + BLOCK_SIZE - 1
            return
