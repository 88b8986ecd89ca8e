"""A launcher in miniature for tests/integration/test_supervisor.py: what platform/launch.py
does with its Supervisor (start in order, supervise until SIGTERM or SIGINT, stop in reverse),
on the programs of a JSON spec, so a test can signal a real supervising process.

    python -m tests.integration.supervisor_driver SPEC.json

SPEC: {"status_path", "backoff_initial_s", "backoff_max_s", "stable_after_s",
"programs": [{"name", "command", "log_path", "port" (optional: ready once it accepts)}]}.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import sys
from pathlib import Path

from brokerd.util.supervisor import Program, Supervisor


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def ready_on(port: int | None):
    return None if port is None else lambda: port_open(port)


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor: %(message)s")
    supervisor = Supervisor(
        Path(spec["status_path"]),
        {"cluster": "test"},
        backoff_initial_s=spec["backoff_initial_s"],
        backoff_max_s=spec["backoff_max_s"],
        stable_after_s=spec["stable_after_s"],
        stop_timeout_s=10,
    )
    signal.signal(signal.SIGTERM, lambda _signum, _frame: supervisor.request_stop())
    signal.signal(signal.SIGINT, lambda _signum, _frame: supervisor.request_stop())
    try:
        for entry in spec["programs"]:
            program = Program(
                entry["name"],
                entry["command"],
                Path(entry["log_path"]),
                ready=ready_on(entry.get("port")),
                ready_timeout_s=30,
            )
            supervisor.start(program)
        supervisor.run(interval_s=0.05)
    finally:
        supervisor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
