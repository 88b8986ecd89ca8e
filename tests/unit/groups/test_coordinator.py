"""GroupCoordinator built from its collaborators: the classic protocol's round trips and
errors, with the group metadata kept in a real `__consumer_offsets` log."""

import asyncio

import pytest

from brokerd.groups import offsets_topic
from brokerd.groups.coordinator import GroupCoordinator
from brokerd.groups.group import GroupState
from brokerd.protocol.errors import ErrorCode as E

from .local_offsets import (
    LocalMetadata,
    LocalReplicas,
    Probes,
    Topic,
    group_config,
    loaded,
    manager,
)

PROTOCOLS = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff")]  # subscribes "t"
WAIT = 10.0  # seconds any awaited condition may take before the test fails


@pytest.fixture
def replicas(tmp_path):
    replicas = LocalReplicas(tmp_path)
    replicas.lead(0)
    yield replicas
    replicas.close()


@pytest.fixture
async def make(replicas):
    started = []

    async def make(probes=None, metadata=None, start=True, **config):
        config = {
            "group_min_session_timeout_ms": 10,
            "group_initial_rebalance_delay_ms": 0,
            **config,
        }
        coordinator = GroupCoordinator(
            manager(replicas, metadata, probes=probes), group_config(**config)
        )
        if start:
            coordinator.start()
            started.append(coordinator)
            if probes is None:
                await until(lambda: not coordinator.manager.is_loading)
        return coordinator

    yield make
    for coordinator in started:
        await coordinator.shutdown()


async def until(condition) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.001)


def join(coordinator, member_id="", *, instance=None, session_ms=10_000, rebalance_ms=1000, **kw):
    return coordinator.join_group(
        "g",
        member_id,
        instance,
        "client",
        "/127.0.0.1",
        session_ms,
        rebalance_ms,
        "consumer",
        kw.pop("protocols", PROTOCOLS),
        kw.pop("require_known_member_id", False),
        kw.pop("supports_skip_assignment", False),
    )


async def stable_member(coordinator, **kw):
    """One member through JoinGroup and SyncGroup; returns (member id, generation)."""
    joined = await join(coordinator, **kw)
    assert joined.error == E.none
    error, assignment, _ = await coordinator.sync_group(
        "g", joined.generation_id, joined.member_id, None, None, None, {joined.member_id: b"a"}
    )
    assert (error, assignment) == (E.none, b"a")
    return joined.member_id, joined.generation_id


async def test_requests_are_refused_until_the_partition_is_loaded(make):
    idle = await make(start=False)
    assert idle.heartbeat("g", 1, "m", None) == E.coordinator_not_available
    assert (await join(idle)).error == E.coordinator_not_available

    probes = Probes(hold=True)
    loading = await make(probes=probes)
    assert (await join(loading)).error == E.coordinator_load_in_progress
    assert loading.heartbeat("g", 1, "m", None) == E.none  # answered blindly, as Kafka
    assert (await loading.sync_group("g", 1, "m", None, None, None, {}))[0] == (
        E.rebalance_in_progress
    )
    assert loading.list_groups()[0] == E.coordinator_load_in_progress
    probes.release()
    await until(lambda: loading.check_group("g") == E.none)
    assert loading.check_group("") == E.invalid_group_id
    assert loading.check_group("", allow_empty_id=True) == E.none


async def test_groups_of_partitions_led_elsewhere_are_not_coordinator(make):
    metadata = LocalMetadata(topics={offsets_topic.TOPIC: Topic(2)})
    elsewhere = next(g for g in (f"g{i}" for i in range(100)) if offsets_topic.partition_for(g, 2))
    coordinator = await make(metadata=metadata)
    assert coordinator.check_group(elsewhere) == E.not_coordinator
    assert coordinator.fetch_offsets(elsewhere, None) == (E.not_coordinator, {})


async def test_join_sync_heartbeat_and_the_assignment_survives_a_reload(make, replicas):
    coordinator = await make()
    member_id, generation = await stable_member(coordinator)
    assert generation == 1
    assert coordinator.heartbeat("g", generation, member_id, None) == E.none
    assert coordinator.heartbeat("g", generation + 1, member_id, None) == E.illegal_generation
    assert coordinator.heartbeat("g", generation, "stranger", None) == E.unknown_member_id
    error, overviews = coordinator.list_groups()
    assert error == E.none
    assert [(o.group_id, o.protocol_type, o.state) for o in overviews] == [
        ("g", "consumer", "Stable")
    ]

    fresh = manager(replicas)
    await loaded(fresh)
    group = fresh.get_group("g")
    assert group.generation_id == 1 and group.is_in(GroupState.STABLE)
    assert group.get(member_id).assignment == b"a"


async def test_new_member_gets_its_id_first_when_the_client_supports_it(make):
    coordinator = await make()
    first = await join(coordinator, require_known_member_id=True)
    assert first.error == E.member_id_required and first.member_id.startswith("client-")
    again = await join(coordinator, first.member_id, require_known_member_id=True)
    assert (again.error, again.member_id, again.leader_id) == (
        E.none,
        first.member_id,
        first.member_id,
    )


async def test_session_timeout_outside_the_configured_bounds_is_refused(make):
    coordinator = await make(group_min_session_timeout_ms=100, group_max_session_timeout_ms=200)
    assert (await join(coordinator, session_ms=99)).error == E.invalid_session_timeout
    assert (await join(coordinator, session_ms=201)).error == E.invalid_session_timeout


async def test_a_full_group_refuses_another_member(make):
    coordinator = await make(group_max_size=1)
    await stable_member(coordinator)
    second = await join(coordinator)
    assert (second.error, second.member_id) == (E.group_max_size_reached, "")


async def test_a_group_is_deleted_only_once_its_members_left(make):
    coordinator = await make()
    member_id, _ = await stable_member(coordinator)
    assert await coordinator.delete_group("g") == E.non_empty_group
    error, results = coordinator.leave_group("g", [(member_id, None), ("stranger", None)])
    assert (error, results) == (
        E.none,
        [(member_id, None, E.none), ("stranger", None, E.unknown_member_id)],
    )
    await until(lambda: coordinator.describe_group("g")[1].is_in(GroupState.EMPTY))
    assert await coordinator.delete_group("g") == E.none
    assert coordinator.describe_group("g") == (E.none, None)
    assert await coordinator.delete_group("g") == E.group_id_not_found


async def test_a_member_that_stops_heartbeating_is_removed(make):
    coordinator = await make()
    member_id, generation = await stable_member(coordinator, session_ms=50)
    await until(lambda: coordinator.describe_group("g")[1].is_in(GroupState.EMPTY))
    assert coordinator.heartbeat("g", generation, member_id, None) == E.unknown_member_id


async def test_losing_the_partition_answers_a_parked_join_with_not_coordinator(make, replicas):
    coordinator = await make(group_initial_rebalance_delay_ms=60_000)
    parked = asyncio.ensure_future(join(coordinator))
    await until(lambda: coordinator.describe_group("g")[1] is not None)
    assert not parked.done()
    coordinator.on_leadership_change((), [(offsets_topic.TOPIC, 0)])
    result = await asyncio.wait_for(parked, WAIT)
    assert result.error == E.not_coordinator
    assert coordinator.check_group("g") == E.not_coordinator


async def test_gaining_the_partition_loads_its_groups(make, replicas):
    coordinator = await make()
    await stable_member(coordinator)
    coordinator.on_leadership_change((), [(offsets_topic.TOPIC, 0)])
    coordinator.on_leadership_change([(offsets_topic.TOPIC, 0)], ())
    assert coordinator.check_group("g") == E.coordinator_load_in_progress
    await until(lambda: coordinator.check_group("g") == E.none)
    assert coordinator.describe_group("g")[1].is_in(GroupState.STABLE)


async def test_commits_of_a_standalone_consumer_and_of_members(make):
    coordinator = await make()
    assert await coordinator.commit_offsets("g", 3, "m", None, -1, {("t", 0): (1, 0, "")}) == {
        ("t", 0): E.illegal_generation
    }
    assert await coordinator.commit_offsets("g", -1, "", None, -1, {("t", 0): (7, 0, "x")}) == {
        ("t", 0): E.none
    }
    error, offsets = coordinator.fetch_offsets("g", [("t", 0), ("t", 1)])
    assert error == E.none and offsets[("t", 0)].offset == 7 and offsets[("t", 1)] is None

    member_id, generation = await stable_member(coordinator)
    assert await coordinator.commit_offsets(
        "g", generation, member_id, None, -1, {("t", 0): (8, 0, "")}
    ) == {("t", 0): E.none}
    assert await coordinator.commit_offsets(
        "g", generation, "stranger", None, -1, {("t", 0): (9, 0, "")}
    ) == {("t", 0): E.unknown_member_id}
    assert coordinator.fetch_offsets("g", None)[1][("t", 0)].offset == 8


async def test_offsets_of_subscribed_topics_are_not_deleted_while_the_group_is_active(make):
    coordinator = await make()
    member_id, generation = await stable_member(coordinator)
    commits = {("t", 0): (1, 0, ""), ("gone", 0): (1, 0, "")}
    await coordinator.commit_offsets("g", generation, member_id, None, -1, commits)
    error, results = await coordinator.delete_offsets("g", [("t", 0), ("gone", 0)])
    assert (error, results) == (
        E.none,
        {("t", 0): E.group_subscribed_to_topic, ("gone", 0): E.none},
    )
    assert set(coordinator.fetch_offsets("g", None)[1]) == {("t", 0)}


async def test_shutdown_answers_parked_joins_and_refuses_later_requests(make):
    coordinator = await make(start=True, group_initial_rebalance_delay_ms=60_000)
    parked = asyncio.ensure_future(join(coordinator))
    await until(lambda: coordinator.describe_group("g")[1] is not None)
    await coordinator.shutdown()
    assert (await asyncio.wait_for(parked, WAIT)).error == E.not_coordinator
    assert coordinator.check_group("g") == E.coordinator_not_available


async def test_a_member_id_handed_out_lapses_unless_used_within_the_session(make):
    coordinator = await make()
    first = await join(coordinator, require_known_member_id=True, session_ms=50)
    assert first.error == E.member_id_required
    group = coordinator.describe_group("g")[1]
    await until(lambda: first.member_id not in group.pending_members)
    late = await join(coordinator, first.member_id, require_known_member_id=True)
    assert late.error == E.unknown_member_id
