"""Java's String.hashCode and Kafka's Utils.abs, which place a group or a transactional id
on a partition of `__consumer_offsets` or `__transaction_state`."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, in int32."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except that Integer.MIN_VALUE maps to 0, not itself."""
    return 0 if n == -(1 << 31) else abs(n)
