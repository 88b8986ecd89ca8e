"""The marker sender writes markers on partitions this broker leads in place (no request to
itself over the loopback), and sends the rest to their leaders."""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode as E
from brokerd.transactions.markers import MarkerSender
from tests.unit.coordinator_stand_ins import BROKER_ID, Leader

OTHER = BROKER_ID + 1


class Metadata:
    def __init__(self, leaders: dict[tuple[str, int], int]):
        self.leaders = leaders
        self.brokers = {BROKER_ID: object(), OTHER: object()}

    def partition_state(self, topic: str, partition: int):
        return Leader(self.leaders[(topic, partition)])


async def test_partitions_led_here_are_written_in_place():
    written: list[tuple] = []

    async def local(producer_id, producer_epoch, commit, coordinator_epoch, partitions):
        written.append((producer_id, producer_epoch, commit, coordinator_epoch, partitions))
        return {tp: E.none for tp in partitions}

    endpoints_asked: list = []

    def endpoint_of(info):
        endpoints_asked.append(info)
        return None  # the other broker cannot be reached: NOT_LEADER_OR_FOLLOWER, retried

    sender = MarkerSender(
        BROKER_ID,
        Metadata({("a", 0): BROKER_ID, ("b", 0): BROKER_ID}),
        endpoint_of=endpoint_of,
        security_for=lambda endpoint: None,
        local=local,
    )
    done = await sender.write_markers(
        7, 2, True, 5, {("a", 0), ("b", 0)}, lambda: True, lambda topic: True
    )
    assert done
    assert written == [(7, 2, True, 5, [("a", 0), ("b", 0)])]
    assert endpoints_asked == []  # no connection to ourselves
    await sender.close()


async def test_a_failed_local_write_is_retried_and_other_leaders_get_requests():
    attempts: list[list] = []

    async def local(producer_id, producer_epoch, commit, coordinator_epoch, partitions):
        attempts.append(list(partitions))
        if len(attempts) == 1:
            raise OSError("disk went away")
        return {tp: E.none for tp in partitions}

    remote: list = []
    metadata = Metadata({("a", 0): BROKER_ID, ("c", 0): OTHER})
    sender = MarkerSender(
        BROKER_ID,
        metadata,
        endpoint_of=lambda info: remote.append(info),
        security_for=lambda endpoint: None,
        local=local,
    )
    rounds = iter(range(3))
    # stop once the local partition is written twice and the other leader was asked for
    done = await sender.write_markers(
        7, 2, False, 5, {("a", 0), ("c", 0)}, lambda: next(rounds, None) is not None, bool
    )
    assert not done  # the other broker never answered; gave up when no longer coordinator
    assert attempts == [[("a", 0)], [("a", 0)]]
    assert remote == [metadata.brokers[OTHER]] * 3
    await sender.close()
