"""dump-log prints what Kafka's kafka-dump-log.sh prints, for every file type of a log dir."""

import argparse
import io
import struct

import pytest

from brokerd.log.checkpoints import EpochEntry, LeaderEpochCheckpointFile, OffsetCheckpointFile
from brokerd.log.index import OffsetIndex, TimeIndex
from brokerd.log.producer_state import BatchMetadata, ProducerStateEntry, write_snapshot
from brokerd.records import compression, control
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch
from brokerd.records.legacy import build_message_set
from brokerd.tools import dump_log

SEGMENT = "00000000000000000000"


def dump(*argv):
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    code = dump_log.run(parser.parse_args([str(a) for a in argv]), stdout=out, stderr=err)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


def vector_bytes(vectors, name):
    return bytes.fromhex(vectors[name]["hex"])


@pytest.fixture
def v2_log(tmp_path, vectors):
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(
        vector_bytes(vectors, "v2_batch_offset0_key_value")
        + vector_bytes(vectors, "v2_batch_offset1_nullkey_value")
    )
    return path


def test_v2_vector_batch_and_records_current_wording(v2_log):
    code, out, err = dump(v2_log, "--print-data-log")
    assert code == 0 and err == []
    assert out == [
        f"Dumping {v2_log}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1524709879130 size: 76 "
        "magic: 2 compresscodec: none crc: 2857248333 isvalid: true",
        "| offset: 0 CreateTime: 1524709879130 keySize: 3 valueSize: 5 sequence: -1 "
        "headerKeys: [] key: key payload: value",
        "baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 76 CreateTime: 1524709879130 size: 73 "
        "magic: 2 compresscodec: none crc: 1583198325 isvalid: true",
        "| offset: 1 CreateTime: 1524709879130 keySize: -1 valueSize: 5 sequence: -1 "
        "headerKeys: [] payload: value",
    ]


def test_v2_vector_in_kafka_1_0_wording_matches_the_seed(v2_log):
    code, out, _ = dump(v2_log, "--output-style", "kafka-1.0")
    assert code == 0
    # Seed 004, Kafka 1.0's DumpLogSegments.
    assert out[1] == "Starting offset: 0"
    assert out[2] == (
        "baseOffset: 0 lastOffset: 0 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false position: 0 "
        "CreateTime: 1524709879130 isvalid: true size: 76 magic: 2 compresscodec: NONE "
        "crc: 2857248333"
    )


def test_shallow_iteration_prints_batches_only(v2_log):
    _, out, _ = dump(v2_log)
    assert len(out) == 4 and not any(line.startswith("|") for line in out)


def test_headers_and_skip_record_metadata(tmp_path, vectors):
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(vector_bytes(vectors, "v2_batch_with_headers"))
    _, out, _ = dump(path, "--deep-iteration")
    assert out[3].endswith("sequence: -1 headerKeys: [h1,h2]")
    _, out, _ = dump(path, "--print-data-log", "--skip-record-metadata")
    assert out[3] == "| key: k payload: v"


def test_idempotent_transactional_batch_and_marker(tmp_path):
    data = build_batch(
        [SimpleRecord(b"a", b"k", timestamp=5), SimpleRecord(b"b", timestamp=6)],
        base_offset=10,
        producer_id=42,
        producer_epoch=3,
        base_sequence=2**31 - 1,
        partition_leader_epoch=7,
        is_transactional=True,
        compression_type=compression.GZIP,
    )
    marker = control.build_end_txn_marker(
        control.COMMIT,
        producer_id=42,
        producer_epoch=3,
        coordinator_epoch=9,
        base_offset=12,
        timestamp=7,
        partition_leader_epoch=7,
    )
    path = tmp_path / "00000000000000000010.log"
    path.write_bytes(bytes(data) + bytes(marker))
    code, out, _ = dump(path, "--print-data-log")
    assert code == 0
    assert out[1] == "Log starting offset: 10"
    assert out[2].startswith(
        "baseOffset: 10 lastOffset: 11 count: 2 baseSequence: 2147483647 lastSequence: 0 "
        "producerId: 42 producerEpoch: 3 partitionLeaderEpoch: 7 isTransactional: true "
        "isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 6 "
    )
    assert " compresscodec: gzip " in out[2] and out[2].endswith("isvalid: true")
    assert out[3] == (
        "| offset: 10 CreateTime: 5 keySize: 1 valueSize: 1 sequence: 2147483647 headerKeys: [] "
        "key: k payload: a"
    )
    assert out[4] == (
        "| offset: 11 CreateTime: 6 keySize: -1 valueSize: 1 sequence: 0 headerKeys: [] payload: b"
    )
    assert "isTransactional: true isControl: true" in out[5]
    assert out[6] == (
        "| offset: 12 CreateTime: 7 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 9"
    )


def test_v0_vectors(tmp_path, vectors):
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(
        vector_bytes(vectors, "v0_offset0_key_value")
        + vector_bytes(vectors, "v0_offset1_nullkey_value")
    )
    assert path.stat().st_size == 65
    code, out, err = dump(path, "--print-data-log")
    assert code == 0 and err == []
    assert out[2:] == [
        "offset: 0 position: 0 NoTimestampType: -1 size: 34 magic: 0 compresscodec: none "
        "crc: 592888119 isvalid: true",
        # Kafka prints a stray "}" after a legacy record's crc; so do we.
        "| offset: 0 NoTimestampType: -1 keySize: 3 valueSize: 5 isValid: true crc: 592888119} "
        "key: key payload: value",
        "offset: 1 position: 34 NoTimestampType: -1 size: 31 magic: 0 compresscodec: none "
        "crc: 2898297856 isvalid: true",
        "| offset: 1 NoTimestampType: -1 keySize: -1 valueSize: 5 isValid: true crc: 2898297856} "
        "payload: value",
    ]


def test_v1_vector(tmp_path, vectors):
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(vector_bytes(vectors, "v1_offset0_key_value_ts1524709879130"))
    _, out, _ = dump(path, "--deep-iteration")
    assert out[2:] == [
        "offset: 0 position: 0 CreateTime: 1524709879130 size: 42 magic: 1 compresscodec: none "
        "crc: 2189589273 isvalid: true",
        "| offset: 0 CreateTime: 1524709879130 keySize: 3 valueSize: 5 isValid: true "
        "crc: 2189589273}",
    ]


@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_legacy_wrapper_opens_with_deep_iteration(tmp_path, magic):
    records = [SimpleRecord(b"v%d" % i, timestamp=100 + i) for i in range(6)]
    data = build_message_set(
        records, magic=magic, base_offset=1025, compression_type=compression.GZIP
    )
    path = tmp_path / "00000000000000001025.log"
    path.write_bytes(data)
    code, out, err = dump(path, "--print-data-log")
    assert code == 0 and err == []
    # The wrapper carries the last inner offset (seed 004: inner 0..5 -> 1025..1030).
    assert out[2].startswith("offset: 1030 position: 0 ")
    assert " compresscodec: gzip " in out[2]
    offsets = [int(line.split()[2]) for line in out[3:]]
    assert offsets == list(range(1025, 1031))
    assert out[-1].endswith("payload: v5")
    timestamp_type = "NoTimestampType: -1" if magic == 0 else "CreateTime: 105"
    assert f"| offset: 1030 {timestamp_type} keySize: -1 valueSize: 2 isValid: true" in out[-1]


def test_torn_tail_is_reported_not_fatal(v2_log):
    with open(v2_log, "ab") as f:
        f.write(bytes(30))  # more than a header's first 17 bytes, size field 0
    code, out, err = dump(v2_log)
    assert out[-1] == f"Found 30 invalid bytes at the end of {v2_log.name}"
    assert code == 1 and "Corrupt entry at position 149" in err[0]

    data = v2_log.read_bytes()[:149] + v2_log.read_bytes()[:40]  # a batch cut short
    v2_log.write_bytes(data)
    code, out, err = dump(v2_log)
    assert code == 0 and err == []
    assert out[-1] == f"Found 40 invalid bytes at the end of {v2_log.name}"


def test_bad_crc_prints_isvalid_false(v2_log):
    data = bytearray(v2_log.read_bytes())
    data[70] ^= 0x01  # inside the first batch's records
    v2_log.write_bytes(bytes(data))
    _, out, _ = dump(v2_log)
    assert out[2].endswith("crc: 2857248333 isvalid: false")
    assert out[3].endswith("isvalid: true")


def test_max_bytes_limits_the_read(v2_log):
    _, out, _ = dump(v2_log, "--max-bytes", "100")
    assert len(out) == 3  # one batch; no invalid-bytes line when limited


def write_segment(tmp_path, base=100):
    """Three batches from `base`, their index entries (last offset, position) and time index."""
    batches = [
        build_batch(
            [SimpleRecord(b"x", timestamp=1000 + 10 * n + i) for i in range(2)],
            base_offset=base + 2 * n,
        )
        for n in range(3)
    ]
    stem = f"{base:020d}"
    (tmp_path / f"{stem}.log").write_bytes(b"".join(bytes(b) for b in batches))
    index = OffsetIndex(tmp_path / f"{stem}.index", base, max_index_size=1024)
    time_index = TimeIndex(tmp_path / f"{stem}.timeindex", base, max_index_size=1200)
    position = 0
    for raw in batches:
        batch = RecordBatch(raw)
        index.append(batch.last_offset, position)
        time_index.maybe_append(batch.max_timestamp, batch.last_offset)
        position += batch.size
    index.close()
    time_index.close()
    return tmp_path / f"{stem}.index", tmp_path / f"{stem}.timeindex"


def test_index_dump_and_verify(tmp_path):
    index_path, _ = write_segment(tmp_path)
    code, out, err = dump(index_path)
    assert code == 0 and err == []
    assert out == [
        f"Dumping {index_path}",
        "offset: 101 position: 0",
        "offset: 103 position: 77",
        "offset: 105 position: 154",
    ]
    code, out, err = dump(index_path, "--verify-index-only")
    assert (code, out, err) == (0, [f"Dumping {index_path}"], [])
    code, out, _ = dump(index_path, "--index-sanity-check")
    assert code == 0 and out[1] == f"{index_path} passed sanity check."


def test_index_mismatch_is_reported(tmp_path):
    index_path, _ = write_segment(tmp_path)
    data = bytearray(index_path.read_bytes())
    struct.pack_into(">ii", data, 8, 2, 77)  # entry 1 now claims offset 102 at position 77
    index_path.write_bytes(bytes(data))
    code, out, err = dump(index_path, "--verify-index-only")
    assert code == 1
    assert err == [
        f"Mismatches in :{index_path.absolute()}",
        "  Index offset: 102, log offset: 103",
    ]


def test_index_sanity_failure_and_preallocated_zeros(tmp_path):
    index_path, _ = write_segment(tmp_path)
    with open(index_path, "ab") as f:
        f.write(bytes(16))  # preallocated tail: entries reading as the base offset
    code, out, _ = dump(index_path)
    assert code == 0 and len(out) == 4
    with open(index_path, "ab") as f:
        f.write(bytes(3))
    code, _, err = dump(index_path, "--index-sanity-check")
    assert code == 1 and "failed sanity check" in err[0]


def test_empty_index(tmp_path):
    path = tmp_path / f"{SEGMENT}.index"
    path.write_bytes(b"")
    code, out, _ = dump(path)
    assert code == 0 and out[1] == f"{path} is empty."


def test_time_index_dump_and_verify(tmp_path):
    _, time_index_path = write_segment(tmp_path)
    code, out, err = dump(time_index_path)
    assert code == 0 and err == []
    assert out[1:] == [
        "timestamp: 1001 offset: 101",
        "timestamp: 1011 offset: 103",
        "timestamp: 1021 offset: 105",
    ]
    data = bytearray(time_index_path.read_bytes())
    struct.pack_into(">q", data, 12, 1012)  # the second entry's timestamp no longer matches
    time_index_path.write_bytes(bytes(data))
    code, _, err = dump(time_index_path, "--verify-index-only")
    assert code == 1
    assert err == [
        f"Found timestamp mismatch in :{time_index_path.absolute()}",
        "  Index timestamp: 1012, log timestamp: 1011",
    ]


def test_snapshot_dump(tmp_path):
    entry = ProducerStateEntry(42, 3, coordinator_epoch=-1, last_timestamp=77)
    entry.add_batch(3, BatchMetadata(5, 9, 100, 104, 77))
    idle = ProducerStateEntry(7, 0, current_txn_first_offset=50, last_timestamp=12)
    path = tmp_path / "00000000000000000105.snapshot"
    write_snapshot(path, [entry, idle])
    code, out, _ = dump(path)
    assert code == 0
    assert out[1:] == [
        "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong[50] lastTimestamp: 12 ",
        "producerId: 42 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 77 firstSequence: 5 lastSequence: 9 lastOffset: 104 "
        "offsetDelta: 4 timestamp: 77",
    ]
    path.write_bytes(path.read_bytes()[:-1])
    code, _, err = dump(path)
    assert code == 1 and "corrupt" in err[0]


def test_checkpoint_files(tmp_path):
    recovery = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(recovery).write({("t", 1): 5, ("t", 0): 7})
    epochs = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(epochs).write([EpochEntry(0, 0), EpochEntry(2, 40)])
    meta = tmp_path / "meta.properties"
    meta.write_text("#\nversion=0\nbroker.id=1\n")
    code, out, _ = dump("--files", f"{recovery},{epochs}", meta)
    assert code == 0
    assert out == [
        f"Dumping {recovery}",
        "topic: t partition: 0 offset: 7",
        "topic: t partition: 1 offset: 5",
        f"Dumping {epochs}",
        "epoch: 0 startOffset: 0",
        "epoch: 2 startOffset: 40",
        f"Dumping {meta}",
        "version=0",
        "broker.id=1",
    ]
    recovery.write_text("0\n1\nbroken\n")
    code, _, err = dump(recovery)
    assert code == 1 and "line 3" in err[0]


def test_unreadable_and_unknown_files(tmp_path):
    missing = tmp_path / f"{SEGMENT}.log"
    code, out, err = dump(missing)
    assert code == 1
    assert out == [f"Dumping {missing}"]
    assert err == [f"{missing}: No such file or directory"]
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    code, _, err = dump(other)
    assert code == 0 and err == [f"Ignoring unknown file {other}"]
    assert dump()[0] == 2


def test_deleted_segment_suffix_is_understood(v2_log):
    deleted = v2_log.with_name(v2_log.name + ".deleted")
    v2_log.rename(deleted)
    code, out, _ = dump(deleted)
    assert code == 0 and out[1] == "Log starting offset: 0" and len(out) == 4


def test_main_runs_as_a_module_entry_point(v2_log, capsys):
    assert dump_log.main(["--files", str(v2_log)]) == 0
    assert "crc: 2857248333 isvalid: true" in capsys.readouterr().out
