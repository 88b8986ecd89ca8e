import struct

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.versions import SUPPORTED
from tests.integration.wire import WireClient, request


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_lists_exactly_the_table(broker, version):
    with WireClient(broker.bootstrap) as client:
        body = request(18, version, client_software_name="wire", client_software_version="1")
        response = client.call(body)
    assert response.error_code == ErrorCode.none
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised == {k: (r.min_version, r.max_version) for k, r in SUPPORTED.items()}


def test_api_versions_v3_response_header_has_no_tagged_fields(broker):
    with WireClient(broker.bootstrap) as client:
        client.send(request(18, 3, client_software_name="wire", client_software_version="1"))
        frame = client.read_frame()
    # correlation id, then the body directly: error code 0 and a compact array length.
    assert frame[:4] == struct.pack(">i", 1)
    assert frame[4:6] == b"\x00\x00"


def test_unknown_api_versions_version_gets_v0_shaped_unsupported(broker):
    from kio.schema.api_versions.v0.response import ApiVersionsResponse
    from kio.serial import entity_reader

    with WireClient(broker.bootstrap) as client:
        # A future ApiVersions v9 with a body we cannot know: the broker must not parse it.
        header = struct.pack(">hhih", 18, 9, 77, 4) + b"wire" + b"\x00"
        client.send_raw(struct.pack(">i", len(header) + 3) + header + b"\x01\x02\x03")
        frame = client.read_frame()
        assert struct.unpack_from(">i", frame)[0] == 77
        response, _ = entity_reader(ApiVersionsResponse)(frame, 4)
        assert response.error_code == ErrorCode.unsupported_version
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert keys[18] == (SUPPORTED[18].min_version, SUPPORTED[18].max_version)
        # The connection stays usable for the retry at a lower version.
        again = client.call(request(18, 0))
        assert again.error_code == ErrorCode.none


def test_unadvertised_api_closes_only_that_connection(broker):
    with WireClient(broker.bootstrap) as bystander, WireClient(broker.bootstrap) as offender:
        frame = struct.pack(">hhih", 9999, 0, 5, -1)
        offender.send_raw(struct.pack(">i", len(frame)) + frame)
        assert offender.is_closed_by_peer()
        assert bystander.call(request(18, 0)).error_code == ErrorCode.none
