"""API key -> handler. The table must match what ApiVersions advertises, in both directions."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from brokerd.protocol.framing import Request
from brokerd.protocol.versions import SUPPORTED, api_name

from .handlers import HANDLERS
from .handlers.context import HandlerContext

log = logging.getLogger(__name__)

Handler = Callable[[HandlerContext, Request], Awaitable[Any]]
# Called after each request: (request, seconds until the response was ready, failed).
RequestObserver = Callable[[Request, float, bool], None]


class Dispatcher:
    def __init__(self, ctx: HandlerContext, handlers: Mapping[int, Handler] = HANDLERS):
        self.ctx = ctx
        self.handlers = dict(handlers)
        self.observers: list[RequestObserver] = []  # metrics
        unhandled = set(SUPPORTED) - set(self.handlers)
        if unhandled:
            names = ", ".join(api_name(k) for k in sorted(unhandled))
            raise RuntimeError(f"advertised without a handler: {names}")
        unadvertised = set(self.handlers) - set(SUPPORTED)
        if unadvertised:
            names = ", ".join(api_name(k) for k in sorted(unadvertised))
            raise RuntimeError(f"handler without an advertised version range: {names}")

    async def dispatch(self, request: Request) -> Any:
        started = time.perf_counter()
        failed = True
        try:
            response = await self.handlers[request.api_key](self.ctx, request)
            failed = False
            return response
        finally:
            elapsed = time.perf_counter() - started
            for observe in self.observers:
                observe(request, elapsed, failed)
