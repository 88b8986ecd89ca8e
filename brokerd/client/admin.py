"""AdminClient: topics, partitions, configs, cluster, log dirs, records and offsets.

Batched calls return a dict per item and raise AdminError (a KafkaResponseError carrying
per-item `errors` and the other items' `results`) when any item failed. Consumer-group
calls are in `groups.GroupAdmin`, which AdminClient includes.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .acls import AclAdmin
from .cluster import Cluster, TopicPartition
from .errors import ErrorCode, KafkaResponseError, check, error_code
from .groups import GroupAdmin
from .metadata import BrokerInfo, TopicInfo
from .requests import Nested
from .results import (
    OFFSET_SPECS,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConfigSynonym,
    CreatedTopic,
    ListedOffset,
    LogDirDescription,
    NewTopic,
    PartitionReassignment,
    ReplicaLogDirInfo,
    ResourceType,
    raise_for_errors,
)
from .scram_users import ScramAdmin
from .transactions import TransactionAdmin

LIST_OFFSETS = 2
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
DESCRIBE_LOG_DIRS = 35
CREATE_PARTITIONS = 37
ELECT_LEADERS = 43
INCREMENTAL_ALTER_CONFIGS = 44
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
DESCRIBE_CLUSTER = 60

ELECTION_TYPES = {"preferred": 0, "unclean": 1}

OffsetSpec = int | str  # "earliest", "latest", "max_timestamp" or a timestamp in ms


def _ms(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)


class AdminClient(GroupAdmin, AclAdmin, ScramAdmin, TransactionAdmin):
    def __init__(self, cluster: Cluster, *, operation_timeout: float = 30.0):
        self.cluster = cluster
        self.operation_timeout = operation_timeout

    # Topics ----------------------------------------------------------------------------
    async def list_topics(self, *, include_internal: bool = False) -> dict[str, TopicInfo]:
        metadata = await self.cluster.refresh_metadata()
        return {
            name: info
            for name, info in sorted(metadata.topics.items())
            if include_internal or not info.is_internal
        }

    async def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        names = list(names)
        metadata = await self.cluster.refresh_metadata(names)
        results: dict[str, Any] = {}
        for name in names:
            info = metadata.topics.get(name)
            results[name] = (
                info
                if info is not None
                else KafkaResponseError(ErrorCode.unknown_topic_or_partition, None, name)
            )
        return raise_for_errors(results)

    async def create_topics(
        self,
        topics: Iterable[NewTopic],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> dict[str, CreatedTopic]:
        topics = list(topics)
        values = {
            "topics": [
                Nested(
                    "CreatableTopic",
                    name=t.name,
                    num_partitions=t.num_partitions if not t.assignments else -1,
                    replication_factor=t.replication_factor if not t.assignments else -1,
                    assignments=[
                        Nested("CreatableReplicaAssignment", partition_index=p, broker_ids=ids)
                        for p, ids in sorted((t.assignments or {}).items())
                    ],
                    configs=[
                        Nested("CreatableTopicConfig", name=k, value=v)
                        for k, v in t.configs.items()
                    ],
                )
                for t in topics
            ],
            "timeout": _ms(timeout or self.operation_timeout),
            "validate_only": validate_only,
        }
        response = await self._controller_call(CREATE_TOPICS, values)
        results: dict[str, Any] = {}
        for result in response.topics:
            if result.error_code:
                results[result.name] = KafkaResponseError(
                    result.error_code, getattr(result, "error_message", None), result.name
                )
                continue
            results[result.name] = CreatedTopic(
                result.name,
                getattr(result, "topic_id", None),
                int(getattr(result, "num_partitions", -1)),
                int(getattr(result, "replication_factor", -1)),
                {c.name: c.value for c in getattr(result, "configs", ())},
            )
        if not validate_only:
            created = [name for name, r in results.items() if isinstance(r, CreatedTopic)]
            if created:
                await self.cluster.refresh_metadata(created)
        return raise_for_errors(results)

    async def delete_topics(
        self, names: Iterable[str], *, timeout: float | None = None
    ) -> dict[str, None]:
        names = list(names)
        values = {
            "topics": [Nested("DeleteTopicState", name=n, topic_id=None) for n in names],
            "topic_names": names,
            "timeout": _ms(timeout or self.operation_timeout),
        }
        response = await self._controller_call(DELETE_TOPICS, values)
        results: dict[str, Any] = {}
        for result in response.responses:
            results[result.name] = (
                KafkaResponseError(
                    result.error_code, getattr(result, "error_message", None), result.name
                )
                if result.error_code
                else None
            )
            self.cluster.metadata.topics.pop(result.name, None)
        return raise_for_errors(results)

    async def create_partitions(
        self,
        new_totals: Mapping[str, int],
        *,
        assignments: Mapping[str, list[list[int]]] | None = None,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> dict[str, None]:
        """Grow each topic to `new_totals[topic]` partitions."""
        assignments = assignments or {}
        values = {
            "topics": [
                Nested(
                    "CreatePartitionsTopic",
                    name=name,
                    count=count,
                    assignments=[
                        Nested("CreatePartitionsAssignment", broker_ids=ids)
                        for ids in assignments[name]
                    ]
                    if name in assignments
                    else None,
                )
                for name, count in new_totals.items()
            ],
            "timeout": _ms(timeout or self.operation_timeout),
            "validate_only": validate_only,
        }
        response = await self._controller_call(CREATE_PARTITIONS, values)
        results: dict[str, Any] = {}
        for result in response.results:
            results[result.name] = (
                KafkaResponseError(result.error_code, result.error_message, result.name)
                if result.error_code
                else None
            )
        if not validate_only:
            await self.cluster.refresh_metadata(list(new_totals))
        return raise_for_errors(results)

    # Leaders and reassignments (answered by the controller) -----------------------------
    async def elect_leaders(
        self,
        election_type: str | int = "preferred",
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, ErrorCode]:
        """Elect leaders (ElectLeaders): "preferred" (0) hands leadership back to the first
        assigned replica, "unclean" (1) elects a leader for partitions without one, out of
        the ISR if need be. `partitions` None means every partition (the controller then
        answers only for those that got a new leader).

        Per partition: ErrorCode.none (elected) or ErrorCode.election_not_needed (it already
        has that leader). Any other error raises AdminError (`.errors`, `.results`)."""
        kind = ELECTION_TYPES[election_type] if isinstance(election_type, str) else election_type
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions or ():
            by_topic.setdefault(topic, []).append(index)
        values = {
            "election_type": int(kind),
            "topic_partitions": None
            if partitions is None
            else [Nested("TopicPartitions", topic=t, partitions=ps) for t, ps in by_topic.items()],
            "timeout": _ms(timeout or self.operation_timeout),
        }
        response = await self._controller_call(ELECT_LEADERS, values)
        check(getattr(response, "error_code", 0), None, "ElectLeaders")
        results: dict[TopicPartition, Any] = {}
        for topic in response.replica_election_results:
            for p in topic.partition_result:
                code = error_code(p.error_code)
                key = (topic.topic, int(p.partition_id))
                results[key] = (
                    code
                    if code in (ErrorCode.none, ErrorCode.election_not_needed)
                    else KafkaResponseError(code, p.error_message, f"{key[0]}-{key[1]}")
                )
        return raise_for_errors(results)

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
        timeout: float | None = None,
    ) -> dict[TopicPartition, None]:
        """Start (or replace) reassignments, KIP-455: partition -> the target replica ids
        (the first one is the preferred leader), or None to cancel the ongoing one (the
        partition goes back to its original replicas). Returns once the controller has
        accepted them; progress is `list_partition_reassignments`.

        Per-partition failures raise AdminError (`.errors`: partition -> KafkaResponseError
        with UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, duplicate, dead
        or unknown brokers), INVALID_REPLICATION_FACTOR (a changed replica count with
        `allow_replication_factor_change=False`) or NO_REASSIGNMENT_IN_PROGRESS (cancelling
        nothing); `.results`: the accepted ones)."""
        by_topic: dict[str, list[Nested]] = {}
        for (topic, index), replicas in reassignments.items():
            by_topic.setdefault(topic, []).append(
                Nested(
                    "ReassignablePartition",
                    partition_index=index,
                    replicas=None if replicas is None else [int(r) for r in replicas],
                )
            )
        values = {
            "timeout": _ms(timeout or self.operation_timeout),
            "allow_replication_factor_change": allow_replication_factor_change,
            "topics": [
                Nested("ReassignableTopic", name=t, partitions=ps) for t, ps in by_topic.items()
            ],
        }
        response = await self._controller_call(ALTER_PARTITION_REASSIGNMENTS, values)
        check(response.error_code, response.error_message, "AlterPartitionReassignments")
        results: dict[TopicPartition, Any] = {}
        for topic in response.responses:
            for p in topic.partitions:
                key = (topic.name, int(p.partition_index))
                results[key] = (
                    KafkaResponseError(p.error_code, p.error_message, f"{key[0]}-{key[1]}")
                    if p.error_code
                    else None
                )
        return raise_for_errors(results)

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout: float | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The ongoing reassignments (of `partitions`, or all): partitions without one are
        absent, so an empty answer for a partition means its reassignment is done."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions or ():
            by_topic.setdefault(topic, []).append(index)
        values = {
            "timeout": _ms(timeout or self.operation_timeout),
            "topics": None
            if partitions is None
            else [
                Nested("ListPartitionReassignmentsTopics", name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ],
        }
        response = await self._controller_call(LIST_PARTITION_REASSIGNMENTS, values)
        check(response.error_code, response.error_message, "ListPartitionReassignments")
        return {
            (topic.name, int(p.partition_index)): PartitionReassignment(
                tuple(int(r) for r in p.replicas),
                tuple(int(r) for r in p.adding_replicas),
                tuple(int(r) for r in p.removing_replicas),
            )
            for topic in response.topics
            for p in topic.partitions
        }

    async def _controller_call(self, api_key: int, values: dict[str, Any]) -> Any:
        """Controller-routed admin calls; NOT_CONTROLLER moves on to the new controller."""
        response = None
        for attempt in range(self.cluster.retries + 1):
            response = await self.cluster.call_controller(
                api_key, values, timeout=self.operation_timeout + 10
            )
            items = getattr(response, "topics", None) or getattr(response, "responses", None)
            items = items or getattr(response, "results", None) or ()
            codes = [getattr(response, "error_code", 0)]
            codes += [getattr(i, "error_code", 0) for i in items]
            if not any(error_code(code) == ErrorCode.not_controller for code in codes):
                return response
            await asyncio.sleep(self.cluster.retry_backoff * (attempt + 1))
            await self.cluster.refresh_metadata()
        return response

    # Configs ---------------------------------------------------------------------------
    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        keys: Iterable[str] | None = None,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config (or `keys`) of each resource, with its source and synonyms."""
        wanted = None if keys is None else list(keys)
        results: dict[ConfigResource, Any] = {}
        for node_id, group in (await self._by_config_node(resources)).items():
            values = {
                "resources": [
                    Nested(
                        "DescribeConfigsResource",
                        resource_type=int(r.type),
                        resource_name=r.name,
                        configuration_keys=wanted,
                    )
                    for r in group
                ],
                "include_synonyms": include_synonyms,
                "include_documentation": include_documentation,
            }
            response = await self._node_call(node_id, DESCRIBE_CONFIGS, values)
            for result in response.results:
                resource = ConfigResource(ResourceType(result.resource_type), result.resource_name)
                if result.error_code:
                    results[resource] = KafkaResponseError(
                        result.error_code, result.error_message, f"{resource}"
                    )
                    continue
                results[resource] = {c.name: _config_entry(c) for c in result.configs}
        return raise_for_errors(results)

    async def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]:
        resource = ConfigResource.topic(topic)
        return (await self.describe_configs([resource]))[resource]

    async def describe_broker_configs(self, broker_id: int | None = None) -> dict[str, ConfigEntry]:
        if broker_id is None:
            broker_id = min(self.cluster.metadata.brokers)
        resource = ConfigResource.broker(broker_id)
        return (await self.describe_configs([resource]))[resource]

    async def alter_configs(
        self,
        configs: Mapping[ConfigResource, Mapping[str, str | None]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, None]:
        """Replace each resource's dynamic configs with these (Kafka's legacy AlterConfigs)."""
        return await self._alter_by_node(
            ALTER_CONFIGS,
            configs,
            lambda r: [Nested("AlterableConfig", name=k, value=v) for k, v in configs[r].items()],
            validate_only,
        )

    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[tuple[str, AlterConfigOp | str, str | None]]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, None]:
        """Apply (name, op, value) changes; op is SET, DELETE, APPEND or SUBTRACT."""
        return await self._alter_by_node(
            INCREMENTAL_ALTER_CONFIGS,
            changes,
            lambda r: [
                Nested("AlterableConfig", name=name, config_operation=int(_op(op)), value=value)
                for name, op, value in changes[r]
            ],
            validate_only,
        )

    async def _alter_by_node(
        self,
        api_key: int,
        resources: Iterable[ConfigResource],
        alterable_configs: Callable[[ConfigResource], list[Nested]],
        validate_only: bool,
    ) -> dict[ConfigResource, None]:
        """One AlterConfigs or IncrementalAlterConfigs request per node that owns some of
        `resources`; `alterable_configs` builds one resource's config entries."""
        results: dict[ConfigResource, Any] = {}
        for node_id, group in (await self._by_config_node(resources)).items():
            values = {
                "resources": [
                    Nested(
                        "AlterConfigsResource",
                        resource_type=int(r.type),
                        resource_name=r.name,
                        configs=alterable_configs(r),
                    )
                    for r in group
                ],
                "validate_only": validate_only,
            }
            response = await self._node_call(node_id, api_key, values)
            results.update(_alter_results(response))
        return raise_for_errors(results)

    async def _by_config_node(
        self, resources: Iterable[ConfigResource]
    ) -> dict[int | None, list[ConfigResource]]:
        """Broker resources go to that broker; the rest (topics, defaults) to any broker."""
        groups: dict[int | None, list[ConfigResource]] = {}
        if not self.cluster.metadata.brokers:
            await self.cluster.refresh_metadata()
        for resource in resources:
            node = None
            if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and resource.name:
                node = int(resource.name)
            groups.setdefault(node, []).append(resource)
        return groups

    async def _node_call(self, node_id: int | None, api_key: int, values: dict[str, Any]) -> Any:
        if node_id is None:
            return await self.cluster.call_any(api_key, values)
        return await self.cluster.call(node_id, api_key, values)

    # Cluster and log dirs --------------------------------------------------------------
    async def describe_cluster(self) -> ClusterDescription:
        if await self.cluster.supports(DESCRIBE_CLUSTER):
            response = await self.cluster.call_any(
                DESCRIBE_CLUSTER,
                {"include_cluster_authorized_operations": False, "endpoint_type": 1},
            )
            check(response.error_code, response.error_message, "DescribeCluster")
            brokers = tuple(
                BrokerInfo(int(b.broker_id), b.host, int(b.port), b.rack) for b in response.brokers
            )
            return ClusterDescription(response.cluster_id, int(response.controller_id), brokers)
        metadata = await self.cluster.refresh_metadata()
        return ClusterDescription(
            metadata.cluster_id,
            metadata.controller_id,
            tuple(metadata.brokers[b] for b in sorted(metadata.brokers)),
        )

    async def describe_log_dirs(
        self,
        broker_ids: Iterable[int] | None = None,
        topics: Mapping[str, Iterable[int]] | None = None,
    ) -> dict[int, list[LogDirDescription]]:
        """Each broker's log dirs with the replicas (all, or `topics`) they hold."""
        if broker_ids is None:
            broker_ids = sorted((await self.cluster.refresh_metadata()).brokers)
        values = {
            "topics": None
            if topics is None
            else [
                Nested("DescribableLogDirTopic", topic=t, partitions=list(ps))
                for t, ps in topics.items()
            ]
        }
        broker_ids = list(broker_ids)
        responses = await asyncio.gather(
            *(self.cluster.call(b, DESCRIBE_LOG_DIRS, values) for b in broker_ids)
        )
        described = {}
        for broker_id, response in zip(broker_ids, responses, strict=True):
            check(getattr(response, "error_code", 0), None, f"DescribeLogDirs on {broker_id}")
            described[broker_id] = [
                LogDirDescription(
                    result.log_dir,
                    int(result.error_code),
                    {
                        (topic.name, int(p.partition_index)): ReplicaLogDirInfo(
                            int(p.partition_size), int(p.offset_lag), bool(p.is_future_key)
                        )
                        for topic in result.topics
                        for p in topic.partitions
                    },
                    int(getattr(result, "total_bytes", -1)),
                    int(getattr(result, "usable_bytes", -1)),
                )
                for result in response.results
            ]
        return described

    # Records and offsets ---------------------------------------------------------------
    async def delete_records(
        self, before: Mapping[TopicPartition, int], *, timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """Delete records below each offset (-1: the high watermark); the new low watermarks."""
        wait = _ms(timeout or self.operation_timeout)

        async def send(node_id: int, group: dict[TopicPartition, int]):
            values = {
                "topics": [
                    Nested(
                        "DeleteRecordsTopic",
                        name=topic,
                        partitions=[
                            Nested("DeleteRecordsPartition", partition_index=p, offset=o)
                            for (t, p), o in group.items()
                            if t == topic
                        ],
                    )
                    for topic in {t for t, _ in group}
                ],
                "timeout": wait,
            }
            response = await self.cluster.call(node_id, DELETE_RECORDS, values)
            return {
                (topic.name, int(p.partition_index)): (
                    KafkaResponseError(p.error_code, None, f"{topic.name}-{p.partition_index}")
                    if p.error_code
                    else int(p.low_watermark)
                )
                for topic in response.topics
                for p in topic.partitions
            }

        return raise_for_errors(await self.cluster.for_partitions(dict(before), send))

    async def list_offsets(
        self, specs: Mapping[TopicPartition, OffsetSpec], *, isolation_level: int = 0
    ) -> dict[TopicPartition, ListedOffset]:
        """Offsets by spec: "earliest", "latest" (the high watermark when read_uncommitted),
        "max_timestamp", or a timestamp in ms (the first offset at or after it; -1 if none)."""
        timestamps = {tp: _offset_spec(spec) for tp, spec in specs.items()}

        async def send(node_id: int, group: dict[TopicPartition, int]):
            values = {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [
                    Nested(
                        "ListOffsetsTopic",
                        name=topic,
                        partitions=[
                            Nested(
                                "ListOffsetsPartition",
                                partition_index=p,
                                current_leader_epoch=-1,
                                timestamp=ts,
                            )
                            for (t, p), ts in group.items()
                            if t == topic
                        ],
                    )
                    for topic in {t for t, _ in group}
                ],
            }
            response = await self.cluster.call(node_id, LIST_OFFSETS, values)
            return {
                (topic.name, int(p.partition_index)): (
                    KafkaResponseError(p.error_code, None, f"{topic.name}-{p.partition_index}")
                    if p.error_code
                    else ListedOffset(
                        int(p.offset), int(p.timestamp), int(getattr(p, "leader_epoch", -1))
                    )
                )
                for topic in response.topics
                for p in topic.partitions
            }

        return raise_for_errors(await self.cluster.for_partitions(timestamps, send))

    async def _all_partitions(self, topic: str) -> list[TopicPartition]:
        return [(topic, p) for p in await self.cluster.partitions_for(topic, refresh=True)]

    async def high_watermarks(self, topic: str) -> dict[int, int]:
        specs = dict.fromkeys(await self._all_partitions(topic), "latest")
        return {p: r.offset for (_, p), r in (await self.list_offsets(specs)).items()}

    async def earliest_offsets(self, topic: str) -> dict[int, int]:
        specs = dict.fromkeys(await self._all_partitions(topic), "earliest")
        return {p: r.offset for (_, p), r in (await self.list_offsets(specs)).items()}

    async def offsets_for_time(self, topic: str, timestamp_ms: int) -> dict[int, int]:
        """Per partition, the first offset with a timestamp >= `timestamp_ms` (-1: none)."""
        specs = dict.fromkeys(await self._all_partitions(topic), timestamp_ms)
        return {p: r.offset for (_, p), r in (await self.list_offsets(specs)).items()}


def _offset_spec(spec: OffsetSpec) -> int:
    if isinstance(spec, str):
        try:
            return OFFSET_SPECS[spec]
        except KeyError:
            raise ValueError(f"unknown offset spec {spec!r}") from None
    return int(spec)


def _op(op: AlterConfigOp | str) -> AlterConfigOp:
    return op if isinstance(op, AlterConfigOp) else AlterConfigOp[op.upper()]


def _config_entry(config: Any) -> ConfigEntry:
    source = int(getattr(config, "config_source", -1))
    return ConfigEntry(
        name=config.name,
        value=config.value,
        source=ConfigSource(source)
        if source in ConfigSource._value2member_map_
        else ConfigSource.UNKNOWN,
        read_only=bool(config.read_only),
        is_sensitive=bool(config.is_sensitive),
        synonyms=tuple(
            ConfigSynonym(s.name, s.value, ConfigSource(int(s.source)))
            for s in getattr(config, "synonyms", ())
        ),
        config_type=int(getattr(config, "config_type", 0)),
        documentation=getattr(config, "documentation", None),
    )


def _alter_results(response: Any) -> dict[ConfigResource, Any]:
    results: dict[ConfigResource, Any] = {}
    for result in response.responses:
        resource = ConfigResource(ResourceType(result.resource_type), result.resource_name)
        results[resource] = (
            KafkaResponseError(result.error_code, result.error_message, str(resource))
            if result.error_code
            else None
        )
    return results
