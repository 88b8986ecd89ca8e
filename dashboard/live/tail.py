"""A topic's live tail, polled by the collector while someone has the message browser's tail
on: each round, the records appended since the last one (ListOffsets for the high
watermarks, then one Fetch for the partitions that moved).

Bounded per round: at most MAX_RECORDS_PER_PARTITION records per partition (a partition
that moved further is skipped ahead, and the skip is reported) and REQUEST_BYTES per fetch.
The first round only arms the tail at the current high watermarks.
"""

from __future__ import annotations

from brokerd.client.consumer import ConsumerRecord
from brokerd.client.errors import KafkaClientError
from dashboard.core.kafka import LATEST, KafkaOps

MAX_RECORDS_PER_PARTITION = 200
PARTITION_BYTES = 256 << 10
REQUEST_BYTES = 1 << 20


def pack(record: ConsumerRecord) -> list:
    """A record as the channel layer carries it (msgpack: lists and bytes)."""
    return [
        record.partition,
        record.offset,
        record.timestamp,
        record.key,
        record.value,
        [[name, value] for name, value in record.headers],
    ]


def unpack(topic: str, packed: list) -> ConsumerRecord:
    partition, offset, timestamp, key, value, headers = packed
    return ConsumerRecord(
        topic, partition, offset, timestamp, 0, key, value, tuple((n, v) for n, v in headers)
    )


class TopicTail:
    def __init__(self, topic: str):
        self.topic = topic
        self.positions: dict[int, int] | None = None  # None until armed

    @property
    def armed(self) -> bool:
        return self.positions is not None

    async def poll(self, ops: KafkaOps) -> dict | None:
        """What to push this round ({"records": [packed], "skipped": n, "error": ...}), or
        None when nothing changed."""
        info = ops.client.metadata.topics.get(self.topic)  # the overview round refreshes it
        if info is None:
            info = (await ops.refresh([self.topic])).topics.get(self.topic)
        if info is None:
            return {"records": [], "skipped": 0, "error": f"topic {self.topic} not found"}
        try:
            high = await ops.list_offsets(self.topic, sorted(info.partitions), LATEST)
            if self.positions is None:
                self.positions = {p: h for p, h in high.items() if isinstance(h, int)}
                return {"records": [], "skipped": 0, "error": None}
            wanted, skipped = {}, 0
            for partition, end in high.items():
                if not isinstance(end, int):
                    continue  # no leader now: read on when it has one
                position = self.positions.setdefault(partition, 0)  # a partition added
                if end - position > MAX_RECORDS_PER_PARTITION:
                    skipped += end - MAX_RECORDS_PER_PARTITION - position
                    position = end - MAX_RECORDS_PER_PARTITION
                    self.positions[partition] = position
                if end > position:
                    wanted[partition] = position
            if not wanted:
                return None if not skipped else {"records": [], "skipped": skipped, "error": None}
            answers = await ops.fetch(self.topic, wanted, PARTITION_BYTES, REQUEST_BYTES)
        except KafkaClientError as exc:
            return {"records": [], "skipped": 0, "error": str(exc)}
        records: list[ConsumerRecord] = []
        try:
            for partition, data in answers.items():
                end = high[partition]
                fetched = [r for r in data.records if r.offset < end]
                records.extend(fetched)
                moved = max(wanted[partition], min(data.next_offset, end))
                if fetched:
                    moved = max(moved, fetched[-1].offset + 1)
                self.positions[partition] = moved
        except KafkaClientError as exc:  # a corrupt batch
            return {"records": [], "skipped": 0, "error": str(exc)}
        records.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
        return {"records": [pack(r) for r in records], "skipped": skipped, "error": None}
