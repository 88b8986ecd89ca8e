"""Every message the broker speaks, as (api_key, version, schema), and Hypothesis strategies
for valid instances of them and for hostile mutations of their encodings.

Shared by the in-process checks of brokerd.protocol.bounds and the fuzz run against a real
broker; st.from_type builds kio entities from their field types (kio ships the hooks).
"""

from __future__ import annotations

import io
import struct

from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_writer
from kio.static.primitive import Records

from brokerd.protocol import interbroker
from brokerd.protocol.versions import SUPPORTED

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


def _schema(api_key: int, version: int, request: bool):
    own = (interbroker.request_schema if request else interbroker.response_schema)(api_key, version)
    if own is not None:
        return own
    return (load_request_schema if request else load_response_schema)(api_key, version)


def supported(request: bool = True) -> list[tuple[int, int, type]]:
    return [
        (key, version, _schema(key, version, request))
        for key, r in sorted(SUPPORTED.items())
        for version in range(r.min_version, r.max_version + 1)
    ]


def encode(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def request_frame(body, correlation_id: int = 1, client_id: str | None = "fuzz") -> bytes:
    """A request's payload (header and body, no size prefix)."""
    header_type = body.__header_schema__
    fields = {
        "request_api_key": body.__api_key__,
        "request_api_version": body.__version__,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    names = set(header_type.__dataclass_fields__)
    header = header_type(**{k: v for k, v in fields.items() if k in names})
    return encode(header) + encode(body)


# Lengths that made kio's native reader reserve gigabytes: a compact count of 2^32-2, and
# legacy int32 / int16 counts at their maximum.
LENGTH_BOMBS = (
    b"\xff\xff\xff\xff\x0f",
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xfe",
    b"\x7f\xff",
    b"\xfe\xff\xff\xff\x0f",
)


@st.composite
def mutated(draw, payload: bytes, keep_prefix: int = 0) -> bytes:
    """`payload` with a few hostile edits after its first `keep_prefix` bytes."""
    data = bytearray(payload)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(keep_prefix, max(keep_prefix, len(data))))
        kind = draw(st.sampled_from(["bomb", "bomb", "overwrite", "flip", "truncate", "insert"]))
        if kind == "bomb":
            bomb = draw(st.sampled_from(LENGTH_BOMBS))
            data[at : at + len(bomb)] = bomb
        elif kind == "overwrite":
            data[at : at + 4] = struct.pack(">i", draw(st.integers(-(2**31), 2**31 - 1)))
        elif kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)
