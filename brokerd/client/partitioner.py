"""Kafka's default partitioner: murmur2(key) made positive, modulo the partition count.

Keyed records land where the Java client (and kafka-python, librdkafka's murmur2_random)
puts them; keyless records stick to one partition per batch, as KIP-480's sticky
partitioner does, and move on when that batch is sent.
"""

from __future__ import annotations

import random

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` as a signed 32-bit int (Java int arithmetic, `>>>` shifts)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    extra = length % 4
    if extra == 3:
        h ^= data[whole + 2] << 16
    if extra >= 2:
        h ^= data[whole + 1] << 8
    if extra >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(value: int) -> int:
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


class DefaultPartitioner:
    def __init__(self) -> None:
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self._sticky.get(topic)
        if current is None or current >= num_partitions:
            current = self._sticky[topic] = random.randrange(num_partitions)
        return current

    def batch_sent(self, topic: str, partition: int, num_partitions: int) -> None:
        """A keyless topic moves to another partition once its sticky batch is sent."""
        if self._sticky.get(topic) == partition and num_partitions > 1:
            choices = [p for p in range(num_partitions) if p != partition]
            self._sticky[topic] = random.choice(choices)
