"""ZooKeeper through kazoo, as an asyncio client (Kafka's KafkaZkClient to zk_data's ZkData).

kazoo is blocking and calls back on its own threads: every call runs in a worker thread and
every callback is handed to the event loop. Paths and payloads come from zk_data.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.retry import KazooRetry

from . import zk_connection, zk_data, zk_multi

log = logging.getLogger(__name__)


class ControllerMovedError(Exception):
    """A fenced write failed its check: /controller_epoch moved, another controller rules."""


# A controller's fence: /controller_epoch's znode version when it took office. Writes made
# with it are multi-ops that first check that version, as Kafka's KafkaZkClient does.
Fence = tuple[str, int]

# What kazoo raises while the connection (not the session) is down: a request in flight
# gets ConnectionLoss, one sent while reconnecting SessionExpiredError though the session
# may well live on. Retried once connected again, like KafkaZkClient's
# retryRequestsUntilConnected; only the state LOST means the session is really gone.
_CONNECTION_DOWN = (ConnectionLoss, SessionExpiredError, OperationTimeoutError)
_RECONNECT_POLL_S = 0.05


@dataclass
class SessionCallbacks:
    on_lost: list[Callable[[], Any]] = field(default_factory=list)
    on_connected: list[Callable[[], Any]] = field(default_factory=list)


class ZkClient:
    """An asyncio face on a kazoo client, chroot created if absent (as Kafka does)."""

    def __init__(self, hosts: str, chroot: str | None, session_timeout_ms: int, connect_ms: int):
        self.hosts = hosts
        self.chroot = chroot
        self.session_timeout_ms = session_timeout_ms
        self.connect_ms = connect_ms
        self.callbacks = SessionCallbacks()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost = False
        self._kazoo = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, max_delay=2),
            command_retry=KazooRetry(max_tries=3, max_delay=1),
        )
        # Every request of a pipelined batch written in one turn of kazoo's loop.
        zk_connection.install(self._kazoo)
        self._kazoo.add_listener(self._on_state)
        self._closing = False
        self.reads = 0  # znode reads (get, children, exists) sent, for the metrics
        self.batches = 0  # pipelined batches waited for (one round trip each)
        # Many znodes per request (zk_multi): multi-read until the server refuses it
        # (ZooKeeper before 3.6), then a request per znode.
        self.multi_read = True

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._kazoo.start, self.connect_ms / 1000)
        if self.chroot:
            await self._call(self._kazoo.ensure_path, self.chroot)
            self._kazoo.chroot = self.chroot
        for path in zk_data.PERSISTENT_PATHS:
            await self._call(self._kazoo.ensure_path, path)

    async def stop(self) -> None:
        self._closing = True
        await asyncio.to_thread(self._kazoo.stop)
        await asyncio.to_thread(self._kazoo.close)

    @property
    def connected(self) -> bool:
        return self._kazoo.connected

    @property
    def session_id(self) -> int | None:
        session = self._kazoo.client_id
        return session[0] if session else None

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's thread and must not block; hand the event to the loop.
        if self._loop is None or self._loop.is_closed():
            return
        if state == KazooState.LOST:
            self._session_lost = True
            callbacks = self.callbacks.on_lost
        elif state == KazooState.CONNECTED:
            callbacks = self.callbacks.on_connected
        else:
            return
        for callback in callbacks:
            self._loop.call_soon_threadsafe(callback)

    async def _call(
        self,
        operation: Callable[..., Any],
        *args: Any,
        landed: Callable[[], Any] | None = None,
    ) -> Any:
        """Run a kazoo call on a worker thread, riding out a dropped connection.

        While the connection is down the call waits for it and is sent again. A write that
        is not idempotent passes `landed`: after a reconnect it checks (on a worker thread)
        whether the lost attempt took effect and returns that attempt's result, or None to
        send the write again. Reads and idempotent writes need none.
        """
        resent = False
        while True:
            try:
                if resent and landed is not None:
                    outcome = await asyncio.to_thread(landed)
                    if outcome is not None:
                        return outcome
                return await asyncio.to_thread(operation, *args)
            except _CONNECTION_DOWN:
                if self._closing or self._kazoo.state == KazooState.LOST:
                    raise
                log.info("ZooKeeper connection down; retrying once it is back")
                await self._until_connected()
                resent = True

    async def _until_connected(self) -> None:
        while not self._kazoo.connected:
            if self._closing or self._kazoo.state == KazooState.LOST:
                raise SessionExpiredError("the ZooKeeper session was lost while disconnected")
            await asyncio.sleep(_RECONNECT_POLL_S)

    def _holds(self, path: str, data: bytes, version: int | None = None) -> Any:
        """The znode's stat when `path` holds `data` (at `version` if given), else None."""
        try:
            current, stat = self._kazoo.get(path)
        except NoNodeError:
            return None
        if current != data or (version is not None and stat.version != version):
            return None
        return stat

    def _to_loop(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        loop = self._loop

        def relay(*args: Any) -> None:
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(callback, *args)

        return relay

    # Reads ------------------------------------------------------------------------------
    async def get(self, path: str, watch: Callable | None = None) -> tuple[bytes, int] | None:
        self.reads += 1
        try:
            data, stat = await self._call(
                self._kazoo.get, path, self._to_loop(watch) if watch else None
            )
        except NoNodeError:
            return None
        return data, stat.version

    async def get_json(self, path: str, watch: Callable | None = None) -> tuple[Any, int] | None:
        found = await self.get(path, watch)
        if found is None:
            return None
        return zk_data.decode(found[0]), found[1]

    async def children(self, path: str, watch: Callable | None = None) -> list[str]:
        self.reads += 1
        try:
            return await self._call(
                self._kazoo.get_children, path, self._to_loop(watch) if watch else None
            )
        except NoNodeError:
            return []

    async def ephemeral_owner(self, path: str) -> int | None:
        self.reads += 1
        stat = await self._call(self._kazoo.exists, path)
        return stat.ephemeralOwner if stat is not None else None

    async def creation_zxid(self, path: str) -> int | None:
        """The czxid of a node: a broker that re-registered has a new one."""
        self.reads += 1
        stat = await self._call(self._kazoo.exists, path)
        return stat.czxid if stat is not None else None

    async def exists(self, path: str, watch: Callable | None = None) -> bool:
        """With `watch`: called when the node is created, changed or deleted."""
        self.reads += 1
        watcher = self._to_loop(watch) if watch else None
        return await self._call(self._kazoo.exists, path, watcher) is not None

    # Writes -----------------------------------------------------------------------------
    async def create_json(
        self,
        path: str,
        data: Mapping[str, Any],
        *,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> str:
        """Create (parents too); NodeExistsError propagates."""
        payload = zk_data.encode(data)

        def create() -> str:
            return self._kazoo.create(
                path, payload, ephemeral=ephemeral, sequence=sequence, makepath=True
            )

        def landed() -> str | None:
            # A sequential name is unknown after a lost reply: sent again (a duplicate
            # notification is harmless). An ephemeral node must be this session's.
            if sequence:
                return None
            stat = self._holds(path, payload)
            if stat is None or (ephemeral and stat.ephemeralOwner != self.session_id):
                return None
            return path

        return await self._call(create, landed=landed)

    async def ensure_path(self, path: str) -> None:
        await self._call(self._kazoo.ensure_path, path)

    async def create_raw(self, path: str, data: bytes) -> None:
        await self._call(
            lambda: self._kazoo.create(path, data, makepath=True),
            landed=lambda: self._holds(path, data),
        )

    async def set_raw(self, path: str, data: bytes, version: int = -1) -> int:
        stat = await self._call(
            self._kazoo.set,
            path,
            data,
            version,
            landed=lambda: self._holds(path, data, None if version < 0 else version + 1),
        )
        return stat.version

    async def set_json(self, path: str, data: Mapping[str, Any], version: int = -1) -> int:
        """Conditional when `version` >= 0 (BadVersionError on a stale write); new version."""
        return await self.set_raw(path, zk_data.encode(data), version)

    async def fenced_set_json(
        self, path: str, data: Mapping[str, Any], version: int, fence: Fence
    ) -> int:
        """set_json only while `fence` holds; ControllerMovedError when it does not."""
        payload = zk_data.encode(data)
        results = await self._fenced(
            fence,
            lambda txn: txn.set_data(path, payload, version),
            landed=lambda: self._holds(path, payload, None if version < 0 else version + 1),
        )
        return results[1].version

    async def fenced_create_json(self, path: str, data: Mapping[str, Any], fence: Fence) -> None:
        """Create `path` (its parent must exist) only while `fence` holds."""
        payload = zk_data.encode(data)
        await self._fenced(
            fence,
            lambda txn: txn.create(path, payload),
            landed=lambda: self._holds(path, payload),
        )

    async def fenced_delete(self, path: str, version: int, fence: Fence) -> None:
        """Delete `path` (at `version`; -1: any) only while `fence` holds."""
        await self._fenced(
            fence,
            lambda txn: txn.delete(path, version),
            landed=lambda: True if self._kazoo.exists(path) is None else None,
        )

    async def _fenced(
        self,
        fence: Fence,
        add_operation: Callable[[Any], None],
        landed: Callable[[], Any],
    ) -> list:
        def commit() -> list:
            txn = self._kazoo.transaction()
            txn.check(*fence)
            add_operation(txn)
            return txn.commit()

        def committed_before() -> list | None:
            # The lost multi took effect when the fence still holds and the write is there.
            try:
                _, fence_stat = self._kazoo.get(fence[0])
            except NoNodeError:
                return None
            outcome = landed() if fence_stat.version == fence[1] else None
            return None if outcome is None else [True, outcome]

        results = await self._call(commit, landed=committed_before)
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise ControllerMovedError(f"{fence[0]} is no longer at version {fence[1]}")
        for result in results[1:]:
            if isinstance(result, Exception):
                raise result
        return results

    async def upsert_json(self, path: str, data: Mapping[str, Any]) -> None:
        try:
            await self.set_json(path, data)
        except NoNodeError:
            try:
                await self.create_json(path, data)
            except NodeExistsError:
                await self.set_json(path, data)

    async def delete(self, path: str, recursive: bool = False) -> None:
        try:
            await self._call(self._kazoo.delete, path, -1, recursive)
        except NoNodeError:
            pass

    async def transaction(self, operations: Sequence[tuple[str, str, bytes | None]]) -> None:
        """Atomic multi-op: ("create"|"delete", path, data). Raises on any failure."""

        def commit() -> list:
            txn = self._kazoo.transaction()
            for kind, path, data in operations:
                if kind == "create":
                    txn.create(path, data or b"")
                elif kind == "delete":
                    txn.delete(path)
                else:
                    raise ValueError(kind)
            return txn.commit()

        def committed_before() -> bool | None:
            for kind, path, data in operations:
                if kind == "create" and self._holds(path, data or b"") is None:
                    return None
                if kind == "delete" and self._kazoo.exists(path) is not None:
                    return None
            return True

        results = await self._call(commit, landed=committed_before)
        if results is True:
            return
        for result in results:
            if isinstance(result, Exception):
                raise result

    async def create_sequential_raw(self, path_prefix: str, data: bytes) -> str:
        """A persistent sequential node `<prefix><10 digits>` (parents too): a change
        notification. Sent again after a lost reply (a duplicate notification is harmless)."""
        return await self._call(
            lambda: self._kazoo.create(path_prefix, data, sequence=True, makepath=True)
        )

    async def creation_time_ms(self, path: str) -> int | None:
        """When the node was created (its ctime, ms since the epoch); None if absent."""
        self.reads += 1
        stat = await self._call(self._kazoo.exists, path)
        return stat.ctime if stat is not None else None

    async def delete_at_version(self, path: str, version: int) -> None:
        """Delete `path` only at `version`: BadVersionError when it changed, NoNodeError
        when it is gone."""
        await self._call(
            self._kazoo.delete,
            path,
            version,
            landed=lambda: True if self._kazoo.exists(path) is None else None,
        )

    # Pipelined batches (Kafka's KafkaZkClient.retryRequestsUntilConnected over async calls)
    # The requests of one batch are all sent before any answer is awaited: ZooKeeper
    # answers a session's requests in order, so a batch costs one round trip however many
    # znodes it names, where a call per znode would cost one each, in series. A request
    # carries many znodes (zk_multi: multi-reads, write multis; far below jute.maxbuffer),
    # or one where those do not apply (a read with a watch); at most PIPELINE_WINDOW are
    # outstanding at once. A request that met a dropped connection is sent again once
    # connected: reads and creates whose NodeExistsError the caller accepts are idempotent,
    # and a conditional write that did land answers the resend with BadVersionError (in a
    # multi: that write's answer, the others sent again in smaller multis), which its caller
    # handles as any concurrent change.
    async def _pipeline(self, requests: Sequence[Callable[[KazooClient], Any]]) -> list[Any]:
        """Each `request(kazoo)` issues one *_async call; the answers (or the exceptions
        raised for them) in order."""
        if not requests:
            return []  # nothing to send: no round trip
        results: list[Any] = [None] * len(requests)
        todo = list(range(len(requests)))
        while todo:

            def send_all(indexes: list[int] = todo) -> None:
                for start in range(0, len(indexes), PIPELINE_WINDOW):
                    window = indexes[start : start + PIPELINE_WINDOW]
                    sent = [(i, requests[i](self._kazoo)) for i in window]
                    for i, answer in sent:
                        try:
                            results[i] = answer.get()
                        except Exception as exc:  # noqa: BLE001 - the caller's to judge
                            results[i] = exc

            self.batches += 1
            await asyncio.to_thread(send_all)
            todo = [i for i in todo if isinstance(results[i], _BATCH_CONNECTION_DOWN)]
            if todo:
                if self._kazoo.state == KazooState.LOST:
                    raise results[todo[0]]
                log.info("ZooKeeper connection down during a batch; resending %d", len(todo))
                while not self._kazoo.connected:
                    if self._kazoo.state == KazooState.LOST:
                        raise results[todo[0]]
                    await asyncio.sleep(0.05)
        return results

    async def _read_multi(
        self, op: Callable[[KazooClient, str], tuple[int, str]], paths: Sequence[str]
    ) -> list[Any] | None:
        """Per path the answer of `op` (zk_multi.get_data_op: (data, stat); get_children_op:
        the names) or the exception it met, read with multi-reads of READS_PER_REQUEST
        paths, pipelined; None when the server has no multi-read (the caller then sends a
        request per path)."""
        if not self.multi_read or not paths:
            return None
        step = zk_multi.READS_PER_REQUEST

        def request(chunk: Sequence[str]) -> Callable[[KazooClient], Any]:
            return lambda kazoo: zk_multi.submit(
                kazoo, zk_multi.MultiRead([op(kazoo, path) for path in chunk])
            )

        chunks = [paths[start : start + step] for start in range(0, len(paths), step)]
        found = await self._pipeline([request(chunk) for chunk in chunks])
        out: list[Any] = []
        for result in found:
            if isinstance(result, Exception):
                # Not a dropped connection (the batch rides those out): the request itself
                # was refused. ZooKeeper before 3.6 has no multi-read.
                log.warning(
                    "ZooKeeper refused a multi-read (%r); reading a znode per request", result
                )
                self.multi_read = False
                return None
            out.extend(result)
        return out

    async def _write_multi(self, ops: Sequence[Any], fence: Fence | None = None) -> list[Any]:
        """Per write operation its answer (a ZnodeStat, a created path, True) or the
        exception it met: the operations in multis of WRITES_PER_REQUEST (each behind a
        check of `fence` when given), pipelined. A multi fails as a whole when one of its
        operations does, and ZooKeeper names that one: its exception is its answer (the
        write did not happen); the operations before it (which passed) are sent again as
        one multi, those after it (not tried) as two halves, all in the next batch, so a
        multi with c clashes among n costs about c * log2(n / c) requests more, never one
        per operation, and every znode's outcome is its own as with a request per znode.
        After MULTI_ROUNDS batches the rest go as multis of one operation each.
        ControllerMovedError when the fence failed."""
        results: list[Any] = [None] * len(ops)
        groups: list[Sequence[int]] = zk_multi.write_chunks(ops)
        skip = 0 if fence is None else 1

        def request(group: Sequence[int]) -> Callable[[KazooClient], Any]:
            def send(kazoo: KazooClient) -> Any:
                checked = [zk_multi.check_op(kazoo, *fence)] if fence is not None else []
                return zk_multi.submit(
                    kazoo, zk_multi.transaction(checked + [ops[i] for i in group])
                )

            return send

        rounds = 0
        while groups:
            rounds += 1
            if rounds > zk_multi.MULTI_ROUNDS:
                groups = [[i] for group in groups for i in group]
            found = await self._pipeline([request(group) for group in groups])
            again: list[Sequence[int]] = []
            for group, answer in zip(groups, found, strict=True):
                if isinstance(answer, Exception) or len(answer) != len(group) + skip:
                    # Refused as a whole, no operation named (a connection drop is ridden
                    # out by the batch): halves, down to the operation alone.
                    if len(group) == 1:
                        if not isinstance(answer, Exception):
                            raise RuntimeError(f"a multi of one write answered {answer!r}")
                        results[group[0]] = answer
                    else:
                        again += _halves(group)
                    continue
                if fence is not None and isinstance(answer[0], BadVersionError | NoNodeError):
                    raise ControllerMovedError(f"{fence[0]} is no longer at version {fence[1]}")
                answers = answer[skip:]
                cause = next(
                    (
                        k
                        for k, result in enumerate(answers)
                        if isinstance(result, Exception)
                        and not isinstance(result, zk_multi.NOT_THE_CAUSE)
                    ),
                    None,
                )
                if cause is None and any(isinstance(r, Exception) for r in answers):
                    # Failed, naming none (the fence check refused for another reason):
                    # as refused.
                    if len(group) == 1:
                        results[group[0]] = answers[0]
                    else:
                        again += _halves(group)
                    continue
                if cause is None:
                    for index, result in zip(group, answers, strict=True):
                        results[index] = result
                    continue
                results[group[cause]] = answers[cause]
                if cause:
                    again.append(group[:cause])
                again += _halves(group[cause + 1 :])
            groups = again
        return results

    async def get_many(
        self, paths: Sequence[str], watch: Callable[[str], Callable | None] | None = None
    ) -> list[tuple[bytes, int] | None]:
        """get() of every path in one batch; `watch(path)` gives each its watcher (or None).
        None for a missing znode."""
        self.reads += len(paths)

        def request(path: str) -> Callable[[KazooClient], Any]:
            watcher = watch(path) if watch is not None else None
            relay = self._to_loop(watcher) if watcher is not None else None
            return lambda kazoo: kazoo.get_async(path, relay)

        # A multi-read sets no watches: a read with a watcher is a request of its own.
        found = await self._read_multi(zk_multi.get_data_op, paths) if watch is None else None
        if found is None:
            found = await self._pipeline([request(p) for p in paths])
        out: list[tuple[bytes, int] | None] = []
        for result in found:
            if isinstance(result, NoNodeError):
                out.append(None)
            elif isinstance(result, Exception):
                raise result
            else:
                out.append((result[0], result[1].version))
        return out

    async def get_json_many(
        self, paths: Sequence[str], watch: Callable[[str], Callable | None] | None = None
    ) -> list[tuple[Any, int] | None]:
        return [
            None if found is None else (zk_data.decode(found[0]), found[1])
            for found in await self.get_many(paths, watch)
        ]

    async def exists_many(
        self, paths: Sequence[str], watch: Callable[[str], Callable | None] | None = None
    ) -> list[Any]:
        """The ZnodeStat (or None) of every path in one batch; `watch(path)` as get_many."""
        self.reads += len(paths)

        def request(path: str) -> Callable[[KazooClient], Any]:
            watcher = watch(path) if watch is not None else None
            relay = self._to_loop(watcher) if watcher is not None else None
            return lambda kazoo: kazoo.exists_async(path, relay)

        found = await self._pipeline([request(p) for p in paths])
        for result in found:
            if isinstance(result, Exception):
                raise result
        return found

    async def children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """The children of every path in one batch (None for a missing znode)."""
        self.reads += len(paths)
        found = await self._read_multi(zk_multi.get_children_op, paths)
        if found is None:
            found = await self._pipeline([_request("get_children_async", p) for p in paths])
        out: list[list[str] | None] = []
        for result in found:
            if isinstance(result, NoNodeError):
                out.append(None)
            elif isinstance(result, Exception):
                raise result
            else:
                out.append(list(result))
        return out

    async def create_many(self, items: Sequence[tuple[str, bytes]]) -> list[Exception | None]:
        """Create every (path, data) in one batch (parents must exist): per item None, or
        the NodeExistsError / NoNodeError it met."""
        found = await self._write_multi([zk_multi.create_op(self._kazoo, p, d) for p, d in items])
        return [_accepted(result, NodeExistsError, NoNodeError) for result in found]

    async def delete_many(self, paths: Sequence[str]) -> list[Exception | None]:
        """Delete every path (any version) in one batch: per item None, or the NoNodeError
        / NotEmptyError it met."""
        found = await self._write_multi([zk_multi.delete_op(self._kazoo, p) for p in paths])
        return [_accepted(result, NoNodeError, NotEmptyError) for result in found]

    async def delete_tree(self, path: str) -> None:
        """Delete `path` and everything below it: one batch per level to list it, then one
        per level to delete it, deepest first (kazoo's recursive delete costs two round
        trips per znode)."""
        levels = [[path]]
        while levels[-1]:
            listed = await self.children_many(levels[-1])
            levels.append(
                [
                    f"{parent}/{child}"
                    for parent, children in zip(levels[-1], listed, strict=True)
                    for child in children or ()
                ]
            )
        for level in reversed(levels):
            if level:
                for result in await self.delete_many(level):
                    if isinstance(result, NotEmptyError):
                        raise result  # made meanwhile by someone else: not ours to remove

    async def fenced_create_many(
        self, items: Sequence[tuple[str, bytes]], fence: Fence
    ) -> list[Exception | None]:
        """Create every (path, data) in one batch, each checked against `fence` as
        fenced_create_json (in multis behind one check): per item None, or its NodeExistsError / NoNodeError;
        ControllerMovedError when the fence failed."""

        found = await self._write_multi(
            [zk_multi.create_op(self._kazoo, p, d) for p, d in items], fence
        )
        return [_accepted(result, NodeExistsError, NoNodeError) for result in found]

    async def fenced_set_many(
        self, items: Sequence[tuple[str, bytes, int]], fence: Fence
    ) -> list[int | Exception]:
        """Set every (path, data, version) in one batch, each checked against `fence` as
        fenced_set_json (in multis behind one check): per item the new version, or its BadVersionError /
        NoNodeError; ControllerMovedError when the fence failed."""

        found = await self._write_multi(
            [zk_multi.set_data_op(self._kazoo, p, d, v) for p, d, v in items], fence
        )
        out: list[int | Exception] = []
        for result in found:
            error = _accepted(result, BadVersionError, NoNodeError)
            out.append(error if error is not None else result.version)
        return out

    async def set_many(self, items: Sequence[tuple[str, bytes, int]]) -> list[int | Exception]:
        """Set every (path, data, version) in one batch, each conditional on its version as
        set_raw (a partition leader's ISR writes: no controller fence): per item the new
        version, or its BadVersionError / NoNodeError."""
        found = await self._write_multi(
            [zk_multi.set_data_op(self._kazoo, p, d, v) for p, d, v in items]
        )
        out: list[int | Exception] = []
        for result in found:
            error = _accepted(result, BadVersionError, NoNodeError)
            out.append(error if error is not None else result.version)
        return out

    async def create_sequential_many(self, path_prefix: str, payloads: Sequence[bytes]) -> None:
        """A persistent sequential node `<prefix><10 digits>` per payload (its parent must
        exist), all in one batch: change notifications. One lost to a dropped connection is
        sent again (a duplicate notification is harmless)."""
        found = await self._pipeline(
            [_request("create_async", path_prefix, d, None, False, True) for d in payloads]
        )
        for result in found:
            if isinstance(result, Exception):
                raise result


# Requests of a batch outstanding at once (ZooKeeper's globalOutstandingLimit is 1,000).
PIPELINE_WINDOW = 1000
# What a request of a batch meets while the connection (not the session) is down.
_BATCH_CONNECTION_DOWN = (ConnectionLoss, SessionExpiredError, OperationTimeoutError)


def _request(method: str, *args: Any) -> Callable[[KazooClient], Any]:
    """A batch request: kazoo's `method` (one of its *_async calls) with `args`."""

    def send(kazoo: KazooClient) -> Any:
        return getattr(kazoo, method)(*args)

    return send


def _halves(group: Sequence[int]) -> list[Sequence[int]]:
    """`group` cut in two; a small one into its operations (dense clashes: halving it
    further would cost more requests and round trips than a request per write)."""
    if len(group) <= zk_multi.SPLIT_INTO_SINGLES:
        return [[i] for i in group]
    middle = len(group) // 2
    return [group[:middle], group[middle:]]


def _accepted(result: Any, *expected: type[Exception]) -> Exception | None:
    """A batch answer: None on success, an `expected` exception returned, any other raised."""
    if isinstance(result, expected):
        return result
    if isinstance(result, Exception):
        raise result
    return None


# Cluster-level znodes --------------------------------------------------------------------


async def get_or_create_cluster_id(zk: ZkClient) -> str:
    """/cluster/id: {"version":"1","id":...}; the first broker creates it."""
    found = await zk.get_json(zk_data.CLUSTER_ID)
    if found is None:
        try:
            await zk.create_json(
                zk_data.CLUSTER_ID, zk_data.cluster_id_payload(zk_data.new_kafka_uuid())
            )
        except NodeExistsError:
            pass  # another broker won the race
        found = await zk.get_json(zk_data.CLUSTER_ID)
        if found is None:
            raise RuntimeError(f"{zk_data.CLUSTER_ID} vanished right after it was created")
    return found[0]["id"]


async def register_broker(
    zk: ZkClient,
    broker_id: int,
    registration: Mapping[str, Any],
    wait_ms: int,
) -> None:
    """Create the ephemeral /brokers/ids/<id>.

    A node left by this broker's previous session vanishes when that session expires, so
    wait up to `wait_ms` for it; a node of a live session means a duplicate broker.id.
    """
    path = zk_data.broker_path(broker_id)
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        try:
            await zk.create_json(path, registration, ephemeral=True)
            return
        except NodeExistsError:
            owner = await zk.ephemeral_owner(path)
            if owner is not None and owner == zk.session_id:
                await zk.set_json(path, registration)
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"broker.id {broker_id} is already registered in ZooKeeper at {path}"
                ) from None
            await asyncio.sleep(0.5)
