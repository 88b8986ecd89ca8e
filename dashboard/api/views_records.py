"""Browse records (bounded scan that reports how far it got) and produce a test record."""

from __future__ import annotations

import base64

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response

from brokerd.client.partitioner import partition_for_key
from dashboard.core.kafka import EARLIEST, LATEST, KafkaOps, with_cluster

from .base import ApiView, api_doc
from .resources import check_topic_name, get_cluster, listing
from .serializers import BrowseQuerySerializer, ProduceRecordSerializer

FETCH_BYTES = 1 << 20


def render_bytes(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        return {"type": "STRING", "data": data.decode("utf-8"), "size": len(data)}
    except UnicodeDecodeError:
        return {"type": "BINARY", "data": base64.b64encode(data).decode(), "size": len(data)}


async def browse(ops: KafkaOps, topic: str, query: dict) -> dict:
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None:
        raise Http404(f"topic {topic!r} not found")
    wanted = query.get("partition_id")
    if wanted is not None and wanted not in info.partitions:
        raise Http404(f"partition {wanted} not found")
    ids = [wanted] if wanted is not None else sorted(info.partitions)
    high = await ops.list_offsets(topic, ids, LATEST)
    low = await ops.list_offsets(topic, ids, EARLIEST)
    for answers in (high, low):
        for result in answers.values():
            if isinstance(result, Exception):
                raise result
    if "timestamp" in query:
        found = await ops.list_offsets(topic, ids, query["timestamp"])
        starts = {p: high[p] if found[p] in (-1, None) else found[p] for p in ids}
    elif "offset" in query:
        starts = {p: min(max(query["offset"], low[p]), high[p]) for p in ids}
    elif "from_end" in query:
        starts = {p: max(low[p], high[p] - query["from_end"]) for p in ids}
    else:
        starts = {p: low[p] for p in ids}

    key_filter = query.get("key")
    needle = key_filter.encode() if key_filter is not None else None
    limit, max_scan = query["limit"], query["max_scan"]
    positions = dict(starts)
    matched: list[dict] = []
    scanned = 0
    active = [p for p in ids if positions[p] < high[p]]
    while active and scanned < max_scan and len(matched) < limit:
        for pid in list(active):
            records, _hw, next_offset = await ops.fetch(topic, pid, positions[pid], FETCH_BYTES)
            progressed = False
            for record in records:
                if record.offset >= high[pid] or scanned >= max_scan or len(matched) >= limit:
                    break
                scanned += 1
                positions[pid] = record.offset + 1
                progressed = True
                if needle is not None and (record.key is None or needle not in record.key):
                    continue
                matched.append(
                    {
                        "partition_id": pid,
                        "offset": record.offset,
                        "timestamp": record.timestamp,
                        "key": render_bytes(record.key),
                        "value": render_bytes(record.value),
                        "headers": [
                            {
                                "name": name,
                                "value": None
                                if value is None
                                else base64.b64encode(value).decode(),
                            }
                            for name, value in record.headers
                        ],
                    }
                )
            if not progressed and scanned < max_scan and len(matched) < limit:
                # Only control batches or compaction gaps: step past them, never spin.
                before = positions[pid]
                positions[pid] = max(before, min(next_offset, high[pid]))
                if positions[pid] == before:
                    positions[pid] = high[pid]
            if positions[pid] >= high[pid]:
                active.remove(pid)
            if scanned >= max_scan or len(matched) >= limit:
                break
    return {
        "data": matched,
        "scan": {
            "complete": not active,
            "scanned_records": scanned,
            "matched_records": len(matched),
            "partitions": [
                {
                    "partition_id": p,
                    "start_offset": starts[p],
                    "next_offset": positions[p],
                    "high_watermark": high[p],
                    "log_start_offset": low[p],
                    "remaining": max(0, high[p] - positions[p]),
                }
                for p in ids
            ],
        },
    }


class RecordList(ApiView):
    @api_doc(
        summary="Browse records from an offset, a timestamp or the end, optionally by key",
        parameters=[BrowseQuerySerializer],
    )
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        query = BrowseQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        result = with_cluster(cluster, lambda ops: browse(ops, topic_name, query.validated_data))
        path = f"/clusters/{cluster.name}/topics/{topic_name}/records"
        body = listing(request, "KafkaRecordList", path, result["data"])
        body["scan"] = result["scan"]
        return Response(body)

    @api_doc(summary="Produce one test record", request=ProduceRecordSerializer)
    def post(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        body = ProduceRecordSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        spec = body.validated_data
        key = (spec.get("key") or {}).get("bytes")
        value = (spec.get("value") or {}).get("bytes")
        headers = [(h["name"], h["value"]) for h in spec.get("headers", [])]

        async def produce(ops: KafkaOps) -> tuple[int, int]:
            metadata = await ops.refresh([topic_name])
            info = metadata.topics.get(topic_name)
            if info is None:
                raise Http404(f"topic {topic_name!r} not found")
            partition = spec.get("partition_id")
            if partition is None:
                partition = partition_for_key(key, len(info.partitions)) if key else 0
            elif partition not in info.partitions:
                raise Http404(f"partition {partition} not found")
            return partition, await ops.produce(topic_name, partition, key, value, headers)

        details = {"partition_id": spec.get("partition_id"), "key_size": len(key or b"")}
        partition, offset = self.audited(
            cluster,
            "record.produce",
            topic_name,
            details,
            lambda: with_cluster(cluster, produce),
        )
        return Response(
            {
                "error_code": 200,
                "cluster_id": cluster.name,
                "topic_name": topic_name,
                "partition_id": partition,
                "offset": offset,
                "key": render_bytes(key),
                "value": {"size": len(value)} if value is not None else None,
            },
            status=status.HTTP_200_OK,
        )
