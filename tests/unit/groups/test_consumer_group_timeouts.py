"""The consumer group protocol's timers on a GroupCoordinator built from its collaborators
(a real `__consumer_offsets` log): a silent member is removed after its session timeout, a
member that does not revoke within its rebalance timeout is fenced, and either way the
others get its partitions."""

from __future__ import annotations

import pytest

from brokerd.groups import offsets_topic
from brokerd.groups.consumer_group_coordinator import HeartbeatRequest
from brokerd.protocol.errors import ErrorCode as E

from .local_offsets import LocalMetadata, Topic
from .test_coordinator import make, replicas, until  # noqa: F401 - fixtures


def metadata() -> LocalMetadata:
    return LocalMetadata(topics={offsets_topic.TOPIC: Topic(1), "t": Topic(2)})


def beat(coordinator, member_id, epoch, owned=None, rebalance_ms=-1, subscribed=None):
    return coordinator.consumer.heartbeat(
        HeartbeatRequest(
            group_id="g",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=rebalance_ms,
            subscribed=subscribed,
            owned=owned,
        )
    )


def join(coordinator, member_id, rebalance_ms=60_000):
    return beat(coordinator, member_id, 0, {}, rebalance_ms, ("t",))


def partitions(result) -> set[int]:
    return set((result.assignment or {}).get("t", ()))


@pytest.mark.parametrize("reason", ["session", "revocation"])
async def test_a_lost_member_is_fenced_and_its_partitions_move(make, reason):  # noqa: F811
    session_ms = 200 if reason == "session" else 60_000
    coordinator = await make(metadata=metadata(), group_consumer_session_timeout_ms=session_ms)
    a = join(coordinator, "a", rebalance_ms=200)
    assert partitions(a) == {0, 1}
    b = join(coordinator, "b")
    assert b.error == E.none and partitions(b) == set()
    if reason == "revocation":
        asked = beat(coordinator, "a", a.member_epoch, {"t": frozenset({0, 1})})
        assert len(partitions(asked)) == 1  # told to revoke one; it never acknowledges
    group = coordinator.manager.get_group("g")
    assert group is not None and group.consumer is not None

    def b_alone() -> bool:
        beat(coordinator, "b", group.consumer.members["b"].member_epoch, {})
        return set(group.consumer.members) == {"b"}

    await until(b_alone)
    beat(coordinator, "b", group.consumer.members["b"].member_epoch, {})
    assert group.consumer.members["b"].assigned == {"t": frozenset({0, 1})}
    # The fenced member's next heartbeat is refused; it must join again.
    assert beat(coordinator, "a", a.member_epoch, {}).error == E.unknown_member_id
