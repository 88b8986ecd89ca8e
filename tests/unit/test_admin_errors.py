"""The admin API's error shape for the unexpected: a handler bug answers 500 with a JSON
message and a log line, and the server goes on serving. (Normal bad input is proven to get
4xx against a real broker in tests/integration/test_admin_api.py.)"""

from __future__ import annotations

import logging
from types import SimpleNamespace

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from brokerd.admin.metrics import BrokerMetrics
from brokerd.admin.server import SERVER_KEY, AdminServer, handle_errors


class _Server:
    """Just what the middleware reads: the token check and the metrics."""

    authorized = AdminServer.authorized

    def __init__(self) -> None:
        self.token = "t0ken"
        self.ctx = SimpleNamespace(metrics=BrokerMetrics())


async def _boom(_request: web.Request) -> web.Response:
    raise KeyError("a bug")


async def _fine(_request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def test_unexpected_exception_is_a_logged_json_500(caplog):
    server = _Server()
    app = web.Application(middlewares=[handle_errors])
    app[SERVER_KEY] = server
    app.add_routes([web.get("/v1/boom", _boom), web.get("/v1/fine", _fine)])
    async with TestClient(TestServer(app)) as client:
        auth = {"Authorization": "Bearer t0ken"}
        with caplog.at_level(logging.ERROR, logger="brokerd.admin.server"):
            response = await client.get("/v1/boom", headers=auth)
            assert response.status == 500
            body = await response.json()
        assert body == {"error": {"code": 500, "message": "internal error; see the broker log"}}
        assert any("/v1/boom" in r.getMessage() and r.exc_info for r in caplog.records)

        response = await client.get("/v1/fine", headers=auth)
        assert response.status == 200 and await response.json() == {"ok": True}
        response = await client.get("/v1/fine", headers={"Authorization": "Basic t0ken"})
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")

    samples = {
        (s.labels["route"], s.labels["status"]): s.value
        for metric in server.ctx.metrics.admin_requests.collect()
        for s in metric.samples
        if s.name.endswith("_total")
    }
    assert samples[("/v1/boom", "500")] == 1 and samples[("/v1/fine", "200")] == 1
    assert samples[("/v1/fine", "401")] == 1
