"""The header's cluster menu: the names of the clusters the platform watches."""

from __future__ import annotations

from django import template

from dashboard.core.models import Cluster

register = template.Library()


@register.simple_tag
def cluster_names() -> list[str]:
    return list(Cluster.objects.values_list("name", flat=True))
