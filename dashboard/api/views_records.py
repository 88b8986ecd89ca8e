"""Browse records (bounded scan that reports how far it got) and produce a test record."""

from __future__ import annotations

from urllib.parse import urlencode

from rest_framework import status
from rest_framework.response import Response

from dashboard.core.kafka import with_cluster
from dashboard.core.records import browse, produce_record, render_bytes

from .base import ApiView, api_doc
from .resources import check_topic_name, get_cluster, listing, url
from .serializers import BrowseQuerySerializer, ProduceRecordSerializer


class RecordList(ApiView):
    @api_doc(
        summary="Browse records from an offset, a timestamp, the end or a cursor, filtered by "
        "key, value or an expression; paged with scan.next_cursor (metadata.next)",
        parameters=[BrowseQuerySerializer],
    )
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        query = BrowseQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        result = with_cluster(cluster, lambda ops: browse(ops, topic_name, query.validated_data))
        path = f"/clusters/{cluster.name}/topics/{topic_name}/records"
        next_url = None
        if not result["scan"]["complete"]:
            # The same question, going on where this answer stopped.
            params = {
                k: v
                for k, v in request.query_params.items()
                if k not in ("offset", "timestamp", "from_end", "cursor")
            }
            params["cursor"] = result["scan"]["next_cursor"]
            next_url = url(request, f"{path}?{urlencode(params)}")
        body = listing(request, "KafkaRecordList", path, result["data"], next_url)
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

        def produce(ops):
            return produce_record(ops, topic_name, spec.get("partition_id"), key, value, headers)

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
