"""The local platform's processes, as `make run`'s supervisor reports them.

platform/launch.py writes settings.PLATFORM_STATUS_FILE (brokerd/util/supervisor.py replaces
it atomically on every change): each process's name, pid, state (running, restarting,
backing-off), restart count and last exit. The cluster overview shows it for the cluster the
file names, so a broker killed and started again is seen on the page that shows it down.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

MAX_BYTES = 256 * 1024  # a status of a dozen processes is a few KiB
MAX_PROCESSES = 100
_TEXT_FIELDS = ("name", "state", "last_exit")
_TIME_FIELDS = ("started_at", "last_exit_at", "restart_at")
_NUMBER_FIELDS = ("pid", "restarts", "last_exit_code")


def read(cluster_name: str) -> dict[str, Any] | None:
    """{"updated_at", "processes": [...]} when the status file exists and is about
    `cluster_name`; None otherwise (no local platform, another cluster, unreadable)."""
    try:
        with open(settings.PLATFORM_STATUS_FILE, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("cluster") != cluster_name:
        return None
    processes = data.get("processes")
    if not isinstance(processes, list):
        return None
    return {
        "updated_at": _time(data.get("updated_at")),
        "processes": [_process(p) for p in processes[:MAX_PROCESSES] if isinstance(p, dict)],
    }


def _process(entry: dict) -> dict[str, Any]:
    out: dict[str, Any] = {key: _text(entry.get(key)) for key in _TEXT_FIELDS}
    out.update((key, _time(entry.get(key))) for key in _TIME_FIELDS)
    for key in _NUMBER_FIELDS:
        value = entry.get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        out[key] = value if ok else None
    return out


def _text(value: Any) -> str | None:
    return value[:200] if isinstance(value, str) else None


def _time(value: Any) -> str | None:
    """ISO 8601 UTC as the other live pages show times: 'YYYY-MM-DD HH:MM:SS'."""
    return value.replace("T", " ")[:19] if isinstance(value, str) else None
