"""Builders shared by the log tests."""

from __future__ import annotations

from pathlib import Path

from brokerd.config import LogConfig
from brokerd.log.recovery import load_log
from brokerd.records.batch import SimpleRecord, build_batch


def batch(*values: bytes | None, key: bytes | None = None, timestamp: int = 1000, **kw):
    records = [SimpleRecord(v, key, (), timestamp + i) for i, v in enumerate(values)]
    return build_batch(records, **kw)


def keyed_batch(pairs, timestamp: int = 1000, **kw):
    records = [SimpleRecord(v, k, (), timestamp + i) for i, (k, v) in enumerate(pairs)]
    return build_batch(records, **kw)


def open_log(directory: Path, clean: bool = True, clock=None, **config):
    kwargs = {"had_clean_shutdown": clean}
    if clock is not None:
        kwargs["clock"] = clock
    return load_log(directory, LogConfig().with_overrides(**config), **kwargs)


def read_all(log, start: int = 0):
    return [r for entry in log.read_batches(start) for r in entry.records() if r.offset >= start]
