"""A confluent-kafka consumer of the new group protocol (KIP-848, `group.protocol=consumer`)
as a subprocess with tests.compat.group_member's interface (flags in, JSON lines out):

    python -m tests.compat.consumer_protocol_member --bootstrap H:P --group G --topic T

It prints {"ready": true} once subscribed, {"assigned": [[topic, partition], ...]} whenever
its assignment changes and {"record": [partition, offset, value]} per record (with --commit
the record's offset is committed after it is printed). SIGTERM closes the consumer (it
leaves the group); SIGKILL is a crash (the coordinator's session timeout removes it).
"""

from __future__ import annotations

import argparse
import signal

from tests.compat import group_member
from tests.compat.group_member import consume_with_confluent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", default="confluent", choices=("confluent",))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--assignor", default="", help="group.remote.assignor (uniform, range)")
    parser.add_argument("--client-id", default="consumer-protocol-member")
    parser.add_argument("--instance-id", help="group.instance.id (a static member)")
    parser.add_argument("--commit", action="store_true", help="commit after each record")
    parser.add_argument("--delay-ms", type=int, default=0, help="processing time per record")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, group_member._stop)  # ends consume_with_confluent

    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000,
        "client.id": args.client_id,
        "debug": "cgrp",
    }
    if args.assignor:
        config["group.remote.assignor"] = args.assignor
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consume_with_confluent(Consumer(config), args, report_failed_commits=True)


if __name__ == "__main__":
    main()
