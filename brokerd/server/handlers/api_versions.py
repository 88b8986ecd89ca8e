"""ApiVersions (18): the version table, exactly what the dispatcher implements."""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.protocol.versions import SUPPORTED

from .context import HandlerContext


async def handle_api_versions(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    api_keys = tuple(
        build(module.ApiVersion, api_key=key, min_version=r.min_version, max_version=r.max_version)
        for key, r in sorted(SUPPORTED.items())
    )
    return build(
        module.ApiVersionsResponse,
        error_code=ErrorCode.none,
        api_keys=api_keys,
        throttle_time=NO_THROTTLE,
    )


HANDLERS = {18: handle_api_versions}
