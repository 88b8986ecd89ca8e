"""Topic creation shared by CreateTopics, Metadata auto-creation and the group coordinator:
names, sizes, configs."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence

from brokerd.config import BrokerConfig, ConfigError, validate_topic_overrides
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache, TopicInfo
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.util.background import BackgroundTasks

from .partition_limits import check_broker_limit, check_new_partitions

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
# How long a CreateTopics answer waits for this broker's replicas of the new partitions.
LOCAL_REPLICAS_WAIT_S = 2.0
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str | None) -> None:
    """Kafka's Topic.validate: legal characters, length, not '.' or '..'."""
    if not name:
        raise KafkaError(
            ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise KafkaError(ErrorCode.invalid_topic_exception, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def validate_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Topic overrides as strings, checked through brokerd.config (INVALID_CONFIG)."""
    cleaned = {name: value for name, value in configs.items() if value is not None}
    try:
        validate_topic_overrides(cleaned)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.invalid_config, str(exc)) from exc
    return cleaned


class TopicAdmin:
    """Creates topics for CreateTopics, Metadata auto-creation and the group coordinator's
    __consumer_offsets: plans the assignment, writes it through the controller, then takes
    this broker's share of the new partitions."""

    def __init__(
        self,
        config: BrokerConfig,
        broker_id: int,
        metadata: MetadataCache,
        controller: Controller,
        replicas: ReplicaManager,
        lock: asyncio.Lock,
    ):
        self.config = config
        self.broker_id = broker_id
        self.metadata = metadata
        self.controller = controller
        self.replicas = replicas
        self.lock = lock  # topic creation, deletion, partition changes: one at a time
        self._background = BackgroundTasks(log, "taking up new partitions failed")

    def plan_assignment(
        self,
        num_partitions: int,
        replication_factor: int,
        explicit: Mapping[int, Sequence[int]] | None = None,
        first_partition: int = 0,
        topic: str | None = None,
    ) -> dict[int, list[int]]:
        """The replica assignment for new partitions: explicit (checked) or round-robin, within
        the partition limits (checked before anything is laid out)."""
        if explicit:
            check_new_partitions(
                self.config,
                self.metadata,
                self.broker_id,
                topic,
                len(explicit),
                max(map(len, explicit.values())),
                first_partition,
            )
            live = set(self.metadata.brokers)
            assignment = {}
            sizes = set()
            for index, (partition, replicas) in enumerate(sorted(explicit.items())):
                if partition != first_partition + index:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        "Partitions should be a consecutive 0-based integer sequence",
                    )
                if len(set(replicas)) != len(replicas) or not replicas:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        f"Duplicate or empty replica list for partition {partition}",
                    )
                unknown = [r for r in replicas if r not in live]
                if unknown:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment, f"Unknown broker(s) {unknown}"
                    )
                sizes.add(len(replicas))
                assignment[partition] = list(replicas)
            if len(sizes) > 1:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    "All partitions should have the same number of replicas",
                )
            check_broker_limit(self.config, self.metadata, assignment)
            return assignment
        if num_partitions < 1:
            raise KafkaError(
                ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
            )
        if replication_factor < 1:
            raise KafkaError(
                ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0."
            )
        brokers = len(self.metadata.brokers) or 1
        if replication_factor > brokers:
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                f"Replication factor: {replication_factor} larger than available brokers: {brokers}.",
            )
        check_new_partitions(
            self.config,
            self.metadata,
            self.broker_id,
            topic,
            num_partitions,
            replication_factor,
            first_partition,
        )
        assignment = self.controller.assign_replicas(
            num_partitions, replication_factor, first_partition
        )
        check_broker_limit(self.config, self.metadata, assignment)
        return assignment

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None] | None = None,
        explicit_assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> tuple[dict[int, list[int]], dict[str, str], TopicInfo | None]:
        validate_topic_name(name)
        # One creation at a time: pipelined Metadata requests for one new topic must not see it
        # half-made (assignment written, partition states not yet).
        async with self.lock:
            if self.metadata.topic(name) is not None:
                raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
            overrides = validate_configs(configs or {})
            assignment = self.plan_assignment(
                num_partitions, replication_factor, explicit_assignment, topic=name
            )
            if validate_only:
                return assignment, overrides, None
            info = await self.controller.create_topic(name, assignment, overrides)
            await self._take_up_new_partitions()
            return assignment, overrides, info

    async def _take_up_new_partitions(self) -> None:
        """This broker's replicas of the new partitions (their logs made, leaders taking
        appends). The answer waits for them at most LOCAL_REPLICAS_WAIT_S: as with Kafka,
        CreateTopics answers once the assignment and the leaders are stored, and a topic of
        thousands of partitions does not hold the answer while its logs are made; they
        follow in the background (NOT_LEADER_OR_FOLLOWER, retriable, meanwhile)."""
        syncing = self._background.spawn(self.replicas.sync_leadership())
        await asyncio.wait({syncing}, timeout=LOCAL_REPLICAS_WAIT_S)
