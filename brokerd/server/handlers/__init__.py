"""Request handlers, one module per API family; HANDLERS maps api key -> handler."""

from __future__ import annotations

from . import (
    acls,
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
    topic_partitions,
    topics,
    transactions,
    txn_markers,
)

HANDLERS = {
    **acls.HANDLERS,
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
    **topic_partitions.HANDLERS,
    **topics.HANDLERS,
    **transactions.HANDLERS,
    **txn_markers.HANDLERS,
}
