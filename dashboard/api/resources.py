"""REST Proxy v3 resource envelopes: `kind`, `metadata.self`, related links, lists."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404
from django.shortcuts import get_object_or_404

from dashboard.core.models import Cluster

API_ROOT = "/api/v3"
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def url(request, path: str) -> str:
    return request.build_absolute_uri(f"{API_ROOT}{path}")


def resource(request, kind: str, path: str, resource_name: str, **fields: Any) -> dict:
    return {
        "kind": kind,
        "metadata": {"self": url(request, path), "resource_name": resource_name},
        **fields,
    }


def related(request, path: str) -> dict:
    return {"related": url(request, path)}


def listing(request, kind: str, path: str, data: list, next_url: str | None = None) -> dict:
    return {"kind": kind, "metadata": {"self": url(request, path), "next": next_url}, "data": data}


def crn(cluster: Cluster, *parts: str) -> str:
    return "crn:///" + "/".join([f"kafka={cluster.name}", *parts])


def get_cluster(cluster_id: str) -> Cluster:
    return get_object_or_404(Cluster, name=cluster_id)


def check_topic_name(topic_name: str) -> str:
    """A name Kafka cannot hold is a topic that does not exist."""
    if not TOPIC_NAME.match(topic_name) or topic_name in (".", ".."):
        raise Http404(f"topic {topic_name!r} not found")
    return topic_name
