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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import LogConfig
from . import errors
from .checkpoints import OffsetCheckpointFile, read_properties, write_properties
from .future_replica import UNLIMITED, AlterLogDirsQuota, FutureReplicaMove
from .log import FUTURE_DIR_SUFFIX, Log, dir_name, parse_dir_name
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
# Copy steps a move takes after flushing its copy and before holding appends for the swap
# (bounded: appends faster than the copy must not keep the swap from ever starting).
CATCH_UP_STEPS = 4


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's `<topic>-<partition>.<uuid>-delete` (UnifiedLog.logDeleteDirName): the topic
    is cut so the name fits MAX_DIR_NAME_BYTES, which a 249-character topic would not."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: MAX_DIR_NAME_BYTES - len(suffix)] + suffix


def future_dir_name(topic: str, partition: int) -> str:
    """Kafka's `<topic>-<partition>.<uuid>-future` (UnifiedLog.logFutureDirName): where a
    replica being moved to another log dir (AlterReplicaLogDirs) is copied."""
    return f"{dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


class LogDirInUseError(RuntimeError):
    """Another process holds the log dir's lock."""


class DuplicateLogDirError(RuntimeError):
    """One partition's current replica in two log dirs at start-up: Kafka refuses to start
    (LogManager.loadLog's IllegalStateException); the operator deletes one of them."""


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
        # A name without separators, "." or "..": only a symbolic link can lead elsewhere
        # (resolving costs a stat per path component, and creation checks thousands).
        or (directory.is_symlink() and directory.resolve().parent != log_dir.resolve())
    ):
        raise PartitionDirError(f"{topic!r} partition {partition} is not a log directory name")
    return directory


@dataclass
class _DirLoads:
    """One log dir's start-up: its marker's word, its checkpoints, the queued loads."""

    clean: bool
    checkpoints: _Checkpoints
    began: float
    futures: dict[TopicPartition, Future[Log]] = field(default_factory=dict)


@dataclass
class _Checkpoints:
    """What one log dir's checkpoint files said at start-up, per partition: current logs'
    and future logs' entries alike (a partition's two replicas are in different dirs)."""

    recovery_points: dict[TopicPartition, int]
    log_start_offsets: dict[TopicPartition, int]
    high_watermarks: dict[TopicPartition, int]


def _fsync_dir(directory: Path) -> None:
    """Make a created or removed marker durable (its directory entry)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        recovery_threads_per_data_dir: int | Callable[[], int] = 1,
        alter_log_dirs_threads: int | None = None,
        alter_log_dirs_io_max_bytes_per_second: int | Callable[[], int] = UNLIMITED,
    ):
        self.log_dirs = [Path(d) for d in log_dirs]
        # num.recovery.threads.per.data.dir (a number, or how to read its current value):
        # the threads loading (and recovering) each log dir's logs at start-up and closing
        # them at shutdown.
        self._recovery_threads = recovery_threads_per_data_dir
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
        # Several log dirs (KIP-112/113): dirs taken offline after an I/O error (path ->
        # reason), where AlterReplicaLogDirs asked a partition to be made, and the future
        # logs of replicas being moved with the moves copying them.
        self.offline_dirs: dict[Path, str] = {}
        self.preferred_dirs: dict[TopicPartition, Path] = {}
        self.future_logs: dict[TopicPartition, Log] = {}
        self._moves: dict[TopicPartition, FutureReplicaMove] = {}
        self._moves_lock = threading.Lock()
        self._creation_lock = threading.Lock()
        # The recovery-point and high-watermark timers run on two worker threads and both
        # replace replication-offset-checkpoint through one `.tmp` name: unserialised, one
        # rename moves the other's file away and its FileNotFoundError takes the dir offline.
        self._checkpoint_lock = threading.Lock()
        # What each checkpoint file last got from this manager (see _write_checkpoint).
        self._written_checkpoints: dict[Path, dict[tuple[str, int], int]] = {}
        self._log_dir_parents: dict[tuple[tuple[str, int], bool], tuple[Path, Path]] = {}
        # next_log_dir's partitions per dir, and the sizes of (logs, future_logs) they
        # were counted at (see _dir_counts); None after a delete, a move or a failed dir.
        self._counts_by_dir: dict[Path, int] = {}
        self._counted_sizes: tuple[int, int] | None = None
        # num.replica.alter.log.dirs.threads (Kafka's default: one per log dir), and
        # replica.alter.log.dirs.io.max.bytes.per.second, the bound on what all moves copy
        # together (a number, or how to read its current dynamic value).
        self.alter_log_dirs_threads = max(
            alter_log_dirs_threads if alter_log_dirs_threads is not None else len(self.log_dirs),
            1,
        )
        self.alter_log_dirs_quota = AlterLogDirsQuota(alter_log_dirs_io_max_bytes_per_second)
        self._movers: ThreadPoolExecutor | None = None
        # Future replicas (`-future` dirs) found at start-up, resumed once every log loaded;
        # and whether the log manager is shutting down (a move stopped then keeps its copy
        # for the next start-up to resume, as Kafka's future logs survive a restart).
        self._found_futures: list[Path] = []
        self._closing = False
        # Each log dir's checkpoints as read at start-up, until the found future logs
        # took theirs (_resume_moves).
        self._start_checkpoints: dict[Path, _Checkpoints] = {}
        # callables(log dir, reason) once a dir went offline; called from the thread that
        # met the I/O error (the replica manager hands them over to its event loop).
        self.dir_failure_listeners: list[Callable[[Path, str], object]] = []

    # Start-up and shutdown -------------------------------------------------------------
    def startup(self) -> None:
        """Lock every log dir, then load all of them at once, each with its own pool of
        num.recovery.threads.per.data.dir threads (Kafka's LogManager.loadLogs)."""
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock_dir(directory)
        pools = [self._pool(directory, "recovery") for directory in self.log_dirs]
        try:
            jobs = [
                (directory, self._submit_loads(directory, pool))
                for directory, pool in zip(self.log_dirs, pools, strict=True)
            ]
            for directory, loads in jobs:
                self._collect_loads(directory, loads)
        finally:
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)
        self._closing = False
        with self._logs_lock:
            self.future_logs.clear()  # copies kept closed by a previous shutdown
        self._resume_moves()
        self._start_checkpoints.clear()
        self.started = True

    @property
    def recovery_threads_per_data_dir(self) -> int:
        threads = self._recovery_threads
        return max(1, threads() if callable(threads) else threads)

    def _pool(self, directory: Path, purpose: str) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(
            self.recovery_threads_per_data_dir,
            thread_name_prefix=f"log-{purpose}-{directory.name}",
        )

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

    def _submit_loads(self, directory: Path, pool: ThreadPoolExecutor) -> _DirLoads:
        """Read the dir's marker and checkpoints, then queue one load per partition."""
        marker = directory / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        self.had_clean_shutdown[directory] = clean
        # Removed before any log is opened (KAFKA-10471): a crash while loading leaves no
        # marker, so the next start-up recovers the logs this one had begun to change.
        if clean:
            marker.unlink(missing_ok=True)
            _fsync_dir(directory)
        checkpoints = _Checkpoints(
            OffsetCheckpointFile(directory / RECOVERY_POINT_CHECKPOINT).read(),
            OffsetCheckpointFile(directory / LOG_START_CHECKPOINT).read(),
            OffsetCheckpointFile(directory / REPLICATION_CHECKPOINT).read(),
        )
        self._start_checkpoints[directory] = checkpoints
        loads = _DirLoads(clean, checkpoints, time.monotonic())
        for child in sorted(directory.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                self.dirs_to_delete.append(child)  # a deletion that did not finish
                continue
            if child.name.endswith(FUTURE_DIR_SUFFIX):
                # A move (AlterReplicaLogDirs) that a restart cut short: resumed once the
                # current logs are loaded (_resume_moves).
                self._found_futures.append(child)
                continue
            try:
                tp = parse_dir_name(child.name)
            except ValueError:
                continue
            loads.futures[tp] = pool.submit(
                self._load_one,
                child,
                tp,
                self.config_for(tp[0]),
                checkpoints.recovery_points.get(tp, 0),
                checkpoints.log_start_offsets.get(tp, 0),
                clean,
            )
        return loads

    def _load_one(
        self,
        child: Path,
        tp: TopicPartition,
        config: LogConfig,
        recovery_point: int,
        log_start_offset: int,
        clean: bool,
    ) -> Log:
        """On a recovery thread: open one partition's log (recovering it unless clean)."""
        began = time.monotonic()
        loaded = load_log(
            child,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=clean,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            clock=self.clock,
        )
        log.debug(
            "loaded %s-%d (%s) in %.0f ms",
            tp[0],
            tp[1],
            "clean" if clean else "recovered",
            (time.monotonic() - began) * 1000,
        )
        return loaded

    def _collect_loads(self, directory: Path, loads: _DirLoads) -> None:
        for tp, future in loads.futures.items():
            try:
                loaded = future.result()
            except Exception as exc:  # noqa: BLE001 - one bad partition must not stop the rest
                log.error("partition %s-%d is offline: %s", tp[0], tp[1], exc, exc_info=exc)
                self.offline_partitions[tp] = str(exc)
                continue
            # No checkpointed high watermark (the partition was made after the last
            # checkpoint): 0, raised to the log start, as Kafka's Partition.createLog; the
            # leader's fetch responses, or as leader the ISR, raise it. Never the log end:
            # records above the true high watermark would be served as committed.
            loaded.update_high_watermark(loads.checkpoints.high_watermarks.get(tp, 0))
            previous = self.logs.get(tp)
            if previous is not None:
                raise DuplicateLogDirError(
                    f"Duplicate log directories for {tp[0]}-{tp[1]} are found in both "
                    f"{loaded.dir} and {previous.dir}. It is likely because log directory "
                    "failure happened while broker was replacing current replica with future "
                    "replica. Recover broker from this failure by manually deleting one of the "
                    "two directories for this partition. It is recommended to delete the "
                    "partition in the log directory that is known to have failed recently."
                )
            self.logs[tp] = loaded
        log.info(
            "loaded %d logs from %s in %.0f ms with %d recovery threads (%s)",
            len(loads.futures),
            directory,
            (time.monotonic() - loads.began) * 1000,
            self.recovery_threads_per_data_dir,
            "after a clean shutdown" if loads.clean else "recovered after an unclean shutdown",
        )

    def shutdown(self) -> None:
        """Close every log (each log dir with its own pool of recovery threads, as Kafka),
        write the checkpoints, then the clean-shutdown marker of each log dir whose logs all
        closed: only a dir that was entirely flushed is trusted without recovery."""
        self._closing = True  # moves stop, their copies are kept (closed) for the next start
        self.cancel_moves()
        by_dir: dict[Path, list[tuple[TopicPartition, Log]]] = {d: [] for d in self.log_dirs}
        for tp, partition_log in self._logs_snapshot():
            by_dir.setdefault(partition_log.dir.parent, []).append((tp, partition_log))
        failed: set[Path] = set()
        pools = {directory: self._pool(directory, "shutdown") for directory in by_dir}
        try:
            closes = {
                directory: [(tp, pools[directory].submit(lg.close)) for tp, lg in in_dir]
                for directory, in_dir in by_dir.items()
            }
            for directory, futures in closes.items():
                for tp, future in futures:
                    try:
                        future.result()
                    except Exception as exc:  # noqa: BLE001
                        failed.add(directory)
                        log.error("closing %s-%d failed: %s", tp[0], tp[1], exc)
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True)
        self.checkpoint()
        for directory in self.log_dirs:
            if directory not in failed and directory not in self.offline_dirs:
                (directory / CLEAN_SHUTDOWN_MARKER).touch()
                _fsync_dir(directory)
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
        # One creation at a time (Kafka's logCreationOrDeletionLock): partitions made at
        # once on worker threads must each see where the others went.
        with self._creation_lock:
            existing = self.logs.get(tp)
            if existing is not None:
                return existing
            directory = checked_partition_dir(self.next_log_dir(tp), topic, partition)
            created = load_log(
                directory,
                self.config_for(topic),
                had_clean_shutdown=True,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                clock=self.clock,
            )
            with self._logs_lock:
                self.logs[tp] = created
                self._counted_creation(directory)
                self.preferred_dirs.pop(tp, None)
        return created

    def live_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def next_log_dir(self, tp: TopicPartition | None = None) -> Path:
        """Where a new partition goes: the dir AlterReplicaLogDirs named for it, else the
        live dir holding the fewest partitions, future replicas counted, the first such
        in log.dirs on a tie (Kafka's LogManager.nextLogDirs)."""
        live = self.live_log_dirs()
        if not live:
            raise errors.KafkaStorageError("every log dir is offline")
        preferred = self.preferred_dirs.get(tp) if tp is not None else None
        if preferred is not None and preferred in live:
            return preferred
        if len(live) == 1:
            return live[0]
        counts = self._dir_counts()
        return min(live, key=lambda d: counts.get(d, 0))

    def _dir_counts(self) -> dict[Path, int]:
        """Partitions (future replicas counted) per log dir, kept as logs are created here
        and counted again only when the logs changed some other way (loaded, deleted,
        moved, a dir failed): creating N logs costs O(N), not O(N^2)."""
        with self._logs_lock:
            sizes = (len(self.logs), len(self.future_logs))
            if self._counted_sizes != sizes:
                counts: dict[Path, int] = {}
                for partition_log in (*self.logs.values(), *self.future_logs.values()):
                    parent = partition_log.dir.parent
                    counts[parent] = counts.get(parent, 0) + 1
                self._counts_by_dir = counts
                self._counted_sizes = sizes
            return self._counts_by_dir

    def _counted_creation(self, directory: Path) -> None:
        """A log created in `directory` (its count kept, under _logs_lock, once the log is
        in `logs`): the next creation need not count every log again."""
        if self._counted_sizes is None:
            return
        logs, future = self._counted_sizes
        if len(self.logs) == logs + 1 and len(self.future_logs) == future:
            parent = directory.parent
            self._counts_by_dir[parent] = self._counts_by_dir.get(parent, 0) + 1
            self._counted_sizes = (logs + 1, future)

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
        self.cancel_move(tp)
        existing = self.logs.get(tp)
        if existing is not None:
            self._check_in_log_dir(existing.dir, topic, partition)
        with self._logs_lock:
            partition_log = self.logs.pop(tp, None)
            was_offline = self.offline_partitions.pop(tp, None) is not None
            self._counted_sizes = None  # a delete then a create would leave the sizes equal
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
        """Recovery points, log start offsets and high watermarks, per live log dir; a dir
        whose checkpoint cannot be written goes offline (Kafka's LogDirFailureChannel)."""
        for directory, in_dir in self._logs_by_dir().items():
            try:
                with self._checkpoint_lock:
                    self._write_checkpoint(
                        directory / RECOVERY_POINT_CHECKPOINT,
                        {tp: lg.recovery_point for tp, lg in in_dir.items()},
                    )
                    self._write_checkpoint(
                        directory / LOG_START_CHECKPOINT,
                        {
                            tp: lg.log_start_offset
                            for tp, lg in in_dir.items()
                            if lg.log_start_offset > 0
                        },
                    )
                    self._write_checkpoint(
                        directory / REPLICATION_CHECKPOINT,
                        {tp: lg.high_watermark for tp, lg in in_dir.items()},
                    )
            except OSError as exc:
                self.fail_dir(directory, f"writing a checkpoint failed: {exc}")

    def checkpoint_high_watermarks(self) -> None:
        """Only the replication-offset-checkpoint of each live log dir, future logs
        included (Kafka's ReplicaManager.checkpointHighWatermarks, every
        replica.high.watermark.checkpoint.interval.ms)."""
        for directory, in_dir in self._logs_by_dir().items():
            try:
                with self._checkpoint_lock:
                    self._write_checkpoint(
                        directory / REPLICATION_CHECKPOINT,
                        {tp: lg.high_watermark for tp, lg in in_dir.items()},
                    )
            except OSError as exc:
                self.fail_dir(directory, f"writing a checkpoint failed: {exc}")

    def _logs_by_dir(self) -> dict[Path, dict[tuple[str, int], Log]]:
        """Every log of each live log dir, future logs included, each in its own dir
        (Kafka's logsByDir: a move resumed after a crash recovers only what its copy had
        not flushed)."""
        with self._logs_lock:
            every = [
                *((tp, lg, False) for tp, lg in self.logs.items()),
                *((tp, lg, True) for tp, lg in self.future_logs.items()),
            ]
        grouped: dict[Path, dict[tuple[str, int], Log]] = {d: {} for d in self.live_log_dirs()}
        # Each log's dir and the log dir holding it, kept while the log stays where it is:
        # Path.parent and Path comparisons cost microseconds, times 10,000 logs.
        known = self._log_dir_parents
        kept: dict[tuple[tuple[str, int], bool], tuple[Path, Path]] = {}
        for tp, partition_log, future in every:
            directory = partition_log.dir
            entry = known.get((tp, future))
            if entry is None or entry[0] is not directory:
                parent = directory.parent
                # The live dir's own object, so the lookup below is an identity match.
                parent = next((d for d in grouped if d == parent), parent)
                entry = (directory, parent)
            kept[(tp, future)] = entry
            in_dir = grouped.get(entry[1])
            if in_dir is not None:
                in_dir[tp] = partition_log
        self._log_dir_parents = kept
        return grouped

    def _write_checkpoint(self, path: Path, offsets: dict[tuple[str, int], int]) -> None:
        """Write `offsets` to the checkpoint file `path`, unless it holds exactly them
        already (as last written here): an idle broker's timers write nothing. Under
        _checkpoint_lock."""
        if self._written_checkpoints.get(path) == offsets:
            return
        OffsetCheckpointFile(path).write(offsets)
        self._written_checkpoints[path] = offsets

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

    # Moving replicas between log dirs (AlterReplicaLogDirs) ------------------------------
    def configured_dir(self, path: str) -> Path:
        """The log dir an AlterReplicaLogDirs names: one of log.dirs, by absolute path
        (Kafka's isLogDirOnline), else LOG_DIR_NOT_FOUND."""
        if os.path.isabs(path):
            for directory in self.log_dirs:
                if os.path.abspath(directory) == os.path.normpath(path):
                    return directory
        raise errors.LogDirNotFoundError(f"log dir {path!r} is not in log.dirs")

    def alter_log_dir(self, topic: str, partition: int, destination: str) -> None:
        """Move a replica to another log dir, or say where it goes when it is made (Kafka's
        ReplicaManager.alterReplicaLogDirs). Raises LogDirNotFoundError,
        KafkaStorageError (the dir or the partition is offline) or ReplicaNotAvailableError
        (no replica here yet: the dir is remembered for when it is made). Creates
        directories: call it off the event loop."""
        if len(future_dir_name(topic, partition).encode()) > MAX_DIR_NAME_BYTES:
            raise PartitionDirError(f"topic {topic!r} is too long for a future replica's name")
        target = self.configured_dir(destination)
        if target in self.offline_dirs:
            raise errors.KafkaStorageError(f"log dir {target} is offline")
        tp = (topic, partition)
        if tp in self.offline_partitions:
            raise errors.KafkaStorageError(f"{topic}-{partition} is offline")
        running = self._moves.get(tp)
        if running is not None and running.future.dir.parent != target:
            self.cancel_move(tp)  # a move elsewhere: stopped, its copy dropped
        with self._moves_lock:
            current = self.logs.get(tp)
            if current is None:
                self.preferred_dirs[tp] = target
                raise errors.ReplicaNotAvailableError(f"no replica of {topic}-{partition} here")
            if current.dir.parent == target or tp in self._moves:
                return
            if self.offline_dirs:
                # As Kafka: no future replica while a dir is offline, so that the same
                # partition never has copies in two dirs that a restart would both load.
                raise errors.KafkaStorageError("a log dir is offline: replicas are not moved")
            checked_partition_dir(target, topic, partition)
            future = load_log(
                target / future_dir_name(topic, partition),
                self.config_for(topic),
                log_start_offset=current.log_start_offset,
                had_clean_shutdown=True,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                clock=self.clock,
            )
            self._start_move(tp, current, future)
        log.info("moving %s-%d from %s to %s", topic, partition, current.dir.parent, target)

    def _start_move(self, tp: TopicPartition, current: Log, future: Log) -> None:
        """Register a future log and queue its copy on a mover thread (_moves_lock held)."""
        move = FutureReplicaMove(current, future, self._finish_move, self.alter_log_dirs_quota)
        with self._logs_lock:
            self.future_logs[tp] = future
        self._moves[tp] = move
        if self._movers is None:
            self._movers = ThreadPoolExecutor(
                self.alter_log_dirs_threads, thread_name_prefix="alter-log-dirs"
            )
        self._movers.submit(self._run_move, move)

    def _resume_moves(self) -> None:
        """The `-future` dirs found at start-up (Kafka loads them as future logs and its
        ReplicaAlterLogDirsThread goes on copying them):
        - beside a loaded current log in another dir: a move a restart cut short, resumed
          where its copy ended (the copy is recovered like any log first, then reconciled
          with the current log as every copy step is);
        - with no directory of the partition left anywhere: a swap cut short after the old
          replica was renamed `-delete` (see _finish_move); the copy was complete, so it
          takes the partition's name and is loaded as its log;
        - with the current log offline (it did not load): left on disk, untouched.
        Several copies of one partition (a move redirected, then a crash): one is kept."""
        found, self._found_futures = self._found_futures, []
        by_tp: dict[TopicPartition, list[Path]] = {}
        for child in sorted(found):
            by_tp.setdefault(parse_dir_name(child.name), []).append(child)
        for tp, copies in by_tp.items():
            keep, *extra = copies
            self.dirs_to_delete.extend(extra)
            try:
                self._resume_move(tp, keep)
            except Exception as exc:  # noqa: BLE001 - one bad copy must not stop start-up
                log.error("resuming the move of %s-%d (%s) failed: %s", *tp, keep, exc)
                self.dirs_to_delete.append(keep)

    def _resume_move(self, tp: TopicPartition, copy: Path) -> None:
        topic, partition = tp
        clean = self.had_clean_shutdown.get(copy.parent, False)
        current = self.logs.get(tp)
        if current is None:
            if tp in self.offline_partitions or self.offline_dir(topic, partition) is not None:
                log.warning("%s: the current replica is offline; the copy is left alone", copy)
                return
            final = checked_partition_dir(copy.parent, topic, partition)
            os.replace(copy, final)
            _fsync_dir(copy.parent)
            own = self._start_checkpoints.get(copy.parent)
            promoted = load_log(
                final,
                self.config_for(topic),
                recovery_point=own.recovery_points.get(tp, 0) if own else 0,
                log_start_offset=self._checkpointed(tp, "log_start_offsets"),
                had_clean_shutdown=clean,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                clock=self.clock,
            )
            # The high watermark the copy or the replica it replaced had checkpointed,
            # else 0 (never the log end: the copy may hold records not yet committed).
            promoted.update_high_watermark(self._checkpointed(tp, "high_watermarks"))
            with self._logs_lock:
                self.logs[tp] = promoted
            log.info("%s-%d: a swap cut short is completed: its log is now %s", *tp, final)
            return
        if current.dir.parent == copy.parent:
            self.dirs_to_delete.append(copy)
            return
        own = self._start_checkpoints.get(copy.parent)
        future = load_log(
            copy,
            self.config_for(topic),
            # The copy's own recovery point, checkpointed in its dir as Kafka's future
            # logs' are: an unclean restart recovers only what was not flushed.
            recovery_point=own.recovery_points.get(tp, 0) if own else 0,
            log_start_offset=current.log_start_offset,
            had_clean_shutdown=clean,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            clock=self.clock,
        )
        future.update_high_watermark(own.high_watermarks.get(tp, 0) if own else 0)
        with self._moves_lock:
            self._start_move(tp, current, future)
        log.info(
            "resuming the move of %s-%d from %s to %s at offset %d of %d",
            topic,
            partition,
            current.dir.parent,
            copy.parent,
            future.log_end_offset,
            current.log_end_offset,
        )

    def _checkpointed(self, tp: TopicPartition, kind: str) -> int:
        """The highest value any log dir's checkpoint held for `tp` at start-up (a swap cut
        short: the copy's dir and the replaced replica's), else 0."""
        return max(
            (getattr(found, kind).get(tp, 0) for found in self._start_checkpoints.values()),
            default=0,
        )

    def _run_move(self, move: FutureReplicaMove) -> None:
        """On a mover thread: copy until swapped; a move that stopped otherwise (cancelled,
        the log closed or deleted, an error) drops its copy, except at shutdown, when the
        copy is closed and kept for the next start-up to resume."""
        move.started.set()
        try:
            move.run()
            if move.swapped:
                return
            kept = self._closing and move.error is None and not move.future.closed
            with self._moves_lock:
                if self._moves.get(move.key) is move:
                    del self._moves[move.key]
                with self._logs_lock:
                    # A copy kept for the next start stays a future log until then: the
                    # shutdown's checkpoints record its recovery point, log start and
                    # high watermark in its dir, as Kafka's do.
                    if not kept and self.future_logs.get(move.key) is move.future:
                        del self.future_logs[move.key]
            if kept:
                move.future.close()
                log.info("%s-%d: its move is resumed at the next start", *move.key)
                return
            self._drop_log_files(move.future)
            if move.failed_dir is not None:
                self.fail_dir(move.failed_dir, f"moving a replica failed: {move.error}")
        finally:
            move.done.set()

    def _finish_move(self, move: FutureReplicaMove) -> bool:
        """Swap a caught-up future log in (Kafka's replaceCurrentWithFutureLog). Under the
        current log's lock: copy what was appended since the last step, rename the old
        directory `-delete`, give the future's directory the partition's own name (both
        renamed open, no file reopened: appends wait for two renames, not for the segments
        to be opened again), and exchange the two logs' contents, so every holder of the
        log now writes to the new dir. A crash between the two renames leaves a `-future`
        copy alone, which the next start-up completes (_resume_moves). The old files are
        removed after file.delete.delay.ms (reads in flight may still hold them)."""
        current, future = move.current, move.future
        topic, partition = move.key
        future.flush()  # the bulk of the fsyncs, before appends are held up
        for _ in range(CATCH_UP_STEPS):  # and what came meanwhile, still without the lock
            move.reconcile()
            if not move.copy_step():
                break
        with current.lock:
            if current.closed or move.cancelled.is_set():
                return False
            held = time.monotonic()
            move.reconcile()
            while move.copy_step():
                pass
            if future.log_end_offset != current.log_end_offset:
                return False
            # An epoch begun at the log end with nothing written in it yet (a leader elected
            # again) is not carried over, as a restart does not keep it either: the first
            # append at that epoch records it.
            source = current.dir
            final = checked_partition_dir(future.dir.parent, topic, partition)
            doomed = source.with_name(delete_dir_name(topic, partition))
            with move.on_current():
                current.rename_dir(doomed)
            try:
                future.rename_dir(final)
            except BaseException:
                with move.on_current():
                    current.rename_dir(source)  # still the partition's log; the move fails
                raise
            future.update_high_watermark(current.high_watermark)
            if current.log_start_offset > future.log_start_offset:
                future.maybe_increment_log_start_offset(current.log_start_offset)
            current.exchange_contents(future)
            # Still under the log's lock: no one sees the swapped log beside a future log
            # that now holds the old files.
            with self._moves_lock:
                self._moves.pop(move.key, None)
                with self._logs_lock:
                    self.future_logs.pop(move.key, None)
                    self._counted_sizes = None  # the partition counts in its new dir now
            held_ms = move.held_ms = (time.monotonic() - held) * 1000
        old = future  # now holds the old files, in `doomed`
        log.info(
            "moved %s-%d from %s to %s (appends held %.1f ms)",
            topic,
            partition,
            source.parent,
            final.parent,
            held_ms,
        )
        delay = current.config.file_delete_delay_ms / 1000
        timer = threading.Timer(delay, self._remove_old_log, (old, doomed))
        timer.daemon = True
        timer.start()
        return True

    def _remove_old_log(self, old: Log, doomed: Path) -> None:
        old.delete()
        self.remove_dir(doomed)

    def _drop_log_files(self, dropped: Log) -> None:
        """A copy given up: renamed `-delete` first (a crash midway never leaves a partial
        `-future` copy for the next start-up to resume), then removed."""
        try:
            dropped.rename_dir(
                dropped.dir.with_name(delete_dir_name(dropped.topic, dropped.partition))
            )
        except (OSError, errors.LogError) as exc:
            log.debug("renaming %s for deletion: %s", dropped.dir, exc)
        dropped.delete()
        self.remove_dir(dropped.dir)

    def cancel_move(self, tp: TopicPartition) -> None:
        """Stop a partition's move and wait for its thread to let go (the copy is dropped)."""
        move = self._moves.get(tp)
        if move is None:
            return
        move.cancel()
        if move.started.is_set() and not threading.current_thread().name.startswith(
            "alter-log-dirs"
        ):
            move.done.wait(30)

    def cancel_moves(self) -> None:
        for move in list(self._moves.values()):
            move.cancel()
        movers, self._movers = self._movers, None
        if movers is not None:
            movers.shutdown(wait=True, cancel_futures=False)

    def moving(self) -> dict[TopicPartition, FutureReplicaMove]:
        """The moves in progress. Without the lock (one dict copy, atomic under the GIL):
        DescribeLogDirs calls it on the event loop, and alter_log_dir holds the lock while
        it makes a future log's files."""
        return dict(self._moves)

    # Failed log dirs ---------------------------------------------------------------------
    def fail_dir(self, directory: Path, reason: str) -> list[TopicPartition]:
        """Take a log dir offline after an I/O error, alone (Kafka's
        LogManager.handleLogDirFailure): its logs stop (files released, nothing flushed:
        the disk is not trusted), their partitions become offline (KAFKA_STORAGE_ERROR),
        moves into or out of it stop, and the listeners hear of it. Safe from any thread;
        a dir already offline changes nothing."""
        with self._moves_lock:
            if directory in self.offline_dirs or directory not in self.log_dirs:
                return []
            self.offline_dirs[directory] = reason
            moves = [
                m
                for m in self._moves.values()
                if m.current.dir.parent == directory or m.future.dir.parent == directory
            ]
        log.error("log dir %s is offline: %s", directory, reason)
        for move in moves:
            move.cancel()
        with self._logs_lock:
            failed = [(tp, lg) for tp, lg in self.logs.items() if lg.dir.parent == directory]
            for tp, _ in failed:
                del self.logs[tp]
                self.offline_partitions[tp] = f"log dir {directory} is offline: {reason}"
            self._counted_sizes = None
        for tp, partition_log in failed:
            try:
                partition_log.delete()  # releases the files; the directory stays
            except Exception as exc:  # noqa: BLE001 - the disk already failed
                log.debug("releasing %s-%d: %s", tp[0], tp[1], exc)
        for listener in list(self.dir_failure_listeners):
            try:
                listener(directory, reason)
            except Exception:  # noqa: BLE001
                log.exception("log dir failure listener failed")
        return [tp for tp, _ in failed]
