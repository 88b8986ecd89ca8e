"""Follower fetchers: one asyncio task per source broker, pulling the partitions it leads.

A partition handed to a fetcher first truncates (KIP-101 with KIP-279's refinement): it asks
the leader, with OffsetForLeaderEpoch, where its own latest epoch ends in the leader's
history, and cuts its log there — never to its high watermark, which would lose records
(seed 000 §3.3) or keep diverged ones (§3.4). Then it fetches from its LEO with its broker id
as replica_id, appends what comes as a follower, and takes min(own LEO, leader HW) as HW.
Each fetcher keeps one fetch session (KIP-227, `fetch_session.py`) with its leader, so once
the session is open a fetch lists only the partitions whose fetch offset or epoch changed,
and an idle follower's fetch none. Building that request looks only at the partitions marked
changed since the last one (added, removed, appended to, truncated, backing off or done
backing off), not at every partition: an idle round costs nothing per partition. A whole
look every FULL_LOOK_S is a backstop.

Truncations and appends delete files and fsync (segments, the leader-epoch checkpoint), so
they run on a worker thread, never on the event loop. Each fetcher does one such step at a
time, and removing a partition waits for its step in flight: a partition that moves to
another leader, becomes a leader or is deleted is never written by this fetcher afterwards.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kio.schema.fetch.v12 import request as fetch_request
from kio.schema.offset_for_leader_epoch.v4 import request as epoch_request
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from brokerd.client.connection import BrokerConnection
from brokerd.client.errors import KafkaConnectionError, KafkaTimeoutError
from brokerd.config import ReplicationConfig
from brokerd.log import errors as log_errors
from brokerd.log.leader_epochs import UNDEFINED_EPOCH_OFFSET
from brokerd.protocol.errors import ErrorCode
from brokerd.util.background import BackgroundTasks

from .fetch_session import FetchPlan, FetchSessionHandler, PartitionFetch

if TYPE_CHECKING:
    from brokerd.client.connection import ClientSecurity
    from brokerd.config import Endpoint
    from brokerd.log.log import Log

    from .partition import Partition

log = logging.getLogger(__name__)

Key = tuple[str, int]
# The inter-broker endpoint of a broker id (None: unknown, or no such listener).
EndpointOf = Callable[[int], "Endpoint | None"]
# How to connect to a peer's endpoint (TLS, SASL credentials).
SecurityFor = Callable[["Endpoint"], "ClientSecurity"]
# Called on the worker thread whose write to a log dir failed (log dir, reason): the log
# manager's fail_dir, which takes the dir offline at once (Kafka's LogDirFailureChannel).
LogDirFailed = Callable[[Path, str], object]
# Seconds between two looks at every partition of a fetcher when building its request.
FULL_LOOK_S = 10.0


def _ignore_dir_failure(directory: Path, reason: str) -> None:
    log.error("a write to log dir %s failed (no one to take it offline): %s", directory, reason)


@dataclass
class FetchState:
    partition: Partition
    leader_epoch: int
    truncating: bool = True  # OffsetForLeaderEpoch first
    delayed_until: float = 0.0  # after a partition error, wait before retrying it


def truncate_to_leader(
    partition_log: Log, asked_epoch: int, leader_epoch: int, end_offset: int, source_id: int
) -> bool:
    """Cut `partition_log` where the leader's OffsetForLeaderEpoch answer for our latest
    epoch says our histories part; True if anything was removed. Deletes files: call it
    off the event loop."""
    if end_offset == UNDEFINED_EPOCH_OFFSET:
        # The leader knows no epoch up to ours: it has no history to compare with
        # (an empty log). Keep ours; fetching from our LEO gets OUT_OF_RANGE if wrong.
        return False
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
    if not partition_log.truncate_to(target):
        return False
    log.info(
        "%s-%d truncated to %d (leader %d says epoch %d ends at %d)",
        partition_log.topic,
        partition_log.partition,
        target,
        source_id,
        leader_epoch,
        end_offset,
    )
    return True


class ReplicaFetcher:
    def __init__(
        self,
        source_id: int,
        local_id: int,
        settings: ReplicationConfig,
        endpoint_of: EndpointOf,
        security_for: SecurityFor,
        log_dir_failed: LogDirFailed = _ignore_dir_failure,
        replicated_in: Callable[[int], None] = lambda size: None,
    ):
        self.source_id = source_id
        self._replicated_in = replicated_in  # Kafka's ReplicationBytesInPerSec
        self.local_id = local_id
        self.settings = settings
        self._endpoint_of = endpoint_of
        self._security_for = security_for
        self._log_dir_failed = log_dir_failed
        self.partitions: dict[Key, FetchState] = {}
        # What a round's request is built from (see the module's docstring): keys that may
        # want something else of the leader since the last request, keys waiting to
        # truncate, keys backing off, and the state each key of the session was sent for.
        self._dirty: set[Key] = set()
        self._truncating: set[Key] = set()
        self._delayed: set[Key] = set()
        self._asked: dict[Key, FetchState] = {}
        self._full_look_at = 0.0
        # The worker-thread step writing each partition's log, while it runs.
        self._writing: dict[Key, asyncio.Future] = {}
        self._changed = asyncio.Event()
        self.session = FetchSessionHandler()
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
        # A cancelled step still runs to its end on its thread; the logs may close after.
        if self._writing:
            await asyncio.wait(set(self._writing.values()))
        if self._connection is not None:
            await self._connection.close()

    def add(self, partition: Partition, leader_epoch: int) -> None:
        key = partition.key
        self.partitions[key] = FetchState(partition, leader_epoch)  # truncates first
        self._truncating.add(key)
        self._dirty.add(key)
        self._changed.set()

    async def remove(self, key: Key) -> None:
        """Stop fetching `key`; returns once no step of this fetcher writes its log."""
        self.partitions.pop(key, None)
        self._truncating.discard(key)
        self._delayed.discard(key)
        self._dirty.add(key)  # forgotten by the next request
        writing = self._writing.get(key)
        if writing is not None:
            await asyncio.wait({writing})

    async def _write_off_loop(self, keys: Iterable[Key], work: Callable[..., Any], *args: Any):
        """Run `work`, which writes the logs of `keys`, on a worker thread."""
        future = asyncio.get_running_loop().run_in_executor(None, functools.partial(work, *args))
        keys = list(keys)
        for key in keys:
            self._writing[key] = future

        def finished(done: asyncio.Future) -> None:
            for key in keys:
                if self._writing.get(key) is done:
                    del self._writing[key]
            if not done.cancelled():
                done.exception()  # seen here if the fetcher was cancelled while waiting

        future.add_done_callback(finished)
        # Shielded: cancelling the fetcher must not cancel this future, which tracks a
        # thread that cannot be stopped; remove() and stop() wait on it instead.
        return await asyncio.shield(future)

    # The loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = self.settings.replica_fetch_backoff_ms / 1000
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
                if self._truncating:
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
        endpoint = self._endpoint_of(self.source_id)
        if endpoint is None:
            return None
        current = self._connection
        if current is not None and (current.host, current.port) == (endpoint.host, endpoint.port):
            return current
        self._connection = BrokerConnection(
            endpoint.host,
            endpoint.port,
            node_id=self.source_id,
            client_id=f"broker-{self.local_id}-fetcher-{self.source_id}",
            request_timeout=self.settings.replica_socket_timeout_ms / 1000,
            reconnect_backoff_max=self.settings.replica_fetch_backoff_ms / 1000,
            security=self._security_for(endpoint),
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
        pending = {k: self.partitions[k] for k in self._truncating if k in self.partitions}
        asked: dict[Key, int] = {}
        topics: dict[str, list] = {}
        for key, state in pending.items():
            local_epoch = state.partition.log.latest_epoch
            if local_epoch is None:
                # No epochs: an empty log (or only pre-0.11 batches) has nothing to cut.
                self._truncated(state)
                continue
            asked[key] = local_epoch
            topics.setdefault(key[0], []).append(
                epoch_request.OffsetForLeaderPartition(
                    partition=i32(key[1]),
                    current_leader_epoch=i32(state.leader_epoch),
                    leader_epoch=i32(local_epoch),
                )
            )
        if not topics:
            return
        request = epoch_request.OffsetForLeaderEpochRequest(
            replica_id=BrokerId(self.local_id),
            topics=tuple(
                epoch_request.OffsetForLeaderTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in topics.items()
            ),
        )
        response = await connection.send(request)
        cuts: list[tuple[FetchState, int, int, int]] = []
        for topic in response.topics:
            for result in topic.partitions:
                key = (topic.topic, result.partition)
                current = self.partitions.get(key)
                if current is None or key not in asked or current is not pending[key]:
                    continue  # removed or re-added meanwhile
                if result.error_code != ErrorCode.none:
                    log.info(
                        "OffsetForLeaderEpoch for %s-%d from broker %d: %s",
                        *key,
                        self.source_id,
                        ErrorCode(result.error_code).name,
                    )
                    continue  # stays truncating; retried on the next round
                cuts.append((current, asked[key], result.leader_epoch, result.end_offset))
        if not cuts:
            return
        await self._write_off_loop(
            [state.partition.key for state, *_ in cuts], self._truncate_logs, cuts
        )
        for state, *_ in cuts:
            self._truncated(state)

    def _truncated(self, state: FetchState) -> None:
        state.truncating = False
        key = state.partition.key
        if self.partitions.get(key) is state:  # not removed or re-added meanwhile
            self._truncating.discard(key)
            self._dirty.add(key)

    def _truncate_again(self, state: FetchState) -> None:
        state.truncating = True
        key = state.partition.key
        self._truncating.add(key)
        self._dirty.add(key)

    def _truncate_logs(self, cuts: list[tuple[FetchState, int, int, int]]) -> None:
        """On a worker thread. A failure leaves every partition truncating, to retry; a
        log whose dir failed takes the dir offline (the partition is then removed)."""
        for state, asked_epoch, leader_epoch, end_offset in cuts:
            try:
                truncate_to_leader(
                    state.partition.log, asked_epoch, leader_epoch, end_offset, self.source_id
                )
            except (OSError, log_errors.KafkaStorageError) as exc:
                self._storage_failed(state, exc)

    def _storage_failed(self, state: FetchState, exc: Exception) -> None:
        """On a worker thread: a follower's write failed. An I/O error takes the log's dir
        offline now, as Kafka's LogDirFailureChannel does for every log operation (not at
        the next checkpoint); the replica manager then stops the dir's partitions, this one
        included, and the controller moves their leadership. Until then the partition waits
        (a closed log of an offline dir raises KafkaStorageError: nothing to do)."""
        partition_log = state.partition.log
        state.delayed_until = float("inf")
        if isinstance(exc, OSError):
            log.error(
                "follower write to %s-%d failed: %s",
                partition_log.topic,
                partition_log.partition,
                exc,
            )
            self._log_dir_failed(partition_log.dir.parent, f"a follower's write failed: {exc}")

    # Fetching ------------------------------------------------------------------------
    async def _fetch(self, connection: BrokerConnection) -> None:
        settings = self.settings
        loop = asyncio.get_running_loop()
        plan = self._plan(loop.time())
        if not plan.wanted and not plan.forget:
            await asyncio.sleep(0.05)  # all truncating or backing off (or none left)
            return
        topics: dict[str, list] = {}
        for key, fetch in plan.send.items():
            topics.setdefault(key[0], []).append(
                fetch_request.FetchPartition(
                    partition=i32(key[1]),
                    current_leader_epoch=i32(fetch.current_leader_epoch),
                    fetch_offset=i64(fetch.fetch_offset),
                    partition_max_bytes=i32(fetch.max_bytes),
                )
            )
        forgotten: dict[str, list] = {}
        for topic, index in plan.forget:
            forgotten.setdefault(topic, []).append(i32(index))
        request = fetch_request.FetchRequest(
            replica_id=BrokerId(self.local_id),
            max_wait=i32Timedelta.parse(
                datetime.timedelta(milliseconds=settings.replica_fetch_wait_max_ms)
            ),
            min_bytes=i32(settings.replica_fetch_min_bytes),
            max_bytes=i32(settings.replica_fetch_response_max_bytes),
            topics=tuple(
                fetch_request.FetchTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in topics.items()
            ),
            session_id=i32(plan.session_id),
            session_epoch=i32(plan.epoch),
            forgotten_topics_data=tuple(
                fetch_request.ForgottenTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in forgotten.items()
            ),
        )
        try:
            response = await connection.send(
                request, timeout=settings.replica_socket_timeout_ms / 1000
            )
        except BaseException:
            self.session.handle_error()
            raise
        if not self.session.handle_response(plan, response.error_code, response.session_id):
            log.info(
                "fetch session %d with broker %d: %s; starting a new one",
                plan.session_id,
                self.source_id,
                ErrorCode(response.error_code).name,
            )
            return
        retry_at = loop.time() + settings.replica_fetch_backoff_ms / 1000
        appends: list[tuple[FetchState, int, Any]] = []
        restarts: list[tuple[FetchState, int]] = []
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic, data.partition_index)
                asked = self._asked.get(key)
                if asked is None or self.partitions.get(key) is not asked:
                    continue
                if data.error_code == ErrorCode.none:
                    appends.append((asked, plan.wanted[key].fetch_offset, data))
                elif data.error_code == ErrorCode.offset_out_of_range:
                    restart_at = self._out_of_range(asked, data)
                    if restart_at is not None:
                        restarts.append((asked, restart_at))
                else:
                    self._partition_error(asked, data.error_code, retry_at)
        if not appends and not restarts:
            return
        keys = [s.partition.key for s, _, _ in appends] + [s.partition.key for s, _ in restarts]
        # Their LEO moves (or a write fails and they back off): asked again for the next.
        self._dirty.update(s.partition.key for s, _, data in appends if data.records)
        self._dirty.update(s.partition.key for s, _ in restarts)
        appended: list[tuple[FetchState, int]]
        failure: Exception | None
        appended, written, failure = await self._write_off_loop(
            keys, self._write_fetched, appends, restarts
        )
        self._replicated_in(written)
        for state, high_watermark in appended:
            if self.partitions.get(state.partition.key) is state:
                state.partition.update_follower_high_watermark(high_watermark)
        if failure is not None:
            raise failure

    def _write_fetched(
        self, appends: list[tuple[FetchState, int, Any]], restarts: list[tuple[FetchState, int]]
    ) -> tuple[list[tuple[FetchState, int]], int, Exception | None]:
        """On a worker thread: the fetched records appended, and logs restarted at the
        leader's log start. Returns the appended partitions with the leader's HW, the bytes
        appended (Kafka's ReplicationBytesIn), and the first failure (the fetcher logs it
        and backs off)."""
        appended = []
        written = 0
        try:
            for state, offset, data in appends:
                partition_log = state.partition.log
                if partition_log.log_end_offset != offset:
                    continue  # truncated meanwhile
                try:
                    if data.records:
                        partition_log.append_as_follower(data.records)
                        written += len(data.records)
                except (OSError, log_errors.KafkaStorageError) as exc:
                    self._storage_failed(state, exc)  # this dir alone; the others go on
                    continue
                appended.append((state, data.high_watermark))
            for state, leader_start in restarts:
                partition_log = state.partition.log
                log.info(
                    "%s-%d restarts at the leader's log start %d",
                    partition_log.topic,
                    partition_log.partition,
                    leader_start,
                )
                try:
                    partition_log.truncate_fully_and_start_at(leader_start)
                except (OSError, log_errors.KafkaStorageError) as exc:
                    self._storage_failed(state, exc)
        except Exception as exc:  # noqa: BLE001 - raised on the loop, after the HW updates
            return appended, written, exc
        return appended, written, None

    def _plan(self, now: float) -> FetchPlan:
        """This round's request: built from the partitions marked changed, or from all of
        them when a session opens and every FULL_LOOK_S."""
        for key in [k for k in self._delayed if self._waiting_until(k) <= now]:
            self._delayed.discard(key)
            self._dirty.add(key)
        max_bytes = self.settings.replica_fetch_max_bytes
        if self.session.needs_full or now >= self._full_look_at:
            self._full_look_at = now + FULL_LOOK_S
            self._dirty.clear()
            wanted = {}
            for key in self.partitions:
                fetch = self._want(key, now, max_bytes)
                if fetch is not None:
                    wanted[key] = fetch
            self._asked = {key: self.partitions[key] for key in wanted}
            return self.session.build(wanted)
        changes = {key: self._want(key, now, max_bytes) for key in self._dirty}
        self._dirty.clear()
        for key, fetch in changes.items():
            if fetch is None:
                self._asked.pop(key, None)
            else:
                self._asked[key] = self.partitions[key]
        return self.session.build_changes(changes)

    def _want(self, key: Key, now: float, max_bytes: int) -> PartitionFetch | None:
        """What to ask the leader of `key` now; None while it truncates or backs off."""
        state = self.partitions.get(key)
        if state is None or state.truncating:
            return None
        if state.delayed_until > now:
            self._delayed.add(key)
            return None
        return PartitionFetch(state.partition.log.log_end_offset, state.leader_epoch, max_bytes)

    def _waiting_until(self, key: Key) -> float:
        state = self.partitions.get(key)
        return 0.0 if state is None else state.delayed_until

    def _partition_error(self, state: FetchState, code: int, retry_at: float) -> None:
        self._dirty.add(state.partition.key)  # out of the session until retry_at
        if code == ErrorCode.unknown_leader_epoch:
            state.delayed_until = retry_at  # the leader has not applied our epoch yet
            return
        # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...: wait for the controller's word.
        partition = state.partition
        log.info(
            "fetch of %s-%d from broker %d: %s",
            partition.topic,
            partition.partition,
            self.source_id,
            ErrorCode(code).name,
        )
        state.delayed_until = retry_at

    def _out_of_range(self, state: FetchState, data) -> int | None:
        """Our LEO is outside the leader's log: below its start (retention), the offset to
        restart at; above its end (should not survive truncation), None and truncate again."""
        leader_start = data.log_start_offset
        if leader_start >= 0 and state.partition.log.log_end_offset < leader_start:
            return leader_start
        self._truncate_again(state)
        return None


class ReplicaFetcherManager:
    def __init__(
        self,
        local_id: int,
        settings: ReplicationConfig,
        endpoint_of: EndpointOf,
        security_for: SecurityFor,
        log_dir_failed: LogDirFailed = _ignore_dir_failure,
        replicated_in: Callable[[int], None] = lambda size: None,
    ):
        self.local_id = local_id
        self.settings = settings
        self._endpoint_of = endpoint_of
        self._security_for = security_for
        self.log_dir_failed = log_dir_failed
        self._replicated_in = replicated_in
        self.fetchers: dict[int, ReplicaFetcher] = {}

    async def add_partition(self, partition: Partition, leader_id: int, leader_epoch: int) -> None:
        await self.remove_partition(partition.key)
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = ReplicaFetcher(
                leader_id,
                self.local_id,
                self.settings,
                self._endpoint_of,
                self._security_for,
                lambda directory, reason: self.log_dir_failed(directory, reason),
                self._replicated_in,
            )
            fetcher.start()
        fetcher.add(partition, leader_epoch)

    async def remove_partition(self, key: Key) -> None:
        """Stop fetching `key`; returns once no fetcher writes its log any more."""
        for fetcher in list(self.fetchers.values()):
            await fetcher.remove(key)

    async def shutdown(self) -> None:
        fetchers, self.fetchers = self.fetchers, {}
        for fetcher in fetchers.values():
            await fetcher.stop()
