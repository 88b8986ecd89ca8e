"""The server-side assignors of the consumer group protocol (KIP-848): `uniform` and `range`,
Kafka's names (org.apache.kafka.coordinator.group.assignor.UniformAssignor, RangeAssignor).

An assignor sees every member's subscription and the group's current target assignment and
returns the new target: member id -> {topic: partitions}. It does no I/O and keeps no state,
so the coordinator can run it whenever the group epoch moves.

- `uniform` spreads the partitions of the subscribed topics as evenly as the subscriptions
  allow (every two members that could trade differ by at most one partition) and is sticky:
  a partition stays with its current owner unless balance needs it elsewhere.
- `range` assigns each topic on its own: its partitions in order, split into contiguous
  ranges over the members subscribed to it in member id order (the first
  `partitions % members` members get one more), so members with the same subscription get
  the same partition numbers of co-partitioned topics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# topic -> partitions
Assignment = dict[str, frozenset[int]]


@dataclass(frozen=True)
class MemberSubscription:
    subscribed: frozenset[str]
    # The member's current target assignment, the uniform assignor's starting point.
    current: Mapping[str, frozenset[int]] = field(default_factory=dict)


Assignor = Callable[[Mapping[str, MemberSubscription], Mapping[str, int]], dict[str, Assignment]]


def _pack(owned: dict[str, set[tuple[str, int]]]) -> dict[str, Assignment]:
    result: dict[str, Assignment] = {}
    for member_id, partitions in owned.items():
        by_topic: dict[str, set[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, set()).add(partition)
        result[member_id] = {t: frozenset(p) for t, p in by_topic.items()}
    return result


def range_assignor(
    members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
) -> dict[str, Assignment]:
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for topic in sorted(topics):
        subscribers = sorted(m for m, s in members.items() if topic in s.subscribed)
        if not subscribers:
            continue
        quota, extra = divmod(topics[topic], len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            count = quota + (1 if index < extra else 0)
            owned[member_id].update((topic, p) for p in range(start, start + count))
            start += count
    return _pack(owned)


def uniform_assignor(
    members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
) -> dict[str, Assignment]:
    order = sorted(members)
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in order}
    owner: dict[tuple[str, int], str] = {}
    subscribed = {m: members[m].subscribed for m in order}
    # 1. Stickiness: each member keeps what it had that still exists and it still wants.
    for member_id in order:
        for topic, partitions in members[member_id].current.items():
            if topic not in subscribed[member_id] or topic not in topics:
                continue
            for partition in partitions:
                tp = (topic, partition)
                if partition < topics[topic] and tp not in owner:
                    owner[tp] = member_id
                    owned[member_id].add(tp)
    # 2. Every partition nobody keeps goes to the least loaded member that wants it.
    for topic in sorted(topics):
        eligible = [m for m in order if topic in subscribed[m]]
        if not eligible:
            continue
        for partition in range(topics[topic]):
            tp = (topic, partition)
            if tp in owner:
                continue
            chosen = min(eligible, key=lambda m: (len(owned[m]), m))
            owner[tp] = chosen
            owned[chosen].add(tp)
    # 3. Balance: move one partition at a time from a heavier member to a member lighter
    # by two or more that is subscribed to its topic, until no such move exists. Each
    # move lowers the sum of squared loads, so the loop ends; it is bounded all the same.
    for _ in range(len(owner) + 1):
        if not _move_one(order, owned, owner, subscribed):
            break
    return _pack(owned)


def _move_one(
    order: list[str],
    owned: dict[str, set[tuple[str, int]]],
    owner: dict[tuple[str, int], str],
    subscribed: Mapping[str, frozenset[str]],
) -> bool:
    by_load = sorted(order, key=lambda m: (-len(owned[m]), m))
    for heavy in by_load:
        for light in reversed(by_load):
            if len(owned[heavy]) - len(owned[light]) < 2:
                break
            movable = sorted(tp for tp in owned[heavy] if tp[0] in subscribed[light])
            if movable:
                tp = movable[-1]
                owned[heavy].discard(tp)
                owned[light].add(tp)
                owner[tp] = light
                return True
    return False


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assignor, "range": range_assignor}

# group.consumer.assignors takes Kafka's class names or the assignors' names.
_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def configured_assignors(names: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The assignor names group.consumer.assignors lists (first = the default); unknown
    names raise ValueError, as Kafka refuses to start with an unknown assignor class."""
    items = names.split(",") if isinstance(names, str) else list(names)
    result = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        name = _CLASS_NAMES.get(item, item)
        if name not in ASSIGNORS:
            raise ValueError(f"group.consumer.assignors: unknown assignor {item}")
        result.append(name)
    if not result:
        raise ValueError("group.consumer.assignors: no assignor configured")
    return tuple(result)
