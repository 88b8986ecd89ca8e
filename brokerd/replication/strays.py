"""Partition directories a starting broker should not have: deletions it missed.

A broker that was down while a topic was deleted, or while a reassignment moved a replica
away, still holds that partition's directory when it starts. ZooKeeper (the cluster that
meta.properties names, checked before this runs) is the truth: a partition whose topic it
does not hold, that the topic does not have, or that it does not place on this broker is
stray, and goes like any deleted partition, as KRaft's LogManager finds stray replicas at
start-up and as the controller's StopReplica would have had the broker been up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brokerd.coordination.metadata import TopicInfo


def find_strays(
    partitions: Iterable[tuple[str, int]], topics: Mapping[str, TopicInfo], broker_id: int
) -> dict[tuple[str, int], str]:
    """The stray ones among `partitions`, each with why."""
    strays = {}
    for topic, index in partitions:
        info = topics.get(topic)
        if info is None:
            strays[(topic, index)] = f"ZooKeeper has no topic {topic}"
        elif index not in info.assignment:
            strays[(topic, index)] = f"topic {topic} has no partition {index}"
        elif broker_id not in info.assignment[index] and broker_id not in info.adding.get(
            index, ()
        ):
            strays[(topic, index)] = (
                f"its replicas are {info.assignment[index]}, without broker {broker_id}"
            )
    return strays
