"""kazoo's connection loop, made to carry pipelined batches (issue 15).

kazoo (2.11) sends one queued request per turn of its connection thread's loop, and every
socket read or write first waits in a `selectors.DefaultSelector` made for that one wait (an
epoll descriptor opened, registered and closed each time): a turn per request and three or
four selectors per request and answer. A batch of 1,000 pipelined requests (a topic's
partition states) thus cost the ZooKeeper thread 1,000 turns and ~4,000 selectors, and the
threads queueing requests blocked on kazoo's wake-up socket pair meanwhile; measured on the
loaded 2-core VM, 1,000 creates took 2.3 s and 1,000 reads 1.4 s.

Here, as Kafka's ZooKeeperClient (its requests written as they come, answers read as
they arrive):
* a turn writes every request queued by then (up to MAX_BATCH) in one socket write, in
  queue order with consecutive xids, so the answers match kazoo's pending list as before;
* a read or write tries the (non-blocking) socket first and waits only when it would block,
  with one `poll` object (no descriptor) instead of a selector.
Nothing else changes: session set-up, pings, watches, authentication and the reconnection
logic are kazoo's. A request taken from kazoo's queue goes to its pending list before the
batch is written; a connection lost mid-write makes kazoo fail the pending list and the
queue alike with ConnectionLoss, so up to MAX_BATCH requests, some perhaps executed by ZooKeeper,
fail at once: as with one request before, ZkClient's callers retry and check what was done
(a create answered NodeExists, a conditional set BadVersion).
TLS sockets keep kazoo's own read and write.
"""

from __future__ import annotations

import select
import ssl
from typing import Any

from kazoo.exceptions import ConnectionDropped
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol import connection as kazoo_connection
from kazoo.protocol.connection import ConnectionHandler
from kazoo.protocol.serialization import Auth, int_struct

# Requests written in one turn of the loop at most (each a few hundred bytes at most here).
MAX_BATCH = 512
_READ = select.POLLIN | select.POLLERR | select.POLLHUP
_WRITE = select.POLLOUT | select.POLLERR | select.POLLHUP


def _fd(obj: Any) -> int:
    return obj if isinstance(obj, int) else obj.fileno()


def poll_select(
    rlist: list, wlist: list, xlist: list, timeout: float | None = None
) -> tuple[list, list, list]:
    """select()'s contract (ready objects of rlist and wlist) over one `poll` object: no
    descriptor limit (as kazoo's selector_select) and no descriptor opened per wait."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    for obj in rlist:
        masks[_fd(obj)] = masks.get(_fd(obj), 0) | select.POLLIN
    for obj in wlist:
        masks[_fd(obj)] = masks.get(_fd(obj), 0) | select.POLLOUT
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    ready = dict(poller.poll(None if timeout is None else timeout * 1000))
    readable = [obj for obj in rlist if ready.get(_fd(obj), 0) & _READ]
    writable = [obj for obj in wlist if ready.get(_fd(obj), 0) & _WRITE]
    return readable, writable, []


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler, waiting with poll_select."""

    def select(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        return poll_select(*args, **kwargs)


class BatchingConnection(ConnectionHandler):
    """kazoo's ConnectionHandler writing all queued requests per turn (see the module)."""

    def _send_request(self, read_timeout: float, connect_timeout: float) -> None:
        client = self.client
        queue = client._queue
        if not queue or not _plain(queue[0][0]):
            # Empty (a cancelled request) or kazoo's special entries: kazoo's own path.
            super()._send_request(read_timeout, connect_timeout)
            return
        out = bytearray()
        pending = client._pending
        xid: int = getattr(self, "_xid", 0)
        taken = 0
        # Other threads append to the queue at any time (kazoo takes no lock), so it is
        # never iterated: iterating raised "deque mutated during iteration" when one did
        # (even a C-level copy: a garbage collection inside it can run Python code and let
        # another thread in), which ended the connection with ConnectionLoss for every
        # pending request (seen in CI). Only this thread removes entries: it looks at the
        # head and pops it. A popped request goes to the pending list before it is written,
        # so a write that fails fails it with ConnectionLoss like any unanswered request.
        while taken < MAX_BATCH and queue:
            request, async_object = queue[0]
            if not _plain(request):
                break
            queue.popleft()
            taken += 1
            try:
                encoded = request.serialize()
            except Exception as error:  # a request that cannot be encoded fails alone
                async_object.set_exception(error)
                continue
            xid = (xid % 2147483647) + 1
            body = bytearray(int_struct.pack(xid))
            if request.type:
                body += int_struct.pack(request.type)
            body += encoded
            out += int_struct.pack(len(body))
            out += body
            pending.append((request, async_object, xid))
        self._xid = xid
        if out:
            self._write(bytes(out), connect_timeout)
        # One wake-up byte per request queued; those of requests queued but not yet
        # signalled arrive later and find the queue empty (kazoo's own path drains them).
        try:
            self._read_sock.recv(taken)
        except BlockingIOError:
            pass

    def _read(self, length: int, timeout: float) -> bytes:
        if isinstance(self._socket, ssl.SSLSocket):
            return super()._read(length, timeout)
        parts = []
        remaining = length
        with self._socket_error_handling():
            while remaining > 0:
                try:
                    chunk = self._socket.recv(remaining)
                except BlockingIOError:
                    if not poll_select([self._socket], [], [], timeout)[0]:
                        raise self.handler.timeout_exception(
                            "socket time-out during read"
                        ) from None
                    continue
                if not chunk:
                    raise ConnectionDropped("socket connection broken")
                parts.append(chunk)
                remaining -= len(chunk)
        return b"".join(parts)

    def _write(self, msg: bytes, timeout: float) -> None:
        if isinstance(self._socket, ssl.SSLSocket):
            super()._write(msg, timeout)
            return
        view = memoryview(msg)
        sent = 0
        with self._socket_error_handling():
            while sent < len(msg):
                try:
                    done = self._socket.send(view[sent:])
                except BlockingIOError:
                    if not poll_select([], [self._socket], [], timeout)[1]:
                        raise self.handler.timeout_exception(
                            "socket time-out during write"
                        ) from None
                    continue
                if not done:
                    raise ConnectionDropped("socket connection broken")
                sent += done


def _plain(request: Any) -> bool:
    """A request of the API (not kazoo's test markers, nor authentication)."""
    return (
        request is not kazoo_connection._SESSION_EXPIRED
        and request is not kazoo_connection._CONNECTION_DROP
        and request.type != Auth.type
    )


def install(kazoo: Any) -> None:
    """Give a KazooClient (before its start) the polling handler and batching connection."""
    kazoo.handler.__class__ = PollingHandler
    kazoo._connection.__class__ = BatchingConnection
