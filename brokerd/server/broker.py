"""The broker's composition root: ZooKeeper session, metadata, storage, replication, groups,
controller role, listeners and admin API, each built here and handed only the collaborators
(or plain values) it uses. No other module imports Broker (import-linter checks it).

Start-up follows Kafka's order: ZooKeeper and the cluster id, the log manager (recovery),
the listeners (so the registration can publish bound ports), the registration in
/brokers/ids, the controller election, then leadership of the partitions whose state names
this broker. Shutdown reverses it and ends with the log manager's clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging

from brokerd.admin import ROUTES as ADMIN_ROUTES
from brokerd.admin import AdminContext, AdminServer, BrokerMetrics, BrokerStateCollector
from brokerd.config import BrokerConfig, Endpoint, LogConfig
from brokerd.coordination import zk_client, zk_data
from brokerd.coordination.acl_store import AclStore
from brokerd.coordination.control_epochs import ControlRequestEpochs
from brokerd.coordination.controlled_shutdown import ControlledShutdown
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.producer_ids import ProducerIdManager
from brokerd.groups.coordinator import GroupCoordinator
from brokerd.groups.metadata_manager import GroupMetadataManager
from brokerd.log.cleaner_manager import CleanerThread, LogCleanerManager
from brokerd.log.manager import LogManager
from brokerd.peer_security import peer_security
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.security.authorizer import AclAuthorizer, authorizer_enabled
from brokerd.transactions.coordinator import TransactionCoordinator
from brokerd.transactions.markers import MarkerSender
from brokerd.transactions.state_manager import TransactionStateManager
from brokerd.util.background import BackgroundTasks

from .authorization import RequestAuthorizer
from .connection import ConnectionServices
from .connection_quotas import ConnectionQuotas
from .dispatcher import Dispatcher
from .dynamic_broker_config import DynamicBrokerConfigs
from .failure_probes import FailureProbes
from .fetch_session import FetchSessionCache
from .handlers.context import HandlerContext
from .handlers.txn_markers import write_local_markers
from .listener import Listener
from .memory_pool import RequestMemoryPool
from .topic_admin import TopicAdmin

log = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self._background = BackgroundTasks(log, "background task failed")
        self._stopping = False
        self.started = asyncio.Event()
        self.metrics = BrokerMetrics()
        self.zk = zk_client.ZkClient(
            config.zookeeper.hosts,
            config.zookeeper.chroot,
            config.zookeeper.zookeeper_session_timeout_ms,
            config.zookeeper.zookeeper_connection_timeout_ms,
        )
        self.metadata = MetadataCache(self.zk)
        self.control_epochs = ControlRequestEpochs(self.zk, self.broker_id)
        self.failure_probes = FailureProbes(config.admin.failure_probes)
        self.controller = Controller(
            self.zk,
            self.broker_id,
            self.metadata,
            config,
            endpoint_for=lambda info: self.replicas.inter_broker_endpoint(info),
            probes=self.failure_probes,
        )
        self.log_manager = LogManager(
            config.log_dirs,
            config.log_config(),
            config.explicit,
            topic_config=self._topic_log_config,
            recovery_threads_per_data_dir=(
                lambda: config.server_log.num_recovery_threads_per_data_dir
            ),
            alter_log_dirs_threads=config.server_log.num_replica_alter_log_dirs_threads,
            # A dynamic-only broker config (this broker's, else the cluster default), read
            # at each copy step: a change reaches moves already running.
            alter_log_dirs_io_max_bytes_per_second=(
                lambda: config.get("replica.alter.log.dirs.io.max.bytes.per.second")
            ),
        )
        # Made at start-up (log.cleaner.enable), after the dynamic configs it reads.
        self.cleaner: LogCleanerManager | None = None
        self._cleaner_thread: CleanerThread | None = None
        self.replicas = ReplicaManager(
            self.broker_id,
            self.log_manager,
            self.metadata,
            self.zk,
            config.replication,
            inter_broker_listener_name=config.inter_broker_listener_name,
            retention_check_interval_ms=config.server_log.log_retention_check_interval_ms,
            offset_checkpoint_interval_ms=config.server_log.log_flush_offset_checkpoint_interval_ms,
            topic_log_config=self._topic_log_config,
            default_log_config=config.log_config,
            security_for=functools.partial(peer_security, config),
            spawn=self.spawn,
            stats=self.metrics.topic_stats,
        )
        self.replicas.isr_change_listeners.append(
            lambda expand: (self.metrics.isr_expands if expand else self.metrics.isr_shrinks).inc()
        )
        self.dynamic_configs = DynamicBrokerConfigs(
            config,
            self.broker_id,
            self.zk,
            spawn=self.spawn,
            on_reloaded=self.replicas.refresh_all_configs,
        )
        self.admin_lock = asyncio.Lock()  # topic creation, deletion, partition changes
        self.topic_admin = TopicAdmin(
            config, self.broker_id, self.metadata, self.controller, self.replicas, self.admin_lock
        )
        group_metadata = GroupMetadataManager(
            self.replicas,
            self.metadata,
            config.groups,
            create_topic=self.topic_admin.create_topic,
            probes=self.failure_probes,
        )
        self.groups = GroupCoordinator(group_metadata, config.groups)
        self.replicas.leadership_listeners.append(self.groups.on_leadership_change)
        self.fetch_sessions = FetchSessionCache(
            config.server.max_incremental_fetch_session_cache_slots
        )
        self.producer_ids = ProducerIdManager(self.zk, self.broker_id)
        transaction_state = TransactionStateManager(
            self.replicas,
            self.metadata,
            config.transactions,
            create_topic=self.topic_admin.create_topic,
        )
        self.transactions = TransactionCoordinator(
            transaction_state,
            MarkerSender(
                self.broker_id,
                self.metadata,
                endpoint_of=self.replicas.inter_broker_endpoint,
                security_for=functools.partial(peer_security, config),
                local=functools.partial(write_local_markers, self.replicas, self.groups),
            ),
            self.producer_ids,
            config.transactions,
            offsets_partition_for=self.groups.partition_for,
            topic_exists=lambda topic: self.metadata.topic(topic) is not None,
        )
        self.replicas.leadership_listeners.append(self.transactions.on_leadership_change)
        # authorizer.class.name: ACLs from ZooKeeper, kept current by change notifications.
        self.acl_store: AclStore | None = None
        self.auth = RequestAuthorizer()
        if authorizer_enabled(config.get("authorizer.class.name")):
            authorizer = AclAuthorizer.from_config(config.raw)
            self.acl_store = AclStore(self.zk, authorizer, spawn=self.spawn)
            self.auth = RequestAuthorizer(authorizer, self.acl_store)
        self.dispatcher = Dispatcher(self._handler_context())
        self.dispatcher.observers.append(self.metrics.observe_request)
        connections = ConnectionServices.of(
            config,
            self.dispatcher.dispatch,
            RequestMemoryPool(config.socket.queued_max_request_bytes),
            self.metrics,
        )
        quotas = ConnectionQuotas(config)  # max.connections counts across listeners
        self.listeners: list[Listener] = []
        self.listeners.extend(
            Listener(endpoint, config, self.zk, quotas, connections, peers=self.listeners)
            for endpoint in config.listeners
        )
        admin_context = self._admin_context()
        self.metrics.add_collector(BrokerStateCollector(admin_context))
        self.admin = AdminServer(admin_context, ADMIN_ROUTES)

    def _handler_context(self) -> HandlerContext:
        return HandlerContext(
            config=self.config,
            broker_id=self.broker_id,
            metadata=self.metadata,
            log_manager=self.log_manager,
            replicas=self.replicas,
            groups=self.groups,
            transactions=self.transactions,
            controller=self.controller,
            zk=self.zk,
            producer_ids=self.producer_ids,
            fetch_sessions=self.fetch_sessions,
            control_epochs=self.control_epochs,
            dynamic_configs=self.dynamic_configs,
            topic_admin=self.topic_admin,
            admin_lock=self.admin_lock,
            auth=self.auth,
            topic_stats=self.metrics.topic_stats,
        )

    def _admin_context(self) -> AdminContext:
        return AdminContext(
            config=self.config,
            broker_id=self.broker_id,
            metadata=self.metadata,
            log_manager=self.log_manager,
            replicas=self.replicas,
            controller=self.controller,
            zk=self.zk,
            metrics=self.metrics,
            failure_probes=self.failure_probes,
            started=self.started,
            advertised_endpoints=lambda: self.advertised_endpoints,
            cleaner=lambda: self.cleaner,
            cleaner_thread=lambda: self._cleaner_thread,
        )

    # Endpoints ------------------------------------------------------------------------
    @property
    def advertised_endpoints(self) -> list[Endpoint]:
        """advertised.listeners, with port 0 replaced by the port actually bound."""
        bound = self.bound_ports
        out = []
        for endpoint in self.config.advertised_listeners:
            port = endpoint.port or bound.get(endpoint.listener_name, 0)
            host = endpoint.host or "localhost"
            out.append(dataclasses.replace(endpoint, host=host, port=port))
        return out

    @property
    def bound_ports(self) -> dict[str, int]:
        return {ls.endpoint.listener_name: ls.bound_port for ls in self.listeners if ls.server}

    # Lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        await self.zk.start()
        await self.metadata.load()
        await self.dynamic_configs.load()
        if self.acl_store is not None:  # before the listeners: no request unauthorized-by-gap
            await self.acl_store.start()
        await asyncio.to_thread(self.log_manager.startup)
        cluster_id = self.metadata.cluster_id
        if cluster_id is None:  # metadata.load() reads or creates it
            raise RuntimeError("the metadata was loaded without a cluster id")
        await asyncio.to_thread(self.log_manager.ensure_meta_properties, self.broker_id, cluster_id)
        await self.replicas.start()
        if self.config.cleaner.log_cleaner_enable:
            self._start_cleaner()
        for listener in self.listeners:
            await listener.start()
        await self.admin.start()  # before registering: the registration carries its URL
        await self._register()
        self.zk.callbacks.on_connected.append(self._on_zk_connected)
        self.metadata.listeners.append(self._on_topics_changed)
        self.metadata.config_listeners.append(self.replicas.refresh_topic_config)
        self.controller.on_topic_deleted.append(self.replicas.delete_partitions)
        # Before any leadership (LeaderAndIsr may arrive during the election): led
        # __consumer_offsets partitions load.
        self.groups.start()
        self.transactions.start()  # and led __transaction_state partitions
        await self.controller.elect()
        await self.replicas.sync_leadership()
        await self._await_own_partitions()
        self.started.set()
        log.info("broker %d started, cluster id %s", self.broker_id, self.metadata.cluster_id)

    async def _await_own_partitions(self, timeout: float = 10.0) -> None:
        """Report ready once the controller's LeaderAndIsr has given this broker a role for
        every partition it holds, so a restarted broker does not answer its first clients
        NOT_LEADER_OR_FOLLOWER. Bounded: without a controller the broker starts anyway."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        # The partitions still without a role: read from the whole metadata every second
        # (topics deleted or assigned meanwhile), between those reads only narrowed (the
        # loop handles the LeaderAndIsr of 10,000 partitions meanwhile).
        missing: list[tuple[str, int]] = []
        looked_at = -1.0
        while True:
            whole_look = loop.time() - looked_at >= 1.0 or not missing
            if whole_look:
                looked_at = loop.time()
                missing = [
                    (info.name, index)
                    for info in list(self.metadata.topics.values())
                    if not info.marked_for_deletion
                    for index, replicas in info.assignment.items()
                    if self.broker_id in replicas
                ]
            roles, offline = self.replicas.partitions, self.log_manager.offline_partitions
            missing = [tp for tp in missing if tp not in roles and tp not in offline]
            if not missing:
                if whole_look:
                    return
                continue  # all seen so far have a role: one whole look before saying so
            if loop.time() > deadline:
                log.warning(
                    "starting without a role for %d partitions, e.g. %s", len(missing), missing[:3]
                )
                return
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """Stop accepting, answer in-flight requests, close the session, shut storage down."""
        if self._stopping:
            return
        self._stopping = True
        self.dynamic_configs.close()
        if self.acl_store is not None:
            self.acl_store.close()
        # Leadership moves away first, while this broker still serves (it may itself be
        # the controller answering the request).
        await ControlledShutdown(
            self.broker_id,
            self.config,
            self.metadata,
            self.zk,
            endpoint_for=self.replicas.inter_broker_endpoint,
            led_partitions=lambda: self.replicas.leaders.values(),
        ).run()
        for listener in self.listeners:
            listener.stop_accepting()
        self.replicas.wake_all_waiters()
        # Parked JoinGroup/SyncGroup answers (NOT_COORDINATOR) before waiting on owed responses.
        await self.groups.shutdown()
        await self.transactions.shutdown()
        for listener in self.listeners:
            await listener.drain()
        self._background.cancel_all()
        await self.admin.stop()
        await self.controller.stop()
        try:
            await self.zk.stop()
        except Exception:  # ZooKeeper may be gone; the session then expires by itself
            log.warning("closing the ZooKeeper session failed", exc_info=True)
        await self.replicas.shutdown()
        if self._cleaner_thread is not None:
            await asyncio.to_thread(self._cleaner_thread.stop)
        if self.log_manager.started:  # never write checkpoints into dirs it did not load
            await asyncio.to_thread(self.log_manager.shutdown)
        log.info("broker %d stopped", self.broker_id)

    async def _register(self) -> None:
        registration = zk_data.broker_registration(
            self.advertised_endpoints, self.config.server.broker_rack, admin_endpoint=self.admin.url
        )
        await zk_client.register_broker(
            self.zk,
            self.broker_id,
            registration,
            wait_ms=self.config.zookeeper.zookeeper_session_timeout_ms + 2000,
        )
        await self.control_epochs.registered()
        await self.metadata.refresh_brokers()

    # ZooKeeper session and watches ----------------------------------------------------
    def _on_zk_connected(self) -> None:
        if not self._stopping:
            self.spawn(self._after_reconnect())

    async def _after_reconnect(self) -> None:
        """A new session lost the ephemerals: register again, re-run the election."""
        if await self.zk.exists(zk_data.broker_path(self.broker_id)):
            return  # the same session came back: nothing was lost
        log.warning("ZooKeeper session was re-established; registering broker again")
        await self._register()
        if self.acl_store is not None:  # the ACL change watches died with the old session
            await self.acl_store.resync()
        await self.controller.elect()
        await self.replicas.sync_leadership()

    def _on_topics_changed(self) -> None:
        if not self._stopping:
            self.spawn(self._topics_changed())

    async def _topics_changed(self) -> None:
        if self.controller.is_active:
            await self.controller.elect_missing_leaders()
            await self.controller.process_pending_deletions()
            await self.controller.on_topics_changed()
        await self.replicas.sync_leadership()

    def _start_cleaner(self) -> None:
        """Compaction runs on its own thread, off the event loop."""
        cleaner_config = self.config.cleaner
        self.cleaner = LogCleanerManager(
            dedupe_buffer_size=cleaner_config.log_cleaner_dedupe_buffer_size
        )
        self._cleaner_thread = CleanerThread(
            self.cleaner,
            self.log_manager.all_logs,
            backoff_ms=cleaner_config.log_cleaner_backoff_ms,
        )
        self._cleaner_thread.start()

    def _topic_log_config(self, topic: str) -> LogConfig:
        """A topic's LogConfig: its overrides in ZooKeeper over the broker's current ones."""
        info = self.metadata.topic(topic)
        return self.config.log_config(info.configs if info else {})

    def spawn(self, coroutine) -> asyncio.Task:
        return self._background.spawn(coroutine)
