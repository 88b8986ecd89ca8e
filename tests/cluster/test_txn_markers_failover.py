"""Transactions survive a leader's kill -9 on the partition side: followers replicate the
transactional batches and markers, so the new leader knows the open transaction (its last
stable offset stays below it), has the abort in its `.txnindex`, takes the coordinator's
COMMIT marker for the open one, and a read_committed consumer then reads exactly the
committed records in order."""

from __future__ import annotations

import pytest

from brokerd.protocol.errors import ErrorCode
from tests.integration.test_txn_markers import (
    READ_COMMITTED,
    consume_all,
    fetch,
    init_producer_id,
    latest_offset,
    txn_produce,
    write_markers,
)
from tests.integration.wire import WireClient

from .checker import create_topic

pytestmark = pytest.mark.timeout(180)


def test_open_and_aborted_transactions_survive_a_leader_kill(cluster, topic_name):
    create_topic(cluster, topic_name)
    first = cluster.brokers[cluster.leader_of(topic_name)]
    with WireClient(first.bootstrap) as client, WireClient(first.internal_bootstrap) as peer:
        committer, aborter = init_producer_id(client), init_producer_id(client)
        assert txn_produce(client, topic_name, committer, 0, b"c1") == (0, 0)
        assert txn_produce(client, topic_name, aborter, 0, b"a1", b"a2") == (0, 1)
        assert txn_produce(client, topic_name, committer, 1, b"c2") == (0, 3)
        assert write_markers(peer, [(aborter, 0, False, 1, [(topic_name, [0])])]) == {
            (aborter, topic_name, 0): ErrorCode.none
        }
        assert fetch(client, topic_name, 0, READ_COMMITTED).last_stable_offset == 0

    first.kill()
    cluster.wait_for(
        lambda m: (
            m["topics"][topic_name][0]["leader"] not in (first.broker_id, -1)
            and m["topics"][topic_name][0]["leader"] in m["brokers"]
        ),
        what="a new leader",
    )
    second = cluster.brokers[cluster.leader_of(topic_name)]
    with WireClient(second.bootstrap) as client, WireClient(second.internal_bootstrap) as peer:
        # The new leader knows the committer's transaction is still open.
        assert latest_offset(client, topic_name, READ_COMMITTED) == 0
        assert latest_offset(client, topic_name, 0) == 5
        assert write_markers(peer, [(committer, 0, True, 1, [(topic_name, [0])])]) == {
            (committer, topic_name, 0): ErrorCode.none
        }
        committed = fetch(client, topic_name, 0, READ_COMMITTED)
        assert committed.last_stable_offset == committed.high_watermark == 6
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [
            (aborter, 1)
        ]
    assert consume_all(second.bootstrap, topic_name, "read_committed", 2) == [b"c1", b"c2"]
