"""Request handlers, one module per API family; HANDLERS maps api key -> handler."""

from __future__ import annotations

from . import (
    api_versions,
    configs,
    fetch,
    groups,
    leadership,
    log_dirs,
    metadata,
    offsets,
    produce,
    producer_ids,
    producers,
    reassignment,
    replication,
    sasl,
    scram_users,
    topics,
    transactions,
    txn_markers,
)

HANDLERS = {
    **api_versions.HANDLERS,
    **configs.HANDLERS,
    **fetch.HANDLERS,
    **groups.HANDLERS,
    **leadership.HANDLERS,
    **log_dirs.HANDLERS,
    **metadata.HANDLERS,
    **offsets.HANDLERS,
    **produce.HANDLERS,
    **producer_ids.HANDLERS,
    **producers.HANDLERS,
    **reassignment.HANDLERS,
    **replication.HANDLERS,
    **sasl.HANDLERS,
    **scram_users.HANDLERS,
    **topics.HANDLERS,
    **transactions.HANDLERS,
    **txn_markers.HANDLERS,
}
