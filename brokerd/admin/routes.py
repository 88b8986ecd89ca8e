"""The admin API's routes (`/v1/...`, named after Redpanda's admin API) and /metrics.

Handlers validate their input and raise ApiError for anything a caller got wrong; reads of
files and all maintenance run off the event loop (see AdminServer.in_reader/in_maintenance).
"""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from . import failure_probes, metrics, segments, state
from .context import AdminContext
from .server import SERVER_KEY, AdminServer, ApiError

VERSION = "0.1.0"
API_PREFIX = "/v1"


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=json.dumps)


def _server(request: web.Request) -> AdminServer:
    return request.app[SERVER_KEY]


MAX_METRICS_TOPICS = 1000  # `topic` parameters of one /v1/topic-metrics request


# Health, metrics, brokers -----------------------------------------------------------------
async def get_metrics(request: web.Request) -> web.Response:
    ctx = _server(request).ctx
    _forget_deleted_topics(ctx)  # a deleted topic's series go with it
    body = ctx.metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})


async def get_health(request: web.Request) -> web.Response:
    ctx = _server(request).ctx
    started = ctx.started.is_set()
    zk_connected = ctx.zk.connected
    offline = state.offline_count(ctx)
    if not started:
        status = "starting"
    elif not zk_connected:
        status = "zookeeper_disconnected"
    elif offline:
        status = "degraded"
    else:
        status = "ok"
    body = {
        "status": status,
        "broker_id": ctx.broker_id,
        "started": started,
        "zookeeper_connected": zk_connected,
        "offline_partitions": offline,
    }
    return _json(body, 200 if started and zk_connected else 503)


async def get_topic_metrics(request: web.Request) -> web.Response:
    """Kafka's BrokerTopicMetrics of this broker as running totals since it started (bytes
    in, bytes out, records in; per topic and for all topics) and when they were read: a
    reader's rate is the difference of two reads over the time between them. `topic`
    (repeated) narrows the topics; `totals_only=true` leaves them out."""
    ctx = _server(request).ctx
    stats = ctx.metrics.topic_stats
    _forget_deleted_topics(ctx)
    if _bool_param(request, "totals_only", False):
        return _json({"broker_id": ctx.broker_id, **stats.snapshot(())})
    wanted = request.query.getall("topic", [])
    if len(wanted) > MAX_METRICS_TOPICS:
        raise ApiError(400, f"at most {MAX_METRICS_TOPICS} topics")
    known = [t for t in wanted if ctx.metadata.topic(t) is not None]  # others left out
    return _json({"broker_id": ctx.broker_id, **stats.snapshot(known if wanted else None)})


def _forget_deleted_topics(ctx: AdminContext) -> None:
    """Drop the counters of topics the broker no longer knows (read by /metrics and
    /v1/topic-metrics alike, so neither keeps a deleted topic's series)."""
    ctx.metrics.topic_stats.forget_topics(lambda topic: ctx.metadata.topic(topic) is not None)


async def get_brokers(request: web.Request) -> web.Response:
    server = _server(request)
    ctx = server.ctx
    metadata = ctx.metadata
    now = int(time.time() * 1000)
    me = ctx.broker_id
    entries: dict[int, dict[str, Any]] = {}
    for broker_id, info in metadata.brokers.items():
        entries[broker_id] = {
            "broker_id": broker_id,
            "is_self": broker_id == me,
            "is_controller": broker_id == metadata.controller_id,
            "rack": info.rack,
            "listeners": [_endpoint(e) for e in info.endpoints],
        }
    entries[me] = {
        "broker_id": me,
        "is_self": True,
        "is_controller": ctx.controller.is_active,
        "rack": ctx.config.server.broker_rack,
        "listeners": [_endpoint(e) for e in ctx.advertised_endpoints()],
        "admin_endpoint": server.url,
        "version": VERSION,
        "started_ms": server.created_ms,
        "uptime_ms": now - server.created_ms,
        "log_dirs": [str(d) for d in ctx.config.log_dirs],
        "leader_partitions": len(ctx.replicas.leaders),
        "local_partitions": len(state.local_partitions(ctx)),
    }
    return _json(
        {
            "cluster_id": metadata.cluster_id,
            "controller_id": metadata.controller_id,
            "brokers": [entries[b] for b in sorted(entries)],
        }
    )


def _endpoint(endpoint) -> dict[str, Any]:
    return {
        "name": endpoint.listener_name,
        "security_protocol": endpoint.security_protocol,
        "host": endpoint.host,
        "port": endpoint.port,
    }


# Partitions -----------------------------------------------------------------------------
async def get_partitions(request: web.Request) -> web.Response:
    ctx = _server(request).ctx
    return _json({"broker_id": ctx.broker_id, "partitions": state.partition_views(ctx)})


async def get_topic_partitions(request: web.Request) -> web.Response:
    ctx = _server(request).ctx
    topic = request.match_info["topic"]
    _require_known_topic(ctx, topic)
    return _json(
        {
            "broker_id": ctx.broker_id,
            "topic": topic,
            "partitions": state.partition_views(ctx, topic),
        }
    )


async def get_partition(request: web.Request) -> web.Response:
    ctx = _server(request).ctx
    topic, partition = _topic_partition(request)
    _require_local(ctx, topic, partition)
    return _json(state.partition_view(ctx, topic, partition))


async def get_segments(request: web.Request) -> web.Response:
    server = _server(request)
    topic, partition = _topic_partition(request)
    partition_log = _require_online(server.ctx, topic, partition)
    with_entries = _bool_param(request, "entries", False)
    limit = _int_param(
        request, "limit", segments.DEFAULT_INDEX_ENTRIES, 1, segments.MAX_INDEX_ENTRIES
    )
    cleaner = server.cleaner if partition_log.config.compact else None
    view = await server.in_reader(
        lambda: segments.log_segments_view(
            partition_log, cleaner, with_entries=with_entries, entries_limit=limit
        )
    )
    view["broker_id"] = server.ctx.broker_id
    view["retention_check_interval_ms"] = (
        server.ctx.config.server_log.log_retention_check_interval_ms
    )
    return _json(view)


# Cleaner --------------------------------------------------------------------------------
async def get_cleaner(request: web.Request) -> web.Response:
    server = _server(request)
    ctx = server.ctx
    cleaner = server.cleaner
    compacted = [log for log in ctx.log_manager.all_logs() if log.config.compact]
    logs = await server.in_reader(_cleaner_views, cleaner, compacted)
    thread = ctx.cleaner_thread()
    snapshot = cleaner.state()
    return _json(
        {
            "broker_id": ctx.broker_id,
            "enabled": ctx.cleaner() is not None,
            "last_run_ms": snapshot["last_run_ms"],
            "in_progress": snapshot["in_progress"],
            "uncleanable": snapshot["uncleanable"],
            "thread": {
                "alive": thread.is_alive() if thread is not None else False,
                "passes": thread.passes if thread is not None else 0,
                "errors": thread.errors if thread is not None else 0,
                "backoff_ms": ctx.config.cleaner.log_cleaner_backoff_ms,
            },
            "logs": logs,
        }
    )


def _cleaner_views(cleaner, logs) -> list[dict[str, Any]]:
    views = []
    for partition_log in sorted(logs, key=lambda lg: (lg.topic, lg.partition)):
        if partition_log.closed:
            continue
        stats = cleaner.dirty_stats_for(partition_log)
        last = cleaner.last_reports.get((partition_log.topic, partition_log.partition))
        views.append(state.cleaner_view(stats, last))
    return views


async def get_cleaner_partition(request: web.Request) -> web.Response:
    server = _server(request)
    topic, partition = _topic_partition(request)
    partition_log = _require_online(server.ctx, topic, partition)
    if not partition_log.config.compact:
        raise ApiError(400, f"{topic} is not compacted (cleanup.policy has no compact)")
    views = await server.in_reader(_cleaner_views, server.cleaner, [partition_log])
    if not views:
        raise ApiError(409, f"{topic}-{partition} was closed; retry")
    return _json(views[0])


# Maintenance ----------------------------------------------------------------------------
async def post_retention(request: web.Request) -> web.Response:
    server = _server(request)
    ctx = server.ctx
    topic, partition = await _maintenance_target(request, topic_required=False)
    if topic is not None:
        _require_known_topic(ctx, topic)
        if partition is not None:
            _require_online(ctx, topic, partition)
    started = time.perf_counter()
    try:
        reports = await server.in_maintenance(ctx.log_manager.run_retention, topic, partition)
    except FileNotFoundError as exc:
        raise ApiError(409, f"retention ran concurrently on this log ({exc}); retry") from exc
    ctx.metrics.maintenance_runs.labels("retention").inc()
    return _json(
        {
            "broker_id": ctx.broker_id,
            "topic": topic,
            "partition": partition,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "segments_deleted": sum(r.segments_deleted for r in reports),
            "bytes_freed": sum(r.bytes_freed for r in reports),
            "reports": [r.as_dict() for r in sorted(reports, key=lambda r: (r.topic, r.partition))],
        }
    )


async def post_compaction(request: web.Request) -> web.Response:
    server = _server(request)
    ctx = server.ctx
    topic, partition = await _maintenance_target(request, topic_required=True)
    assert topic is not None  # topic_required
    _require_known_topic(ctx, topic)
    manager = ctx.log_manager
    if partition is not None:
        targets = [_require_online(ctx, topic, partition)]
    else:
        targets = sorted(
            (lg for (t, _), lg in manager.logs.items() if t == topic),
            key=lambda lg: lg.partition,
        )
        if not targets:
            raise ApiError(404, f"no partition of {topic} is stored on this broker")
    if not all(lg.config.compact for lg in targets):
        raise ApiError(
            400, f"{topic} is not compacted (cleanup.policy has no compact); nothing to do"
        )
    cleaner = server.cleaner
    started = time.perf_counter()
    reports = await server.in_maintenance(_clean_all, cleaner, targets)
    ctx.metrics.maintenance_runs.labels("compaction").inc()
    return _json(
        {
            "broker_id": ctx.broker_id,
            "topic": topic,
            "partition": partition,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "records_removed": sum(r["records_removed"] for r in reports),
            "bytes_removed": sum(r["bytes_removed"] for r in reports),
            "reports": reports,
        }
    )


def _clean_all(cleaner, logs) -> list[dict[str, Any]]:
    return [state.clean_report_view(cleaner.clean_log(lg)) for lg in logs if not lg.closed]


async def _maintenance_target(
    request: web.Request, *, topic_required: bool
) -> tuple[str | None, int | None]:
    raw = await request.read()
    if raw.strip():
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"the body is not valid JSON: {exc}") from exc
    else:
        body = {}
    if not isinstance(body, dict):
        raise ApiError(400, 'the body must be a JSON object: {"topic": ..., "partition": ...}')
    unknown = set(body) - {"topic", "partition"}
    if unknown:
        raise ApiError(400, f"unknown fields: {', '.join(sorted(unknown))}")
    topic = body.get("topic")
    partition = body.get("partition")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise ApiError(400, "topic must be a non-empty string")
    if topic is None and topic_required:
        raise ApiError(400, "topic is required")
    if partition is not None:
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise ApiError(400, "partition must be a non-negative integer")
        if topic is None:
            raise ApiError(400, "partition needs a topic")
    return topic, partition


# Validation helpers -----------------------------------------------------------------------
def _topic_partition(request: web.Request) -> tuple[str, int]:
    topic = request.match_info["topic"]
    text = request.match_info["partition"]
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        raise ApiError(400, f"partition must be a non-negative integer, got {text!r}")
    return topic, int(text)


def _require_known_topic(ctx: AdminContext, topic: str) -> None:
    if ctx.metadata.topic(topic) is None and not any(
        t == topic for t, _ in state.local_partitions(ctx)
    ):
        raise ApiError(404, f"unknown topic {topic!r}")


def _require_local(ctx: AdminContext, topic: str, partition: int) -> None:
    _require_known_topic(ctx, topic)
    if (topic, partition) not in set(state.local_partitions(ctx)):
        raise ApiError(404, f"{topic}-{partition} is not stored on ctx {ctx.broker_id}")


def _require_online(ctx: AdminContext, topic: str, partition: int):
    _require_local(ctx, topic, partition)
    found = ctx.log_manager.get_log(topic, partition)
    if found is None:
        reason = ctx.log_manager.offline_partitions.get((topic, partition))
        raise ApiError(409, f"{topic}-{partition} is offline: {reason}")
    return found


def _bool_param(request: web.Request, name: str, default: bool) -> bool:
    text = request.query.get(name)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no", ""):
        return False
    raise ApiError(400, f"{name} must be true or false, got {text!r}")


def _int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query.get(name)
    if text is None:
        return default
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or not low <= int(digits) <= high:
        raise ApiError(400, f"{name} must be an integer in [{low}, {high}], got {text!r}")
    return int(digits)


ROUTES = [
    web.get("/metrics", get_metrics),
    web.get("/v1/health", get_health),
    web.get("/v1/brokers", get_brokers),
    web.get("/v1/topic-metrics", get_topic_metrics),
    web.get("/v1/partitions", get_partitions),
    web.get("/v1/partitions/{topic}", get_topic_partitions),
    web.get("/v1/partitions/{topic}/{partition}", get_partition),
    web.get("/v1/partitions/{topic}/{partition}/segments", get_segments),
    web.get("/v1/cleaner", get_cleaner),
    web.get("/v1/cleaner/{topic}/{partition}", get_cleaner_partition),
    web.post("/v1/maintenance/retention", post_retention),
    web.post("/v1/maintenance/compaction", post_compaction),
    *failure_probes.ROUTES,
]
