"""Client of the brokers' admin HTTP API (brokerd/admin, docs/admin-api.md).

Endpoints come from the cluster's `admin_endpoints` (broker id -> base URL) or, when that is
empty, from the brokers' ZooKeeper registrations (`admin_endpoint` in /brokers/ids/<id>).
The bearer token is resolved server-side from the cluster's token reference and never leaves
this process.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from .models import Cluster

DISCOVERY_TTL_S = 30.0
# After a broker's admin API stopped answering, look again this soon: a restarted broker
# with admin.listener port 0 registers a new endpoint.
REDISCOVERY_AFTER_FAILURE_S = 1.0
_discovered: dict[str, tuple[float, dict[int, str]]] = {}


class AdminApiError(Exception):
    """The admin API answered with an error, or could not be reached."""

    def __init__(self, status: int, message: str, unreachable: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.unreachable = unreachable  # no HTTP answer at all: the broker is down or gone


def discover_from_zookeeper(zookeeper_connect: str, max_age: float = DISCOVERY_TTL_S):
    """broker id -> admin URL from /brokers/ids/<id> (cached up to `max_age` seconds)."""
    cached = _discovered.get(zookeeper_connect)
    if cached and time.monotonic() - cached[0] < max_age:
        return cached[1]
    zk = _zookeeper_session(zookeeper_connect)
    endpoints: dict[int, str] = {}
    if zk.exists("/brokers/ids"):
        for child in zk.get_children("/brokers/ids"):
            try:
                data, _ = zk.get(f"/brokers/ids/{child}")
            except NoNodeError:  # deregistered between the listing and the read
                continue
            url = json.loads(data or b"{}").get("admin_endpoint")
            if url and child.isdigit():
                endpoints[int(child)] = url
    _discovered[zookeeper_connect] = (time.monotonic(), endpoints)
    return endpoints


# One read-only ZooKeeper session per ensemble per process, kept open: discovery runs every
# second while a broker is down, and a session per look would churn the ensemble's sessions.
_sessions: dict[str, KazooClient] = {}
_sessions_lock = threading.Lock()
_sessions_pid = os.getpid()


def _zookeeper_session(zookeeper_connect: str) -> KazooClient:
    global _sessions_pid
    with _sessions_lock:
        if _sessions_pid != os.getpid():  # a forked child (Celery prefork): not its sessions
            _sessions.clear()
            _sessions_pid = os.getpid()
        zk = _sessions.get(zookeeper_connect)
        if zk is None:
            zk = KazooClient(hosts=zookeeper_connect, timeout=5.0, read_only=True)
            try:
                zk.start(timeout=5.0)
            except Exception:
                zk.close()
                raise
            _sessions[zookeeper_connect] = zk
        return zk


def close_zookeeper_sessions() -> None:
    with _sessions_lock:
        sessions = list(_sessions.values()) if _sessions_pid == os.getpid() else []
        _sessions.clear()
    for zk in sessions:
        zk.stop()
        zk.close()


atexit.register(close_zookeeper_sessions)


class AdminApi:
    def __init__(self, cluster: Cluster, timeout: float = 10.0):
        self.cluster = cluster
        self.timeout = timeout
        self._token = cluster.admin_token()
        self._endpoints: dict[int, str] | None = None

    def endpoints(self) -> dict[int, str]:
        if self._endpoints is None:
            configured = {int(k): v for k, v in (self.cluster.admin_endpoints or {}).items()}
            if not configured and self.cluster.zookeeper_connect:
                configured = discover_from_zookeeper(self.cluster.zookeeper_connect)
            self._endpoints = configured
        return self._endpoints

    def rediscover(self) -> None:
        """Forget discovered endpoints after a failure (a restarted broker may have moved);
        ZooKeeper is asked again at most every REDISCOVERY_AFTER_FAILURE_S."""
        if self.cluster.admin_endpoints or not self.cluster.zookeeper_connect:
            return
        self._endpoints = discover_from_zookeeper(
            self.cluster.zookeeper_connect, REDISCOVERY_AFTER_FAILURE_S
        )

    @property
    def available(self) -> bool:
        return bool(self.endpoints())

    def request(
        self, broker_id: int, method: str, path: str, body: dict | None = None
    ) -> dict[str, Any]:
        base = self.endpoints().get(broker_id)
        if base is None:
            raise AdminApiError(
                404, f"no admin API endpoint known for broker {broker_id}", unreachable=True
            )
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base.rstrip("/") + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except Exception:
                message = exc.reason
            raise AdminApiError(exc.code, f"broker {broker_id} admin API: {message}") from None
        except (OSError, ValueError) as exc:
            raise AdminApiError(
                503, f"broker {broker_id} admin API unreachable: {exc}", unreachable=True
            ) from None

    def get(self, broker_id: int, path: str) -> dict[str, Any]:
        return self.request(broker_id, "GET", path)

    async def aget(self, broker_id: int, path: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.get, broker_id, path)

    # The calls the platform makes -------------------------------------------------------
    def health(self, broker_id: int) -> dict[str, Any]:
        """/v1/health; a 503 (starting, ZooKeeper session down) is an answer, not an error."""
        try:
            return self.get(broker_id, "/v1/health")
        except AdminApiError as exc:
            if exc.unreachable or exc.status != 503:
                raise
            return {"status": "unavailable", "broker_id": broker_id}

    def partition(self, broker_id: int, topic: str, partition: int) -> dict[str, Any]:
        return self.get(broker_id, f"/v1/partitions/{_q(topic)}/{partition}")

    def topic_partitions(self, broker_id: int, topic: str) -> dict[str, Any]:
        return self.get(broker_id, f"/v1/partitions/{_q(topic)}")

    def segments(self, broker_id: int, topic: str, partition: int, entries: bool = False):
        suffix = "?entries=true" if entries else ""
        return self.get(broker_id, f"/v1/partitions/{_q(topic)}/{partition}/segments{suffix}")


def _q(topic: str) -> str:
    return urllib.parse.quote(topic, safe="")
