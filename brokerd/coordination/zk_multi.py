"""Many znodes per ZooKeeper request: multi-read (ZooKeeper 3.6+) and batched multi writes.

kazoo sends one request per znode for its *_async calls, and each request costs both ends
far more than its bytes: on this 2-core VM 10,000 pipelined reads of partition states took
~1.3 s of the broker's CPU (kazoo's queue, a wake-up byte, an AsyncResult with its
Condition per request, a response parsed per request) and ~0.85 s of ZooKeeper's (a request
through its processor pipeline each). Carried as 100 multi-reads of 100 znodes, the same
reads cost ~0.07 s and ~0.1 s; the controller's 10,000 fenced state writes as 50 multis of
200 writes behind one fence check, ~0.13 s and ~0.1 s instead of ~1.45 s and ~0.8 s.

Multi-read (OpCode.multiRead = 22) carries getData and getChildren operations, each
answered on its own (a missing znode fails only its operation); it sets no watches, so a
read with a watcher keeps its own request. A write multi is atomic: one failing operation
(a version clash, a missing parent) fails them all, ZooKeeper naming only that one (the
others answer RolledBack or RuntimeInconsistency). Its answer is final for it; the others
of that multi are sent again in smaller multis (ZkClient._write_multi), so a clash costs a
round trip more and a few requests, and never changes another partition's outcome: per
znode the write is conditional exactly as before (on its version and, for the controller,
on the fence).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import EXCEPTIONS, RolledBackError, RuntimeInconsistency
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import (
    CheckVersion,
    Create,
    Delete,
    GetChildren,
    GetData,
    SetData,
    Transaction,
    ZnodeStat,
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    stat_struct,
    write_string,
)
from kazoo.security import OPEN_ACL_UNSAFE

# Operations per multi-read: answers of a few hundred bytes each (a topic znode of many
# partitions can be far larger, so few per request).
READS_PER_REQUEST = 100
# Operations per write multi, and their encoded size: far below ZooKeeper's jute.maxbuffer
# (1 MiB by default), which bounds a request.
WRITES_PER_REQUEST = 200
WRITE_BYTES_PER_REQUEST = 256 * 1024
# Batches of write multis after a failed one before the rest go a write per multi.
MULTI_ROUNDS = 12
# A failed multi's untried rest of at most this many writes goes a write per multi.
SPLIT_INTO_SINGLES = 8
# A multi's operations other than the failing one answer these.
NOT_THE_CAUSE = (RolledBackError, RuntimeInconsistency)
# Bound on the children of one znode listed by a multi-read answer (hostile-input bound:
# ZooKeeper's own answers are bounded by its jute.maxbuffer).
MAX_CHILDREN = 1 << 24


class MultiRead:
    """ZooKeeper's multiRead request: getData / getChildren of many paths, no watches.
    Its answer: per path (data, ZnodeStat), a list of child names, or the exception (a
    kazoo ZookeeperError) its operation met."""

    type = 22

    def __init__(self, ops: Sequence[tuple[int, str]]):
        self.ops = ops  # (GetData.type or GetChildren.type, full path)

    def serialize(self) -> bytearray:
        out = bytearray()
        for op_type, path in self.ops:
            out += multiheader_struct.pack(op_type, False, -1)
            out += write_string(path)
            out.append(0)  # the GetDataRequest/GetChildrenRequest watch flag: none
        out += multiheader_struct.pack(-1, True, -1)
        return out

    def deserialize(self, buffer: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        while True:
            op_type, done, _err = multiheader_struct.unpack_from(buffer, offset)
            offset += multiheader_struct.size
            if done:
                break
            if len(results) >= len(self.ops):
                raise ValueError("multiRead answered more operations than it asked")
            if op_type == GetData.type:
                data, offset = read_buffer(buffer, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buffer, offset))
                offset += stat_struct.size
                results.append((data, stat))
            elif op_type == GetChildren.type:
                count = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                if not 0 <= count <= MAX_CHILDREN:
                    raise ValueError(f"multiRead: {count} children")
                children = []
                for _ in range(count):
                    child, offset = read_string(buffer, offset)
                    children.append(child)
                results.append(children)
            elif op_type == -1:
                code = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                error = EXCEPTIONS[code]
                results.append(error())
            else:
                raise ValueError(f"multiRead: unexpected operation type {op_type}")
        if len(results) != len(self.ops):
            raise ValueError("multiRead answered fewer operations than it asked")
        return results


def submit(kazoo: Any, request: Any) -> Any:
    """Queue one request on kazoo's connection; its IAsyncResult."""
    answer = kazoo.handler.async_result()
    kazoo._call(request, answer)
    return answer


def full_path(kazoo: Any, path: str) -> str:
    """`path` under the client's chroot, as kazoo's own calls send it (kazoo normalises
    it; the paths of zk_data are normal already and only prefixed)."""
    chroot = kazoo.chroot
    if _normal(path):
        if not chroot:
            return path
        return chroot if path == "/" else chroot + path
    return _prefix_root(chroot, path)


def _normal(path: str) -> bool:
    return (
        path.startswith("/")
        and "//" not in path
        and "/." not in path
        and (path == "/" or not path.endswith("/"))
    )


def get_data_op(kazoo: Any, path: str) -> tuple[int, str]:
    return GetData.type, full_path(kazoo, path)


def get_children_op(kazoo: Any, path: str) -> tuple[int, str]:
    return GetChildren.type, full_path(kazoo, path)


def set_data_op(kazoo: Any, path: str, data: bytes, version: int) -> SetData:
    return SetData(full_path(kazoo, path), data, version)


def create_op(kazoo: Any, path: str, data: bytes) -> Create:
    """A persistent znode with kazoo's default ACL (as create_async makes it)."""
    acl = kazoo.default_acl or OPEN_ACL_UNSAFE
    return Create(full_path(kazoo, path), data, acl, 0)


def delete_op(kazoo: Any, path: str, version: int = -1) -> Delete:
    return Delete(full_path(kazoo, path), version)


def check_op(kazoo: Any, path: str, version: int) -> CheckVersion:
    return CheckVersion(full_path(kazoo, path), version)


def op_size(op: Any) -> int:
    """About the encoded size of a write operation (path, data, header)."""
    data = getattr(op, "data", None)
    return len(op.path) + (len(data) if data else 0) + 64


def write_chunks(ops: Sequence[Any]) -> list[Sequence[int]]:
    """The operations' indexes cut into multis of at most WRITES_PER_REQUEST operations and
    about WRITE_BYTES_PER_REQUEST bytes."""
    chunks: list[Sequence[int]] = []
    start, size = 0, 0
    for index, op in enumerate(ops):
        cost = op_size(op)
        if index > start and (
            index - start >= WRITES_PER_REQUEST or size + cost > WRITE_BYTES_PER_REQUEST
        ):
            chunks.append(range(start, index))
            start, size = index, 0
        size += cost
    if start < len(ops):
        chunks.append(range(start, len(ops)))
    return chunks


def transaction(ops: Sequence[Any]) -> Transaction:
    return Transaction(list(ops))
