"""What request handlers are given: the broker's collaborators they use, and nothing else.

Built once by the broker (the composition root) and handed to the dispatcher, so a handler
is `handle_x(ctx, request)` over named collaborators rather than over the whole broker, and
a test can build one from the few pieces the handler under test reads.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from brokerd.admin.topic_metrics import BrokerTopicStats
from brokerd.config import BrokerConfig
from brokerd.coordination.control_epochs import ControlRequestEpochs
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.producer_ids import ProducerIdManager
from brokerd.coordination.zk_client import ZkClient
from brokerd.groups.coordinator import GroupCoordinator
from brokerd.log.manager import LogManager
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.transactions.coordinator import TransactionCoordinator

from ..authorization import NO_AUTHORIZER, RequestAuthorizer
from ..dynamic_broker_config import DynamicBrokerConfigs
from ..fetch_session import FetchSessionCache
from ..topic_admin import TopicAdmin


@dataclass(frozen=True, slots=True)
class HandlerContext:
    config: BrokerConfig
    broker_id: int
    metadata: MetadataCache
    log_manager: LogManager
    replicas: ReplicaManager
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    controller: Controller
    zk: ZkClient
    producer_ids: ProducerIdManager
    fetch_sessions: FetchSessionCache
    control_epochs: ControlRequestEpochs
    dynamic_configs: DynamicBrokerConfigs
    topic_admin: TopicAdmin
    # Topic creation, deletion and partition changes, one at a time (shared with topic_admin).
    admin_lock: asyncio.Lock
    # ACL checks for the request being handled (authorizer.class.name; off: all pass).
    auth: RequestAuthorizer = NO_AUTHORIZER
    # Kafka's BrokerTopicMetrics (bytes and records in, bytes out), read by the admin API.
    topic_stats: BrokerTopicStats = field(default_factory=BrokerTopicStats)
