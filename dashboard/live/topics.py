"""The topic pages' actions: create a topic (partitions, replication factor, configs), delete
it after typing its name, add partitions, and the configs page (every config with its value,
source and Kafka's documentation line; operators set and reset overrides through
IncrementalAlterConfigs).

Each form posts to its own URL; a refusal (ours or the broker's, in Kafka's words) renders the
page again with the error beside that form and what was typed still in it (HTTP 400), a
success redirects with a message. Changes need the operator role and are audited.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from brokerd.client.errors import KafkaClientError
from brokerd.client.results import AdminError
from dashboard.core import audit, snapshots, throughput
from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster, HistorySample
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from ..api.resources import TOPIC_NAME
from ..api.serializers import MAX_PARTITIONS, MAX_REPLICATION
from .group_list import LIST_REFRESH_S, page_links, sort_columns
from .views import throughput_history

PAGE_SIZE = 50
MAX_CONFIG_VALUE = 10_000
MAX_CREATE_CONFIGS = 100

# DescribeConfigs' sources as the configs page names them: where the value comes from.
SOURCES = {
    "DYNAMIC_TOPIC_CONFIG": "topic override",
    "DYNAMIC_BROKER_CONFIG": "broker (dynamic, this broker)",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "broker (dynamic, cluster default)",
    "STATIC_BROKER_CONFIG": "broker (server.properties)",
    "DEFAULT_CONFIG": "default",
}


class FormError(ValueError):
    """What is wrong with a form, in words for the person who filled it in."""


def _cluster(cluster_id: str) -> Cluster:
    return get_object_or_404(Cluster, name=cluster_id)


def _check_topic(topic_name: str) -> None:
    if not TOPIC_NAME.match(topic_name) or topic_name in (".", ".."):
        raise Http404("no such topic")


def _record(request, cluster, action, target, details, error: str | None) -> None:
    audit.record(request.user, action, target, cluster=cluster, details=details,
                 succeeded=error is None, result=error or "ok")  # fmt: skip


# The topic list and the create form ----------------------------------------------------------
def _page_args(request) -> tuple[str, int]:
    after = request.GET.get("after", "")[:255]
    try:
        size = min(max(int(request.GET.get("size", PAGE_SIZE)), 1), 500)
    except ValueError:
        size = PAGE_SIZE
    return after, size


async def _page_rows(ops, names: list[str]) -> list[dict]:
    """The listed topics' rows: partitions, replication, under-replicated partitions and
    records (high watermark minus log start, summed), from one metadata refresh and one
    ListOffsets per end for the page's partitions only."""
    metadata = await ops.refresh(names or None) if names else None
    if metadata is None:
        return []
    partitions = [
        (n, p) for n in names if n in metadata.topics for p in metadata.topics[n].partitions
    ]
    starts, ends, sizes = await asyncio.gather(
        _offsets(ops, partitions, "earliest"),
        _offsets(ops, partitions, "latest"),
        _leader_sizes(ops, metadata, partitions),
    )
    rows = []
    for n in names:
        info = metadata.topics.get(n)
        if info is None:
            continue
        first = info.partitions.get(0) or next(iter(info.partitions.values()), None)
        known = [(n, p) for p in info.partitions if (n, p) in starts and (n, p) in ends]
        rows.append(
            {
                "name": n,
                "partitions": len(info.partitions),
                "replication": len(first.replicas) if first else 0,
                "under_replicated": sum(
                    1 for p in info.partitions.values() if len(p.isr) < len(p.replicas)
                ),
                "records": sum(ends[tp] - starts[tp] for tp in known)
                if len(known) == len(info.partitions)
                else None,
                "internal": info.is_internal,
                # On disk: the leaders' replicas (one copy), when every leader answered.
                "size_bytes": sum(sizes[tp] for tp in known)
                if all((n, p) in sizes for p in info.partitions)
                else None,
            }
        )
    return rows


async def _leader_sizes(ops, metadata, partitions) -> dict:
    """Each partition's size on its leader (DescribeLogDirs for the page's topics, one
    request per leader); partitions whose leader does not answer are left out."""
    by_leader: dict[int, dict[str, list[int]]] = {}
    for topic, p in partitions:
        leader = metadata.topics[topic].partitions[p].leader
        if leader >= 0:
            by_leader.setdefault(leader, {}).setdefault(topic, []).append(p)
    sizes: dict = {}

    async def ask(broker_id: int, topics: dict[str, list[int]]) -> None:
        try:
            described = await ops.admin.describe_log_dirs([broker_id], topics)
        except KafkaClientError:
            return
        for log_dir in described.get(broker_id, []):
            for tp, replica in log_dir.replicas.items():
                if not replica.is_future:
                    sizes[tp] = sizes.get(tp, 0) + replica.size

    await asyncio.gather(*(ask(b, t) for b, t in by_leader.items()))
    return sizes


RATE_KINDS = {
    HistorySample.Kind.THROUGHPUT: "records_per_s",
    HistorySample.Kind.BYTES_IN: "bytes_in_per_s",
    HistorySample.Kind.BYTES_OUT: "bytes_out_per_s",
}


def _rates(cluster: Cluster, names: list[str]) -> dict[str, dict[str, float]]:
    """Each topic's latest recent samples (HistorySample, recorded by beat): records/s from
    high-watermark growth, bytes in/out per second from the brokers' counters."""
    since = timezone.now() - datetime.timedelta(seconds=settings.HISTORY_INTERVAL_S * 3)
    latest: dict[str, dict[str, float]] = {}
    samples = HistorySample.objects.filter(
        cluster=cluster, kind__in=list(RATE_KINDS), topic__in=names, timestamp__gte=since
    ).order_by("timestamp")
    for sample in samples.values("topic", "kind", "value"):
        latest.setdefault(sample["topic"], {})[RATE_KINDS[sample["kind"]]] = sample["value"]
    return latest  # the newest of each wins


async def _offsets(ops, partitions, spec) -> dict:
    if not partitions:
        return {}
    try:
        listed = await ops.admin.list_offsets(dict.fromkeys(partitions, spec))
    except AdminError as exc:  # a partition without a leader: the rest still count
        listed = exc.results
    return {tp: found.offset for tp, found in listed.items()}


TOPIC_SORTS = (
    "name",
    "partitions",
    "replication",
    "under_replicated",
    "records",
    "size_bytes",
    "records_per_s",
    "bytes_in_per_s",
    "bytes_out_per_s",
)
TOPIC_COLUMNS = [
    ("name", "Topic"),
    ("partitions", "Partitions"),
    ("replication", "Replication"),
    ("under_replicated", "Under-replicated"),
    ("records", "Records"),
    ("size_bytes", "Size"),
    ("records_per_s", "Records/s"),
    ("bytes_in_per_s", "Bytes in/s"),
    ("bytes_out_per_s", "Bytes out/s"),
]
# Sorting by what only the brokers know (records, size) reads it for every matching topic:
# at most this many (the page says so when more matched).
TOPIC_SORT_CAP = 1000


@dataclass(frozen=True)
class TopicQuery:
    search: str = ""
    sort: str = "name"
    descending: bool = False
    after: str = ""
    page: int = 1
    size: int = PAGE_SIZE

    @classmethod
    def from_request(cls, request) -> TopicQuery:
        after, size = _page_args(request)
        sort = request.GET.get("sort", "name")
        try:
            page = min(max(int(request.GET.get("page", 1)), 1), 100_000)
        except ValueError:
            page = 1
        return cls(
            search=request.GET.get("q", "")[:249].strip(),
            sort=sort if sort in TOPIC_SORTS else "name",
            descending=request.GET.get("dir") == "desc",
            after=after,
            page=page,
            size=size,
        )

    @property
    def by_cursor(self) -> bool:
        return self.sort == "name" and not self.descending


def _with_rates(cluster: Cluster, rows: list[dict]) -> list[dict]:
    rates = _rates(cluster, [r["name"] for r in rows])
    for row in rows:
        row.update(dict.fromkeys(RATE_KINDS.values()), **rates.get(row["name"], {}))
    return rows


def _metadata_row(name: str, info) -> dict:
    first = info.partitions.get(0) or next(iter(info.partitions.values()), None)
    return {
        "name": name,
        "partitions": len(info.partitions),
        "replication": len(first.replicas) if first else 0,
        "under_replicated": sum(
            1 for p in info.partitions.values() if len(p.isr) < len(p.replicas)
        ),
    }


def topic_list_page(cluster: Cluster, query: TopicQuery) -> dict:
    """The page's rows in the asked order over every matching topic. By name (ascending) a
    page costs what it shows; by what metadata says (partitions, replication,
    under-replicated) or what the platform recorded (rates) every matching topic is ordered
    first and only the page's rows asked of the brokers; by records or size those are asked
    for every matching topic (up to TOPIC_SORT_CAP)."""
    metadata = with_cluster(cluster, lambda ops: ops.refresh())
    needle = query.search.lower()
    matching = sorted(n for n in metadata.topics if needle in n.lower())
    start, end = (query.page - 1) * query.size, query.page * query.size
    capped = False
    if query.by_cursor:
        rest = [n for n in matching if n > query.after]
        names, more = rest[: query.size], len(rest) > query.size
        rows = with_cluster(cluster, lambda ops: _page_rows(ops, names))
        return {"rows": _with_rates(cluster, rows), "more": more, "matched": len(matching),
                "capped": False}  # fmt: skip
    if query.sort in ("records", "size_bytes"):
        considered = matching[:TOPIC_SORT_CAP]
        capped = len(matching) > TOPIC_SORT_CAP
        ordered = with_cluster(cluster, lambda ops: _page_rows(ops, considered))
    elif query.sort in RATE_KINDS.values():
        ordered = _with_rates(cluster, [{"name": n} for n in matching])
    else:
        ordered = [_metadata_row(n, metadata.topics[n]) for n in matching]
    if query.sort == "name":
        ordered.sort(key=lambda r: r["name"], reverse=True)
    else:
        known = [r for r in ordered if r.get(query.sort) is not None]
        unknown = [r for r in ordered if r.get(query.sort) is None]
        known.sort(key=lambda r: r[query.sort], reverse=query.descending)  # ties by name
        ordered = known + unknown
    shown, more = ordered[start:end], len(ordered) > end
    if query.sort not in ("records", "size_bytes"):
        names = [r["name"] for r in shown]
        shown = with_cluster(cluster, lambda ops: _page_rows(ops, names))
    return {"rows": _with_rates(cluster, shown), "more": more, "matched": len(matching),
            "capped": capped}  # fmt: skip


def _render_topic_list(request, cluster: Cluster, create=None, create_error=None, status=200):
    query = TopicQuery.from_request(request)
    page, error = None, None
    try:
        page = topic_list_page(cluster, query)
    except KafkaClientError as exc:
        error = f"cluster unreachable: {error_text(exc)}"
    rows = page["rows"] if page else []
    rows_only = status == 200 and bool(request.GET.get("rows"))  # list-refresh.js
    return render(
        request,
        "live/topic_rows.html" if rows_only else "live/topics.html",
        {
            "refresh_s": LIST_REFRESH_S,
            "cluster": cluster,
            "rows": rows,
            "query": query,
            "search": query.search,
            "after": query.after,
            "matched": page["matched"] if page else None,
            "capped": page["capped"] if page else False,
            "sort_cap": TOPIC_SORT_CAP,
            "columns": sort_columns(query, TOPIC_COLUMNS, set(TOPIC_SORTS) - {"name"}),
            "links": page_links(
                query, bool(page and page["more"]), rows[-1]["name"] if rows else None
            ),
            "error": error,
            "create": create or {"partitions": "3", "replication_factor": ""},
            "create_error": create_error,
        },
        status=503 if rows_only and error else status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def topic_list(request, cluster_id: str):
    """Topics a page at a time (names after `after`), with a form to create one."""
    return _render_topic_list(request, _cluster(cluster_id))


def parse_configs(text: str) -> dict[str, str]:
    """`name=value` lines (blank lines and # comments skipped) as a dict."""
    configs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name:
            raise FormError(f"config line {number} is not 'name=value': {line.strip()[:80]!r}")
        if name in configs:
            raise FormError(f"config {name} is given twice")
        configs[name] = value.strip()
        if len(configs) > MAX_CREATE_CONFIGS:
            raise FormError(f"at most {MAX_CREATE_CONFIGS} configs")
    return configs


def _count(text: str, what: str, low: int, high: int) -> int:
    """An optional count from a form: -1 (the broker's default) when empty."""
    if not text.strip():
        return -1
    try:
        value = int(text)
    except ValueError:
        raise FormError(f"the {what} is a whole number") from None
    if not low <= value <= high:
        raise FormError(f"the {what} is between {low} and {high}")
    return value


def parse_create_form(form: dict[str, str]) -> tuple[str, int, int, dict[str, str]]:
    name = form["topic_name"]
    if not name or not TOPIC_NAME.match(name) or name in (".", ".."):
        raise FormError(
            "a topic name is 1 to 249 letters, digits, '.', '_' or '-' (and not '.' or '..')"
        )
    partitions = _count(form["partitions"], "number of partitions", 1, MAX_PARTITIONS)
    replication = _count(form["replication_factor"], "replication factor", 1, MAX_REPLICATION)
    return name, partitions, replication, parse_configs(form["configs"])


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def topic_create(request, cluster_id: str):
    cluster = _cluster(cluster_id)
    form = {
        k: request.POST.get(k, "")[:20_000].strip()
        for k in ("topic_name", "partitions", "replication_factor", "configs")
    }
    try:
        name, partitions, replication, configs = parse_create_form(form)
    except FormError as exc:
        return _render_topic_list(request, cluster, form, str(exc), status=400)
    details = {"partitions": partitions, "replication_factor": replication, "configs": configs}
    try:
        with_cluster(cluster, lambda ops: ops.create_topic(name, partitions, replication, configs))
    except KafkaClientError as exc:
        error = f"could not create {name}: {error_text(exc)}"
        _record(request, cluster, "topic.create", name, details, error)
        return _render_topic_list(request, cluster, form, error, status=400)
    _record(request, cluster, "topic.create", name, details, None)
    messages.success(request, f"Topic {name} created.")
    return redirect("topic-page", cluster.name, name)


# The topic page, its delete and add-partitions forms -----------------------------------------
def _render_topic(request, cluster: Cluster, topic_name: str, status=200, **forms):
    admin = AdminApi(cluster)
    partitions, error = [], None
    try:
        partitions = with_cluster(
            cluster, lambda ops: snapshots.topic_partitions(ops, admin, topic_name)
        )
    except KafkaClientError as exc:
        error = error_text(exc)
    except AdminApiError as exc:
        error = str(exc)
    return render(
        request,
        "live/topic.html",
        {
            "cluster": cluster,
            "topic_name": topic_name,
            "partitions": partitions,
            "error": error,
            "partition_count": len(partitions),
            "throughput": throughput_history(cluster, topic_name),
            "throughput_bytes": throughput.history_chart(
                cluster, throughput.BYTES_SERIES, "bytes", topic=topic_name
            ),
            **forms,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def topic(request, cluster_id: str, topic_name: str):
    cluster = _cluster(cluster_id)
    _check_topic(topic_name)
    return _render_topic(request, cluster, topic_name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def topic_delete(request, cluster_id: str, topic_name: str):
    """Deletes the topic once the name typed into the confirmation field is its name."""
    cluster = _cluster(cluster_id)
    _check_topic(topic_name)
    typed = request.POST.get("confirm", "")[:300]
    if typed.strip() != topic_name:
        error = f"type the topic's name, {topic_name}, to delete it"
        return _render_topic(
            request, cluster, topic_name, 400, delete_error=error, delete_confirm=typed
        )
    try:
        with_cluster(cluster, lambda ops: ops.delete_topic(topic_name))
    except KafkaClientError as exc:
        error = f"could not delete {topic_name}: {error_text(exc)}"
        _record(request, cluster, "topic.delete", topic_name, {}, error)
        return _render_topic(
            request, cluster, topic_name, 400, delete_error=error, delete_confirm=typed
        )
    _record(request, cluster, "topic.delete", topic_name, {}, None)
    messages.success(request, f"Topic {topic_name} deleted.")
    return redirect("topic-list", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def add_partitions(request, cluster_id: str, topic_name: str):
    """Grows the topic to the number of partitions asked for (CreatePartitions)."""
    cluster = _cluster(cluster_id)
    _check_topic(topic_name)
    typed = request.POST.get("partitions", "")[:20]
    try:
        total = _count(typed, "new number of partitions", 1, MAX_PARTITIONS)
        if total < 0:
            raise FormError("give the new number of partitions")
        with_cluster(cluster, lambda ops: ops.create_partitions(topic_name, total))
    except (FormError, KafkaClientError) as exc:
        reason = str(exc) if isinstance(exc, FormError) else error_text(exc)
        error = f"could not add partitions: {reason}"
        if not isinstance(exc, FormError):
            _record(request, cluster, "topic.partitions.create", topic_name,
                    {"partitions": typed}, error)  # fmt: skip
        return _render_topic(
            request, cluster, topic_name, 400, partitions_error=error, partitions_typed=typed
        )
    _record(request, cluster, "topic.partitions.create", topic_name, {"partitions": total}, None)
    messages.success(request, f"Topic {topic_name} now has {total} partitions.")
    return redirect("topic-page", cluster.name, topic_name)


# The configs page -------------------------------------------------------------------------------
def config_rows(entries: list[dict]) -> list[dict]:
    """The configs as the page shows them: sorted by name, each with its source in words
    and, for an override, the value it would fall back to."""
    rows = []
    for entry in sorted(entries, key=lambda e: e["name"]):
        inherited = next(
            (s for s in entry["synonyms"] if s["source"] != "DYNAMIC_TOPIC_CONFIG"), None
        )
        rows.append(
            {
                **entry,
                "source_label": SOURCES.get(entry["source"], entry["source"].lower()),
                "is_override": entry["source"] == "DYNAMIC_TOPIC_CONFIG",
                "fallback": inherited,
            }
        )
    return rows


def _render_configs(request, cluster: Cluster, topic_name: str, status=200, edit=None):
    rows, error = [], None
    try:
        entries = with_cluster(
            cluster, lambda ops: ops.describe_topic_configs(topic_name, documentation=True)
        )
        rows = config_rows(entries)
    except KafkaClientError as exc:
        error = f"could not describe the topic's configs: {error_text(exc)}"
    return render(
        request,
        "live/topic_configs.html",
        {
            "cluster": cluster,
            "topic_name": topic_name,
            "rows": rows,
            "overrides": sum(1 for r in rows if r["is_override"]),
            "error": error,
            "edit": edit,  # the form that failed: {"name", "value", "error"}
            "edit_elsewhere": edit is not None and all(r["name"] != edit["name"] for r in rows),
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def topic_configs(request, cluster_id: str, topic_name: str):
    cluster = _cluster(cluster_id)
    _check_topic(topic_name)
    if request.method != "POST":
        return _render_configs(request, cluster, topic_name)
    if not request.user.has_perm(OPERATE_PERMISSION):
        raise PermissionDenied("changing configs needs the operator role")
    name = request.POST.get("name", "")[:255]
    value = request.POST.get("value", "")[: MAX_CONFIG_VALUE + 1]
    reset = request.POST.get("action") == "reset"
    edit = {"name": name, "value": value}
    if reset:
        change, words = (name, "DELETE", None), f"{name} reset to its default"
    else:
        change, words = (name, "SET", value), f"{name} set to {value}"
    details = {"name": name, "operation": change[1], "value": change[2]}
    try:
        if not name:
            raise FormError("which config?")
        if len(value) > MAX_CONFIG_VALUE:
            raise FormError(f"a config value is at most {MAX_CONFIG_VALUE} characters")
        with_cluster(cluster, lambda ops: ops.alter_topic_configs(topic_name, [change]))
    except FormError as exc:
        return _render_configs(request, cluster, topic_name, 400, {**edit, "error": str(exc)})
    except KafkaClientError as exc:
        error = error_text(exc)
        _record(request, cluster, "topic.configs.alter", topic_name, details, error)
        return _render_configs(request, cluster, topic_name, 400, {**edit, "error": error})
    _record(request, cluster, "topic.configs.alter", topic_name, details, None)
    messages.success(request, f"{topic_name}: {words}.")
    return redirect("topic-configs", cluster.name, topic_name)
