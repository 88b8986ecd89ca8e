"""The records the every-codec tests send (tests/compat and tests/integration)."""

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
COUNT = 40
BASE_TS = 1_700_000_000_000


def expected_records(codec: str) -> list[tuple]:
    """(key, value, headers, timestamp) per record; values grow so codecs have work to do."""
    return [
        (
            b"key-%d" % i,
            (b"%s value %d " % (codec.encode(), i)) * (i % 7 + 1),
            [("trace", b"t%d" % i), ("empty", b"")],
            BASE_TS + i,
        )
        for i in range(COUNT)
    ]
