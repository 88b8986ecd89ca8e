"""A real broker refuses compression bombs with CORRUPT_MESSAGE and keeps serving."""

from pathlib import Path

from brokerd.protocol.errors import ErrorCode
from brokerd.records import compression
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch
from brokerd.records.legacy import build_message_set
from tests.bombs import bomb_batch, bomb_wrapper
from tests.integration.wire import WireClient
from tests.integration.wire_calls import create, fetch, produce


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_bombs_get_corrupt_message_and_other_connections_carry_on(broker, topic_name):
    create(broker, topic_name, **{"cleanup.policy": "compact"})
    good = build_batch([SimpleRecord(b"v", b"k")], compression_type=compression.ZSTD)
    peak_before = _peak_rss_bytes(broker.process.pid)
    with WireClient(broker.bootstrap) as bystander, WireClient(broker.bootstrap) as attacker:
        assert produce(bystander, topic_name, good).error_code == ErrorCode.none
        # 1 GiB of zeros in a ~200 KB zstd batch; 256 MiB in a ~260 KB gzip one; and a
        # legacy (magic 1) gzip wrapper, which the broker always decodes to up-convert it.
        for bomb in (
            bomb_batch(compression.ZSTD, 1024),
            bomb_batch(compression.GZIP, 256),
            bomb_wrapper(compression.GZIP, 256),
        ):
            result = produce(attacker, topic_name, bomb)
            assert result.error_code == ErrorCode.corrupt_message
            assert "decompresses to more than" in (result.error_message or "")
            # The attacker's connection and everyone else's still work.
            assert produce(bystander, topic_name, good).error_code == ErrorCode.none
        legacy = build_message_set([SimpleRecord(b"old", b"k")], magic=1, compression_type=1)
        assert produce(attacker, topic_name, legacy).error_code == ErrorCode.none
        stored = fetch(bystander, topic_name, 0).responses[0].partitions[0].records
    values = []
    pos = 0
    while pos < len(stored):
        entry = RecordBatch(stored, pos)
        values += [r.value for r in entry]
        pos += entry.size
    assert values == [b"v"] * 4 + [b"old"]
    # Decoding stopped near the 128 MiB cap: the broker never held a bomb's gigabyte.
    assert _peak_rss_bytes(broker.process.pid) - peak_before < 512 << 20
