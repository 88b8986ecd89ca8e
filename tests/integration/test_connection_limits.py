"""Connections cannot hold a broker's memory or descriptors without limit (Kafka's configs:
connections.max.idle.ms, queued.max.request.bytes, max.connections, max.connections.per.ip
and its overrides), and other clients keep being served. Real broker processes; memory is
read from /proc/<pid>/status."""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from pathlib import Path

from brokerd.protocol.errors import ErrorCode
from tests.integration.wire import WireClient, request

MIB = 1 << 20


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def api_versions_ok(bootstrap: str, timeout: float = 10) -> bool:
    with WireClient(bootstrap, timeout=timeout) as client:
        return (
            client.call(
                request(18, 3, client_software_name="w", client_software_version="1")
            ).error_code
            == ErrorCode.none
        )


def connect(broker, source: str = "127.0.0.1") -> socket.socket:
    address = ("127.0.0.1", broker.port)
    return socket.create_connection(address, timeout=10, source_address=(source, 0))


class ClientFrom(WireClient):
    """A wire client whose connection comes from the loopback address `source`."""

    def __init__(self, broker, source: str):
        self.sock = connect(broker, source)
        self.correlation_id = 0


def wait_all_closed_by_peer(sockets: list[socket.socket], timeout: float) -> list[socket.socket]:
    """The sockets the broker has not closed after `timeout` seconds."""
    by_fd = {sock.fileno(): sock for sock in sockets}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    while by_fd and time.monotonic() < deadline:
        for fd, _ in poller.poll(500):
            try:
                closed = by_fd[fd].recv(1 << 16, socket.MSG_DONTWAIT) == b""
            except (BlockingIOError, InterruptedError):
                closed = False
            except OSError:  # reset
                closed = True
            if closed:
                poller.unregister(fd)
                del by_fd[fd]
    return list(by_fd.values())


def slow_loris(broker, count: int, announced: int) -> list[socket.socket]:
    """`count` connections, each announcing a frame of `announced` bytes and sending one."""
    made = []
    for _ in range(count):
        sock = connect(broker)
        sock.sendall(struct.pack(">i", announced) + b"\x00")
        made.append(sock)
    return made


def test_slow_loris_connections_are_closed_when_idle(make_broker):
    """2,000 connections that announce a 100 MB frame and send one byte: the broker
    allocates nothing for what they announce, keeps serving everyone else, and closes each
    once it has been idle for connections.max.idle.ms. A connection whose frame keeps coming
    in, slowly, is not idle."""
    broker = make_broker(connections_max_idle_ms="3000").start()
    pid = broker.process.pid
    before_kib = status_kib(pid, "VmRSS")

    trickle = connect(broker)
    trickle.sendall(struct.pack(">i", 1000))
    stop_trickling = threading.Event()

    def trickling() -> None:
        while not stop_trickling.wait(0.5):
            trickle.sendall(b"\x00")

    trickler = threading.Thread(target=trickling, daemon=True)
    trickler.start()
    sockets = slow_loris(broker, 2000, 100_000_000)
    try:
        assert api_versions_ok(broker.bootstrap)
        grown_mib = (status_kib(pid, "VmHWM") - before_kib) / 1024
        assert grown_mib < 200, f"the broker grew by {grown_mib:.0f} MiB for 2,000 one-byte frames"

        still_open = wait_all_closed_by_peer(sockets, timeout=60)
        assert not still_open, f"{len(still_open)} idle connections never closed"
        assert "idle for more than connections.max.idle.ms" in broker.output

        # The trickling connection made progress all along: still open.
        assert wait_all_closed_by_peer([trickle], timeout=0.5) == [trickle]
        stop_trickling.set()
        trickler.join()
        assert not wait_all_closed_by_peer([trickle], timeout=60), "idle trickler never closed"
        assert api_versions_ok(broker.bootstrap)
        assert broker.alive()
    finally:
        stop_trickling.set()
        for sock in [*sockets, trickle]:
            sock.close()


def send_what_goes(sockets: list[socket.socket], payload_each: int, stall_s: float) -> int:
    """Push up to `payload_each` bytes into each socket without blocking, until none has
    accepted a byte for `stall_s` seconds; the bytes sent in all."""
    left = {sock: payload_each for sock in sockets}
    chunk = b"\x00" * MIB
    sent_total = 0
    last_progress = time.monotonic()
    while any(left.values()) and time.monotonic() - last_progress < stall_s:
        progressed = False
        for sock, wanted in left.items():
            if not wanted:
                continue
            try:
                sent = sock.send(chunk[: min(len(chunk), wanted)], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                left[sock] = 0
                continue
            left[sock] -= sent
            sent_total += sent
            progressed = True
        if progressed:
            last_progress = time.monotonic()
        else:
            time.sleep(0.05)
    return sent_total


def test_queued_max_request_bytes_bounds_memory(make_broker):
    """Twelve connections each send 24 MiB of a 30 MiB frame and stop: 288 MiB a broker
    without queued.max.request.bytes would hold. With 32 MiB, it reads while the pool has room
    (a request is admitted whole once any memory is free, as in Kafka: two here), then stops
    reading (the rest waits in the clients' socket buffers); once the half-sent frames have been
    idle for connections.max.idle.ms their connections close and other clients are served."""
    broker = make_broker(
        socket_request_max_bytes=str(32 * MIB),
        queued_max_request_bytes=str(32 * MIB),
        connections_max_idle_ms="3000",
    ).start()
    pid = broker.process.pid
    assert api_versions_ok(broker.bootstrap)
    before_kib = status_kib(pid, "VmRSS")
    sockets = slow_loris(broker, 12, 30 * MIB)
    try:
        sent = send_what_goes(sockets, 24 * MIB, stall_s=2)
        assert sent >= 2 * 24 * MIB  # the rest waits in socket buffers, not in the broker
        grown_mib = (status_kib(pid, "VmHWM") - before_kib) / 1024
        assert grown_mib < 150, f"the broker grew by {grown_mib:.0f} MiB (pool: 32 MiB)"

        assert not wait_all_closed_by_peer(sockets, timeout=60)
        assert api_versions_ok(broker.bootstrap)
        assert "idle for more than connections.max.idle.ms" in broker.output
    finally:
        for sock in sockets:
            sock.close()


def test_max_connections_per_ip_and_overrides(make_broker):
    """max.connections.per.ip=1, and 3 for 127.0.0.1 by the overrides: a connection over its
    address's limit is closed right after it is accepted; the others are served, and a closed
    connection's slot is taken again."""
    broker = make_broker(max_connections_per_ip="1", max_connections_per_ip_overrides="127.0.0.1:3")
    internal = f"INTERNAL://127.0.0.1:{broker.internal_port}"
    broker.props["listeners"] = f"PLAINTEXT://0.0.0.0:{broker.port},{internal}"  # 127.0.0.2 too
    broker.props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{broker.port},{internal}"
    broker.start()
    kept: list[WireClient] = []
    try:
        # 127.0.0.1 may hold 3, the broker's own connections to itself included.
        for _ in range(4):
            client = ClientFrom(broker, "127.0.0.1")
            if client.is_closed_by_peer(wait=1):
                client.close()
                break
            kept.append(client)
        else:
            raise AssertionError("a fourth connection from 127.0.0.1 was kept (limit 3)")
        assert 1 <= len(kept) <= 3
        for client in kept:
            client.sock.settimeout(10)
            assert client.call(request(18, 0)).error_code == ErrorCode.none

        # 127.0.0.2 has the default limit: one.
        with ClientFrom(broker, "127.0.0.2") as first, ClientFrom(broker, "127.0.0.2") as second:
            assert second.is_closed_by_peer(wait=10), "a second connection from 127.0.0.2 was kept"
            assert first.call(request(18, 0)).error_code == ErrorCode.none
        assert "Rejected connection from 127.0.0.2, address already has the configured " in (
            broker.output
        )
        deadline = time.monotonic() + 30
        while True:  # its slot is freed once the broker has seen it close
            with ClientFrom(broker, "127.0.0.2") as again:
                if not again.is_closed_by_peer(wait=1):
                    again.sock.settimeout(10)
                    assert again.call(request(18, 0)).error_code == ErrorCode.none
                    break
            assert time.monotonic() < deadline, "127.0.0.2's slot was never freed"
    finally:
        for client in kept:
            client.close()


def test_max_connections_stops_accepting_until_one_closes(make_broker):
    """max.connections=4: at the limit the broker accepts nothing more (the client waits in
    the listen backlog, unanswered); when a connection closes, the waiting one is served."""
    broker = make_broker(max_connections="4").start()
    served: list[WireClient] = []
    waiting = None
    try:
        for _ in range(6):
            # Unanswered for 5 s: waiting in the backlog (an accepted one answers in ms).
            client = WireClient(broker.bootstrap, timeout=5 if served else 30)
            try:
                client.call(request(18, 0))
            except TimeoutError:
                waiting = client
                break
            served.append(client)
        assert waiting is not None, f"{len(served)} connections served, max.connections is 4"
        assert 1 <= len(served) <= 4  # the broker's own connections count too
        served.pop(0).close()
        waiting.sock.settimeout(30)
        _, answer = waiting.receive(18, 0)
        assert answer.error_code == ErrorCode.none
    finally:
        for client in served:
            client.close()
        if waiting is not None:
            waiting.close()


def test_inter_broker_listener_is_accepted_over_max_connections(make_broker):
    """With several listeners, the inter-broker one (INTERNAL here) accepts even at
    max.connections, and the least recently active connection of another listener is closed
    instead, as in Kafka."""
    broker = make_broker(max_connections="3").start()
    served: list[WireClient] = []
    waiting = None
    try:
        for _ in range(5):
            # Unanswered for 5 s: waiting in the backlog (an accepted one answers in ms).
            client = WireClient(broker.bootstrap, timeout=5 if served else 30)
            try:
                client.call(request(18, 0))
            except TimeoutError:
                waiting = client
                break
            served.append(client)
        assert waiting is not None and served
        for client in served[1:]:  # served[0] is now the least recently active
            client.call(request(18, 0))
        with WireClient(f"127.0.0.1:{broker.internal_port}", timeout=10) as internal:
            assert internal.call(request(18, 0)).error_code == ErrorCode.none
            assert served[0].is_closed_by_peer(wait=10)
            for client in served[1:]:
                client.sock.settimeout(10)
                assert client.call(request(18, 0)).error_code == ErrorCode.none
    finally:
        for client in served:
            client.close()
        if waiting is not None:
            waiting.close()
