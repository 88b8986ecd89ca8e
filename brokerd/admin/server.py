"""The admin HTTP server inside the broker process: bound, token, lifecycle, error shape.

It runs on aiohttp (pinned in requirements.txt): a maintained asyncio HTTP/1.1 server, so
the broker's event loop serves it beside the Kafka listeners without a thread, and HTTP
parsing, keep-alive and request-size limits are not ours to get wrong. Every response is
JSON (or Prometheus text at /metrics); errors are `{"error": {"code", "message"}}` with a
4xx status for bad input and a 500 (logged) only for the unexpected.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aiohttp import web

from brokerd.log.cleaner_manager import LogCleanerManager

from .context import AdminContext

log = logging.getLogger(__name__)

TOKEN_FILE = "admin.token"
PUBLIC_PATHS = frozenset({"/metrics", "/v1/health"})
MAX_BODY_BYTES = 64 << 10
SERVER_KEY: web.AppKey[AdminServer] = web.AppKey("admin_server")


class ApiError(Exception):
    """A client error with its HTTP status and a message for the caller."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"code": status, "message": message}},
        status=status,
        dumps=json.dumps,
    )


class AdminServer:
    def __init__(self, ctx: AdminContext, routes: Iterable[web.AbstractRouteDef]):
        self.ctx = ctx
        self.routes = list(routes)
        self.host, self.port = ctx.config.admin.listener_address
        self.token: str | None = None
        self.token_path: Path | None = None
        self.created_ms = int(time.time() * 1000)
        self.bound_port: int | None = None
        self._runner: web.AppRunner | None = None
        # Maintenance (retention, compaction) runs one at a time on its own thread, so it
        # never holds the loop or the default executor that ZooKeeper calls use.
        self.maintenance_executor = ThreadPoolExecutor(1, thread_name_prefix="admin-maintenance")
        self.read_executor = ThreadPoolExecutor(2, thread_name_prefix="admin-read")
        self._fallback_cleaner: LogCleanerManager | None = None

    # Lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        self.token = await asyncio.to_thread(self._load_or_create_token)
        app = web.Application(middlewares=[handle_errors], client_max_size=MAX_BODY_BYTES)
        app[SERVER_KEY] = self
        app.add_routes(self.routes)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, self.host or None, self.port, reuse_address=True, shutdown_timeout=5
        )
        await site.start()
        self.bound_port = self._runner.addresses[0][1]
        where = f"token from {self.token_path}" if self.token_path else "token from admin.token"
        log.info("admin API listening on %s (%s)", self.url, where)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        # A compaction or retention run in progress finishes before storage shuts down.
        await asyncio.to_thread(self.maintenance_executor.shutdown, True, cancel_futures=True)
        await asyncio.to_thread(self.read_executor.shutdown, True, cancel_futures=True)

    @property
    def url(self) -> str | None:
        """The admin endpoint as published in /brokers/ids/<id>."""
        if self.bound_port is None:
            return None
        host = self.host
        if host in ("", "0.0.0.0", "::"):
            advertised = self.ctx.advertised_endpoints()
            host = advertised[0].host if advertised else "localhost"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.bound_port}"

    def _load_or_create_token(self) -> str:
        configured = self.ctx.config.admin.admin_token
        if configured:
            return configured
        path = Path(self.ctx.config.log_dirs[0]) / TOKEN_FILE
        self.token_path = path
        # Reused across restarts, so the platform's stored token keeps working.
        try:
            existing = path.read_text().strip()
        except FileNotFoundError:
            existing = ""
        if existing:
            os.chmod(path, 0o600)
            return existing
        token = secrets.token_urlsafe(32)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{TOKEN_FILE}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
        os.replace(temporary, path)
        return token

    # Requests -------------------------------------------------------------------------
    def authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented or self.token is None:
            return False
        return hmac.compare_digest(presented.strip().encode(), self.token.encode())

    @property
    def cleaner(self):
        """The broker's cleaner manager, or (log.cleaner.enable=false) one for on-demand
        compaction only."""
        running = self.ctx.cleaner()
        if running is not None:
            return running
        if self._fallback_cleaner is None:
            self._fallback_cleaner = LogCleanerManager(
                dedupe_buffer_size=self.ctx.config.cleaner.log_cleaner_dedupe_buffer_size
            )
        return self._fallback_cleaner

    async def in_reader(self, work, *args: Any) -> Any:
        """Run a read of files (segments, indexes) off the loop. A segment deleted or
        swapped by retention or the cleaner mid-read closes its files: try once more on
        the new segment list, then tell the caller to retry."""
        loop = asyncio.get_running_loop()
        for attempt in range(2):
            try:
                return await loop.run_in_executor(self.read_executor, work, *args)
            except (ValueError, OSError) as exc:
                if attempt:
                    raise ApiError(
                        409, f"the log changed while it was read ({exc}); retry"
                    ) from exc
        raise AssertionError("unreachable")

    async def in_maintenance(self, work, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.maintenance_executor, work, *args)


@web.middleware
async def handle_errors(request: web.Request, handler) -> web.StreamResponse:
    server = request.app[SERVER_KEY]
    route = _route_name(request)
    try:
        if request.path not in PUBLIC_PATHS and not server.authorized(request):
            response = error_response(401, "missing or wrong bearer token")
            response.headers["WWW-Authenticate"] = 'Bearer realm="brokerd-admin"'
        else:
            response = await handler(request)
    except ApiError as exc:
        response = error_response(exc.status, exc.message)
    except web.HTTPException as exc:  # aiohttp's own: unknown route, wrong method, too large
        response = error_response(exc.status, exc.reason)
        if exc.status == 405 and "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("admin API %s %s failed", request.method, request.path)
        response = error_response(500, "internal error; see the broker log")
    server.ctx.metrics.admin_requests.labels(route, str(response.status)).inc()
    return response


def _route_name(request: web.Request) -> str:
    info = request.match_info.route.resource if request.match_info.route else None
    return info.canonical if info is not None else "unmatched"
