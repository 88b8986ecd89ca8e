"""Varint properties beyond the fixed vectors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.records.varint import (
    INT64_MAX,
    INT64_MIN,
    VarintError,
    decode_varint,
    decode_varint32,
    encode_varint,
    size_of_varint,
    wrap_int64,
)

int64s = st.integers(INT64_MIN, INT64_MAX)


@settings(max_examples=200, deadline=None)  # no 200 ms limit: a loaded CI box stalls
@given(value=int64s, prefix=st.binary(max_size=4), suffix=st.binary(max_size=4))
def test_round_trip_inside_a_buffer(value, prefix, suffix):
    encoded = encode_varint(value)
    assert len(encoded) == size_of_varint(value) <= 10
    assert decode_varint(prefix + encoded + suffix, len(prefix)) == (
        value,
        len(prefix) + len(encoded),
    )


@pytest.mark.parametrize("value", [INT64_MIN - 1, INT64_MAX + 1, 2**70])
def test_values_beyond_64_bits_are_refused_not_truncated(value):
    with pytest.raises(ValueError):
        encode_varint(value)


@settings(max_examples=200, deadline=None)  # no 200 ms limit: a loaded CI box stalls
@given(data=st.binary(max_size=12), pos=st.integers(0, 12))
def test_decoding_arbitrary_bytes_raises_only_varint_errors(data, pos):
    for decode in (decode_varint, decode_varint32):
        try:
            value, end = decode(data, pos)
        except VarintError:
            continue
        assert pos < end <= len(data)
        assert encode_varint(value) == data[pos:end] or data[end - 1] == 0  # only padding differs


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, INT64_MAX])
def test_int32_fields_refuse_wider_values(value):
    with pytest.raises(VarintError):
        decode_varint32(encode_varint(value), 0)


def test_wrap_int64_is_javas_long_overflow():
    assert wrap_int64(INT64_MAX + 1) == INT64_MIN
    assert wrap_int64(INT64_MAX - INT64_MIN) == -1
    assert wrap_int64(INT64_MIN + wrap_int64(INT64_MAX - INT64_MIN)) == INT64_MAX
