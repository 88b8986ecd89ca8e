"""Follower fetchers: one asyncio task per source broker, pulling the partitions it leads.

A partition handed to a fetcher first truncates (KIP-101 with KIP-279's refinement): it asks
the leader, with OffsetForLeaderEpoch, where its own latest epoch ends in the leader's
history, and cuts its log there — never to its high watermark, which would lose records
(seed 000 §3.3) or keep diverged ones (§3.4). Then it fetches from its LEO with its broker id
as replica_id, appends what comes as a follower, and takes min(own LEO, leader HW) as HW.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.fetch.v12 import request as fetch_request
from kio.schema.offset_for_leader_epoch.v4 import request as epoch_request

from brokerd.client.connection import BrokerConnection
from brokerd.client.errors import KafkaConnectionError, KafkaTimeoutError
from brokerd.log.leader_epochs import UNDEFINED_EPOCH_OFFSET
from brokerd.peer_security import peer_security
from brokerd.protocol.errors import ErrorCode
from brokerd.util.background import BackgroundTasks

if TYPE_CHECKING:
    from .partition import Partition
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)


@dataclass
class FetchState:
    partition: Partition
    leader_epoch: int
    truncating: bool = True  # OffsetForLeaderEpoch first
    delayed_until: float = 0.0  # after a partition error, wait before retrying it


class ReplicaFetcher:
    def __init__(self, manager: ReplicaManager, source_id: int):
        self.manager = manager
        self.source_id = source_id
        self.partitions: dict[tuple[str, int], FetchState] = {}
        self._changed = asyncio.Event()
        self._connection: BrokerConnection | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._closing = BackgroundTasks(
            log, f"closing a replaced connection to broker {source_id} failed"
        )

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self._changed.set()
        if self._task is not None:
            self._task.cancel()
            # Bounded: a cancellation swallowed deeper in a request must not hang shutdown;
            # the flag ends the loop at its next turn anyway.
            await asyncio.wait({self._task}, timeout=5)
        if self._connection is not None:
            await self._connection.close()

    def add(self, partition: Partition, leader_epoch: int) -> None:
        self.partitions[partition.key] = FetchState(partition, leader_epoch)
        self._changed.set()

    def remove(self, key: tuple[str, int]) -> None:
        self.partitions.pop(key, None)

    # The loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        config = self.manager.broker.config
        backoff = config.get("replica.fetch.backoff.ms") / 1000
        while not self._stopping:
            if not self.partitions:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                connection = self._connect()
                if connection is None:
                    await asyncio.sleep(backoff)
                    continue
                if any(s.truncating for s in self.partitions.values()):
                    await self._truncate(connection)
                await self._fetch(connection)
            except asyncio.CancelledError:
                raise
            except (KafkaConnectionError, KafkaTimeoutError, OSError) as exc:
                log.debug("fetch from broker %d failed: %s", self.source_id, exc)
                await self._reset_connection()
                await asyncio.sleep(backoff)
            except Exception:
                log.exception("replica fetcher for broker %d failed", self.source_id)
                await asyncio.sleep(backoff)

    def _connect(self) -> BrokerConnection | None:
        info = self.manager.broker.metadata.brokers.get(self.source_id)
        if info is None or not info.endpoints:
            return None
        endpoint = self.manager.inter_broker_endpoint(info)
        if endpoint is None:
            return None
        current = self._connection
        if current is not None and (current.host, current.port) == (endpoint.host, endpoint.port):
            return current
        config = self.manager.broker.config
        self._connection = BrokerConnection(
            endpoint.host,
            endpoint.port,
            node_id=self.source_id,
            client_id=f"broker-{self.manager.local_id}-fetcher-{self.source_id}",
            request_timeout=config.get("replica.socket.timeout.ms") / 1000,
            reconnect_backoff_max=config.get("replica.fetch.backoff.ms") / 1000,
            security=peer_security(config, endpoint),
        )
        if current is not None:
            self._closing.spawn(current.close())
        return self._connection

    async def _reset_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    # Truncation (OffsetForLeaderEpoch) -----------------------------------------------
    async def _truncate(self, connection: BrokerConnection) -> None:
        pending = {k: s for k, s in self.partitions.items() if s.truncating}
        asked: dict[tuple[str, int], int] = {}
        topics: dict[str, list] = {}
        for key, state in pending.items():
            local_epoch = state.partition.log.latest_epoch
            if local_epoch is None:
                # No epochs: an empty log (or only pre-0.11 batches) has nothing to cut.
                state.truncating = False
                continue
            asked[key] = local_epoch
            topics.setdefault(key[0], []).append(
                epoch_request.OffsetForLeaderPartition(
                    partition=key[1],
                    current_leader_epoch=state.leader_epoch,
                    leader_epoch=local_epoch,
                )
            )
        if not topics:
            return
        request = epoch_request.OffsetForLeaderEpochRequest(
            replica_id=self.manager.local_id,
            topics=tuple(
                epoch_request.OffsetForLeaderTopic(topic=t, partitions=tuple(ps))
                for t, ps in topics.items()
            ),
        )
        response = await connection.send(request)
        for topic in response.topics:
            for result in topic.partitions:
                key = (topic.topic, result.partition)
                state = self.partitions.get(key)
                if state is None or key not in asked or self.partitions[key] is not pending[key]:
                    continue  # removed or re-added meanwhile
                if result.error_code != ErrorCode.none:
                    log.info(
                        "OffsetForLeaderEpoch for %s-%d from broker %d: %s",
                        *key,
                        self.source_id,
                        ErrorCode(result.error_code).name,
                    )
                    continue  # stays truncating; retried on the next round
                self._truncate_partition(state, asked[key], result.leader_epoch, result.end_offset)

    def _truncate_partition(
        self, state: FetchState, asked_epoch: int, leader_epoch: int, end_offset: int
    ) -> None:
        partition_log = state.partition.log
        if end_offset == UNDEFINED_EPOCH_OFFSET:
            # The leader knows no epoch up to ours: it has no history to compare with
            # (an empty log). Keep ours; fetching from our LEO gets OUT_OF_RANGE if wrong.
            state.truncating = False
            return
        target = end_offset
        if leader_epoch != asked_epoch:
            # KIP-279: the leader's largest epoch <= ours differs from ours; our history of
            # that epoch may end earlier than the leader's.
            _, ours = partition_log.leader_epoch_cache.end_offset_for(
                leader_epoch, partition_log.log_end_offset
            )
            if ours != UNDEFINED_EPOCH_OFFSET:
                target = min(target, ours)
        target = min(target, partition_log.log_end_offset)
        if partition_log.truncate_to(target):
            log.info(
                "%s-%d truncated to %d (leader %d says epoch %d ends at %d)",
                partition_log.topic,
                partition_log.partition,
                target,
                self.source_id,
                leader_epoch,
                end_offset,
            )
        state.truncating = False

    # Fetching ------------------------------------------------------------------------
    async def _fetch(self, connection: BrokerConnection) -> None:
        config = self.manager.broker.config
        loop = asyncio.get_running_loop()
        now = loop.time()
        ready = {
            k: s for k, s in self.partitions.items() if not s.truncating and s.delayed_until <= now
        }
        if not ready:
            await asyncio.sleep(0.05)
            return
        topics: dict[str, list] = {}
        offsets = {}
        for key, state in ready.items():
            offset = state.partition.log.log_end_offset
            offsets[key] = offset
            topics.setdefault(key[0], []).append(
                fetch_request.FetchPartition(
                    partition=key[1],
                    current_leader_epoch=state.leader_epoch,
                    fetch_offset=offset,
                    partition_max_bytes=config.get("replica.fetch.max.bytes"),
                )
            )
        request = fetch_request.FetchRequest(
            replica_id=self.manager.local_id,
            max_wait=datetime.timedelta(milliseconds=config.get("replica.fetch.wait.max.ms")),
            min_bytes=config.get("replica.fetch.min.bytes"),
            max_bytes=config.get("replica.fetch.response.max.bytes"),
            topics=tuple(
                fetch_request.FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in topics.items()
            ),
            forgotten_topics_data=(),
        )
        timeout = config.get("replica.socket.timeout.ms") / 1000
        response = await connection.send(request, timeout=timeout)
        backoff = config.get("replica.fetch.backoff.ms") / 1000
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic, data.partition_index)
                state = ready.get(key)
                if state is None or self.partitions.get(key) is not state:
                    continue
                self._handle(state, offsets[key], data, loop.time() + backoff)

    def _handle(self, state: FetchState, offset: int, data, retry_at: float) -> None:
        partition = state.partition
        code = data.error_code
        if code == ErrorCode.none:
            if partition.log.log_end_offset != offset:
                return  # truncated meanwhile
            if data.records:
                partition.log.append_as_follower(data.records)
            partition.update_follower_high_watermark(data.high_watermark)
            return
        if code == ErrorCode.offset_out_of_range:
            self._out_of_range(state, data)
            return
        if code == ErrorCode.unknown_leader_epoch:
            state.delayed_until = retry_at  # the leader has not applied our epoch yet
            return
        # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...: wait for the controller's word.
        log.info(
            "fetch of %s-%d from broker %d: %s",
            partition.topic,
            partition.partition,
            self.source_id,
            ErrorCode(code).name,
        )
        state.delayed_until = retry_at

    def _out_of_range(self, state: FetchState, data) -> None:
        """Our LEO is outside the leader's log: below its start (retention), restart there;
        above its end (should not survive truncation), truncate again."""
        partition_log = state.partition.log
        leader_start = data.log_start_offset
        if leader_start >= 0 and partition_log.log_end_offset < leader_start:
            log.info(
                "%s-%d restarts at the leader's log start %d",
                partition_log.topic,
                partition_log.partition,
                leader_start,
            )
            partition_log.truncate_fully_and_start_at(leader_start)
        else:
            state.truncating = True


class ReplicaFetcherManager:
    def __init__(self, manager: ReplicaManager):
        self.manager = manager
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def add_partition(self, partition: Partition, leader_id: int, leader_epoch: int) -> None:
        self.remove_partition(partition.key)
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = ReplicaFetcher(self.manager, leader_id)
            fetcher.start()
        fetcher.add(partition, leader_epoch)

    def remove_partition(self, key: tuple[str, int]) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(key)

    async def shutdown(self) -> None:
        fetchers, self.fetchers = self.fetchers, {}
        for fetcher in fetchers.values():
            await fetcher.stop()
