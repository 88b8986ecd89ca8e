"""DescribeLogDirs (35): each log dir with its partitions' sizes (what consoles chart)."""

from __future__ import annotations

import shutil
from collections import defaultdict

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module

from .context import HandlerContext


async def handle_describe_log_dirs(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    wanted = None
    if request.body.topics is not None:
        wanted = {(t.topic, p) for t in request.body.topics for p in t.partitions}
    log_manager = ctx.log_manager
    by_dir: dict[str, dict[str, list]] = {str(d): defaultdict(list) for d in log_manager.log_dirs}
    for partition_log in log_manager.all_logs():
        key = (partition_log.topic, partition_log.partition)
        if wanted is not None and key not in wanted:
            continue
        by_dir[str(partition_log.dir.parent)][partition_log.topic].append(
            build(
                module.DescribeLogDirsPartition,
                partition_index=partition_log.partition,
                partition_size=partition_log.size,
                offset_lag=0,
                is_future_key=False,
            )
        )
    results = []
    for directory, topics in by_dir.items():
        usage = shutil.disk_usage(directory)
        results.append(
            build(
                module.DescribeLogDirsResult,
                error_code=ErrorCode.none,
                log_dir=directory,
                topics=tuple(
                    build(module.DescribeLogDirsTopic, name=name, partitions=tuple(partitions))
                    for name, partitions in sorted(topics.items())
                ),
                total_bytes=usage.total,
                usable_bytes=usage.free,
            )
        )
    return build(
        module.DescribeLogDirsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        results=tuple(results),
    )


HANDLERS = {35: handle_describe_log_dirs}
