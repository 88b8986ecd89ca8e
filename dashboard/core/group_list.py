"""The consumer groups list as the console shows it: searched and sorted on the server,
beyond the page shown, with each group's type, state, members, topics and total lag.

Sorted by id (the default), a page costs what it shows: ListGroups (one request per
broker), then for the groups shown one FindCoordinator, one DescribeGroups and one
OffsetFetch per coordinator (batched, not per group), and one ListOffsets for the page's
partitions. Sorted by anything else, every matching group has to be known
to order them: up to SORT_CAP groups are described (the page says so when more matched).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brokerd.client.admin import AdminClient
from brokerd.client.errors import KafkaResponseError
from brokerd.client.results import AdminError

from .groups import group_summary
from .kafka import latest_offsets

SORTS = ("group", "type", "state", "members", "topics", "lag")
SORT_CAP = 1000


@dataclass(frozen=True)
class ListQuery:
    search: str = ""
    sort: str = "group"
    descending: bool = False
    after: str = ""  # the id sort's cursor (ascending)
    page: int = 1  # every other order: pages by number
    size: int = 50

    @classmethod
    def from_params(cls, params, default_size: int = 50) -> ListQuery:
        sort = params.get("sort", "group")
        try:
            size = min(max(int(params.get("size", default_size)), 1), 500)
        except ValueError:
            size = default_size
        try:
            page = min(max(int(params.get("page", 1)), 1), 100_000)
        except ValueError:
            page = 1
        return cls(
            search=params.get("q", "")[:255].strip(),
            sort=sort if sort in SORTS else "group",
            descending=params.get("dir") == "desc",
            after=params.get("after", "")[:255],
            page=page,
            size=size,
        )

    @property
    def by_cursor(self) -> bool:
        return self.sort == "group" and not self.descending


@dataclass
class ListPage:
    rows: list[dict[str, Any]]
    more: bool
    matched: int
    capped: bool  # sorted among the first SORT_CAP matches only


async def list_page(admin: AdminClient, query: ListQuery) -> ListPage:
    listings = sorted(await admin.list_groups(), key=lambda g: g.group_id)
    if query.search:
        needle = query.search.lower()
        listings = [g for g in listings if needle in g.group_id.lower()]
    matched = len(listings)
    if query.by_cursor:
        rest = [g for g in listings if g.group_id > query.after]
        return ListPage(
            await rows(admin, rest[: query.size]), len(rest) > query.size, matched, False
        )
    start, end = (query.page - 1) * query.size, query.page * query.size
    if query.sort == "group":  # descending: the page's groups only
        ordered = listings[::-1]
        return ListPage(await rows(admin, ordered[start:end]), len(ordered) > end, matched, False)
    considered = listings[:SORT_CAP]
    described = sort_rows(await rows(admin, considered), query.sort, query.descending)
    return ListPage(described[start:end], len(described) > end, matched, matched > SORT_CAP)


def sort_rows(found: list[dict], sort: str, descending: bool) -> list[dict]:
    """Rows ordered by `sort` (ties by id); unknown values (None) last either way."""

    def value(row):
        if sort == "topics":
            return len(row["topics"])
        if sort == "lag":
            return row["total_lag"]
        return row[sort]

    known = [r for r in found if value(r) is not None]
    unknown = [r for r in found if value(r) is None]
    known.sort(key=lambda r: r["consumer_group_id"])
    known.sort(key=value, reverse=descending)
    return known + unknown


async def rows(admin: AdminClient, listings) -> list[dict[str, Any]]:
    """Each listed group's summary with the topics it owns or committed and its total lag
    (high watermark minus committed offset, summed; None with no committed offset)."""
    ids = [g.group_id for g in listings]
    # Batched: one DescribeGroups and one OffsetFetch per coordinator, not per group.
    try:
        descriptions: dict[str, Any] = await admin.describe_groups(ids) if ids else {}
    except AdminError as exc:  # some groups failed: the others are described
        descriptions = exc.results
    except KafkaResponseError:
        descriptions = {}
    try:
        offsets = await admin.groups_committed_offsets(ids) if ids else {}
    except KafkaResponseError:
        offsets = {}
    found = []
    for listing in listings:
        committed = offsets.get(listing.group_id, {})
        if isinstance(committed, Exception):
            committed = {}
        committed = {tp: c for tp, c in committed.items() if not isinstance(c, Exception)}
        found.append((listing, descriptions.get(listing.group_id), committed))
    partitions = {tp for _, _, committed in found for tp in committed}
    ends = await latest_offsets(admin, sorted(partitions))
    out = []
    for listing, description, committed in found:
        row = group_summary(
            listing.group_id, description, listing.state, listing.protocol_type, listing.group_type
        )
        owned = {tp for m in description.members for tp in m.assignment} if description else set()
        lags = [
            max(ends[tp] - c.offset, 0)
            for tp, c in committed.items()
            if c.offset is not None and c.offset >= 0 and tp in ends
        ]
        row["topics"] = sorted({t for t, _ in set(committed) | owned})
        row["total_lag"] = sum(lags) if lags else None
        out.append(row)
    return out
