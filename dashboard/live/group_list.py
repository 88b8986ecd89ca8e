"""The consumer groups list page: searched and sorted on the server (core/group_list.py),
with type, state, members, topics and total lag per group; kept current over the WebSocket
(list_updates.py) with the same search and order."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import permission_required
from django.shortcuts import get_object_or_404, render

from brokerd.client.errors import KafkaClientError
from dashboard.core.group_list import SORT_CAP, ListQuery, list_page
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import VIEW_PERMISSION

COLUMNS = [
    ("group", "Group"),
    ("type", "Type"),
    ("state", "State"),
    ("members", "Members"),
    ("topics", "Topics"),
    ("lag", "Total lag"),
]
# How often an open list asks for its rows again (list-refresh.js).
LIST_REFRESH_S = 5
# Numbers read best largest first: the first click on those columns sorts descending.
DESCENDING_FIRST = {"members", "topics", "lag"}


def sort_columns(query, columns, descending_first) -> list[dict]:
    """Each column's header: its link (the other direction when it is the current order)
    and its aria-sort."""
    out = []
    for key, label in columns:
        current = query.sort == key
        descending = (not query.descending) if current else key in descending_first
        params = {"sort": key, "dir": "desc" if descending else "asc", "size": query.size}
        if query.search:
            params["q"] = query.search
        out.append(
            {
                "key": key,
                "label": label,
                "href": "?" + urlencode(params),
                "aria_sort": ("descending" if query.descending else "ascending")
                if current
                else "none",
            }
        )
    return out


def page_links(query, more: bool, last_id: str | None) -> dict:
    base = {"sort": query.sort, "dir": "desc" if query.descending else "asc", "size": query.size}
    if query.search:
        base["q"] = query.search
    if query.by_cursor:
        first = "?" + urlencode(base) if query.after else None
        following = "?" + urlencode({**base, "after": last_id}) if more and last_id else None
        return {"first": first, "next": following, "previous": None}
    return {
        "first": "?" + urlencode(base) if query.page > 1 else None,
        "previous": "?" + urlencode({**base, "page": query.page - 1}) if query.page > 2 else None,
        "next": "?" + urlencode({**base, "page": query.page + 1}) if more else None,
    }


@permission_required(VIEW_PERMISSION, raise_exception=True)
def group_list(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    query = ListQuery.from_params(request.GET)
    page, error = None, None
    try:
        page = with_cluster(cluster, lambda ops: list_page(ops.admin, query))
    except KafkaClientError as exc:
        error = f"cluster unreachable: {error_text(exc)}"
    rows = page.rows if page else []
    last_id = rows[-1]["consumer_group_id"] if rows else None
    rows_only = bool(request.GET.get("rows"))  # list-refresh.js asking for fresh rows
    return render(
        request,
        "live/group_rows.html" if rows_only else "live/groups.html",
        {
            "refresh_s": LIST_REFRESH_S,
            "cluster": cluster,
            "rows": rows,
            "query": query,
            "matched": page.matched if page else None,
            "capped": page.capped if page else False,
            "sort_cap": SORT_CAP,
            "columns": sort_columns(query, COLUMNS, DESCENDING_FIRST),
            "links": page_links(query, bool(page and page.more), last_id),
            "live_query": request.GET.urlencode(),
            "error": error,
        },
        status=503 if rows_only and error else 200,
    )
