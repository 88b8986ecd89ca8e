"""ApiVersions answers exactly the version table, and the dispatcher refuses a handler table
that does not match it in either direction."""

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.versions import SUPPORTED
from brokerd.server.dispatcher import Dispatcher
from brokerd.server.handlers import HANDLERS
from brokerd.server.handlers.api_versions import handle_api_versions
from tests.integration.wire import request
from tests.unit.server.handler_context import as_received, call, context


@pytest.mark.parametrize("version", [0, 3])
async def test_api_versions_lists_the_supported_table(version):
    body = request(18, version, client_software_name="unit", client_software_version="1")
    response = await call(handle_api_versions, context(), body)
    assert response.error_code == ErrorCode.none
    listed = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert listed == {key: (r.min_version, r.max_version) for key, r in SUPPORTED.items()}


def test_every_advertised_api_has_a_handler_and_no_handler_is_unadvertised():
    assert set(HANDLERS) == set(SUPPORTED)
    missing = {k: h for k, h in HANDLERS.items() if k != 18}
    with pytest.raises(RuntimeError, match="advertised without a handler: api_versions$"):
        Dispatcher(context(), missing)
    with pytest.raises(RuntimeError, match="handler without an advertised version range"):
        Dispatcher(context(), {**HANDLERS, 9999: handle_api_versions})


async def test_dispatch_gives_the_handler_its_context_and_reports_each_request():
    ctx = context()
    seen = []

    async def fails(_ctx, _request):
        raise KeyError("a bug")

    async def answers(given, _request):
        seen.append(given)
        return "answer"

    dispatcher = Dispatcher(ctx, {**HANDLERS, 18: answers, 3: fails})
    observed = []
    dispatcher.observers.append(lambda req, seconds, failed: observed.append((req.api_key, failed)))
    api_versions = as_received(
        request(18, 3, client_software_name="u", client_software_version="1")
    )
    assert await dispatcher.dispatch(api_versions) == "answer"
    assert seen == [ctx]
    with pytest.raises(KeyError):
        await dispatcher.dispatch(as_received(_metadata_request(None)))
    assert observed == [(18, False), (3, True)]


def _metadata_request(topics):
    return request(
        3,
        12,
        topics=topics,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
