"""The epochs a controller request must carry to be obeyed, checked against ZooKeeper.

- The controller epoch must be /controller_epoch's value. The value last read is kept and
  ZooKeeper is read again only when a request claims a newer one (a new controller was
  elected since), so a request claiming an epoch ZooKeeper does not hold is refused and
  never raises the epoch this broker remembers: a forged 2^31-1 cannot lock the real
  controller out.
- The broker epoch (KIP-380) must not be older than the czxid of this broker's current
  registration: a request meant for an earlier incarnation of the broker (registered in a
  previous ZooKeeper session) is refused with STALE_BROKER_EPOCH. -1 means "not sent", as
  in Kafka.
"""

from __future__ import annotations

import asyncio
import logging

from . import zk_client, zk_data

log = logging.getLogger(__name__)

UNKNOWN_BROKER_EPOCH = -1


class ControlRequestEpochs:
    def __init__(self, zk_client: zk_client.ZkClient, broker_id: int):
        self.zk = zk_client
        self.broker_id = broker_id
        self.broker_epoch = UNKNOWN_BROKER_EPOCH  # czxid of this broker's registration
        self.controller_epoch = 0  # /controller_epoch as last read
        self._reading: asyncio.Lock = asyncio.Lock()

    async def registered(self) -> None:
        """Called after (re-)registering in /brokers/ids: learn the new broker epoch."""
        czxid = await self.zk.creation_zxid(zk_data.broker_path(self.broker_id))
        if czxid is not None:
            self.broker_epoch = czxid

    def broker_epoch_is_stale(self, claimed: int) -> bool:
        # Newer than ours is possible: the controller may read the registration before the
        # broker has noted it.
        return claimed != UNKNOWN_BROKER_EPOCH and claimed < self.broker_epoch

    async def controller_epoch_is_current(self, claimed: int) -> bool:
        """`claimed` is the epoch ZooKeeper holds. One read per newer claim at most."""
        if claimed > self.controller_epoch:
            async with self._reading:  # concurrent newer claims share one read
                if claimed > self.controller_epoch:
                    found = await self.zk.get(zk_data.CONTROLLER_EPOCH)
                    if found is not None:
                        self.controller_epoch = max(
                            self.controller_epoch, zk_data.decode_controller_epoch(found[0])
                        )
        if claimed != self.controller_epoch:
            log.warning(
                "refusing a controller request with controller epoch %d: ZooKeeper holds %d",
                claimed,
                self.controller_epoch,
            )
            return False
        return True
