"""Compression bombs: batches that decode to gigabytes are refused, never decoded whole."""

import pytest

from brokerd.log import errors
from brokerd.log.cleaner_manager import LogCleanerManager
from brokerd.records import compression
from brokerd.records.batch import CorruptRecordError
from tests.bombs import bomb_batch, bomb_wrapper

from .helpers import keyed_batch, open_log, read_all

COMPACT = ("compact",)


# Decoded sizes past the 128 MiB cap whose payload still fits max.message.bytes (1 MiB).
BOMB_MIB = {compression.GZIP: 256, compression.LZ4: 200, compression.ZSTD: 1024}


@pytest.mark.parametrize("codec", list(BOMB_MIB))
def test_a_compacted_log_refuses_a_bomb_and_keeps_serving(tmp_path, codec):
    log = open_log(tmp_path / "t-0", cleanup_policy=COMPACT)
    with pytest.raises(errors.CorruptMessageError, match="decompresses to more than"):
        log.append_as_leader(bomb_batch(codec, BOMB_MIB[codec]), leader_epoch=0)
    assert log.log_end_offset == 0 and log.size == 0
    log.append_as_leader(keyed_batch([(b"k", b"v")], compression_type=codec), leader_epoch=0)
    assert [r.value for r in read_all(log)] == [b"v"]


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_wrapper_bomb_is_refused_by_up_conversion(tmp_path, magic):
    log = open_log(tmp_path / "t-0")
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(bomb_wrapper(compression.GZIP, 256, magic), leader_epoch=0)
    assert log.log_end_offset == 0


def test_a_stored_bomb_makes_its_log_uncleanable_not_the_others(tmp_path):
    # A leader refuses bombs; one can still be on disk, written by an older broker or
    # replicated (a follower stores its leader's batches without decoding them, as in
    # Kafka), while the topic was not compacted; then the topic is compacted.
    bombed = open_log(tmp_path / "bombed-0", segment_bytes=300)
    bombed.append_as_follower(bomb_batch(compression.ZSTD, 1024))
    healthy = open_log(tmp_path / "healthy-0", segment_bytes=300, cleanup_policy=COMPACT)
    for log in (bombed, healthy):
        for i in range(20):
            log.append_as_leader(keyed_batch([(b"k", b"v%d" % i)]), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
    bombed.update_config(bombed.config.with_overrides(cleanup_policy=COMPACT))
    # The bombed log is the filthiest (its bomb is big on disk and all dirty).
    manager = LogCleanerManager()
    with pytest.raises(CorruptRecordError, match="decompresses to more than"):
        manager.clean_filthiest([bombed, healthy])
    assert manager.state()["uncleanable"] == ["bombed-0"]
    report = manager.clean_filthiest([bombed, healthy])
    assert (report.topic, report.partition) == ("healthy", 0)
    assert report.records_kept < report.records_read
    assert read_all(healthy)[-1].value == b"v19"
    assert manager.clean_filthiest([bombed, healthy]) is None  # the bombed one is skipped
