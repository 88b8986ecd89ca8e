"""The aborted-transaction index of one segment: its `.txnindex` file (Kafka's TransactionIndex).

Every transaction aborted by a marker in the segment has one 34-byte entry, in the order
the markers were appended:
    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 |
    lastStableOffset int64
firstOffset is the transaction's first data offset (possibly in an older segment), lastOffset
the abort marker's offset, lastStableOffset the log's last stable offset once the marker
completed the transaction (the first offset of the oldest other open transaction, else
lastOffset + 1). A read_committed fetch of [fetch offset, upper bound) is told of every entry
with lastOffset >= fetch offset and firstOffset < upper bound; the search moves on to later
segments until an entry's lastStableOffset reaches the upper bound (Kafka's isComplete).

As Kafka's, the file exists only once an entry is written; recovery rebuilds it from the
markers (`reset` then appends). Entries are kept in memory once read (34 bytes each).
Appends and changes come under the log's lock; readers take the current entry list, which
is only ever replaced or extended, never changed in place.
"""

from __future__ import annotations

import bisect
import os
import struct
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

TXN_INDEX_SUFFIX = ".txnindex"
VERSION = 0
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34


class CorruptTxnIndexError(ValueError):
    """A `.txnindex` whose size is not a whole number of entries, or with a bad version."""


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def pack(self) -> bytes:
        return ENTRY.pack(
            VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


def _last_offset(txn: AbortedTxn) -> int:
    return txn.last_offset


class TxnSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    is_complete: bool


def parse_entries(data: bytes | bytearray | memoryview, name: str = "") -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE:
        raise CorruptTxnIndexError(
            f"transaction index {name} has {len(data)} bytes, not a multiple of {ENTRY_SIZE}"
        )
    entries = []
    for version, producer_id, first, last, last_stable in ENTRY.iter_unpack(data):
        if version != VERSION:
            raise CorruptTxnIndexError(
                f"transaction index {name} has an entry of unknown version {version}"
            )
        entries.append(AbortedTxn(producer_id, first, last, last_stable))
    return entries


class TransactionIndex:
    def __init__(self, start_offset: int, path: Path):
        self.start_offset = start_offset
        self.path = Path(path)
        self._entries: list[AbortedTxn] | None = None  # read from the file on first use
        self._lock = threading.Lock()

    # Reading ---------------------------------------------------------------------------
    def _loaded(self) -> list[AbortedTxn]:
        entries = self._entries
        if entries is not None:
            return entries
        with self._lock:
            if self._entries is None:
                try:
                    data = self.path.read_bytes()
                except FileNotFoundError:
                    data = b""
                self._entries = parse_entries(data, str(self.path))
            return self._entries

    def all_entries(self) -> list[AbortedTxn]:
        return list(self._loaded())

    @property
    def last_offset(self) -> int | None:
        entries = self._loaded()
        return entries[-1].last_offset if entries else None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnSearchResult:
        """Entries overlapping [fetch_offset, upper_bound_offset); complete when one shows the
        LSO had already reached the upper bound (no later segment can add to the answer)."""
        found = []
        entries = self._loaded()
        # Entries ascend by last offset: those ending before the fetch offset never match
        # (and no later one can when such an entry would have completed the search).
        for index in range(
            bisect.bisect_left(entries, fetch_offset, key=_last_offset), len(entries)
        ):
            txn = entries[index]
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnSearchResult(found, True)
        return TxnSearchResult(found, False)

    def sanity_check(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size % ENTRY_SIZE:
            raise CorruptTxnIndexError(
                f"transaction index {self.path} has {size} bytes, not a multiple of {ENTRY_SIZE}"
            )

    # Changes (under the log's lock) ----------------------------------------------------
    def append(self, txn: AbortedTxn) -> None:
        entries = self._loaded()
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(
                f"the last offset of an appended aborted transaction ({txn.last_offset}) must "
                f"be above the index's last ({entries[-1].last_offset}) in {self.path}"
            )
        with open(self.path, "ab") as file:
            file.write(txn.pack())
        self._entries = [*entries, txn]

    def append_all(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            self.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Keep only the transactions aborted below `offset` (the log was truncated there)."""
        entries = self._loaded()
        kept = [txn for txn in entries if txn.last_offset < offset]
        if len(kept) == len(entries):
            return
        self._rewrite(kept)

    def reset(self) -> None:
        """Empty the index (recovery rebuilds it)."""
        if self._entries == [] and not self.path.exists():
            return
        self._rewrite([])

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        if entries or self.path.exists():
            with open(self.path, "r+b" if self.path.exists() else "wb") as file:
                file.truncate(0)
                file.write(b"".join(txn.pack() for txn in entries))
        self._entries = entries

    def flush(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = Path(path)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Nothing stays open between appends; kept for symmetry with the other indexes."""

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path.name})"
