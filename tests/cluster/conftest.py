"""Three broker processes on one ZooKeeper chroot, for the fault tests.

The brokers share a chroot (one cluster) and have ids 1-3; topics default to RF 3 with
min.insync.replicas 2. A short ZooKeeper session timeout keeps failure detection (and so
each test) quick.
"""

from __future__ import annotations

import itertools
import time

import pytest

from tests.harness import BrokerProcess

from .checker import cluster_metadata

_clusters = itertools.count(1)
SESSION_TIMEOUT_MS = 4000


class Cluster:
    def __init__(self, zookeeper, tmp_path_factory, size: int = 3, **props: str):
        chroot = f"/cluster-{next(_clusters)}"
        defaults = {
            "num_partitions": "1",
            "default_replication_factor": "3",
            "min_insync_replicas": "2",
            "offsets_topic_replication_factor": "3",
            "offsets_topic_num_partitions": "3",
            "zookeeper_session_timeout_ms": str(SESSION_TIMEOUT_MS),
            "replica_lag_time_max_ms": "3000",
            "replica_fetch_backoff_ms": "100",
            "group_initial_rebalance_delay_ms": "0",
        }
        defaults.update(props)
        self.brokers = {
            broker_id: BrokerProcess(
                tmp_path_factory.mktemp(f"cluster-broker{broker_id}"),
                f"{zookeeper.connect}{chroot}",
                broker_id=broker_id,
                **defaults,
            )
            for broker_id in range(1, size + 1)
        }

    def start(self) -> Cluster:
        for broker in self.brokers.values():
            broker.start()
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def alive(self) -> list[BrokerProcess]:
        return [b for b in self.brokers.values() if b.alive()]

    def metadata(self, topic: str | None = None):
        return cluster_metadata(self, topic)

    def wait_for(self, predicate, timeout: float = 60, what: str = "condition"):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.metadata()
                if predicate(last):
                    return last
            except Exception as exc:  # noqa: BLE001 - brokers come and go in these tests
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"{what} not reached in {timeout}s; last metadata: {last}")

    def wait_full_isr(self, topic: str, partitions: int = 1, timeout: float = 60):
        size = len(self.brokers)

        def full(meta) -> bool:
            parts = meta["topics"].get(topic, {})
            return len(parts) == partitions and all(
                p["leader"] in meta["brokers"] and len(p["isr"]) == size for p in parts.values()
            )

        return self.wait_for(full, timeout, f"full ISR of {topic}")

    def leader_of(self, topic: str, partition: int = 0) -> int:
        meta = self.wait_for(
            lambda m: (
                m["topics"].get(topic, {}).get(partition, {}).get("leader", -1) in m["brokers"]
            ),
            what=f"a live leader of {topic}-{partition}",
        )
        return meta["topics"][topic][partition]["leader"]

    def kill_all(self) -> None:
        for broker in self.brokers.values():
            broker.kill()

    def stop_all(self) -> None:
        """SIGTERM each broker: clean shutdown writes the HW checkpoints the checker reads."""
        for broker in self.brokers.values():
            if broker.alive():
                broker.terminate()


@pytest.fixture
def cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory).start()
    yield made
    made.kill_all()
