"""`python -m brokerd transactions`: the read side of kafka-transactions.sh.

    transactions --bootstrap-server H:P list
    transactions --bootstrap-server H:P describe --transactional-id T

`list` asks every broker (ListTransactions) for the transactional ids it coordinates;
`describe` finds the id's coordinator (FindCoordinator key type 1) and asks it
(DescribeTransactions). Output follows Kafka's tool, tab-separated, column for column.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.types import TransactionalId

from brokerd.client.errors import KafkaClientError
from brokerd.client.sync import SyncClient
from brokerd.protocol.errors import ErrorCode

TRANSACTION_KEY_TYPE = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="host:port of a broker")
    parser.add_argument("command", choices=("list", "describe"))
    parser.add_argument("--transactional-id", help="the id to describe")


async def _list(cluster) -> list[tuple[str, int, int, str]]:
    await cluster.refresh_metadata()
    rows: list[tuple[str, int, int, str]] = []
    for node_id in sorted(cluster.metadata.brokers):
        connection = await cluster.connection(node_id)
        response = await connection.send(ListTransactionsRequest())
        if response.error_code != ErrorCode.none:
            raise KafkaClientError(
                f"broker {node_id}: ListTransactions {ErrorCode(response.error_code).name}"
            )
        rows.extend(
            (str(s.transactional_id), node_id, int(s.producer_id), str(s.transaction_state))
            for s in response.transaction_states
        )
    return rows


async def _describe(cluster, transactional_id: str) -> tuple[int, Any]:
    connection = await cluster.any_connection()
    found = await connection.call(10, {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE})
    if found.error_code != ErrorCode.none:
        raise KafkaClientError(f"FindCoordinator: {ErrorCode(found.error_code).name}")
    node_id = int(found.node_id)
    coordinator = await cluster.connection(node_id)
    response = await coordinator.send(
        DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),))
    )
    [state] = response.transaction_states
    if state.error_code != ErrorCode.none:
        raise KafkaClientError(f"DescribeTransactions: {ErrorCode(state.error_code).name}")
    return node_id, state


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if args.command == "describe" and not args.transactional_id:
        print("Error: describe needs --transactional-id", file=err)
        return 1
    try:
        client = SyncClient(args.bootstrap_server)
    except (KafkaClientError, OSError) as exc:
        print(f"Error: cannot reach {args.bootstrap_server}: {exc}", file=err)
        return 1
    try:
        if args.command == "list":
            rows = client.run(_list(client.cluster))
            print("TransactionalId\tCoordinator\tProducerId\tTransactionState", file=out)
            for transactional_id, node_id, producer_id, state in sorted(rows):
                print(f"{transactional_id}\t{node_id}\t{producer_id}\t{state}", file=out)
            return 0
        node_id, state = client.run(_describe(client.cluster, args.transactional_id))
        start_ms = int(state.transaction_start_time.timestamp() * 1000)
        ongoing = start_ms >= 0
        partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in sorted(t.partitions))
        print(
            "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\t"
            "TransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\t"
            "TopicPartitions",
            file=out,
        )
        print(
            f"{node_id}\t{state.transactional_id}\t{state.producer_id}\t{state.producer_epoch}\t"
            f"{state.transaction_state}\t{int(state.transaction_timeout.total_seconds() * 1000)}\t"
            f"{start_ms if ongoing else 'None'}\t"
            f"{int(time.time() * 1000) - start_ms if ongoing else 'None'}\t{partitions}",
            file=out,
        )
        return 0
    except (KafkaClientError, OSError) as exc:
        print(f"Error: {exc}", file=err)
        return 1
    finally:
        client.close()
