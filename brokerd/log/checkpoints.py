"""Kafka's small text files at the log-dir root and in partition directories.

Checkpoint files (Kafka's CheckpointFile) are
    <version: 0>
    <entry count>
    <entry per line>
with entries "topic partition offset" (recovery-point-offset-checkpoint,
replication-offset-checkpoint, log-start-offset-checkpoint, cleaner-offset-checkpoint) or
"epoch startOffset" (leader-epoch-checkpoint). meta.properties is a Java properties file.

Every write goes to `<name>.tmp`, is fsynced, renamed over the old file and the directory is
fsynced, so a crash leaves either the old or the new content, never a torn file.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, TypeVar

CHECKPOINT_VERSION = 0

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"

T = TypeVar("T")


class CorruptCheckpointError(ValueError):
    """A checkpoint file that cannot be parsed; the message names the file and line."""


def write_atomically(path: Path | str, data: bytes, sync: bool = True) -> None:
    """Replace `path` with `data` so that readers and crashes see old or new, never half.

    sync=False leaves the fsyncs to a later `fsync_file` (off the event loop): until then a
    crash may leave the file empty or torn, so only files that loading checks and can do
    without (producer-state snapshots, CRC-checked) may be written so."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_directory(path.parent)


def fsync_file(path: Path | str) -> None:
    """Make a file written with sync=False durable, rename included."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(path.parent)


def sync_filesystems(directories: Iterable[Path | str]) -> None:
    """Make every write so far to the filesystems holding `directories` durable, renames
    included: one syncfs(2) per filesystem instead of two fsyncs per file (10,000 leader
    epoch checkpoints on a failover). Where syncfs is missing (not Linux), sync(2)."""
    seen: set[int] = set()
    for directory in directories:
        fd = os.open(directory, os.O_RDONLY)
        try:
            device = os.fstat(fd).st_dev
            if device in seen:
                continue
            seen.add(device)
            if _syncfs is None or _syncfs(fd) != 0:
                os.sync()
        finally:
            os.close(fd)


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):
        return None


_syncfs = _load_syncfs()


def fsync_directory(directory: Path | str) -> None:
    """Make a rename durable: the directory entry lives in the directory's own data."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _CheckpointFile:
    """The version/count/lines frame shared by every checkpoint file."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def _write_lines(self, lines: list[str], sync: bool = True) -> None:
        text = f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
        write_atomically(self.path, text.encode("utf-8"), sync)

    def _read_lines(self, parse: Callable[[list[str]], T]) -> list[T]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError as exc:
            raise CorruptCheckpointError(f"checkpoint file {self.path} is not UTF-8") from exc
        lines = text.splitlines()
        if not lines:
            return []  # Kafka creates checkpoint files empty before the first write
        version = self._int(lines[0], 1)
        if version != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(
                f"unrecognised version {version} (expected {CHECKPOINT_VERSION}) in checkpoint "
                f"file {self.path} line 1"
            )
        if len(lines) == 1:
            return []
        expected = self._int(lines[1], 2)
        entries = []
        for number, line in enumerate(lines[2:], start=3):
            try:
                entries.append(parse(line.split()))
            except (ValueError, IndexError):
                raise self._malformed(line, number) from None
        if len(entries) != expected:
            raise CorruptCheckpointError(
                f"expected {expected} entries in checkpoint file {self.path}, found {len(entries)}"
            )
        return entries

    def _int(self, line: str, number: int) -> int:
        try:
            return int(line.strip())
        except ValueError:
            raise self._malformed(line, number) from None

    def _malformed(self, line: str, number: int) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"malformed line in checkpoint file {self.path} line {number}: {line!r}"
        )


def _parse_topic_partition_offset(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError("expected 'topic partition offset'")
    topic, partition, offset = fields
    return (topic, int(partition)), int(offset)


class EpochEntry(NamedTuple):
    """One line of a leader-epoch-checkpoint: the first offset written in `epoch`."""

    epoch: int
    start_offset: int


def _parse_epoch_entry(fields: list[str]) -> EpochEntry:
    if len(fields) != 2:
        raise ValueError("expected 'epoch startOffset'")
    return EpochEntry(int(fields[0]), int(fields[1]))


class OffsetCheckpointFile(_CheckpointFile):
    """topic-partition -> offset, e.g. recovery-point-offset-checkpoint at the log-dir root."""

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self._write_lines(
            [
                f"{topic} {partition} {offset}"
                for (topic, partition), offset in sorted(offsets.items())
            ]
        )

    def read(self) -> dict[tuple[str, int], int]:
        return dict(self._read_lines(_parse_topic_partition_offset))


class LeaderEpochCheckpointFile(_CheckpointFile):
    """A partition's leader-epoch-checkpoint: one "epoch startOffset" line per epoch."""

    def write(self, entries: Iterable[EpochEntry], sync: bool = True) -> None:
        """sync=False: renamed into place without fsyncs; the caller makes it durable
        (sync_filesystems) before relying on it."""
        self._write_lines([f"{entry.epoch} {entry.start_offset}" for entry in entries], sync)

    def read(self) -> list[EpochEntry]:
        return self._read_lines(_parse_epoch_entry)


# Java properties (meta.properties) -------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_KEY_SEPARATOR = re.compile(r"(?<!\\)(?:\\\\)*[=:\s]")


def read_properties(path: Path | str) -> dict[str, str]:
    """Parse a Java properties file (java.util.Properties.load semantics, minus odd corners)."""
    props: dict[str, str] = {}
    for logical in _logical_lines(Path(path).read_text(encoding="latin-1")):
        key, value = _split_key_value(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def write_properties(
    path: Path | str, props: Mapping[str, str], header_comment: str | None = None
) -> None:
    """Write like Properties.store: optional comment, a date comment, then key=value lines."""
    lines: list[str] = []
    if header_comment is not None:
        lines.extend("#" + line for line in header_comment.splitlines() or [""])
    lines.append("#" + time.strftime("%a %b %d %H:%M:%S %Z %Y"))
    for key, value in props.items():
        lines.append(f"{_escape(str(key), is_key=True)}={_escape(str(value), is_key=False)}")
    write_atomically(path, ("\n".join(lines) + "\n").encode("latin-1", "backslashreplace"))


def _logical_lines(text: str) -> Iterable[str]:
    """Join backslash-continued lines; drop blanks and comments (# or !)."""
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            pending = ""
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        yield pending + line
        pending = None
    if pending:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    match = _KEY_SEPARATOR.search(line)
    if match is None:
        return line, ""
    separator_at = match.end() - 1
    key = line[:separator_at]
    rest = line[separator_at:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            if following == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(following, following))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _escape(text: str, *, is_key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\f":
            out.append("\\f")
        elif char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif char in "=:#!":
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return "".join(out)
