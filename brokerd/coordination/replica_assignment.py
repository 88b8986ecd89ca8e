"""Where a new partition's replicas go: Kafka's spread over the live brokers.

A random first broker and replica shift (so leaders and followers spread over brokers); with
broker.rack set on every broker and more than one rack, brokers alternate racks and a
partition's replicas take distinct racks while racks remain.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from brokerd.protocol.errors import ErrorCode, KafkaError


def assign_replicas(
    racks: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition index -> replica ids, over the brokers of `racks` (broker id -> rack)."""
    pick = rng or random.Random()
    brokers = sorted(racks)
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.invalid_replication_factor,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    if all(r is not None for r in racks.values()) and len(set(racks.values())) > 1:
        brokers = _rack_alternated(brokers, racks)
    count = len(brokers)
    start = pick.randrange(count)
    shift = pick.randrange(count)
    out = {}
    for p in range(partitions):
        index = first_partition + p
        if p > 0 and p % count == 0:
            shift += 1
        first = (start + p) % count
        chosen = [brokers[first]]
        candidates = [
            brokers[(first + 1 + (shift + j) % max(count - 1, 1)) % count] for j in range(count - 1)
        ]
        used_racks = {racks[brokers[first]]}
        for candidate in candidates:
            if len(chosen) == replication_factor:
                break
            if candidate in chosen:
                continue
            all_racks_used = len(used_racks) >= len(set(racks.values()))
            if racks[candidate] in used_racks and not all_racks_used:
                continue
            chosen.append(candidate)
            used_racks.add(racks[candidate])
        for candidate in brokers:  # fill up if rack rules left us short
            if len(chosen) == replication_factor:
                break
            if candidate not in chosen:
                chosen.append(candidate)
        out[index] = chosen
    return out


def _rack_alternated(brokers: list[int], racks: Mapping[int, str | None]) -> list[int]:
    """Brokers ordered rack by rack in turn: r1b1, r2b1, r3b1, r1b2, ..."""
    by_rack: dict[str | None, list[int]] = {}
    for broker in brokers:
        by_rack.setdefault(racks[broker], []).append(broker)
    ordered: list[int] = []
    lists = [by_rack[r] for r in sorted(by_rack, key=str)]
    for i in range(max(len(rs) for rs in lists)):
        ordered.extend(rs[i] for rs in lists if i < len(rs))
    return ordered
