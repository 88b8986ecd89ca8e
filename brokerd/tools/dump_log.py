"""dump-log: print a partition's files the way Kafka's kafka-dump-log.sh (DumpLogSegments) does.

    python -m brokerd.tools.dump_log [--print-data-log] [--deep-iteration] FILE...
    python -m brokerd.tools.dump_log --files a.log,a.index,a.timeindex

Handles `.log` (magic 0, 1 and 2; compressed v0/v1 wrappers open with --deep-iteration),
`.index`, `.timeindex`, `.snapshot`, `.txnindex`, the checkpoint files, leader-epoch-checkpoint
and meta.properties. Lines match current Kafka's wording; `--output-style kafka-1.0` prints
batch headers as Kafka 1.0 did (the form the seeds show). Problems (index entries that do not
match the log, corrupt entries, unreadable files) go to stderr and make the exit status 1; a
torn tail is reported as "Found N invalid bytes at the end of ..." like Kafka does.
"""

from __future__ import annotations

import argparse
import mmap
import os
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from brokerd.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    read_properties,
)
from brokerd.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from brokerd.log.producer_state import CorruptSnapshotError, increment_sequence, read_snapshot
from brokerd.records import compression
from brokerd.records.batch import (
    HEADER_SIZE,
    LOG_APPEND_TIME,
    NO_SEQUENCE,
    CorruptRecordError,
    Record,
    RecordBatch,
)
from brokerd.records.legacy import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, LegacyEntry
from brokerd.records.legacy import iter_entries as iter_legacy_entries

LOG_OVERHEAD = 12
MAGIC_POS = 16
HEADER_SIZE_UP_TO_MAGIC = 17
DELETE_HORIZON_MASK = 0x40  # attributes bit 6 (KIP-534): firstTimestamp is the delete horizon
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
UNLIMITED_BYTES = 2**31 - 1
# Suffixes Kafka appends to a segment's files while deleting or cleaning; the type is the one before.
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "SNAPSHOT_HEADER", 3: "SNAPSHOT_FOOTER"}
_TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producerId, first, last, lastStableOffset
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="FILE", help="files to dump")
    parser.add_argument(
        "--files", default="", help="comma separated list of data and index files to dump"
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print the messages' keys and values (implies --deep-iteration)",
    )
    parser.add_argument(
        "--deep-iteration", action="store_true", help="print every record, not only batches"
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="check index entries against the log without printing them",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="only run the checks the broker runs on startup to decide whether to rebuild",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        help="size of the largest message (bounds the read when verifying an index)",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=UNLIMITED_BYTES,
        help="read at most this many bytes of each .log file",
    )
    parser.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="print only keys and values of records",
    )
    parser.add_argument(
        "--output-style",
        choices=("current", "kafka-1.0"),
        default="current",
        help="batch header wording: current Kafka (default) or Kafka 1.0",
    )
    parser.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode records as __consumer_offsets offset commits and group metadata "
        "(implies --print-data-log)",
    )


def run(
    args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    files = [name for name in args.files.split(",") if name] + list(args.paths)
    dumper = LogDumper(args, stdout or sys.stdout, stderr or sys.stderr)
    if not files:
        dumper.error("no files given (pass FILE... or --files a,b,c)")
        return 2
    try:
        for name in files:
            dumper.dump(name)
        dumper.print_deferred_reports()
    except BrokenPipeError:
        # `... | head` closed the pipe: stop quietly, and keep the interpreter's final flush
        # of stdout from failing again.
        if stdout is None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    return 1 if dumper.failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m brokerd.tools.dump_log",
        description="Parse log, index, snapshot and checkpoint files and print their contents.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


@contextmanager
def _mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The file's bytes, memory-mapped so that a 1 GiB segment is not read into memory."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            yield b""
            return
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mapped
        finally:
            try:
                mapped.close()
            except BufferError:
                pass  # a view is still referenced; the mapping goes with the process


def _entry_at(buf, pos: int, end: int) -> RecordBatch | LegacyEntry | None:
    """The entry at pos, None if it runs past `end`; raises CorruptRecordError if malformed."""
    if end - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    (size,) = struct.unpack_from(">i", buf, pos + 8)
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"record size {size} is smaller than the minimum {RECORD_OVERHEAD_V0}"
        )
    if pos + LOG_OVERHEAD + size > end:
        return None
    magic = buf[pos + MAGIC_POS]
    if magic == 2:
        if size + LOG_OVERHEAD < HEADER_SIZE:
            raise CorruptRecordError(f"batch size {size + LOG_OVERHEAD} is below the v2 header")
        return RecordBatch(buf, pos)
    if magic in (0, 1):
        if magic == 1 and size < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(f"record size {size} is below the v1 minimum")
        return LegacyEntry(buf, pos)
    raise CorruptRecordError(f"unknown magic {magic}")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _timestamp_type(entry) -> str:
    if entry.magic == 0:
        return "NoTimestampType"
    return "LogAppendTime" if entry.timestamp_type == LOG_APPEND_TIME else "CreateTime"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")  # as Java's new String(bytes, UTF_8)


def _base_offset_of(path: Path) -> int | None:
    stem = path.name.split(".")[0]
    return int(stem) if stem.isdigit() else None


def _type_name(path: Path) -> tuple[str, str]:
    """(file type suffix or name, transient suffix) for e.g. 000.log.deleted -> ('.log', '.deleted')."""
    name = path.name
    transient = ""
    for suffix in TRANSIENT_SUFFIXES:
        if name.endswith(suffix):
            name, transient = name[: -len(suffix)], suffix
            break
    dot = name.rfind(".")
    return (name[dot:] if dot > 0 else name), transient


class LogDumper:
    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO):
        self.args = args
        self.out = out
        self.err = err
        self.offsets_decoder = getattr(args, "offsets_decoder", False)
        self.print_data = args.print_data_log or self.offsets_decoder
        self.deep = args.deep_iteration or self.print_data
        self.failed = False
        # Kafka prints these after all files, on stderr.
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}

    def line(self, text: str) -> None:
        self.out.write(text + "\n")

    def error(self, text: str) -> None:
        self.failed = True
        self.err.write(text + "\n")

    def dump(self, name: str) -> None:
        path = Path(name)
        self.line(f"Dumping {name}")
        if not path.is_file():
            reason = "is not a file" if path.exists() else "No such file or directory"
            self.error(f"{name}: {reason}")
            return
        kind, transient = _type_name(path)
        if path.name in (LEADER_EPOCH_CHECKPOINT, META_PROPERTIES, *OFFSET_CHECKPOINTS):
            kind = path.name
        try:
            if kind == ".log":
                self.dump_log(path)
            elif kind == ".index":
                self.dump_index(path, transient)
            elif kind == ".timeindex":
                self.dump_time_index(path, transient)
            elif kind == ".snapshot":
                self.dump_snapshot(path)
            elif kind == ".txnindex":
                self.dump_txn_index(path)
            elif kind == LEADER_EPOCH_CHECKPOINT:
                for entry in LeaderEpochCheckpointFile(path).read():
                    self.line(f"epoch: {entry.epoch} startOffset: {entry.start_offset}")
            elif kind in OFFSET_CHECKPOINTS:
                offsets = OffsetCheckpointFile(path).read()
                for (topic, partition), offset in sorted(offsets.items()):
                    self.line(f"topic: {topic} partition: {partition} offset: {offset}")
            elif kind == META_PROPERTIES:
                for key, value in read_properties(path).items():
                    self.line(f"{key}={value}")
            else:
                self.err.write(f"Ignoring unknown file {name}\n")
        except CorruptCheckpointError as exc:
            self.error(str(exc))
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.error(f"{name}: {exc.strerror or exc}")

    # .log ----------------------------------------------------------------------------
    def dump_log(self, path: Path) -> None:
        base_offset = _base_offset_of(path)
        if base_offset is not None:
            label = (
                "Starting offset"
                if self.args.output_style == "kafka-1.0"
                else "Log starting offset"
            )
            self.line(f"{label}: {base_offset}")
        max_bytes = self.args.max_bytes
        last_offset = -1
        gaps = self.non_consecutive.setdefault(str(path.absolute()), [])
        with _mapped(path) as buf:
            end = min(len(buf), max_bytes)
            pos = 0
            while True:
                try:
                    entry = _entry_at(buf, pos, end)
                except CorruptRecordError as exc:
                    self.error(f"Corrupt entry at position {pos} of {path}: {exc}")
                    break
                if entry is None:
                    break
                self.line(self.batch_line(entry, pos))
                if self.deep:
                    try:
                        for offset, record_line in self.record_lines(entry):
                            if last_offset != -1 and offset != last_offset + 1:
                                gaps.append((last_offset, offset))
                            last_offset = offset
                            self.line(record_line)
                    except CorruptRecordError as exc:
                        self.error(
                            f"Cannot read the records of the batch at position {pos} of {path}: {exc}"
                        )
                pos += entry.size
            trailing = min(len(buf), max_bytes) - pos
            if trailing > 0 and max_bytes == UNLIMITED_BYTES:
                self.line(f"Found {trailing} invalid bytes at the end of {path.name}")

    def batch_line(self, entry: RecordBatch | LegacyEntry, position: int) -> str:
        legacy_style = self.args.output_style == "kafka-1.0"
        if isinstance(entry, RecordBatch):
            head = (
                f"baseOffset: {entry.base_offset} lastOffset: {entry.last_offset} "
                + ("" if legacy_style else f"count: {entry.record_count} ")
                + f"baseSequence: {entry.base_sequence} lastSequence: {entry.last_sequence} "
                f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
                f"partitionLeaderEpoch: {entry.partition_leader_epoch} "
                f"isTransactional: {_bool(entry.is_transactional)}"
            )
            if not legacy_style:
                horizon = entry.first_timestamp if entry.attributes & DELETE_HORIZON_MASK else None
                head += f" isControl: {_bool(entry.is_control)} deleteHorizonMs: {_optional_long(horizon)}"
            max_timestamp = entry.max_timestamp
        else:
            head = f"offset: {entry.last_offset}"
            max_timestamp = entry.max_timestamp
        codec = compression.NAMES.get(entry.compression, f"unknown({entry.compression})")
        valid = _bool(entry.is_valid())
        timestamp = f"{_timestamp_type(entry)}: {max_timestamp}"
        if legacy_style:
            return (
                f"{head} position: {position} {timestamp} isvalid: {valid} size: {entry.size} "
                f"magic: {entry.magic} compresscodec: {codec.upper()} crc: {entry.crc}"
            )
        return (
            f"{head} position: {position} {timestamp} size: {entry.size} magic: {entry.magic} "
            f"compresscodec: {codec} crc: {entry.crc} isvalid: {valid}"
        )

    def record_lines(self, entry: RecordBatch | LegacyEntry) -> Iterator[tuple[int, str]]:
        timestamp_type = _timestamp_type(entry)
        skip_metadata = self.args.skip_record_metadata
        # Each record with the legacy message whose crc is printed (None in a v2 batch).
        records: list[tuple[Record, LegacyEntry | None]]
        base_sequence = NO_SEQUENCE
        if isinstance(entry, RecordBatch):
            records = [(record, None) for record in entry.records()]
            base_sequence = entry.base_sequence
        else:
            records = list(zip(entry.records(), self._legacy_messages(entry), strict=True))
        is_control = isinstance(entry, RecordBatch) and entry.is_control
        for record, message in records:
            # Mirrors Kafka's prints: "| " leads whatever comes first, later parts get " ".
            text, prefix = "", "| "
            if not skip_metadata:
                key_size = -1 if record.key is None else len(record.key)
                value_size = -1 if record.value is None else len(record.value)
                text += (
                    f"{prefix}offset: {record.offset} {timestamp_type}: {record.timestamp} "
                    f"keySize: {key_size} valueSize: {value_size}"
                )
                prefix = " "
                if message is None:
                    sequence = NO_SEQUENCE
                    if base_sequence >= 0:
                        sequence = increment_sequence(
                            base_sequence, record.offset - entry.base_offset
                        )
                    header_keys = ",".join(header.key for header in record.headers)
                    text += f" sequence: {sequence} headerKeys: [{header_keys}]"
                else:
                    # Kafka's own output carries the stray closing brace after the crc.
                    text += f" isValid: {_bool(message.is_valid())} crc: {message.crc}}}"
                if is_control:
                    text += self._control_text(record)
            if self.offsets_decoder and not is_control:
                from brokerd.groups.offsets_topic import dump_json

                key_text, payload_text = dump_json(record.key, record.value)
                text += f"{prefix}key: {key_text} payload: {payload_text}"
            elif self.print_data and not is_control:
                if record.key is not None:
                    text += f"{prefix}key: {_decode(record.key)}"
                if record.value is not None:
                    text += f" payload: {_decode(record.value)}"
            yield record.offset, text

    @staticmethod
    def _legacy_messages(entry: LegacyEntry) -> list[LegacyEntry]:
        """The messages whose crc Kafka prints: the entry itself or a wrapper's inner ones."""
        if entry.compression == compression.NONE:
            return [entry]
        _, value = entry.key_value()
        try:
            inner = compression.decompress(entry.compression, value or b"", entry.magic)
        except compression.CompressionError as exc:
            raise CorruptRecordError(str(exc)) from exc
        return list(iter_legacy_entries(inner))

    @staticmethod
    def _control_text(record) -> str:
        if record.key is None or len(record.key) < _CONTROL_KEY.size:
            return " controlType: UNKNOWN(-1)"
        _, type_id = _CONTROL_KEY.unpack_from(record.key)
        name = CONTROL_TYPES.get(type_id, "UNKNOWN")
        if type_id in (0, 1) and record.value is not None and len(record.value) >= 6:
            _, coordinator_epoch = _END_TXN_MARKER.unpack_from(record.value)
            return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
        return f" controlType: {name}({type_id})"

    # .index / .timeindex ---------------------------------------------------------------
    def _companion(self, path: Path, suffix: str, transient: str) -> Path:
        stem = path.name.split(".")[0]
        with_transient = path.with_name(stem + suffix + transient)
        return (
            with_transient
            if transient and with_transient.exists()
            else path.with_name(stem + suffix)
        )

    def _open_index(self, index_class, path: Path):
        base_offset = _base_offset_of(path)
        if base_offset is None:
            raise CorruptIndexError(f"{path.name} is not named after a base offset")
        return index_class(path, base_offset, writable=False)

    def dump_index(self, path: Path, transient: str) -> None:
        try:
            index = self._open_index(OffsetIndex, path)
        except CorruptIndexError as exc:
            self.error(str(exc))
            return
        try:
            if index.entries == 0:
                self.line(f"{path} is empty.")
                return
            log_path = self._companion(path, ".log", transient)
            if self.args.index_sanity_check:
                log_size = log_path.stat().st_size if log_path.exists() else None
                try:
                    index.sanity_check(log_size)
                except CorruptIndexError as exc:
                    self.error(f"{path} failed sanity check: {exc}")
                    return
                self.line(f"{path} passed sanity check.")
                return
            if not log_path.exists():
                message = f"{log_path} not found: index entries are not checked against the log"
                if self.args.verify_index_only:
                    self.error(message)
                else:
                    self.err.write(message + "\n")
                mismatches = None
            else:
                mismatches = self.index_mismatches.setdefault(str(path.absolute()), [])
            with _mapped(log_path) if mismatches is not None else _no_log() as buf:
                for n in range(index.entries):
                    entry = index.entry_at(n)
                    # A preallocated index ends in zeros, which read as the base offset.
                    if n > 0 and entry.offset == index.base_offset:
                        break
                    if mismatches is not None:
                        found = self._last_offset_at(buf, entry.position)
                        if found != entry.offset:
                            mismatches.append((entry.offset, found))
                    if not self.args.verify_index_only:
                        self.line(f"offset: {entry.offset} position: {entry.position}")
        finally:
            index.close()

    def _last_offset_at(self, buf, position: int) -> int:
        end = min(len(buf), position + self.args.max_message_size)
        try:
            entry = _entry_at(buf, position, end) if position >= 0 else None
        except (CorruptRecordError, struct.error):
            return -1
        return -1 if entry is None else entry.last_offset

    def dump_time_index(self, path: Path, transient: str) -> None:
        try:
            time_index = self._open_index(TimeIndex, path)
        except CorruptIndexError as exc:
            self.error(str(exc))
            return
        try:
            if self.args.index_sanity_check:
                try:
                    time_index.sanity_check()
                except CorruptIndexError as exc:
                    self.error(f"{path} failed sanity check: {exc}")
                    return
                self.line(f"{path} passed sanity check.")
                return
            log_path = self._companion(path, ".log", transient)
            index_path = self._companion(path, ".index", transient)
            if not log_path.exists():
                message = f"{log_path} not found: index entries are not checked against the log"
                if self.args.verify_index_only:
                    self.error(message)
                else:
                    self.err.write(message + "\n")
            offset_index = None
            if index_path.exists() and log_path.exists():
                offset_index = OffsetIndex(index_path, time_index.base_offset, writable=False)
            try:
                self._dump_time_entries(time_index, offset_index, log_path, str(path.absolute()))
            finally:
                if offset_index is not None:
                    offset_index.close()
        finally:
            time_index.close()

    def _dump_time_entries(self, time_index, offset_index, log_path: Path, key: str) -> None:
        previous_timestamp = -1
        with _mapped(log_path) if log_path.exists() else _no_log() as buf:
            for n in range(time_index.entries):
                entry = time_index.entry_at(n)
                # A preallocated index ends in zeros, which read as the base offset.
                if n > 0 and entry.offset == time_index.base_offset:
                    break
                if buf is not None:
                    self._check_time_entry(buf, offset_index, entry, previous_timestamp, key)
                if not self.args.verify_index_only:
                    self.line(f"timestamp: {entry.timestamp} offset: {entry.offset}")
                previous_timestamp = entry.timestamp

    def _check_time_entry(
        self, buf, offset_index, entry, previous_timestamp: int, key: str
    ) -> None:
        position = offset_index.lookup(entry.offset).position if offset_index else 0
        found = None
        try:
            while True:
                batch = _entry_at(buf, position, len(buf))
                if batch is None or batch.last_offset >= entry.offset:
                    found = batch
                    break
                position += batch.size
        except CorruptRecordError:
            found = None
        if found is None:
            self.time_not_found.setdefault(key, []).append((entry.offset, -1))
            return
        if found.last_offset != entry.offset:
            self.time_not_found.setdefault(key, []).append((entry.offset, found.last_offset))
            return
        try:
            max_timestamp = max((r.timestamp for r in found.records()), default=-1)
        except CorruptRecordError:
            max_timestamp = -1
        if max_timestamp != entry.timestamp:
            self.time_mismatches.setdefault(key, []).append((entry.timestamp, max_timestamp))
        if previous_timestamp >= entry.timestamp:
            self.time_out_of_order.setdefault(key, []).append((entry.timestamp, previous_timestamp))

    # .snapshot / .txnindex ---------------------------------------------------------------
    def dump_snapshot(self, path: Path) -> None:
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError as exc:
            self.error(str(exc))
            return
        for entry in entries:
            text = (
                f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
                f"coordinatorEpoch: {entry.coordinator_epoch} "
                f"currentTxnFirstOffset: {_optional_long(entry.current_txn_first_offset)} "
                f"lastTimestamp: {entry.last_timestamp} "
            )
            if entry.batches:
                batch = entry.batches[0]
                text += (
                    f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} "
                    f"lastOffset: {batch.last_offset} offsetDelta: {batch.offset_delta} "
                    f"timestamp: {batch.timestamp}"
                )
            self.line(text)

    def dump_txn_index(self, path: Path) -> None:
        data = path.read_bytes()
        whole = len(data) - len(data) % _TXN_INDEX_ENTRY.size
        for version, producer_id, first, last, last_stable in _TXN_INDEX_ENTRY.iter_unpack(
            data[:whole]
        ):
            self.line(
                f"version: {version} producerId: {producer_id} firstOffset: {first} "
                f"lastOffset: {last} lastStableOffset: {last_stable}"
            )
        if whole != len(data):
            self.error(f"{path}: {len(data) - whole} trailing bytes are not a whole entry")

    # Reports printed after every file, as Kafka does ------------------------------------
    def print_deferred_reports(self) -> None:
        for name, mismatches in self.index_mismatches.items():
            if mismatches:
                self.error(f"Mismatches in :{name}")
                for index_offset, log_offset in mismatches:
                    self.error(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for name, mismatches in self.time_mismatches.items():
            self.error(f"Found timestamp mismatch in :{name}")
            for index_ts, log_ts in mismatches:
                self.error(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for name, out_of_order in self.time_out_of_order.items():
            self.error(f"Found out of order timestamp in :{name}")
            for index_ts, previous in out_of_order:
                self.error(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}"
                )
        for not_found in self.time_not_found.values():
            self.error("The following indexed offsets are not found in the log.")
            for indexed, found in not_found:
                self.error(f"Indexed offset: {indexed}, found log offset: {found}")
        # Gaps are normal in compacted logs: reported, but not a failure.
        for name, pairs in self.non_consecutive.items():
            if pairs:
                self.err.write(f"Non-consecutive offsets in {name}\n")
                for first, second in pairs:
                    self.err.write(f"  {first} is followed by {second}\n")


@contextmanager
def _no_log() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    sys.exit(main())
