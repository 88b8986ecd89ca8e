"""`python -m brokerd groups` against a real group: list, describe (lag), reset, delete."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import time
import uuid

from confluent_kafka import Producer

from tests.compat.group_support import Member, wait_for
from tests.compat.test_groups_clients import committed, create_topic
from tests.harness import ROOT


def groups_cli(bootstrap: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "brokerd", "groups", "--bootstrap-server", bootstrap, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def table(output: str) -> list[list[str]]:
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols[:2] == ["GROUP", "TOPIC"])
    return lines[header + 1 :]


def produce_to(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(15) == 0


def test_groups_cli_on_a_real_group(group_broker, topic_name):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    produce_to(bootstrap, topic_name, {0: 10, 1: 10, 2: 10})
    group = f"cli-{uuid.uuid4().hex[:8]}"
    member = Member(
        "kafka-python", bootstrap, group, topic_name, client_id="cli-member", commit=True
    )
    try:
        wait_for(lambda: len(member.records) == 30, 60, "the member to consume everything")
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 3) == {0: 10, 1: 10, 2: 10},
            30,
            "commits",
        )
        assert group in groups_cli(bootstrap, "--list").stdout.split()

        described = groups_cli(bootstrap, "--describe", "--group", group).stdout
        header = next(line for line in described.splitlines() if line.startswith("GROUP"))
        assert header.split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        rows = table(described)
        assert [r[:6] for r in rows] == [
            [group, topic_name, str(p), "10", "10", "0"] for p in range(3)
        ]
        for row in rows:
            assert row[6].startswith("cli-member-") and row[7:] == ["/127.0.0.1", "cli-member"]

        # Offsets of an active group cannot be reset.
        refused = groups_cli(
            bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest",
            "--execute", check=False,
        )  # fmt: skip
        assert refused.returncode == 1
        assert "can only be reset if the group" in refused.stderr and "Stable" in refused.stderr
        # ... nor the group deleted.
        not_deleted = groups_cli(bootstrap, "--delete", "--group", group, check=False)
        assert not_deleted.returncode == 1 and "NON_EMPTY_GROUP" in not_deleted.stderr
    finally:
        member.terminate()

    between = datetime.datetime.now().astimezone()
    time.sleep(0.05)
    produce_to(bootstrap, topic_name, {0: 5})
    described = groups_cli(bootstrap, "--describe", "--group", group).stdout
    assert f"Consumer group '{group}' has no active members." in described
    rows = table(described)
    assert [r[:9] for r in rows][0] == [group, topic_name, "0", "10", "15", "5", "-", "-", "-"]

    # Dry run: shows the plan, commits nothing.
    dry = groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest",
        "--dry-run",
    ).stdout  # fmt: skip
    assert table(dry) == [[group, topic_name, str(p), "0"] for p in range(3)]
    assert committed(bootstrap, group, topic_name, 3) == {0: 10, 1: 10, 2: 10}
    groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest",
        "--execute",
    )  # fmt: skip
    assert committed(bootstrap, group, topic_name, 3) == {0: 0, 1: 0, 2: 0}
    groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--topic", f"{topic_name}:1",
        "--to-offset", "3", "--execute",
    )  # fmt: skip
    groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--topic", f"{topic_name}:0",
        "--to-datetime", between.isoformat(timespec="milliseconds"), "--execute",
    )  # fmt: skip
    assert committed(bootstrap, group, topic_name, 3) == {0: 10, 1: 3, 2: 0}
    clamped = groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--topic", f"{topic_name}:2",
        "--to-offset", "99", "--execute",
    )  # fmt: skip
    assert "out of range" in clamped.stderr
    groups_cli(
        bootstrap, "--reset-offsets", "--group", group, "--topic", topic_name, "--to-latest",
        "--execute",
    )  # fmt: skip
    assert committed(bootstrap, group, topic_name, 3) == {0: 15, 1: 10, 2: 10}
    lag = table(groups_cli(bootstrap, "--describe", "--group", group).stdout)
    assert [r[5] for r in lag] == ["0", "0", "0"]

    deleted = groups_cli(bootstrap, "--delete", "--group", group).stdout
    assert re.search(
        rf"Deletion of requested consumer groups \('{group}'\) was successful", deleted
    )
    gone = groups_cli(bootstrap, "--describe", "--group", group, check=False)
    assert gone.returncode == 1 and "does not exist" in gone.stderr
    assert group not in groups_cli(bootstrap, "--list").stdout.split()
