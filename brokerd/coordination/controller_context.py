"""What the controller knows about its term and the cluster (Kafka's ControllerContext).

One object shared by the controller's parts (the event loop, the partition state writer,
the channel to brokers, the reassigner) so that each reads the current epoch, fence and
live brokers without holding the controller itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import zk_data
from .zk_client import Fence


@dataclass
class ControllerContext:
    broker_id: int
    # Who /controller names, as the metadata cache last read it (-1: vacant).
    controller_id: Callable[[], int]
    epoch: int = 0
    epoch_zk_version: int = -1  # /controller_epoch's version when this broker took office
    highest_seen_epoch: int = 0
    live: dict[int, int] = field(default_factory=dict)  # broker id -> czxid of registration
    # Brokers in a controlled shutdown: never chosen as leaders while another ISR member
    # can lead; forgotten when their registration goes (or is renewed).
    shutting_down: set[int] = field(default_factory=set)
    # Replicas on a failed log dir (KIP-112), by broker: (topic, partition) keys the broker
    # answered KAFKA_STORAGE_ERROR for; forgotten when the broker registers again
    # (Kafka's replicasOnOfflineDirs).
    replicas_on_offline_dirs: dict[int, set[tuple[str, int]]] = field(default_factory=dict)

    def replica_online(self, broker: int, topic: str, partition: int) -> bool:
        """Kafka's isReplicaOnline: the broker is live and the replica not on a failed dir."""
        return broker in self.live and (topic, partition) not in self.replicas_on_offline_dirs.get(
            broker, ()
        )

    @property
    def is_active(self) -> bool:
        """This broker holds /controller and no newer controller epoch has been seen."""
        return self.controller_id() == self.broker_id and self.epoch >= self.highest_seen_epoch

    def observe_epoch(self, epoch: int) -> None:
        self.highest_seen_epoch = max(self.highest_seen_epoch, epoch)

    @property
    def fence(self) -> Fence:
        """Every state write is checked against the epoch znode this controller bumped, so a
        deposed controller (paused, partitioned) cannot overwrite its successor's states."""
        return (zk_data.CONTROLLER_EPOCH, self.epoch_zk_version)
