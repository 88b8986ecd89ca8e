"""`brokerd configs`: SCRAM users in ZooKeeper, like kafka-configs.sh --zookeeper (usable
before any broker runs, to create the first admin).

    brokerd configs --zookeeper localhost:2181 --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
    brokerd configs --zookeeper localhost:2181 --alter --entity-type users --entity-name alice \\
        --delete-config SCRAM-SHA-512
    brokerd configs --zookeeper localhost:2181 --describe --entity-type users --entity-name alice

Only salted keys are stored (never the password); a change notification under
/config/changes is written as Kafka writes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kazoo.client import KazooClient

from brokerd.security.sasl.credentials import user_path
from brokerd.security.sasl.scram import MECHANISMS, MIN_ITERATIONS, make_credential

CHANGES_PREFIX = "/config/changes/config_change_"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zookeeper", required=True, help="host:port[/chroot]")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    parser.add_argument("--entity-type", required=True, choices=["users"])
    parser.add_argument("--entity-name", required=True)
    parser.add_argument("--add-config", default="")
    parser.add_argument("--delete-config", default="")


def split_config_list(text: str) -> list[tuple[str, str]]:
    """`a=1,b=[x=1,y=2]` -> [(a, 1), (b, x=1,y=2)]: commas inside brackets stay."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        items.append("".join(current))
    pairs = []
    for item in filter(None, (i.strip() for i in items)):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected key=value in --add-config, got {item!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        pairs.append((key.strip(), value))
    return pairs


def scram_configs(add_config: str) -> dict[str, str]:
    """Each SCRAM mechanism's credential text from `[iterations=...,password=...]`."""
    out = {}
    for mechanism, value in split_config_list(add_config):
        if mechanism not in MECHANISMS:
            raise ValueError(f"{mechanism}: only {', '.join(MECHANISMS)} are supported for users")
        options = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        if "password" not in options:
            raise ValueError(f"{mechanism}: password is required")
        iterations = int(options.get("iterations", MIN_ITERATIONS))
        out[mechanism] = make_credential(mechanism, options["password"], iterations).to_text()
    return out


def run(args: argparse.Namespace) -> int:
    hosts, slash, chroot = args.zookeeper.partition("/")
    zk = KazooClient(hosts=hosts)
    zk.start(timeout=15)
    try:
        if slash and chroot.strip("/"):
            zk.ensure_path("/" + chroot.strip("/"))
            zk.stop()
            zk = KazooClient(hosts=f"{hosts}/{chroot.strip('/')}")
            zk.start(timeout=15)
        path = user_path(args.entity_name)
        current: dict[str, Any] = {"version": 1, "config": {}}
        if zk.exists(path):
            data, _ = zk.get(path)
            current = json.loads(data) if data else current
        config = dict(current.get("config") or {})
        if args.describe:
            described = ", ".join(
                f"{k}=iterations={v.rsplit('iterations=', 1)[-1]}"
                for k, v in sorted(config.items())
                if k in MECHANISMS
            )
            print(f"Configs for user-principal '{args.entity_name}' are {described}")
            return 0
        try:
            config.update(scram_configs(args.add_config))
        except ValueError as exc:
            print(f"brokerd configs: {exc}", file=sys.stderr)
            return 1
        for name in filter(None, (n.strip() for n in args.delete_config.split(","))):
            config.pop(name, None)
        payload = json.dumps({"version": 1, "config": config}).encode()
        if zk.exists(path):
            zk.set(path, payload)
        else:
            zk.create(path, payload, makepath=True)
        zk.create(
            CHANGES_PREFIX,
            json.dumps({"version": 2, "entity_path": path.removeprefix("/config/")}).encode(),
            sequence=True,
            makepath=True,
        )
        print(f"Completed updating config for user {args.entity_name}.")
        return 0
    finally:
        zk.stop()
        zk.close()
