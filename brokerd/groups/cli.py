"""`python -m brokerd groups`: the counterpart of kafka-consumer-groups.sh.

    groups --bootstrap-server H:P --list
    groups --bootstrap-server H:P --describe --group G [--group G2 ...]
    groups --bootstrap-server H:P --reset-offsets --group G (--topic T[:P,P] | --all-topics)
           (--to-earliest | --to-latest | --to-datetime ISO | --to-offset N) [--dry-run|--execute]
    groups --bootstrap-server H:P --delete --group G [--group G2 ...]

Everything goes over the Kafka protocol through brokerd.client (FindCoordinator, ListGroups,
DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit, DeleteGroups); output follows
Kafka's tool, column for column.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from typing import TextIO

from brokerd.client.errors import KafkaClientError
from brokerd.client.results import AdminError
from brokerd.client.sync import SyncClient

MISSING = "-"
INACTIVE_STATES = ("Empty", "Dead")
RESET_LINE = "{:<30} {:<30} {:<10} {:<15}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="host:port of a broker")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list all consumer groups")
    action.add_argument("--describe", action="store_true", help="offsets, lag and members")
    action.add_argument("--reset-offsets", action="store_true", help="move committed offsets")
    action.add_argument("--delete", action="store_true", help="delete inactive groups")
    parser.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every group")
    parser.add_argument(
        "--type",
        nargs="?",
        const="",
        help="with --list: show each group's type; TYPE[,TYPE] (classic, consumer) filters",
    )
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        help="with --list: show each group's state; STATE[,STATE] filters",
    )
    parser.add_argument("--topic", action="append", default=[], help="TOPIC or TOPIC:P,P")
    parser.add_argument("--all-topics", action="store_true", help="every committed topic")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    target.add_argument("--to-offset", type=int)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only show the new offsets")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per call")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        client = SyncClient(args.bootstrap_server)
    except (KafkaClientError, OSError) as exc:
        print(f"Error: cannot reach {args.bootstrap_server}: {exc}", file=err)
        return 1
    try:
        tool = GroupsTool(client, out, err)
        if args.list:
            return tool.list_groups(args.type, args.state)
        groups = _groups(args, client)
        if not groups:
            print("Error: --group or --all-groups is required", file=err)
            return 2
        if args.describe:
            return tool.describe(groups)
        if args.delete:
            return tool.delete(groups)
        return tool.reset(groups, args)
    except (KafkaClientError, OSError) as exc:
        print(f"Error: {exc}", file=err)
        return 1
    finally:
        client.close()


def _groups(args, client) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in client.admin.list_groups()]
    return list(dict.fromkeys(args.group))


class GroupsTool:
    def __init__(self, client, out: TextIO, err: TextIO):
        self.client = client
        self.admin = client.admin
        self.out = out
        self.err = err

    def _describe_one(self, group: str):
        """The group's description, or None when the coordinator knows no such group."""
        try:
            return self.admin.describe_groups([group])[group]
        except AdminError as exc:
            if "GROUP_ID_NOT_FOUND" in str(exc):
                return None
            raise

    # --list ------------------------------------------------------------------------------
    def list_groups(self, types: str | None = None, states: str | None = None) -> int:
        """As kafka-consumer-groups.sh --list: ids only, or with --type/--state a table
        (GROUP, TYPE, STATE; Kafka's names Classic/Consumer), filtered by their values."""
        listings = self.admin.list_groups()
        if types is None and states is None:
            for listing in listings:
                print(listing.group_id, file=self.out)
            return 0
        wanted_types = {t.strip().lower() for t in (types or "").split(",") if t.strip()}
        wanted_states = {s.strip().lower() for s in (states or "").split(",") if s.strip()}
        rows = [
            listing
            for listing in listings
            if (not wanted_types or listing.group_type.lower() in wanted_types)
            and (not wanted_states or (listing.state or "").lower() in wanted_states)
        ]
        width = max([15, *(len(r.group_id) for r in rows)]) + 10
        header = ["GROUP".ljust(width)]
        if types is not None:
            header.append("TYPE".ljust(20))
        if states is not None:
            header.append("STATE".ljust(20))
        print(" ".join(header), file=self.out)
        for r in rows:
            line = [r.group_id.ljust(width)]
            if types is not None:
                line.append(r.group_type.capitalize().ljust(20))
            if states is not None:
                line.append((r.state or "Unknown").ljust(20))
            print(" ".join(line), file=self.out)
        return 0

    # --describe --------------------------------------------------------------------------
    def describe(self, groups: list[str]) -> int:
        status = 0
        for group in groups:
            description = self._describe_one(group)
            if description is None or description.state == "Dead":
                print(f"Error: Consumer group '{group}' does not exist.", file=self.err)
                status = 1
                continue
            rows = self._offset_rows(group, description)
            if description.state == "Empty":
                print(f"\nConsumer group '{group}' has no active members.", file=self.out)
            elif description.state in ("PreparingRebalance", "CompletingRebalance"):
                print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=self.out)
            self._print_table(rows)
        return status

    def _offset_rows(self, group: str, description) -> list[tuple]:
        committed = self.admin.list_consumer_group_offsets(group)
        owners = {}
        idle = []
        for member in description.members:
            if not member.assignment:
                idle.append(member)
            for tp in member.assignment:
                owners[tp] = member
        partitions = sorted(set(committed) | set(owners))
        ends = {}
        if partitions:
            listed = self.admin.list_offsets(dict.fromkeys(partitions, "latest"))
            ends = {tp: found.offset for tp, found in listed.items()}
        rows = []
        for tp in partitions:
            offset = committed.get(tp)
            current = offset.offset if offset is not None and offset.offset >= 0 else None
            end = ends.get(tp)
            lag = end - current if current is not None and end is not None else None
            member = owners.get(tp)
            rows.append(
                (
                    group,
                    tp[0],
                    tp[1],
                    current,
                    end,
                    lag,
                    member.member_id if member else None,
                    member.client_host if member else None,
                    member.client_id if member else None,
                )
            )
        for member in idle:
            rows.append((group, None, None, None, None, None, member.member_id,
                         member.client_host, member.client_id))  # fmt: skip
        return rows

    def _print_table(self, rows: list[tuple]) -> None:
        def text(value) -> str:
            return MISSING if value is None else str(value)

        def width(index: int, header: str) -> int:
            return max([15, len(header)] + [len(text(r[index])) for r in rows])

        group_w, topic_w = width(0, "GROUP"), width(1, "TOPIC")
        member_w, host_w = width(6, "CONSUMER-ID"), width(7, "HOST")
        line = f"%-{group_w}s %-{topic_w}s %-10s %-15s %-15s %-15s %-{member_w}s %-{host_w}s %s"
        print(file=self.out)
        header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")
        print(line % (*header, "CONSUMER-ID", "HOST", "CLIENT-ID"), file=self.out)
        for row in rows:
            print(line % tuple(text(v) for v in row), file=self.out)

    # --delete ------------------------------------------------------------------------------
    def delete(self, groups: list[str]) -> int:
        failed = {}
        for group in groups:
            try:
                self.admin.delete_groups([group])
            except AdminError as exc:
                failed[group] = _error_name(exc)
        deleted = [g for g in groups if g not in failed]
        if deleted:
            names = ", ".join(f"'{g}'" for g in deleted)
            print(f"Deletion of requested consumer groups ({names}) was successful.", file=self.out)
        if failed:
            print("Deletion of some consumer groups failed:", file=self.err)
            for group, reason in failed.items():
                print(f"* Group '{group}' could not be deleted due to: {reason}", file=self.err)
            return 1
        return 0

    # --reset-offsets ---------------------------------------------------------------------
    def reset(self, groups: list[str], args) -> int:
        targets = [args.to_earliest, args.to_latest, args.to_datetime, args.to_offset]
        if all(t is None or t is False for t in targets):
            print(
                "Error: one of --to-earliest, --to-latest, --to-datetime, --to-offset is required",
                file=self.err,
            )
            return 2
        if not args.topic and not args.all_topics:
            print("Error: --topic or --all-topics is required", file=self.err)
            return 2
        status = 0
        for group in groups:
            description = self._describe_one(group)
            state = description.state if description is not None else "Dead"
            if state not in INACTIVE_STATES:
                print(
                    f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                    f"but the current state is {state}.",
                    file=self.err,
                )
                status = 1
                continue
            partitions = self._reset_partitions(group, args)
            planned = self._new_offsets(partitions, args)
            if args.execute and planned:
                self.admin.commit_offsets(group, planned)
            print(file=self.out)
            print(RESET_LINE.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), file=self.out)
            for (topic, partition), offset in sorted(planned.items()):
                print(RESET_LINE.format(group, topic, partition, offset), file=self.out)
        return status

    def _reset_partitions(self, group: str, args) -> list[tuple[str, int]]:
        if args.all_topics:
            return sorted(self.admin.list_consumer_group_offsets(group))
        partitions = []
        for spec in args.topic:
            topic, _, listed = spec.partition(":")
            if listed:
                partitions += [(topic, int(p)) for p in listed.split(",") if p]
            else:
                partitions += [(topic, p) for p in sorted(self.admin.high_watermarks(topic))]
        return partitions

    def _new_offsets(self, partitions: list[tuple[str, int]], args) -> dict:
        if not partitions:
            return {}
        if args.to_earliest:
            return self._listed(partitions, "earliest")
        if args.to_latest:
            return self._listed(partitions, "latest")
        if args.to_datetime:
            stamp = _parse_datetime(args.to_datetime)
            found = self._listed(partitions, stamp)
            latest = self._listed(partitions, "latest")
            # No record at or after the time: the log end, as Kafka's tool does.
            return {tp: o if o >= 0 else latest[tp] for tp, o in found.items()}
        earliest = self._listed(partitions, "earliest")
        latest = self._listed(partitions, "latest")
        out = {}
        for tp in partitions:
            offset = args.to_offset
            if offset < earliest[tp] or offset > latest[tp]:
                bound = earliest[tp] if offset < earliest[tp] else latest[tp]
                print(
                    f"New offset ({offset}) is out of range for {tp[0]}-{tp[1]}; "
                    f"using {bound} instead.",
                    file=self.err,
                )
                offset = bound
            out[tp] = offset
        return out

    def _listed(self, partitions, spec) -> dict:
        listed = self.admin.list_offsets(dict.fromkeys(partitions, spec))
        return {tp: found.offset for tp, found in listed.items()}


def _parse_datetime(text: str) -> int:
    """Kafka's --to-datetime: ISO 8601, local time when no zone is given; ms since epoch."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def _error_name(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        first = next(iter(errors.values()))
        return getattr(first, "name", str(first))
    return getattr(exc, "name", str(exc))
