"""The load log of a Parquet output: which files are committed, and up to which offsets.

    <output>/date=YYYY-MM-DD/part-<load-id>-<n>.parquet   data, written by committed loads
    <output>/_offsets/<load-id>.json                       one manifest per committed load
    <output>/_staging/<load-id>/                           Spark's output before the commit

A load is committed when its manifest is renamed into `_offsets/` (after its data files were
moved into place and synced): the manifest lists the load's files, the files it replaced (a
reload from a timestamp rewrites files holding records it reloads) and, per partition, the
offset range [start, end) it read. The next load starts at the newest manifest's ends. Files
no committed manifest lists live (left by a load that died before its commit) and replaced
files are deleted by the next load's recovery, so a rerun never duplicates or skips. Spark
readers skip `_`-prefixed directories.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OFFSETS_DIR = "_offsets"
STAGING_DIR = "_staging"


@dataclass
class LoadLog:
    output: Path

    @property
    def offsets_dir(self) -> Path:
        return self.output / OFFSETS_DIR

    def staging(self, load_id: str) -> Path:
        return self.output / STAGING_DIR / load_id

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One load at a time per output (a second one waits)."""
        self.offsets_dir.mkdir(parents=True, exist_ok=True)
        with open(self.offsets_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def manifests(self) -> list[dict]:
        """Committed loads, oldest first."""
        if not self.offsets_dir.is_dir():
            return []
        found = [json.loads(p.read_text()) for p in self.offsets_dir.glob("*.json")]
        return sorted(found, key=lambda m: m["sequence"])

    def manifest(self, load_id: str) -> dict | None:
        path = self.offsets_dir / f"{load_id}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def next_offsets(self, topic: str) -> dict[int, int]:
        """Per partition, where the next load starts: the newest committed end offsets."""
        ends: dict[int, int] = {}
        for manifest in self.manifests():
            if manifest["topic"] == topic:
                ends.update({int(p): r["end"] for p, r in manifest["partitions"].items()})
        return ends

    def live_files(self) -> list[str]:
        live: dict[str, None] = {}
        for manifest in self.manifests():
            for name in manifest["replaced"]:
                live.pop(name, None)
            live.update(dict.fromkeys(manifest["files"]))
        return list(live)

    def data_files(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.output))
            for p in self.output.rglob("*.parquet")
            if not any(part.startswith("_") for part in p.relative_to(self.output).parts)
        )

    def recover(self) -> list[str]:
        """Delete what no committed load keeps (a dead load's files, replaced files)."""
        live = set(self.live_files())
        removed = [name for name in self.data_files() if name not in live]
        for name in removed:
            (self.output / name).unlink()
        shutil.rmtree(self.output / STAGING_DIR, ignore_errors=True)
        return removed

    def commit(self, manifest: dict) -> None:
        """Make the load visible: its data files are durable first, then the manifest."""
        for name in manifest["files"]:
            _fsync(self.output / name)
        for directory in {(self.output / n).parent for n in manifest["files"]}:
            _fsync_dir(directory)
        final = self.offsets_dir / f"{manifest['load_id']}.json"
        temporary = final.with_suffix(".json.tmp")
        with open(temporary, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, final)
        _fsync_dir(self.offsets_dir)
        for name in manifest["replaced"]:
            with contextlib.suppress(FileNotFoundError):
                (self.output / name).unlink()
        shutil.rmtree(self.staging(manifest["load_id"]), ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    _fsync(path)
