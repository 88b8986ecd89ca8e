"""Real processes for integration tests: a ZooKeeper from Debian's package and brokers.

Everything binds loopback on free ports, lives in a temporary directory and is killed
afterwards; nothing is mocked.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import ClassVar

from brokerd.tools import zookeeper

ROOT = Path(__file__).resolve().parents[1]


def _ephemeral_range_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# A port picked here is bound later, by another process (a broker, ZooKeeper), and again
# after each restart. Inside the kernel's ephemeral range, any bind(0) or outgoing
# connection on the machine may take it meanwhile; below it, only a process that names the
# very port can, so ports come from there.
_PICKED_PORTS = range(20000, _ephemeral_range_start())
_port_choice = random.Random()  # its own: a test seeding `random` cannot make picks repeat


# Handed out in this run: a port picked for one broker is unbound while that broker is
# stopped or not yet started (two per broker with the INTERNAL listener), and must not be
# picked again for another meanwhile.
_handed_out: set[int] = set()


def free_port() -> int:
    for _ in range(200):
        port = _port_choice.choice(_PICKED_PORTS) if _PICKED_PORTS else 0
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use: pick another
            port = sock.getsockname()[1]
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {_PICKED_PORTS}")


def wait_for_port(port: int, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")


class ZooKeeper:
    def __init__(self, base_dir: Path):
        self.dir = Path(base_dir)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeper:
        data = self.dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.dir / "zoo.cfg"
        config.write_text(
            f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={data}\n"
            f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\nmaxSessionTimeout=60000\nminSessionTimeout=1000\n"
            "4lw.commands.whitelist=srvr,mntr,cons\n"
        )
        self.log = open(self.dir / "zookeeper.log", "ab")  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(
            zookeeper.server_command(config, max_heap="256m"),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, 30, self.process)
        return self

    def four_letter_word(self, command: str) -> str:
        """ZooKeeper's answer to a four-letter word (srvr, mntr, cons)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(command.encode())
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def monitor(self) -> dict[str, str]:
        """`mntr` as a dict: zk_connection_request_count, zk_num_alive_connections, ..."""
        lines = self.four_letter_word("mntr").splitlines()
        return dict(line.split("\t", 1) for line in lines if "\t" in line)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.log.close()


class BrokerProcess:
    """`python -m brokerd serve` with its own log dir. Clients use the PLAINTEXT listener on
    `port`; brokers talk to each other on the INTERNAL one on `internal_port`, as the
    launcher sets them up (inter-broker requests are refused anywhere else).
    `client_protocol` / `internal_protocol` (e.g. SSL, with the ssl.* configs in `props`)
    change what those two listeners speak; the client listener is then named after it."""

    def __init__(
        self,
        base_dir: Path,
        zk_connect: str,
        broker_id: int = 1,
        client_protocol: str = "PLAINTEXT",
        internal_protocol: str = "PLAINTEXT",
        **props: str,
    ):
        self.dir = Path(base_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.internal_port = free_port()
        self.broker_id = broker_id
        self.props = {
            "broker.id": str(broker_id),
            "listeners": (
                f"{client_protocol}://127.0.0.1:{self.port},"
                f"INTERNAL://127.0.0.1:{self.internal_port}"
            ),
            "listener.security.protocol.map": (
                f"{client_protocol}:{client_protocol},INTERNAL:{internal_protocol}"
            ),
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": str(self.dir / "logs"),
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            **{key.replace("_", "."): value for key, value in props.items()},
        }
        self.process: subprocess.Popen | None = None

    # Brokers started and not yet reaped: a failed test reports their stacks (tests/conftest.py).
    running: ClassVar[weakref.WeakSet[BrokerProcess]] = weakref.WeakSet()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def internal_bootstrap(self) -> str:
        return f"127.0.0.1:{self.internal_port}"

    @property
    def output(self) -> str:
        return (self.dir / "broker.log").read_text(errors="replace")

    def output_bytes(self, start: int) -> str:
        with open(self.dir / "broker.log", "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")

    def start(self, timeout: float = 30, overrides: dict[str, str] | None = None) -> BrokerProcess:
        config = self.dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        command = [sys.executable, "-m", "brokerd", "serve", "--config", str(config)]
        for key, value in (overrides or {}).items():
            command += ["--override", f"{key}={value}"]
        log_path = self.dir / "broker.log"
        already = log_path.stat().st_size if log_path.exists() else 0  # a restart appends
        self.log = open(log_path, "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        BrokerProcess.running.add(self)
        deadline = time.monotonic() + timeout
        while "serving" not in self.output_bytes(already):
            if self.process.poll() is not None:
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n{self.output}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker did not start:\n{self.output}")
            time.sleep(0.05)
        return self

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM and wait: the graceful path."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.log.close()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        if hasattr(self, "log"):
            self.log.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def diagnose(self, log_lines: int = 60, limit: int = 40_000) -> str:
        """The broker's last log lines, then its threads' and asyncio tasks' stacks (SIGUSR1,
        SIGUSR2: brokerd's dumps): what a stalled test needs to say where it stalled."""
        if not self.alive():
            return f"broker {self.broker_id}: not running\n"
        path = self.dir / "broker.log"
        before = path.stat().st_size
        assert self.process is not None
        self.process.send_signal(signal.SIGUSR1)  # written at once, from C
        time.sleep(0.5)
        self.process.send_signal(signal.SIGUSR2)  # by the event loop, if it still turns
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and "asyncio tasks ---" not in self.output_bytes(before):
            time.sleep(0.1)
        time.sleep(0.3)
        with open(path, "rb") as f:
            f.seek(max(0, before - 30_000))
            recent = f.read(min(before, 30_000)).decode(errors="replace")
            dump = f.read().decode(errors="replace")[:limit]
        tail = "\n".join(recent.splitlines()[-log_lines:])
        return f"=== broker {self.broker_id} ({self.dir}) ===\n{tail}\n{dump}\n"


def java_available() -> bool:
    return shutil.which("java") is not None and (zookeeper.JAVA_DIR / "zookeeper.jar").exists()
