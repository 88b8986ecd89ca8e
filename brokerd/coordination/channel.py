"""The controller's connections to brokers: one ordered queue and sender task per broker.

Requests to one broker go out in the order the controller made them (a later LeaderAndIsr
must not overtake an earlier one); a failed send is retried while the broker is live and
this controller still holds its epoch, and dropped when the broker is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32

from brokerd.client.connection import BrokerConnection
from brokerd.config import BrokerConfig, Endpoint
from brokerd.peer_security import peer_security
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode
from brokerd.util.background import BackgroundTasks

from .controller_context import ControllerContext
from .metadata import MetadataCache
from .zk_data import BrokerInfo, PartitionState

log = logging.getLogger(__name__)

# Where a broker takes inter-broker requests (its inter.broker.listener.name endpoint).
EndpointFor = Callable[[BrokerInfo], Endpoint | None]
# (topic, partition, its state, its replicas), as controller requests carry them.
PartitionStateEntry = tuple[str, int, PartitionState, list[int]]


class BrokerRequests(Protocol):
    """The requests the controller's parts send to brokers (ControllerChannel queues them)."""

    def send_leader_and_isr(
        self, broker_id: int, states: Sequence[PartitionStateEntry]
    ) -> None: ...

    def send_update_metadata(
        self, broker_ids: Iterable[int], states: Sequence[PartitionStateEntry]
    ) -> None: ...

    def send_stop_replica(
        self, broker_id: int, topic: str, partitions: Iterable[int], delete: bool
    ) -> None: ...


SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
RETRY_SECONDS = 0.2


class _BrokerQueue:
    def __init__(self, channel: ControllerChannel, broker_id: int):
        self.channel = channel
        self.broker_id = broker_id
        self.queue: asyncio.Queue = asyncio.Queue()
        self.connection: BrokerConnection | None = None
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        context = self.channel.context
        while True:
            request, epoch = await self.queue.get()
            while context.is_active and context.epoch == epoch:
                try:
                    response = await self._connection().send(request)
                except Exception as exc:  # noqa: BLE001 - retried while the broker lives
                    log.debug("controller request to %d failed: %s", self.broker_id, exc)
                    await self._close()
                    if self.broker_id not in context.live:
                        break
                    await asyncio.sleep(RETRY_SECONDS)
                    continue
                self.channel.leader_and_isr_answered(self.broker_id, request, response)
                code = getattr(response, "error_code", ErrorCode.none)
                if code != ErrorCode.none:
                    log.warning(
                        "broker %d answered %s with %s",
                        self.broker_id,
                        type(request).__name__,
                        ErrorCode(code).name,
                    )
                break

    def _connection(self) -> BrokerConnection:
        info = self.channel.cache.brokers.get(self.broker_id)
        endpoint = self.channel.control_endpoint(info) if info is not None else None
        if endpoint is None:
            raise ConnectionError(f"broker {self.broker_id} has no known endpoint")
        current = self.connection
        if current is not None and (current.host, current.port) == (endpoint.host, endpoint.port):
            return current
        timeout = 30.0
        config = self.channel.config
        if config is not None:
            timeout = config.replication.controller_socket_timeout_ms / 1000
        self.connection = BrokerConnection(
            endpoint.host,
            endpoint.port,
            node_id=self.broker_id,
            client_id=f"controller-{self.channel.context.broker_id}",
            request_timeout=timeout,
            security=peer_security(config, endpoint),
        )
        return self.connection

    async def _close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.close()

    async def stop(self) -> None:
        self.task.cancel()
        # Bounded: a cancellation swallowed inside a request must not hang shutdown.
        await asyncio.wait({self.task}, timeout=5)
        await self._close()


class ControllerChannel:
    def __init__(
        self,
        context: ControllerContext,
        cache: MetadataCache,
        config: BrokerConfig | None = None,
        endpoint_for: EndpointFor | None = None,
    ):
        self.context = context
        self.cache = cache
        self.config = config
        self.endpoint_for = endpoint_for or _plaintext_endpoint
        self.queues: dict[int, _BrokerQueue] = {}
        # Called with (broker id, [(topic, partition)]) when a broker answers a LeaderAndIsr
        # with KAFKA_STORAGE_ERROR for replicas on a failed log dir.
        self.on_offline_replicas: Callable[[int, list[tuple[str, int]]], None] | None = None
        self._removals = BackgroundTasks(log, "stopping the queue of a removed broker failed")

    def control_endpoint(self, info):
        """Where a broker takes controller requests: its control.plane.listener.name
        endpoint, else its inter-broker one, as Kafka's controller chooses."""
        config = self.config
        name = config.control_plane_listener_name if config is not None else None
        return info.endpoint(name) if name is not None else self.endpoint_for(info)

    def _queue(self, broker_id: int) -> _BrokerQueue:
        queue = self.queues.get(broker_id)
        if queue is None:
            queue = self.queues[broker_id] = _BrokerQueue(self, broker_id)
        return queue

    def _enqueue(self, broker_id: int, request) -> None:
        self._queue(broker_id).queue.put_nowait((request, self.context.epoch))

    def remove(self, broker_ids) -> None:
        for broker_id in broker_ids:
            queue = self.queues.pop(broker_id, None)
            if queue is not None:
                self._removals.spawn(queue.stop())

    def clear(self) -> None:
        self.remove(list(self.queues))

    async def stop(self) -> None:
        queues, self.queues = self.queues, {}
        for queue in queues.values():
            await queue.stop()

    def leader_and_isr_answered(self, broker_id: int, request, response) -> None:
        callback = self.on_offline_replicas
        if callback is None or not isinstance(request, interbroker.LeaderAndIsrRequest):
            return
        offline = [
            (e.topic_name, e.partition_index)
            for e in getattr(response, "partition_errors", ())
            if e.error_code == ErrorCode.kafka_storage_error
        ]
        if offline:
            callback(broker_id, offline)

    # Requests -----------------------------------------------------------------------------
    def send_leader_and_isr(self, broker_id: int, states) -> None:
        live_leaders = []
        for leader in sorted({state.leader for _topic, _index, state, _replicas in states}):
            info = self.cache.brokers.get(leader)
            endpoint = self.endpoint_for(info) if info is not None else None
            if endpoint is not None:
                live_leaders.append(
                    interbroker.LeaderAndIsrLiveLeader(
                        broker_id=leader, host_name=endpoint.host, port=i32(endpoint.port)
                    )
                )
        self._send(
            broker_id,
            interbroker.LeaderAndIsrRequest,
            _topic_states(
                states, interbroker.LeaderAndIsrTopicState, interbroker.LeaderAndIsrPartitionState
            ),
            live_leaders=tuple(live_leaders),
        )

    def send_update_metadata(self, broker_ids: Iterable[int], states) -> None:
        """One UpdateMetadata to each of `broker_ids`, built once: they differ only in the
        broker epoch (a failover's carries every partition to every broker)."""
        broker_ids = list(broker_ids)
        if not broker_ids:
            return
        brokers = []
        for info in self.cache.brokers.values():
            brokers.append(
                interbroker.UpdateMetadataBroker(
                    id=BrokerId(info.broker_id),
                    endpoints=tuple(
                        interbroker.UpdateMetadataEndpoint(
                            port=i32(e.port),
                            host=e.host,
                            listener=e.listener_name,
                            security_protocol=i16(SECURITY_PROTOCOLS.get(e.security_protocol, 0)),
                        )
                        for e in info.endpoints
                    ),
                    rack=info.rack,
                )
            )
        topic_states = _topic_states(
            states,
            interbroker.UpdateMetadataTopicState,
            interbroker.UpdateMetadataPartitionState,
            lambda topic, index, replicas: {
                "offline_replicas": tuple(
                    r for r in replicas if not self.context.replica_online(r, topic, index)
                )
            },
        )
        live_brokers = tuple(brokers)
        for broker_id in broker_ids:
            self._send(
                broker_id,
                interbroker.UpdateMetadataRequest,
                topic_states,
                live_brokers=live_brokers,
            )

    def send_stop_replica(self, broker_id: int, topic: str, partitions, delete: bool) -> None:
        stopped = tuple(
            interbroker.StopReplicaPartitionState(partition_index=p, delete_partition=delete)
            for p in sorted(partitions)
        )
        self._send(
            broker_id,
            interbroker.StopReplicaRequest,
            (
                interbroker.StopReplicaTopicState(
                    topic_name=TopicName(topic), partition_states=stopped
                ),
            ),
        )

    def _send(self, broker_id: int, request_type, topic_states: tuple, **fields) -> None:
        """Queue a controller request: this controller's id and epoch, the broker epoch it
        knows for the target (KIP-380: the broker refuses one meant for an earlier
        registration), then the request's own topic states and `fields`."""
        request = request_type(
            controller_id=self.context.broker_id,
            controller_epoch=self.context.epoch,
            broker_epoch=self.context.live.get(broker_id, -1),
            topic_states=topic_states,
            **fields,
        )
        self._enqueue(broker_id, request)


def _topic_states(states, topic_type, partition_type, extra_fields=None) -> tuple:
    """(topic, index, state, replicas) grouped by topic as `topic_type`s of `partition_type`s,
    which carry the ZooKeeper partition state; `extra_fields(topic, index, replicas)` adds a
    type's own."""
    by_topic: dict[str, list] = {}
    for topic, index, state, replicas in states:
        by_topic.setdefault(topic, []).append(
            partition_type(
                partition_index=index,
                controller_epoch=state.controller_epoch,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                isr=tuple(state.isr),
                zk_version=state.zk_version,
                replicas=tuple(replicas),
                **(extra_fields(topic, index, replicas) if extra_fields is not None else {}),
            )
        )
    return tuple(topic_type(topic_name=t, partition_states=tuple(ps)) for t, ps in by_topic.items())


def _plaintext_endpoint(info):
    return next(
        (e for e in info.endpoints if e.security_protocol == "PLAINTEXT"),
        info.endpoints[0] if info.endpoints else None,
    )
