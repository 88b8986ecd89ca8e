"""`python -m brokerd transactions`: kafka-transactions.sh.

    transactions --bootstrap-server H:P list
    transactions --bootstrap-server H:P describe --transactional-id T
    transactions --bootstrap-server H:P find-hanging (--broker-id B | --topic T [--partition P])
                 [--max-transaction-timeout MINUTES]
    transactions --bootstrap-server H:P abort --topic T --partition P
                 (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)
    transactions --bootstrap-server H:P force-terminate --transactional-id T

`list` asks every broker (ListTransactions) for the transactional ids it coordinates;
`describe` finds the id's coordinator (FindCoordinator key type 1) and asks it
(DescribeTransactions). `find-hanging` asks partition leaders (DescribeProducers) for
transactions open longer than the largest transaction timeout and reports those their
coordinator does not know as open on that partition (ListTransactions filtered by producer
id, then DescribeTransactions), as Kafka's FindHangingTransactionsCommand. `abort` ends one
such transaction with an ABORT marker written by the partition's leader (WriteTxnMarkers,
as Kafka's Admin.abortTransaction): with --start-offset the producer is the one whose open
transaction starts there (DescribeProducers). WriteTxnMarkers is an inter-broker request:
the leader takes it from a principal with CLUSTER_ACTION when an authorizer is on, else
only on the brokers' listener, so point --bootstrap-server there for `abort`.
`force-terminate` (Kafka 4.1's, KIP-939) ends the open transaction of a transactional id its
coordinator knows: InitProducerId for the id (Admin.fenceProducers) fences the producer
with a new epoch and aborts what it left open; it needs only WRITE on the id.
Output follows Kafka's tool, tab-separated, column for column.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from kio.schema.describe_producers.v0 import request as describe_producers
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1 import request as write_txn_markers
from kio.static.primitive import i16, i32

from brokerd.client.admin import AdminClient
from brokerd.client.errors import KafkaClientError, KafkaResponseError
from brokerd.client.sync import SyncClient
from brokerd.client.transactions import TransactionDescription
from brokerd.protocol.errors import ErrorCode

DEFAULT_MAX_TRANSACTION_TIMEOUT_MINUTES = 15  # Kafka's transaction.max.timeout.ms default
HANGING_HEADER = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="host:port of a broker")
    parser.add_argument(
        "command", choices=("list", "describe", "find-hanging", "abort", "force-terminate")
    )
    parser.add_argument(
        "--transactional-id",
        "--transactionalId",  # force-terminate's spelling in Kafka's tool
        dest="transactional_id",
        help="describe / force-terminate: the transactional id",
    )
    parser.add_argument("--topic", help="find-hanging / abort: the topic")
    parser.add_argument("--partition", type=int, help="find-hanging / abort: the partition")
    parser.add_argument("--broker-id", type=int, help="find-hanging: partitions on this broker")
    parser.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MINUTES,
        help="find-hanging: minutes a transaction may stay open (transaction.max.timeout.ms)",
    )
    parser.add_argument("--start-offset", type=int, help="abort: the transaction's first offset")
    parser.add_argument("--producer-id", type=int, help="abort: the transaction's producer id")
    parser.add_argument("--producer-epoch", type=int, help="abort: its producer epoch")
    parser.add_argument("--coordinator-epoch", type=int, help="abort: its coordinator epoch")


@dataclass(frozen=True)
class OpenTransaction:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int


async def _open_transactions(
    cluster, partitions: list[tuple[str, int]], broker_id: int | None
) -> list[OpenTransaction]:
    """The open transactions of the partitions, from DescribeProducers to each leader (or to
    `broker_id` alone, which answers for the partitions it leads)."""
    by_node: dict[int, dict[str, list[int]]] = {}
    for topic, partition in partitions:
        node = broker_id if broker_id is not None else await cluster.leader_for(topic, partition)
        by_node.setdefault(node, {}).setdefault(topic, []).append(partition)
    found: list[OpenTransaction] = []
    for node, topics in sorted(by_node.items()):
        connection = await cluster.connection(node)
        response = await connection.send(
            describe_producers.DescribeProducersRequest(
                topics=tuple(
                    describe_producers.TopicRequest(
                        name=TopicName(topic), partition_indexes=tuple(i32(p) for p in ps)
                    )
                    for topic, ps in topics.items()
                )
            )
        )
        for topic_response in response.topics:
            for part in topic_response.partitions:
                if part.error_code == ErrorCode.not_leader_or_follower and broker_id is not None:
                    continue  # --broker-id: partitions it does not lead are answered elsewhere
                if part.error_code != ErrorCode.none:
                    raise KafkaClientError(
                        f"DescribeProducers {topic_response.name}-{part.partition_index}: "
                        f"{ErrorCode(part.error_code).name.upper()}"
                    )
                found.extend(
                    OpenTransaction(
                        str(topic_response.name),
                        int(part.partition_index),
                        int(state.producer_id),
                        int(state.producer_epoch),
                        int(state.coordinator_epoch),
                        int(state.current_txn_start_offset),
                        int(state.last_timestamp),
                    )
                    for state in part.active_producers
                    if int(state.current_txn_start_offset) >= 0
                )
    return found


async def _partitions(cluster, args) -> list[tuple[str, int]]:
    await cluster.refresh_metadata([args.topic] if args.topic else None)
    out = []
    for topic, info in sorted(cluster.metadata.topics.items()):
        if args.topic and topic != args.topic:
            continue
        for index, partition in sorted(info.partitions.items()):
            if args.partition is not None and index != args.partition:
                continue
            if args.broker_id is not None and args.broker_id not in partition.replicas:
                continue
            out.append((topic, index))
    if args.topic and not out:
        raise KafkaClientError(f"{args.topic}: no such topic or partition")
    return out


def _is_hanging(txn: OpenTransaction, description: TransactionDescription | None) -> bool:
    """Kafka's rule: hanging unless the coordinator has this producer's transaction open
    (or ending) at this epoch, and on this partition when it is still Ongoing."""
    if description is None or description.producer_id != txn.producer_id:
        return True
    if description.state in ("PrepareCommit", "PrepareAbort"):
        return description.producer_epoch != txn.producer_epoch
    if description.state != "Ongoing" or description.producer_epoch != txn.producer_epoch:
        return True
    return (txn.topic, txn.partition) not in description.partitions


async def _find_hanging(cluster, args) -> list[OpenTransaction]:
    partitions = await _partitions(cluster, args)
    now = int(time.time() * 1000)
    limit = args.max_transaction_timeout * 60_000
    candidates = [
        t
        for t in await _open_transactions(cluster, partitions, args.broker_id)
        if now - t.last_timestamp > limit
    ]
    if not candidates:
        return []
    producer_ids = sorted({t.producer_id for t in candidates})
    ids_by_producer: dict[int, str] = {}
    for node_id in sorted(cluster.metadata.brokers):
        connection = await cluster.connection(node_id)
        listed = await connection.send(
            ListTransactionsRequest(producer_id_filters=tuple(ProducerId(p) for p in producer_ids))
        )
        for state in listed.transaction_states:
            ids_by_producer[int(state.producer_id)] = str(state.transactional_id)
    descriptions: dict[int, TransactionDescription] = {}
    found = await AdminClient(cluster).describe_transactions(ids_by_producer.values())
    for producer_id, transactional_id in ids_by_producer.items():
        description = found[transactional_id]
        if isinstance(description, TransactionDescription):  # else gone meanwhile
            descriptions[producer_id] = description
    return [t for t in candidates if _is_hanging(t, descriptions.get(t.producer_id))]


async def _abort(cluster, args) -> None:
    topic, partition = args.topic, args.partition
    leader = await cluster.leader_for(topic, partition)
    if args.start_offset is not None:
        matches = [
            t
            for t in await _open_transactions(cluster, [(topic, partition)], None)
            if t.start_offset == args.start_offset
        ]
        if not matches:
            raise KafkaClientError(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {topic}-{partition}"
            )
        if len(matches) > 1:
            raise KafkaClientError(
                f"Found multiple open transactions starting at offset {args.start_offset} "
                f"on partition {topic}-{partition}"
            )
        [txn] = matches
        producer_id, producer_epoch = txn.producer_id, txn.producer_epoch
        coordinator_epoch = max(txn.coordinator_epoch, 0)
    else:
        producer_id, producer_epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = args.coordinator_epoch
    connection = await cluster.connection(leader)
    response = await connection.send(
        write_txn_markers.WriteTxnMarkersRequest(
            markers=(
                write_txn_markers.WritableTxnMarker(
                    producer_id=ProducerId(producer_id),
                    producer_epoch=i16(producer_epoch),
                    transaction_result=False,  # ABORT
                    topics=(
                        write_txn_markers.WritableTxnMarkerTopic(
                            name=TopicName(topic), partition_indexes=(i32(partition),)
                        ),
                    ),
                    coordinator_epoch=i32(coordinator_epoch),
                ),
            )
        )
    )
    for marker in response.markers:
        for topic_result in marker.topics:
            for result in topic_result.partitions:
                if result.error_code != ErrorCode.none:
                    raise KafkaClientError(
                        f"WriteTxnMarkers {topic}-{partition}: {ErrorCode(result.error_code).name.upper()}"
                    )


async def _list(cluster) -> list[tuple[str, int, int, str]]:
    await cluster.refresh_metadata()
    rows: list[tuple[str, int, int, str]] = []
    for node_id in sorted(cluster.metadata.brokers):
        connection = await cluster.connection(node_id)
        response = await connection.send(ListTransactionsRequest())
        if response.error_code != ErrorCode.none:
            raise KafkaClientError(
                f"broker {node_id}: ListTransactions {ErrorCode(response.error_code).name.upper()}"
            )
        rows.extend(
            (str(s.transactional_id), node_id, int(s.producer_id), str(s.transaction_state))
            for s in response.transaction_states
        )
    return rows


async def _describe(cluster, transactional_id: str) -> TransactionDescription:
    """The id's state from its coordinator, through the admin client (which reads the -1
    start time Kafka answers for an id with no open transaction)."""
    [found] = (await AdminClient(cluster).describe_transactions([transactional_id])).values()
    if isinstance(found, KafkaResponseError):
        raise KafkaClientError(f"DescribeTransactions: {ErrorCode(found.error_code).name.upper()}")
    return found


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.command in ("describe", "force-terminate") and not args.transactional_id:
        return f"{args.command} needs --transactional-id"
    if args.command == "find-hanging":
        if (args.broker_id is None) == (args.topic is None):
            return "find-hanging needs one of --broker-id or --topic"
        if args.partition is not None and args.topic is None:
            return "--partition needs --topic"
        if args.max_transaction_timeout < 0:
            return "--max-transaction-timeout must be at least 0"
    if args.command == "abort":
        if args.topic is None or args.partition is None:
            return "abort needs --topic and --partition"
        by_producer = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
        if args.start_offset is None and None in by_producer:
            return (
                "abort needs --start-offset, or --producer-id, --producer-epoch and "
                "--coordinator-epoch"
            )
        if args.start_offset is not None and any(v is not None for v in by_producer):
            return "--start-offset cannot be given with --producer-id/-epoch/--coordinator-epoch"
    return None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    problem = _usage_problem(args)
    if problem:
        print(f"Error: {problem}", file=err)
        return 1
    try:
        client = SyncClient(args.bootstrap_server)
    except (KafkaClientError, OSError) as exc:
        print(f"Error: cannot reach {args.bootstrap_server}: {exc}", file=err)
        return 1
    try:
        if args.command == "find-hanging":
            hanging = client.run(_find_hanging(client.cluster, args))
            print("\t".join(HANGING_HEADER), file=out)
            now = int(time.time() * 1000)
            for t in hanging:
                print(
                    f"{t.topic}\t{t.partition}\t{t.producer_id}\t{t.producer_epoch}\t"
                    f"{t.coordinator_epoch}\t{t.start_offset}\t{t.last_timestamp}\t"
                    f"{(now - t.last_timestamp) // 60_000}",
                    file=out,
                )
            return 0
        if args.command == "abort":
            client.run(_abort(client.cluster, args))
            return 0
        if args.command == "force-terminate":
            client.run(AdminClient(client.cluster).fence_producer(args.transactional_id))
            return 0
        if args.command == "list":
            rows = client.run(_list(client.cluster))
            print("TransactionalId\tCoordinator\tProducerId\tTransactionState", file=out)
            for transactional_id, node_id, producer_id, state in sorted(rows):
                print(f"{transactional_id}\t{node_id}\t{producer_id}\t{state}", file=out)
            return 0
        described = client.run(_describe(client.cluster, args.transactional_id))
        start_ms = described.start_time_ms
        partitions = ",".join(f"{topic}-{p}" for topic, p in described.partitions)
        print(
            "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\t"
            "TransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\t"
            "TopicPartitions",
            file=out,
        )
        print(
            f"{described.coordinator_id}\t{described.transactional_id}\t"
            f"{described.producer_id}\t{described.producer_epoch}\t{described.state}\t"
            f"{described.timeout_ms}\t{start_ms}\t"
            f"{None if start_ms is None else int(time.time() * 1000) - start_ms}\t{partitions}",
            file=out,
        )
        return 0
    except (KafkaClientError, OSError) as exc:
        print(f"Error: {exc}", file=err)
        return 1
    finally:
        client.close()
