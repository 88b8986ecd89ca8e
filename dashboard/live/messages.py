"""The message browser: a topic's records a page at a time (core.records, the REST API's
browse), decoded in the browser, a live tail over the WebSocket, and an operator's produce
form whose error stays beside it with what was typed.

The page is an async view: a scan may take seconds, and under ASGI Django runs every sync
view in one shared thread, so a sync page would hold up every other page meanwhile. Kafka
work runs in a worker thread (with_cluster), the database and templates through
sync_to_async.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import json
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render

from brokerd.client.errors import KafkaClientError
from dashboard.core import audit
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster
from dashboard.core.records import browse, produce_record
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from ..api.resources import TOPIC_NAME
from ..api.serializers import BrowseQuerySerializer

STARTS = ("latest", "earliest", "offset", "timestamp")
LIMITS = (10, 25, 50, 100, 200, 500)
FORMATS = ("auto", "text", "json", "hex")
VALUE_FORMATS = ("text", "json", "base64")
MAX_VALUE_BYTES = 1 << 20
MAX_HEADERS = 100
# The page's own parameters; everything else in the query string is ignored.
BROWSE_FIELDS = ("partition", "start", "offset", "timestamp", "limit", "key", "key_match",
                 "value", "value_match", "filter", "max_scan", "cursor", "format")  # fmt: skip


def parse_time(text: str) -> int:
    """Milliseconds since the epoch from digits, or from ISO 8601 (UTC unless it says)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: ms since the epoch or ISO 8601 (2024-05-01T12:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def browse_form(params) -> dict[str, str]:
    """What the browse form shows: the request's values, or the defaults."""
    form = {name: params.get(name, "")[:20_000] for name in BROWSE_FIELDS}
    form["start"] = form["start"] if form["start"] in STARTS else "latest"
    form["limit"] = form["limit"] or "50"
    form["key_match"] = form["key_match"] or "exact"
    form["value_match"] = form["value_match"] or "substring"
    form["format"] = form["format"] if form["format"] in FORMATS else "auto"
    return form


def browse_query(form: dict[str, str]) -> dict:
    """The browse form as BrowseQuerySerializer's input (the REST API's parameters)."""
    query: dict = {"limit": form["limit"]}
    if form["partition"] != "":
        query["partition_id"] = form["partition"]
    if form["max_scan"]:
        query["max_scan"] = form["max_scan"]
    if form["cursor"]:
        query["cursor"] = form["cursor"]
    elif form["start"] == "latest":
        query["from_end"] = form["limit"]
    elif form["start"] == "offset":
        query["offset"] = form["offset"]
    elif form["start"] == "timestamp":
        query["timestamp"] = parse_time(form["timestamp"])
    for name in ("key", "value"):
        if form[name] != "":
            query[name] = form[name]
            query[f"{name}_match"] = form[f"{name}_match"]
    if form["filter"].strip():
        query["filter"] = form["filter"]
    return query


def _errors_text(errors) -> str:
    if isinstance(errors, dict):
        return "; ".join(
            f"{'' if k == 'non_field_errors' else k + ': '}{_errors_text(v)}"
            for k, v in errors.items()
        )
    if isinstance(errors, list):
        return " ".join(_errors_text(e) for e in errors)
    return str(errors)


def _topic(cluster_id: str, topic_name: str) -> Cluster:
    cluster = get_object_or_404(Cluster, name=cluster_id)
    if not TOPIC_NAME.match(topic_name) or topic_name in (".", ".."):
        raise Http404("no such topic")
    return cluster


# The produce form ---------------------------------------------------------------------------
class ProduceError(ValueError):
    """What is wrong with the form, in words for the person who filled it in."""


def _encode_value(text: str, kind: str) -> bytes:
    if kind == "json":
        try:
            json.loads(text)
        except ValueError as exc:
            raise ProduceError(f"the value is not JSON: {exc}") from None
        return text.encode()
    if kind == "base64":
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ProduceError("the value is not base64") from None
    return text.encode()


def _parse_headers(text: str) -> list[tuple[str, bytes]]:
    headers = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ProduceError(f"header line {number} is not 'name: value': {line[:80]!r}")
        headers.append((name.strip(), value.strip().encode()))
        if len(headers) > MAX_HEADERS:
            raise ProduceError(f"at most {MAX_HEADERS} headers")
    return headers


def parse_produce_form(form: dict[str, str], partitions: int | None):
    """(partition or None, key, value, headers) from the form, or ProduceError."""
    partition = None
    if form["partition"] != "":
        try:
            partition = int(form["partition"])
        except ValueError:
            raise ProduceError("the partition is a number") from None
        if partition < 0 or (partitions is not None and partition >= partitions):
            raise ProduceError(f"the topic has partitions 0 to {(partitions or 1) - 1}")
    key = form["key"].encode() if form["key"] != "" else None
    value = None if form["null_value"] else _encode_value(form["value"], form["value_format"])
    if len(key or b"") + len(value or b"") > MAX_VALUE_BYTES:
        raise ProduceError("key and value are larger than 1 MiB")
    return partition, key, value, _parse_headers(form["headers"])


def _produce_form(post) -> dict[str, str]:
    form = {name: post.get(name, "")[: 2 * MAX_VALUE_BYTES] for name in
            ("partition", "key", "value", "value_format", "headers")}  # fmt: skip
    form["value_format"] = form["value_format"] if form["value_format"] in VALUE_FORMATS else "text"
    form["null_value"] = "1" if post.get("null_value") else ""
    return form


async def _kafka(cluster: Cluster, operation):
    return await asyncio.to_thread(with_cluster, cluster, operation)


async def _produce(request, cluster: Cluster, topic_name: str, partitions: int | None):
    """The produce form's POST: a message and back to the page, or the error to show."""
    user = await request.auser()
    if not await sync_to_async(user.has_perm)(OPERATE_PERMISSION):
        raise PermissionDenied("producing needs the operator role")
    form = _produce_form(request.POST)
    try:
        partition, key, value, headers = parse_produce_form(form, partitions)
    except ProduceError as exc:
        return form, str(exc)
    details = {"partition_id": partition, "key_size": len(key or b""), "source": "messages page"}
    record = sync_to_async(audit.record)
    try:
        partition, offset = await _kafka(
            cluster, lambda ops: produce_record(ops, topic_name, partition, key, value, headers)
        )
    except (KafkaClientError, Http404) as exc:
        await record(user, "record.produce", topic_name, cluster=cluster, details=details,
                     succeeded=False, result=str(exc))  # fmt: skip
        return form, f"not produced: {exc}"
    await record(user, "record.produce", topic_name, cluster=cluster, details=details,
                 succeeded=True, result="ok")  # fmt: skip
    messages.success(request, f"Produced to partition {partition} at offset {offset}.")
    return None, None


@permission_required(VIEW_PERMISSION, raise_exception=True)
async def page(request, cluster_id: str, topic_name: str):
    cluster = await sync_to_async(_topic)(cluster_id, topic_name)
    form = browse_form(request.GET)
    partitions, cluster_error = None, None
    try:
        metadata = await _kafka(cluster, lambda ops: ops.refresh([topic_name]))
        info = metadata.topics.get(topic_name)
        if info is None:
            raise Http404(f"topic {topic_name!r} not found")
        partitions = len(info.partitions)
    except KafkaClientError as exc:
        cluster_error = f"cluster unreachable: {exc}"

    produce_form, produce_error, status = None, None, 200
    if request.method == "POST":
        produce_form, produce_error = await _produce(request, cluster, topic_name, partitions)
        if produce_error is None:
            return redirect(request.get_full_path())
        status = 400

    result, browse_error = None, None
    if cluster_error is None:
        try:
            query = BrowseQuerySerializer(data=browse_query(form))
            if not query.is_valid():
                raise ValueError(_errors_text(query.errors))
            result = await _kafka(
                cluster, lambda ops: browse(ops, topic_name, query.validated_data)
            )
        except ValueError as exc:
            browse_error = str(exc)
        except (KafkaClientError, Http404) as exc:
            browse_error = f"could not read the topic: {exc}"

    next_url = None
    if result is not None:
        following = {k: v for k, v in form.items() if v and k not in ("offset", "timestamp")}
        following["cursor"] = result["scan"]["next_cursor"]
        next_url = f"?{urlencode(following)}"
    return await sync_to_async(render)(
        request,
        "live/messages.html",
        {
            "cluster": cluster,
            "topic_name": topic_name,
            "partition_ids": range(partitions or 0),
            "form": form,
            "starts": STARTS,
            "limits": LIMITS,
            "formats": FORMATS,
            "value_formats": VALUE_FORMATS,
            "result": result,
            "records": result["data"] if result else [],
            "next_url": next_url,
            "browse_error": browse_error,
            "error": cluster_error,
            "produce": produce_form or {"value_format": "text"},
            "produce_error": produce_error,
            "tail_query": urlencode(
                {
                    k: form[k]
                    for k in ("partition", "key", "key_match", "value", "value_match", "filter")
                    if form[k] != ""
                }  # fmt: skip
            ),
        },
        status=status,
    )
