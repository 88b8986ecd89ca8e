"""LogManager: every partition log in the broker's log dirs, and the files at their roots.

Each log dir holds `<topic>-<partition>/` directories and, at its root, `.lock` (so two
brokers never share it), `meta.properties`, the offset checkpoints and, after a clean
shutdown, the `.kafka_cleanshutdown` marker that lets the next start-up skip recovery.

A deleted partition's directory is renamed `<topic>-<partition>.<uuid>-delete` at once (a
crash midway leaves a name the next start-up recognises) and removed afterwards by the
owner, off the event loop, as Kafka's LogManager does.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import LogConfig
from . import errors
from .checkpoints import OffsetCheckpointFile, read_properties, write_properties
from .log import Log, dir_name, parse_dir_name
from .recovery import load_log
from .retention import RetentionReport, delete_old_segments

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
META_PROPERTIES = "meta.properties"
DELETE_DIR_SUFFIX = "-delete"
# NAME_MAX: the bytes one path component may hold on Linux file systems.
MAX_DIR_NAME_BYTES = 255

TopicPartition = tuple[str, int]


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's `<topic>-<partition>.<uuid>-delete` (UnifiedLog.logDeleteDirName): the topic
    is cut so the name fits MAX_DIR_NAME_BYTES, which a 249-character topic would not."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: MAX_DIR_NAME_BYTES - len(suffix)] + suffix


class LogDirInUseError(RuntimeError):
    """Another process holds the log dir's lock."""


class PartitionDirError(errors.LogError):
    """A (topic, partition) whose directory would not be directly inside its log dir."""

    error_code = 17  # INVALID_TOPIC_EXCEPTION


def checked_partition_dir(log_dir: Path, topic: str, partition: int) -> Path:
    """`<log dir>/<topic>-<partition>`, refused unless it resolves to a child of the log
    dir that reads back as the same (topic, partition): names come from requests, and
    nothing may be created or deleted elsewhere (handlers validate names first; this is
    the last line)."""
    name = dir_name(topic, partition)
    directory = log_dir / name
    try:
        readable = parse_dir_name(name) == (topic, partition)
    except ValueError:
        readable = False
    if (
        not readable
        or partition < 0
        or name in (".", "..")
        or os.sep in name
        or (os.altsep is not None and os.altsep in name)
        or "\0" in name
        or directory.resolve().parent != log_dir.resolve()
    ):
        raise PartitionDirError(f"{topic!r} partition {partition} is not a log directory name")
    return directory


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[str | Path],
        default_config: LogConfig | None = None,
        broker_props: Mapping[str, Any] | None = None,
        *,
        topic_config: Callable[[str], LogConfig] | None = None,
        producer_id_expiration_ms: int = 86400000,
        clock: Callable[[], float] = time.time,
    ):
        self.log_dirs = [Path(d) for d in log_dirs]
        self.broker_props = dict(broker_props or {})
        self.default_config = default_config or LogConfig.resolve({}, self.broker_props)
        self._topic_config = topic_config
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.clock = clock
        self.logs: dict[TopicPartition, Log] = {}
        self.offline_partitions: dict[TopicPartition, str] = {}
        self.topic_configs: dict[str, LogConfig] = {}
        self._locks: list[int] = []
        self.had_clean_shutdown: dict[Path, bool] = {}
        # Renamed directories of deleted partitions, for the owner to remove (remove_dir).
        self.dirs_to_delete: list[Path] = []
        # Log dirs whose meta.properties named this cluster before this start: only there
        # may ZooKeeper's word make a partition a stray to delete.
        self.cluster_confirmed: set[Path] = set()
        # Creation and deletion change `logs` from worker threads while the checkpoint
        # thread reads it (Kafka's logCreationOrDeletionLock).
        self._logs_lock = threading.Lock()
        self.started = False

    # Start-up and shutdown -------------------------------------------------------------
    def startup(self) -> None:
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock_dir(directory)
        for directory in self.log_dirs:
            self._load_dir(directory)
        self.started = True

    def _lock_dir(self, directory: Path) -> None:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirInUseError(
                f"log dir {directory} is in use by another broker (lock {directory / LOCK_FILE})"
            ) from None
        self._locks.append(fd)

    def _load_dir(self, directory: Path) -> None:
        marker = directory / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        self.had_clean_shutdown[directory] = clean
        recovery_points = OffsetCheckpointFile(directory / RECOVERY_POINT_CHECKPOINT).read()
        start_offsets = OffsetCheckpointFile(directory / LOG_START_CHECKPOINT).read()
        high_watermarks = OffsetCheckpointFile(directory / REPLICATION_CHECKPOINT).read()
        for child in sorted(directory.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                self.dirs_to_delete.append(child)  # a deletion that did not finish
                continue
            try:
                tp = parse_dir_name(child.name)
            except ValueError:
                continue
            try:
                loaded = load_log(
                    child,
                    self.config_for(tp[0]),
                    recovery_point=recovery_points.get(tp, 0),
                    log_start_offset=start_offsets.get(tp, 0),
                    had_clean_shutdown=clean,
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    clock=self.clock,
                )
            except Exception as exc:  # noqa: BLE001 - one bad partition must not stop the rest
                log.error("partition %s-%d is offline: %s", tp[0], tp[1], exc, exc_info=True)
                self.offline_partitions[tp] = str(exc)
                continue
            loaded.update_high_watermark(high_watermarks.get(tp, loaded.log_end_offset))
            self.logs[tp] = loaded
        # From here on a crash is an unclean shutdown.
        marker.unlink(missing_ok=True)

    def shutdown(self) -> None:
        """Close every log, write the checkpoints and the clean-shutdown markers."""
        failed = False
        for tp, partition_log in list(self.logs.items()):
            try:
                partition_log.close()
            except Exception as exc:  # noqa: BLE001
                failed = True
                log.error("closing %s-%d failed: %s", tp[0], tp[1], exc)
        self.checkpoint()
        if not failed:
            for directory in self.log_dirs:
                (directory / CLEAN_SHUTDOWN_MARKER).touch()
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
        self.started = False

    # meta.properties --------------------------------------------------------------------
    def ensure_meta_properties(self, broker_id: int, cluster_id: str) -> None:
        """Write meta.properties, or refuse a log dir that belongs to another broker."""
        for directory in self.log_dirs:
            path = directory / META_PROPERTIES
            if path.exists():
                props = read_properties(path)
                if props.get("broker.id") not in (None, str(broker_id)):
                    raise errors.KafkaStorageError(
                        f"{path}: broker.id {props['broker.id']} does not match {broker_id}"
                    )
                if props.get("cluster.id") not in (None, cluster_id):
                    raise errors.KafkaStorageError(
                        f"{path}: cluster.id {props['cluster.id']} does not match {cluster_id}"
                    )
                if props.get("cluster.id") == cluster_id:
                    self.cluster_confirmed.add(directory)
            write_properties(
                path,
                {"version": "0", "broker.id": str(broker_id), "cluster.id": cluster_id},
                header_comment="Written by brokerd",
            )

    # Logs -----------------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        if topic in self.topic_configs:
            return self.topic_configs[topic]
        if self._topic_config is not None:
            return self._topic_config(topic)
        return self.default_config

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        tp = (topic, partition)
        existing = self.logs.get(tp)
        if existing is not None:
            return existing
        if tp in self.offline_partitions:
            raise errors.KafkaStorageError(
                f"{topic}-{partition} is offline: {self.offline_partitions[tp]}"
            )
        if config is not None:
            self.topic_configs[topic] = config
        directory = checked_partition_dir(self._least_loaded_dir(), topic, partition)
        created = load_log(
            directory,
            self.config_for(topic),
            had_clean_shutdown=True,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            clock=self.clock,
        )
        with self._logs_lock:
            self.logs[tp] = created
        return created

    def _least_loaded_dir(self) -> Path:
        counts = {d: 0 for d in self.log_dirs}
        for partition_log in self.all_logs():
            parent = partition_log.dir.parent
            if parent in counts:
                counts[parent] += 1
        return min(self.log_dirs, key=lambda d: counts[d])

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition now: `begin_delete`, then its files."""
        doomed = self.begin_delete(topic, partition)
        if doomed is not None:
            self.remove_dir(doomed)
        return doomed is not None

    def begin_delete(self, topic: str, partition: int) -> Path | None:
        """Stop serving a partition and rename its directory to a `-delete` name (Kafka's
        asyncDelete): its files are released without a flush, and the renamed directory
        returned for `remove_dir`; None when this broker has no directory for it."""
        tp = (topic, partition)
        existing = self.logs.get(tp)
        if existing is not None:
            self._check_in_log_dir(existing.dir, topic, partition)
        with self._logs_lock:
            partition_log = self.logs.pop(tp, None)
            was_offline = self.offline_partitions.pop(tp, None) is not None
        if partition_log is not None:
            partition_log.delete()
            directory = partition_log.dir
        elif was_offline:  # never loaded: find its directory
            found = self.offline_dir(topic, partition)
            if found is None:
                return None
            directory = found
            self._check_in_log_dir(directory, topic, partition)
        else:
            return None
        doomed = directory.with_name(delete_dir_name(topic, partition))
        try:
            os.replace(directory, doomed)
        except FileNotFoundError:
            log.warning("deleting %s-%d: %s is already gone", topic, partition, directory)
            return None
        log.info("log for partition %s-%d is renamed to %s for deletion", topic, partition, doomed)
        return doomed

    def partition_dir(self, topic: str, partition: int) -> Path | None:
        """The directory of a partition this broker holds, loaded or offline."""
        found = self.logs.get((topic, partition))
        if found is not None:
            return found.dir
        return (
            self.offline_dir(topic, partition)
            if (topic, partition) in self.offline_partitions
            else None
        )

    def offline_dir(self, topic: str, partition: int) -> Path | None:
        name = dir_name(topic, partition)
        return next((d / name for d in self.log_dirs if (d / name).is_dir()), None)

    def remove_dir(self, doomed: Path) -> None:
        """Remove a renamed (`-delete`) directory; a failure leaves it for the next start-up."""
        try:
            shutil.rmtree(doomed)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove %s (retried at the next start-up): %s", doomed, exc)

    def _check_in_log_dir(self, directory: Path, topic: str, partition: int) -> None:
        checked_partition_dir(directory.parent, topic, partition)
        if directory.parent.resolve() not in {d.resolve() for d in self.log_dirs}:
            raise PartitionDirError(f"{directory} is not in a log dir")

    def update_config(self, topic: str, config: LogConfig) -> None:
        self.topic_configs[topic] = config
        for (t, _), partition_log in self._logs_snapshot():
            if t == topic:
                partition_log.update_config(config)

    def all_logs(self) -> list[Log]:
        with self._logs_lock:
            return list(self.logs.values())

    def _logs_snapshot(self) -> list[tuple[TopicPartition, Log]]:
        with self._logs_lock:
            return list(self.logs.items())

    # Checkpoints ----------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Recovery points, log start offsets and high watermarks, per log dir."""
        for directory in self.log_dirs:
            in_dir = {
                tp: partition_log
                for tp, partition_log in self._logs_snapshot()
                if partition_log.dir.parent == directory
            }
            OffsetCheckpointFile(directory / RECOVERY_POINT_CHECKPOINT).write(
                {tp: lg.recovery_point for tp, lg in in_dir.items()}
            )
            OffsetCheckpointFile(directory / LOG_START_CHECKPOINT).write(
                {tp: lg.log_start_offset for tp, lg in in_dir.items() if lg.log_start_offset > 0}
            )
            OffsetCheckpointFile(directory / REPLICATION_CHECKPOINT).write(
                {tp: lg.high_watermark for tp, lg in in_dir.items()}
            )

    def flush_dirty_logs(self) -> None:
        """flush.ms for idle logs: appends check it too, but a quiet log needs a timer."""
        now = int(self.clock() * 1000)
        for partition_log in self.all_logs():
            if partition_log.config.flush_ms >= (1 << 62):
                continue
            if now - partition_log.last_flush_ms >= partition_log.config.flush_ms:
                partition_log.flush()

    def remove_deleted_segments(self) -> None:
        for partition_log in self.all_logs():
            partition_log.remove_deleted_segments()

    # Retention ------------------------------------------------------------------------
    def run_retention(
        self, topic: str | None = None, partition: int | None = None
    ) -> list[RetentionReport]:
        """Apply the retention rules now to the matching logs (the periodic check, or an
        operator's request) and report what each removed."""
        reports = []
        for (t, p), partition_log in list(self.logs.items()):
            if (topic is None or t == topic) and (partition is None or p == partition):
                reports.append(delete_old_segments(partition_log))
        return reports
