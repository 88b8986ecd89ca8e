"""Topic creation's checks, refused before the controller is asked anything (the controller
and replica manager are left out: reaching them fails the test)."""

import asyncio

import pytest

from brokerd.coordination.metadata import TopicInfo
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.server.partition_limits import MAX_PARTITIONS_PER_REQUEST
from brokerd.server.topic_admin import TopicAdmin
from tests.unit.server.handler_context import broker_config, broker_info, metadata_cache


def _admin(overrides=None, brokers=(1, 2, 3)) -> TopicAdmin:
    config = broker_config(overrides)
    metadata = metadata_cache(config)
    metadata.brokers = {b: broker_info(b) for b in brokers}
    metadata.topics["held"] = TopicInfo("held", "AAAAAAAAAAAAAAAAAAAAAQ", {0: [1, 2], 1: [2, 3]})
    return TopicAdmin(config, config.broker_id, metadata, None, None, asyncio.Lock())


async def _refusal(admin: TopicAdmin, name="new", partitions=1, replication=1, **options):
    with pytest.raises(KafkaError) as refused:
        await admin.create_topic(name, partitions, replication, validate_only=True, **options)
    return refused.value.error_code


async def test_an_explicit_assignment_is_checked_and_returned_without_writing():
    admin = _admin()
    assignment, overrides, info = await admin.create_topic(
        "new",
        -1,
        -1,
        {"cleanup.policy": "compact", "retention.ms": None},
        {0: [1, 2], 1: [2, 3]},
        validate_only=True,
    )
    assert assignment == {0: [1, 2], 1: [2, 3]}
    assert overrides == {"cleanup.policy": "compact"} and info is None


@pytest.mark.parametrize(
    ("explicit", "expected"),
    [
        ({0: [1, 2], 2: [2, 3]}, ErrorCode.invalid_replica_assignment),  # not consecutive
        ({0: [1, 1]}, ErrorCode.invalid_replica_assignment),  # duplicate replica
        ({0: []}, ErrorCode.invalid_replica_assignment),
        ({0: [1, 9]}, ErrorCode.invalid_replica_assignment),  # unknown broker
        ({0: [1, 2], 1: [3]}, ErrorCode.invalid_replica_assignment),  # uneven
    ],
)
async def test_explicit_assignment_refusals(explicit, expected):
    assert await _refusal(_admin(), explicit_assignment=explicit) == expected


async def test_names_sizes_and_configs_are_refused_with_kafkas_codes():
    admin = _admin()
    assert await _refusal(admin, name="held") == ErrorCode.topic_already_exists
    assert await _refusal(admin, name="a/b") == ErrorCode.invalid_topic_exception
    assert await _refusal(admin, partitions=0) == ErrorCode.invalid_partitions
    assert await _refusal(admin, replication=0) == ErrorCode.invalid_replication_factor
    assert await _refusal(admin, replication=4) == ErrorCode.invalid_replication_factor
    configs = {"cleanup.policy": "sideways"}
    assert await _refusal(admin, configs=configs) == ErrorCode.invalid_config


async def test_partition_limits_are_checked_before_any_assignment():
    too_many = MAX_PARTITIONS_PER_REQUEST + 1
    assert await _refusal(_admin(), partitions=too_many) == ErrorCode.policy_violation
    # Two partitions are held: four more would pass five.
    admin = _admin({"max.partitions": "5"})
    assert await _refusal(admin, partitions=4) == ErrorCode.policy_violation
    # Broker 2 holds two replicas already: a third on it is refused, on 3 a second is not.
    admin = _admin({"max.broker.partitions": "2"})
    explicit = {0: [2, 3]}
    assert await _refusal(admin, explicit_assignment=explicit) == ErrorCode.policy_violation
    assignment, _, _ = await admin.create_topic("new", 1, 1, None, {0: [3]}, validate_only=True)
    assert assignment == {0: [3]}
