"""The controller's side of a failed log dir (KIP-112), as Kafka's ZooKeeper-mode controller.

A broker whose log dir failed writes /log_dir_event_notification/log_dir_event_<seq>. The
controller reads and deletes the notifications and sends the broker a LeaderAndIsr for
every replica it holds (Kafka's onBrokerLogDirFailure); the broker answers
KAFKA_STORAGE_ERROR for each replica that was on the failed dir, and those replicas become
offline (onReplicasBecomeOffline): a partition led there gets a new leader from the rest of
its ISR, and the replica leaves the ISRs, as if its broker had died for those partitions
alone. Every live broker gets an UpdateMetadata for those partitions naming the replicas in
offline_replicas (Kafka's isReplicaOnline: a live broker's replica on a failed dir is
offline too), which Metadata and DescribeTopicPartitions answer. The offline replicas are
forgotten when their broker registers again, and the brokers are told so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from . import zk_data
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .partition_state_machine import PartitionStateMachine
from .zk_client import ZkClient
from .zk_data import PartitionState

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


class LogDirFailures:
    def __init__(
        self,
        zk: ZkClient,
        cache: MetadataCache,
        context: ControllerContext,
        partitions: PartitionStateMachine,
    ):
        self.zk = zk
        self.cache = cache
        self.context = context
        self.partitions = partitions

    @property
    def offline(self) -> dict[int, set[PartitionKey]]:
        """broker id -> its replicas reported offline (KAFKA_STORAGE_ERROR to LeaderAndIsr)."""
        return self.context.replicas_on_offline_dirs

    async def on_notifications(self, watch: Callable[..., object]) -> None:
        """Read (and re-watch) the notifications, delete them, and ask each live broker
        named for the state of all its replicas. The caller holds the controller's lock."""
        children = await self.zk.children(zk_data.LOG_DIR_EVENT_NOTIFICATION, watch=watch)
        if not children:
            return
        paths = [f"{zk_data.LOG_DIR_EVENT_NOTIFICATION}/{child}" for child in children]
        brokers = set()
        for found in await self.zk.get_json_many(paths):
            broker = zk_data.parse_log_dir_event_notification(found[0] if found else None)
            if broker is not None:
                brokers.add(broker)
        await self.zk.delete_many(paths)
        for broker in sorted(brokers & set(self.context.live)):
            theirs = [
                (t, p)
                for t, p in self.partitions.all_partitions()
                if broker in self.cache.topics[t].assignment.get(p, [])
            ]
            log.info("controller: a log dir of broker %d failed; asking for its replicas", broker)
            self.partitions.send_leader_and_isr({broker}, theirs)

    async def replicas_offline(self, broker: int, keys: Iterable[PartitionKey]) -> None:
        """Replicas of `broker` that answered KAFKA_STORAGE_ERROR: leadership moves off them
        and they leave the ISRs. The caller holds the controller's lock."""
        keys = set(keys)
        if broker not in self.context.live:
            return
        self.offline.setdefault(broker, set()).update(keys)
        live = set(self.context.live)
        others = live - {broker}
        changes = []
        for topic, index in sorted(keys):
            info = self.cache.topic(topic)
            state = info.states.get(index) if info is not None else None
            if info is None or state is None:
                continue
            if state.leader != broker and broker not in state.isr:
                continue
            replicas = info.assignment.get(index, [])

            def compute(
                current: PartitionState, t: str = topic, rs: list[int] = replicas
            ) -> PartitionState | None:
                return self.partitions.next_state(t, rs, current, others)

            changes.append((topic, index, compute))
        log.warning(
            "controller: replicas of broker %d offline (failed log dir): %s",
            broker,
            sorted(keys),
        )
        changed = await self.partitions.states.write_many(changes) if changes else []
        if changed:
            self.partitions.send_leader_and_isr(live, changed)
        # Kafka's OfflineReplica transition: every live broker learns the replicas are
        # offline (offline_replicas), whether or not a state changed.
        self.partitions.send_update_metadata(live, sorted(set(changed) | keys))

    def brokers_changed(self, brokers: Iterable[int]) -> None:
        """Brokers gone or registered again: their replicas start afresh, and the live
        brokers hear that those replicas are no longer offline for a failed dir (a broker
        that is gone stays offline_replicas by not being live)."""
        cleared: set[PartitionKey] = set()
        for broker in brokers:
            cleared |= self.offline.pop(broker, set())
        if cleared:
            self.partitions.send_update_metadata(set(self.context.live), sorted(cleared))
