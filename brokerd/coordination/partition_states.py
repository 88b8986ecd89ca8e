"""The controller's writes of partition states (leader, leader epoch, ISR) to ZooKeeper.

Each write is conditional twice over: on the state znode's version (a leader may have
changed the ISR meanwhile; then the state is re-read and the change computed again) and on
the controller's fence (a deposed controller's write is refused, and it resigns).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from kazoo.exceptions import BadVersionError

from . import zk_data
from .controller_context import ControllerContext
from .metadata import MetadataCache, TopicInfo
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

    async def write_many(
        self, changes: Sequence[tuple[str, int, StateChange]]
    ) -> list[tuple[str, int]]:
        """write() for many partitions in pipelined batches (as Kafka's controller writes
        with ZooKeeper's async API): every update in one batch; the ones that clashed with
        another write are re-read in one batch and computed again, for at most
        WRITE_ATTEMPTS rounds. The partitions whose new state was written (and cached), in
        the order given."""
        pending: dict[tuple[str, int], tuple[TopicInfo, StateChange, PartitionState]] = {}
        for topic, index, compute in changes:
            info = self.cache.topic(topic)
            if info is not None and index in info.states:
                pending[(topic, index)] = (info, compute, info.states[index])
        order = list(pending)
        written: set[tuple[str, int]] = set()
        for _attempt in range(WRITE_ATTEMPTS):
            updates = []
            for key, (info, compute, state) in pending.items():
                update = compute(state)
                if update is not None:
                    updates.append((key, info, compute, state, update))
            if not updates:
                break
            try:
                results = await self.zk.fenced_set_many(
                    [
                        (
                            zk_data.partition_state_path(*key),
                            zk_data.encode(update.to_json()),
                            state.zk_version,
                        )
                        for key, _info, _compute, state, update in updates
                    ],
                    self.context.fence,
                )
            except ControllerMovedError:
                await self.on_superseded()
                break
            clashed = []
            for (key, info, compute, state, update), result in zip(updates, results, strict=True):
                if isinstance(result, BadVersionError):
                    clashed.append((key, info, compute))
                elif not isinstance(result, Exception):  # NoNodeError: deleted meanwhile
                    update.zk_version = result
                    self._record(info, key, state, update)
                    written.add(key)
            pending = {}
            if not clashed:
                break
            found = await self.zk.get_json_many(
                [zk_data.partition_state_path(*key) for key, _info, _compute in clashed]
            )
            for (key, info, compute), current in zip(clashed, found, strict=True):
                if current is not None:
                    state = info.states[key[1]] = PartitionState.from_json(*current)
                    pending[key] = (info, compute, state)
        return [key for key in order if key in written]

    def _record(
        self, info: TopicInfo, key: tuple[str, int], before: PartitionState, update: PartitionState
    ) -> None:
        topic, index = key
        info.states[index] = update
        # A refresh may have replaced the cached topic meanwhile: keep the write there too.
        self.cache.merge_state(topic, index, update)
        log.info(
            "controller: %s-%d leader %d -> %d, epoch %d, isr %s",
            topic,
            index,
            before.leader,
            update.leader,
            update.leader_epoch,
            update.isr,
        )
