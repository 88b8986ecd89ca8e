"""Kafka's BrokerTopicMetrics bookkeeping: what counts where (consumer vs follower fetches)."""

from __future__ import annotations

from typing import NamedTuple

from brokerd.admin.topic_metrics import BrokerTopicStats


class Part(NamedTuple):
    topic: str
    size: int


def test_consumer_fetches_count_per_topic_follower_fetches_only_as_replication():
    stats = BrokerTopicStats()
    stats.appended("a", 1000, 10)
    stats.appended("b", 50, 1)
    stats.fetched([Part("a", 600), Part("b", 0), Part("a", 400)], from_follower=False)
    stats.fetched([Part("a", 1000), Part("b", 50)], from_follower=True)
    stats.replicated_in(700)
    snapshot = stats.snapshot()
    assert snapshot["topics"] == {
        "a": {"bytes_in": 1000, "bytes_out": 1000, "messages_in": 10},
        "b": {"bytes_in": 50, "bytes_out": 0, "messages_in": 1},
    }
    assert snapshot["all_topics"] == {
        "bytes_in": 1050, "bytes_out": 1000, "messages_in": 11, "replication_bytes_out": 1050,
        "replication_bytes_in": 700,
    }  # fmt: skip
    assert stats.snapshot(["c"])["topics"] == {
        "c": {"bytes_in": 0, "bytes_out": 0, "messages_in": 0}
    }
    assert "c" not in stats.topics  # asking makes no counters
    stats.forget_topics(lambda topic: topic != "b")
    assert list(stats.snapshot()["topics"]) == ["a"]
    assert stats.snapshot()["all_topics"]["bytes_in"] == 1050  # totals since start stay
