"""The admin API's failure-probe routes (testing only; see brokerd/server/failure_probes.py).

GET    /v1/failure-probes                   the probes armed by `failure.probes`
DELETE /v1/failure-probes/{module}/{point}  release a suspended point
"""

from __future__ import annotations

import json

from aiohttp import web

from .server import SERVER_KEY, ApiError


def _probes(request: web.Request):
    return request.app[SERVER_KEY].ctx.failure_probes


async def get_failure_probes(request: web.Request) -> web.Response:
    return web.json_response({"probes": _probes(request).describe()}, dumps=json.dumps)


async def delete_failure_probe(request: web.Request) -> web.Response:
    module, point = request.match_info["module"], request.match_info["point"]
    if not _probes(request).release(module, point):
        raise ApiError(404, f"no failure probe armed at {module}.{point} (see failure.probes)")
    return web.json_response({"module": module, "point": point, "released": True})


ROUTES = [
    web.get("/v1/failure-probes", get_failure_probes),
    web.delete("/v1/failure-probes/{module}/{point}", delete_failure_probe),
]
