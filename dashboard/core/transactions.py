"""Transactions as JSON-ready dicts, shared by the transactions page and the REST API.

ListTransactions on every broker gives the ids and their coordinators; DescribeTransactions
on each coordinator the state, producer id/epoch, timeout, open partitions and the start of
the open transaction (Kafka's kafka-transactions.sh list / describe). A cluster with many ids
is described up to TRANSACTIONS_SHOWN of them (the REST listing says how many there are).

The operator's abort (`abort_transaction`) is kafka-transactions.sh force-terminate
(Admin.fenceProducers): InitProducerId for the id fences its producer with a new epoch and
its coordinator aborts the open transaction; offered for an Ongoing transaction only (one
committing or aborting already completes on its own; fencing an idle id only breaks its
producer).
"""

from __future__ import annotations

import time
from typing import Any

from brokerd.client.errors import KafkaResponseError
from brokerd.client.transactions import TransactionDescription, TransactionListing

from .kafka import KafkaOps

TRANSACTIONS_SHOWN = 500
STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
ABORTABLE_STATES = ("Ongoing",)


class NoTransactionToAbort(Exception):
    """The id has no Ongoing transaction (the console's abort refuses: 409)."""

    def __init__(self, transactional_id: str, state: str):
        super().__init__(
            f"{transactional_id} has no ongoing transaction to abort (its state is {state})"
        )
        self.state = state


def transaction_row(
    listing: TransactionListing | None,
    description: TransactionDescription | KafkaResponseError | None,
    now_ms: int,
) -> dict[str, Any]:
    if isinstance(description, TransactionDescription):
        d = description
        return {
            "transactional_id": d.transactional_id,
            "state": d.state,
            "producer_id": d.producer_id,
            "producer_epoch": d.producer_epoch,
            "coordinator_id": d.coordinator_id,
            "transaction_timeout_ms": d.timeout_ms,
            "transaction_start_time_ms": d.start_time_ms,
            # The coordinator keeps the last start after completion (as Kafka's does): the
            # age of an open transaction only.
            "duration_ms": (
                now_ms - d.start_time_ms
                if d.start_time_ms is not None and d.state in OPEN_STATES
                else None
            ),
            "partitions": [{"topic_name": t, "partition_id": p} for t, p in d.partitions],
            "error": None,
        }
    assert listing is not None
    return {
        "transactional_id": listing.transactional_id,
        "state": listing.state,
        "producer_id": listing.producer_id,
        "producer_epoch": None,
        "coordinator_id": listing.coordinator_id,
        "transaction_timeout_ms": None,
        "transaction_start_time_ms": None,
        "duration_ms": None,
        "partitions": [],
        "error": description.error_code.name if description is not None else None,
    }


async def list_transactions(ops: KafkaOps, states=()) -> dict[str, Any]:
    """Every transactional id (by id), the first TRANSACTIONS_SHOWN described."""
    listings = await ops.admin.list_transactions(states=states)
    shown = listings[:TRANSACTIONS_SHOWN]
    described = await ops.admin.describe_transactions(t.transactional_id for t in shown)
    now_ms = int(time.time() * 1000)
    rows = [transaction_row(t, described.get(t.transactional_id), now_ms) for t in shown]
    return {"transactions": rows, "total": len(listings), "taken_at_ms": now_ms}


async def describe_transaction(ops: KafkaOps, transactional_id: str) -> dict[str, Any]:
    """One id's state from its coordinator; raises KafkaResponseError (e.g.
    TRANSACTIONAL_ID_NOT_FOUND) when it has none."""
    described = await ops.admin.describe_transactions([transactional_id])
    result = described[transactional_id]
    if isinstance(result, KafkaResponseError):
        raise result
    return transaction_row(None, result, int(time.time() * 1000))


async def abort_transaction(ops: KafkaOps, transactional_id: str) -> dict[str, Any]:
    """Abort the id's Ongoing transaction by fencing its producer (force-terminate); the
    id's row afterwards: the fence succeeds once the abort's markers are written, which
    leaves the id Empty under a new epoch (Kafka's InitProducerId). Raises NoTransactionToAbort when it has none, KafkaResponseError
    (e.g. TRANSACTIONAL_ID_NOT_FOUND) when its coordinator does not know it."""
    before = await describe_transaction(ops, transactional_id)
    if before["state"] not in ABORTABLE_STATES:
        raise NoTransactionToAbort(transactional_id, before["state"])
    await ops.admin.fence_producer(transactional_id)
    return await describe_transaction(ops, transactional_id)
