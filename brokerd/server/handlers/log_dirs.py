"""Log dirs: DescribeLogDirs (35), each log dir with its partitions' sizes and lags, and
AlterReplicaLogDirs (34), moving replicas between this broker's log dirs (KIP-113)."""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict

from brokerd.log import errors as log_errors
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from .context import HandlerContext

# DescribeLogDirsResponse's "not available" for sizes and lags.
UNKNOWN = -1


async def handle_describe_log_dirs(ctx: HandlerContext, request: Request):
    """Kafka's ReplicaManager.describeLogDirs: every configured dir; an offline one with
    KAFKA_STORAGE_ERROR and nothing else; a live one with its disk's total and usable
    bytes and, per partition asked for, the size, the offset lag (a future replica: how
    far it is behind the current log; the current log: how far its end is below the high
    watermark, so 0) and whether it is a future replica being moved there."""
    module = response_module(request.api_key, request.api_version)
    if not ctx.auth.cluster(AclOperation.DESCRIBE):  # ACLs: DESCRIBE on the cluster
        return build(
            module.DescribeLogDirsResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            results=(),
        )
    wanted = None
    if request.body.topics is not None:
        wanted = {(t.topic, p) for t in request.body.topics for p in t.partitions}
    manager = ctx.log_manager
    by_dir: dict[str, dict[str, list]] = {str(d): defaultdict(list) for d in manager.log_dirs}
    entries = [(lg, False) for lg in manager.all_logs()]
    moves = manager.moving()
    entries += [(move.future, True) for move in moves.values()]
    for partition_log, is_future in entries:
        key = (partition_log.topic, partition_log.partition)
        if wanted is not None and key not in wanted:
            continue
        parent = str(partition_log.dir.parent)
        if parent not in by_dir:
            continue
        if is_future:
            lag = moves[key].lag
        else:
            lag = max(partition_log.high_watermark - partition_log.log_end_offset, 0)
        by_dir[parent][partition_log.topic].append(
            build(
                module.DescribeLogDirsPartition,
                partition_index=partition_log.partition,
                partition_size=partition_log.size,
                offset_lag=lag,
                is_future_key=is_future,
            )
        )
    usages = await asyncio.to_thread(_disk_usage, [d for d in by_dir])
    results = []
    for directory, topics in by_dir.items():
        usage = usages.get(directory)
        offline = directory in {str(d) for d in manager.offline_dirs} or usage is None
        results.append(
            build(
                module.DescribeLogDirsResult,
                error_code=ErrorCode.kafka_storage_error if offline else ErrorCode.none,
                log_dir=directory,
                topics=()
                if offline
                else tuple(
                    build(
                        module.DescribeLogDirsTopic,
                        name=name,
                        partitions=tuple(sorted(parts, key=lambda p: p.partition_index)),
                    )
                    for name, parts in sorted(topics.items())
                ),
                total_bytes=UNKNOWN if usage is None else usage[0],
                usable_bytes=UNKNOWN if usage is None else usage[1],
            )
        )
    return build(
        module.DescribeLogDirsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        results=tuple(results),
    )


def _disk_usage(directories: list[str]) -> dict[str, tuple[int, int]]:
    usages = {}
    for directory in directories:
        try:
            usage = shutil.disk_usage(directory)
        except OSError:
            continue
        usages[directory] = (usage.total, usage.free)
    return usages


async def handle_alter_replica_log_dirs(ctx: HandlerContext, request: Request):
    """Kafka's ReplicaManager.alterReplicaLogDirs, per partition: NONE once the move is
    under way (or the replica already is there), LOG_DIR_NOT_FOUND for a path that is not
    one of log.dirs, KAFKA_STORAGE_ERROR when the dir or the partition is offline,
    REPLICA_NOT_AVAILABLE when this broker has no replica yet (it is then made there)."""
    module = response_module(request.api_key, request.api_version)
    wanted: dict[tuple[str, int], str] = {}
    for target in request.body.dirs:
        for topic in target.topics:
            for partition in topic.partitions:
                wanted[(topic.name, partition)] = target.path  # a repeat: the last one wins
    if not ctx.auth.cluster(AclOperation.ALTER):  # ACLs: ALTER on the cluster (Kafka)
        codes = dict.fromkeys(wanted, ErrorCode.cluster_authorization_failed)
    else:
        codes = await asyncio.to_thread(_alter_all, ctx, wanted)
    by_topic: dict[str, list] = defaultdict(list)
    for (topic, partition), code in codes.items():
        by_topic[topic].append(
            build(
                module.AlterReplicaLogDirPartitionResult,
                partition_index=partition,
                error_code=code,
            )
        )
    return build(
        module.AlterReplicaLogDirsResponse,
        throttle_time=NO_THROTTLE,
        results=tuple(
            build(module.AlterReplicaLogDirTopicResult, topic_name=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


def _alter_all(
    ctx: HandlerContext, wanted: dict[tuple[str, int], str]
) -> dict[tuple[str, int], ErrorCode]:
    """On a worker thread (creating a future log makes directories and files)."""
    codes = {}
    manager = ctx.log_manager
    for (topic, partition), path in wanted.items():
        info = ctx.metadata.topic(topic)
        try:
            if info is None or partition not in info.assignment:
                # Nothing is remembered for a partition the cluster does not have (the
                # request must not grow the broker's state without bound).
                if manager.configured_dir(path) in manager.offline_dirs:
                    raise log_errors.KafkaStorageError(f"log dir {path} is offline")
                raise log_errors.ReplicaNotAvailableError(f"{topic}-{partition} is not here")
            manager.alter_log_dir(topic, partition, path)
            code = ErrorCode.none
        except log_errors.LogError as exc:
            code = ErrorCode(exc.error_code)
        except OSError:
            code = ErrorCode.kafka_storage_error
        codes[(topic, partition)] = code
    return codes


HANDLERS = {34: handle_alter_replica_log_dirs, 35: handle_describe_log_dirs}
