"""`python -m brokerd reassign`: the counterpart of kafka-reassign-partitions.sh.

    reassign --bootstrap-server H:P --generate --topics-to-move-json-file topics.json
             --broker-list 1,2,3
    reassign --bootstrap-server H:P --execute --reassignment-json-file plan.json
    reassign --bootstrap-server H:P --verify --reassignment-json-file plan.json
    reassign --bootstrap-server H:P --cancel --reassignment-json-file plan.json
    reassign --bootstrap-server H:P --list

Files are Kafka's: topics to move {"version":1,"topics":[{"topic":"t"}]}, reassignments
{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":[...]}]}
("log_dirs" other than "any" cannot be honoured: brokers have one log dir each here).
Everything goes over the Kafka protocol through brokerd.client (Metadata,
AlterPartitionReassignments, ListPartitionReassignments).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from brokerd.client.errors import KafkaClientError
from brokerd.client.results import AdminError

PartitionKey = tuple[str, int]


class PlanError(ValueError):
    """A JSON file that is not in Kafka's format."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="host:port of a broker")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--generate", action="store_true", help="propose a reassignment")
    action.add_argument("--execute", action="store_true", help="start the reassignment")
    action.add_argument("--verify", action="store_true", help="report progress/completion")
    action.add_argument("--cancel", action="store_true", help="cancel active reassignments")
    action.add_argument("--list", action="store_true", help="list active reassignments")
    parser.add_argument("--topics-to-move-json-file", help="with --generate")
    parser.add_argument("--broker-list", help="with --generate: e.g. 1,2,3")
    parser.add_argument("--reassignment-json-file", help="with --execute, --verify, --cancel")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per call")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from brokerd.client.sync import SyncClient

    out = out or sys.stdout
    err = err or sys.stderr
    try:
        plan = _read_inputs(args)
    except (OSError, PlanError, ValueError) as exc:
        print(f"Error: {exc}", file=err)
        return 2
    try:
        client = SyncClient(args.bootstrap_server, request_timeout=args.timeout)
    except (KafkaClientError, OSError) as exc:
        print(f"Error: cannot reach {args.bootstrap_server}: {exc}", file=err)
        return 1
    try:
        tool = ReassignTool(client.admin, out, err)
        if args.generate:
            return tool.generate(*plan)
        if args.execute:
            return tool.execute(plan)
        if args.verify:
            return tool.verify(plan)
        if args.cancel:
            return tool.cancel(plan)
        return tool.list()
    except (KafkaClientError, OSError) as exc:
        print(f"Error: {exc}", file=err)
        return 1
    finally:
        client.close()


def _read_inputs(args: argparse.Namespace):
    if args.generate:
        if not args.topics_to_move_json_file or not args.broker_list:
            raise PlanError("--generate needs --topics-to-move-json-file and --broker-list")
        brokers = [int(b) for b in args.broker_list.split(",") if b.strip()]
        if not brokers or len(set(brokers)) != len(brokers):
            raise PlanError(f"--broker-list {args.broker_list!r}: distinct broker ids, please")
        return parse_topics_to_move(_load(args.topics_to_move_json_file)), brokers
    if args.list:
        return None
    if not args.reassignment_json_file:
        raise PlanError("--reassignment-json-file is required")
    return parse_reassignment(_load(args.reassignment_json_file))


def _load(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as exc:
            raise PlanError(f"{path} is not JSON: {exc}") from None


# Kafka's JSON files ----------------------------------------------------------------------
def parse_topics_to_move(data: Any) -> list[str]:
    try:
        topics = [str(entry["topic"]) for entry in data["topics"]]
    except (KeyError, TypeError):
        raise PlanError('expected {"version":1,"topics":[{"topic":"name"}, ...]}') from None
    if not topics:
        raise PlanError("no topics to move")
    return list(dict.fromkeys(topics))


def parse_reassignment(data: Any) -> dict[PartitionKey, list[int]]:
    try:
        entries = data["partitions"]
        plan = {}
        for entry in entries:
            key = (str(entry["topic"]), int(entry["partition"]))
            if key in plan:
                raise PlanError(f"partition {key[0]}-{key[1]} appears twice")
            replicas = [int(r) for r in entry["replicas"]]
            log_dirs = entry.get("log_dirs")
            if log_dirs is not None and any(d != "any" for d in log_dirs):
                raise PlanError(f'{key[0]}-{key[1]}: log_dirs other than "any" are not supported')
            plan[key] = replicas
    except (KeyError, TypeError, ValueError):
        raise PlanError(
            'expected {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
        ) from None
    if not plan:
        raise PlanError("the reassignment has no partitions")
    return plan


def format_reassignment(plan: Mapping[PartitionKey, Sequence[int]]) -> str:
    """Kafka's output: one line of JSON, log_dirs "any" for every replica."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "replicas": list(rs),
                    "log_dirs": ["any"] * len(rs),
                }
                for (t, p), rs in sorted(plan.items())
            ],
        },
        separators=(",", ":"),
    )


def propose(
    current: Mapping[PartitionKey, Sequence[int]], brokers: Sequence[int], rng=random
) -> dict[PartitionKey, list[int]]:
    """Kafka's rack-unaware spread of each topic's partitions over `brokers`, keeping each
    partition's replication factor: a random first broker, then a shifting follower gap."""
    brokers = sorted(brokers)
    count = len(brokers)
    proposed: dict[PartitionKey, list[int]] = {}
    for topic in dict.fromkeys(t for t, _ in sorted(current)):
        start, shift = rng.randrange(count), rng.randrange(count)
        for index in sorted(p for t, p in current if t == topic):
            factor = len(current[(topic, index)])
            if factor > count:
                raise PlanError(
                    f"{topic}-{index} has {factor} replicas but the broker list has {count}"
                )
            if index > 0 and index % count == 0:
                shift += 1
            first = (start + index) % count
            replicas = [brokers[first]]
            for j in range(factor - 1):
                gap = 1 + (shift + j) % (count - 1)
                replicas.append(brokers[(first + gap) % count])
            proposed[(topic, index)] = replicas
    return proposed


class ReassignTool:
    def __init__(self, admin, out: TextIO, err: TextIO):
        self.admin = admin
        self.out = out
        self.err = err

    def _say(self, text: str = "") -> None:
        print(text, file=self.out)

    def _current(self, topics) -> dict[PartitionKey, list[int]]:
        described = self.admin.describe_topics(sorted(set(topics)))
        return {
            (name, index): list(p.replicas)
            for name, info in described.items()
            for index, p in info.partitions.items()
        }

    # --generate ----------------------------------------------------------------------------
    def generate(self, topics: list[str], brokers: list[int]) -> int:
        current = self._current(topics)
        self._say("Current partition replica assignment")
        self._say(format_reassignment(current))
        self._say()
        self._say("Proposed partition reassignment configuration")
        self._say(format_reassignment(propose(current, brokers)))
        return 0

    # --execute -----------------------------------------------------------------------------
    def execute(self, plan: dict[PartitionKey, list[int]]) -> int:
        current = self._current(t for t, _ in plan)
        missing = [k for k in plan if k not in current]
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            print(f"Error: unknown partitions: {names}", file=self.err)
            return 1
        self._say("Current partition replica assignment")
        self._say()
        self._say(format_reassignment({k: current[k] for k in plan}))
        self._say()
        self._say("Save this to use as the --reassignment-json-file option during rollback")
        try:
            self.admin.alter_partition_reassignments(plan)
        except AdminError as exc:
            self._report_started(exc.results)
            print("Error reassigning partition(s):", file=self.err)
            for (t, p), error in sorted(exc.errors.items()):
                print(f"{t}-{p}: {error}", file=self.err)
            return 1
        self._report_started(plan)
        return 0

    def _report_started(self, started) -> None:
        if started:
            names = ",".join(f"{t}-{p}" for t, p in sorted(started))
            self._say(f"Successfully started partition reassignments for {names}")

    # --verify ------------------------------------------------------------------------------
    def verify(self, plan: dict[PartitionKey, list[int]]) -> int:
        """Kafka's lines per partition, with the in-sync progress of the ones still moving.
        Exit status 0 once every partition is done, 1 while any is not."""
        ongoing = self.admin.list_partition_reassignments(list(plan))
        current = self._current(t for t, _ in plan)
        described = self.admin.describe_topics(sorted({t for t, _ in plan}))
        self._say("Status of partition reassignment:")
        done = True
        for (topic, index), target in sorted(plan.items()):
            name = f"{topic}-{index}"
            if (topic, index) in ongoing:
                progress = ongoing[(topic, index)]
                isr = set(described[topic].partitions[index].isr)
                waiting = [r for r in progress.adding_replicas if r not in isr]
                self._say(
                    f"Reassignment of partition {name} is still in progress: adding "
                    f"{_ids(progress.adding_replicas)}, removing {_ids(progress.removing_replicas)}, "
                    f"not yet in sync: {_ids(waiting) or 'none'}."
                )
                done = False
            elif current.get((topic, index)) == target:
                self._say(f"Reassignment of partition {name} is completed.")
            else:
                replicas = _ids(current.get((topic, index), []))
                self._say(
                    f"There is no active reassignment of partition {name}, but replica set "
                    f"is {replicas} rather than {_ids(target)}."
                )
                done = False
        return 0 if done else 1

    # --cancel ------------------------------------------------------------------------------
    def cancel(self, plan: dict[PartitionKey, list[int]]) -> int:
        ongoing = self.admin.list_partition_reassignments(list(plan))
        active = [k for k in plan if k in ongoing]
        if not active:
            self._say("None of the specified partition reassignments are active.")
            return 0
        try:
            self.admin.alter_partition_reassignments(dict.fromkeys(active))
        except AdminError as exc:
            print("Error cancelling partition reassignment(s):", file=self.err)
            for (t, p), error in sorted(exc.errors.items()):
                print(f"{t}-{p}: {error}", file=self.err)
            return 1
        names = ",".join(f"{t}-{p}" for t, p in sorted(active))
        self._say(f"Successfully cancelled partition reassignments for: {names}")
        return 0

    # --list --------------------------------------------------------------------------------
    def list(self) -> int:
        ongoing = self.admin.list_partition_reassignments()
        if not ongoing:
            self._say("No partition reassignments found.")
            return 0
        self._say("Current partition reassignments:")
        for (topic, index), progress in sorted(ongoing.items()):
            self._say(
                f"{topic}-{index}: replicas: {_ids(progress.replicas)}. "
                f"adding: {_ids(progress.adding_replicas)}. "
                f"removing: {_ids(progress.removing_replicas)}."
            )
        return 0


def _ids(replicas: Sequence[int]) -> str:
    return ",".join(str(r) for r in replicas)
