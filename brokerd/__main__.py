"""The brokerd command line: `serve` runs a broker, `dump-log` reads log files, `groups` and
`reassign` are the counterparts of kafka-consumer-groups.sh and kafka-reassign-partitions.sh."""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import gc
import logging
import signal
import sys


def _parse_override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brokerd", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run a broker")
    serve.add_argument("--config", required=True, help="server.properties")
    serve.add_argument(
        "--override",
        action="append",
        default=[],
        type=_parse_override,
        metavar="KEY=VALUE",
        help="override a property of the config file (repeatable)",
    )
    serve.add_argument("--log-level", default="INFO")
    serve.set_defaults(run=_run_serve)

    dump_log = commands.add_parser(
        "dump-log", help="print .log/.index/.timeindex/.snapshot/checkpoint files", add_help=False
    )
    dump_log.set_defaults(run=_run_dump_log, dump_log_parser=dump_log)

    groups = commands.add_parser(
        "groups", help="list, describe, reset and delete consumer groups", add_help=False
    )
    groups.set_defaults(run=_run_groups)

    reassign = commands.add_parser(
        "reassign", help="move partition replicas (kafka-reassign-partitions.sh)", add_help=False
    )
    reassign.set_defaults(run=_run_reassign)

    configs = commands.add_parser(
        "configs", help="SCRAM users in ZooKeeper (kafka-configs.sh --zookeeper)", add_help=False
    )
    configs.set_defaults(run=_run_configs)

    acls = commands.add_parser("acls", help="ACLs (kafka-acls.sh)", add_help=False)
    acls.set_defaults(run=_run_acls)

    transactions = commands.add_parser(
        "transactions",
        help="list, describe, find-hanging and abort transactions (kafka-transactions.sh)",
        add_help=False,
    )
    transactions.set_defaults(run=_run_transactions)
    return parser


def _run_serve(args: argparse.Namespace) -> int:
    from brokerd.config import BrokerConfig, ConfigError

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = BrokerConfig.from_file(args.config, dict(args.override))
    except (ConfigError, OSError) as exc:
        print(f"brokerd: invalid configuration: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(config))


SHUTDOWN_STACK_DUMP_S = 20


def _awaiting_chain(task: asyncio.Task) -> list[str]:
    """Where a task waits: each coroutine of its await chain, outermost first (a task's own
    stack shows only its outermost coroutine)."""
    lines = []
    awaited: object = task.get_coro()
    for _ in range(64):  # bounded: a chain is a few dozen coroutines deep at most
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        lines.append(f"    {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    if awaited is not None and lines:
        lines.append(f"    waiting on {awaited!r:.200}")
    return lines


def _print_tasks() -> None:
    """Every asyncio task's await chain to stderr (the log): where each coroutine waits."""
    tasks = asyncio.all_tasks()
    out = [f"--- {len(tasks)} asyncio tasks ---"]
    for task in tasks:
        out.append(f"{task.get_name()}:")
        out.extend(_awaiting_chain(task))
    print("\n".join(out), file=sys.stderr, flush=True)


def install_stack_dumps(loop: asyncio.AbstractEventLoop) -> None:
    """As a JVM's thread dump: SIGUSR1 writes every thread's stack (even with the event loop
    stuck, from C), SIGUSR2 every asyncio task's stack, both to stderr (the broker's log)."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    loop.add_signal_handler(signal.SIGUSR2, _print_tasks)


async def _serve(config) -> int:
    from brokerd.server.broker import Broker

    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    install_stack_dumps(loop)
    try:
        await broker.start()
    except Exception as exc:
        logging.getLogger("brokerd").error("start-up failed: %s", exc, exc_info=True)
        await broker.stop()
        return 1
    # Start-up objects (modules, configs, caches) live for the whole run: keep them out of
    # the collector's generations so its full collections stay short (p99 latency).
    gc.collect()
    gc.freeze()
    ports = ", ".join(f"{name}={port}" for name, port in broker.bound_ports.items())
    print(f"brokerd {config.broker_id} serving ({ports})", flush=True)
    await stop.wait()
    # A shutdown that hangs says where: every thread's stack goes to stderr (the log).
    faulthandler.dump_traceback_later(SHUTDOWN_STACK_DUMP_S, exit=False)
    await broker.stop()
    faulthandler.cancel_dump_traceback_later()
    return 0


def _run_dump_log(args: argparse.Namespace, rest: list[str]) -> int:
    # Imported here so `serve` works even where the tool is not installed yet.
    from brokerd.tools import dump_log

    parser = argparse.ArgumentParser(prog="brokerd dump-log")
    dump_log.add_arguments(parser)
    return dump_log.run(parser.parse_args(rest))


def _run_groups(args: argparse.Namespace, rest: list[str]) -> int:
    # Imported here: the client is not needed to serve.
    from brokerd.groups import cli

    parser = argparse.ArgumentParser(prog="brokerd groups")
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(rest))


def _run_reassign(args: argparse.Namespace, rest: list[str]) -> int:
    from brokerd.tools import reassign

    parser = argparse.ArgumentParser(prog="brokerd reassign")
    reassign.add_arguments(parser)
    return reassign.run(parser.parse_args(rest))


def _run_configs(args: argparse.Namespace, rest: list[str]) -> int:
    from brokerd.tools import configs

    parser = argparse.ArgumentParser(prog="brokerd configs")
    configs.add_arguments(parser)
    return configs.run(parser.parse_args(rest))


def _run_acls(args: argparse.Namespace, rest: list[str]) -> int:
    from brokerd.tools import acls

    parser = argparse.ArgumentParser(prog="brokerd acls")
    acls.add_arguments(parser)
    return acls.run(parser.parse_args(rest))


def _run_transactions(args: argparse.Namespace, rest: list[str]) -> int:
    from brokerd.tools import transactions

    parser = argparse.ArgumentParser(prog="brokerd transactions")
    transactions.add_arguments(parser)
    return transactions.run(parser.parse_args(rest))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "dump-log":
        return _run_dump_log(args, rest)
    if args.command == "groups":
        return _run_groups(args, rest)
    if args.command == "reassign":
        return _run_reassign(args, rest)
    if args.command == "configs":
        return _run_configs(args, rest)
    if args.command == "acls":
        return _run_acls(args, rest)
    if args.command == "transactions":
        return _run_transactions(args, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
