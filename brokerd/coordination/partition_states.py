"""The controller's writes of partition states (leader, leader epoch, ISR) to ZooKeeper.

Each write is conditional twice over: on the state znode's version (a leader may have
changed the ISR meanwhile; then the state is re-read and the change computed again) and on
the controller's fence (a deposed controller's write is refused, and it resigns).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from kazoo.exceptions import BadVersionError

from . import zk_data
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .zk_client import ControllerMovedError, ZkClient
from .zk_data import PartitionState

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 5

# The next state from the current one; None: nothing to write.
StateChange = Callable[[PartitionState], PartitionState | None]


class PartitionStateWriter:
    def __init__(
        self,
        zk: ZkClient,
        cache: MetadataCache,
        context: ControllerContext,
        on_superseded: Callable[[], Awaitable[None]],
    ):
        self.zk = zk
        self.cache = cache
        self.context = context
        self.on_superseded = on_superseded  # a fenced write failed: a newer controller rules

    async def write(self, topic: str, index: int, compute: StateChange) -> bool:
        """Write `compute(current state)` conditionally on the znode version, re-reading on
        a clash; True when a new state was written (and cached)."""
        info = self.cache.topic(topic)
        if info is None or index not in info.states:
            return False
        state = info.states[index]
        path = zk_data.partition_state_path(topic, index)
        for _attempt in range(WRITE_ATTEMPTS):
            update = compute(state)
            if update is None:
                return False
            try:
                version = await self.zk.fenced_set_json(
                    path, update.to_json(), state.zk_version, self.context.fence
                )
            except ControllerMovedError:
                await self.on_superseded()
                return False
            except BadVersionError:
                found = await self.zk.get_json(path)
                if found is None:
                    return False
                state = info.states[index] = PartitionState.from_json(*found)
                continue
            update.zk_version = version
            info.states[index] = update
            # A refresh may have replaced the cached topic meanwhile: keep the write there too.
            self.cache.merge_state(topic, index, update)
            log.info(
                "controller: %s-%d leader %d -> %d, epoch %d, isr %s",
                topic,
                index,
                state.leader,
                update.leader,
                update.leader_epoch,
                update.isr,
            )
            return True
        return False
