"""Partition reassignment, driven by the controller the way Kafka's is (KIP-455).

For a partition with original replicas ORS moving to target replicas TRS:
1. the topic znode gets RS = TRS + ORS (target first, so the preferred leader is TRS[0]) with
   "adding_replicas" (TRS - ORS) and "removing_replicas" (ORS - TRS): ZooKeeper holds the
   whole reassignment, so a new controller resumes it after a failover;
2. the leader epoch is bumped and LeaderAndIsr goes to RS: the adding replicas create their
   logs and fetch, and the leader adds each to the ISR once it has caught up;
3. when every target replica is in the ISR (learnt from /isr_change_notification), the
   leader moves into TRS if it is not there already, the removing replicas leave the ISR
   (one state write, epoch bumped), LeaderAndIsr with RS = TRS goes to the targets,
   StopReplica(delete) to the removed replicas (their directories are deleted), the topic
   znode is rewritten with RS = TRS and no adding/removing, UpdateMetadata to every broker.
Cancelling (null replicas) reassigns back to ORS: the adding replicas are dropped the same
way. /admin/reassign_partitions (Kafka 2.x tools) is read on creation and emptied as its
partitions complete.

Every step takes all the partitions of one request (or one ISR notification, or a failover's
resumption) at once, as Kafka's controller does with ZooKeeper's async API: each topic znode
read and written once in one batch, the states in one batch of fenced writes, and one
LeaderAndIsr / StopReplica / UpdateMetadata per broker; never a round trip per partition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, NoNodeError

from brokerd.protocol.errors import ErrorCode, KafkaError

from . import zk_data
from .channel import BrokerRequests
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .partition_states import PartitionStateWriter, StateChange
from .zk_client import ControllerMovedError, ZkClient
from .zk_data import PartitionState

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]
# A partition's answer: its error code and message.
Outcome = tuple[ErrorCode, str | None]
_UNKNOWN: Outcome = (ErrorCode.unknown_topic_or_partition, "The partition does not exist.")
WRITE_ATTEMPTS = 5
# Seconds between the looks at ongoing reassignments' ISRs (see Reassigner._arm_recheck).
RECHECK_S = 5.0


def _distinct(replicas: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(replicas))


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas as the topic znode records them (Kafka's ReplicaAssignment)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        origin = self.origin
        full = _distinct([*target, *origin])
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )


def invalid_target(
    replicas: Sequence[int], current: ReplicaAssignment, live: Set[int]
) -> str | None:
    """Why `replicas` cannot be a target (INVALID_REPLICA_ASSIGNMENT), Kafka's checks."""
    if not replicas:
        return "Empty replica list specified in partition reassignment."
    if len(set(replicas)) != len(replicas):
        return f"Duplicate replica ids in partition reassignment replica list: {list(replicas)}"
    if any(r < 0 for r in replicas):
        return f"Invalid broker id in replica list: {list(replicas)}"
    adding = current.reassign_to(replicas).adding
    if not set(adding) <= set(live):
        return (
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}"
        )
    return None


def shrunk_state(
    state: PartitionState,
    dropped: Set[int],
    replicas_after: Sequence[int],
    live: Set[int],
    controller_epoch: int,
) -> PartitionState | None:
    """The next state once `dropped` replicas leave: out of the ISR, and a live in-sync
    replica of `replicas_after` leads if the leader goes or is dead (None: none can)."""
    isr = [r for r in state.isr if r not in dropped]
    leader = state.leader
    if leader in dropped or leader not in live:
        candidates = [r for r in replicas_after if r in isr and r in live]
        if not candidates:
            return None
        leader = candidates[0]
    return PartitionState(
        leader=leader,
        leader_epoch=state.leader_epoch + 1,
        isr=isr,
        controller_epoch=controller_epoch,
    )


def _edit_topic_znode(data: dict, assignments: Mapping[int, ReplicaAssignment]) -> None:
    """Put partitions' RS, adding_replicas and removing_replicas in a topic znode's data."""
    data["version"] = max(int(data.get("version", 1)), 2)
    for index, assignment in assignments.items():
        data["partitions"][str(index)] = list(assignment.replicas)
        for field_name, replicas in (
            ("adding_replicas", assignment.adding),
            ("removing_replicas", assignment.removing),
        ):
            entries = data.get(field_name) or {}
            entries.pop(str(index), None)
            if replicas:
                entries[str(index)] = list(replicas)
            data[field_name] = entries


def _assignment_of(info, index: int) -> ReplicaAssignment:
    """A partition's assignment as the cached topic znode has it."""
    return ReplicaAssignment(
        tuple(info.assignment[index]),
        tuple(info.adding.get(index, ())),
        tuple(info.removing.get(index, ())),
    )


class Reassigner:
    """The controller's reassignments; its methods run inside the controller's event lock."""

    def __init__(
        self,
        zk: ZkClient,
        cache: MetadataCache,
        context: ControllerContext,
        channel: BrokerRequests,
        partition_states: PartitionStateWriter,
        on_superseded: Callable[[], Awaitable[None]],
        schedule_event: Callable[[Callable[[], Awaitable]], None],
    ):
        self.zk = zk
        self.cache = cache
        self.context = context
        self.channel = channel
        self.partition_states = partition_states
        self.on_superseded = on_superseded  # a fenced write failed: a newer controller rules
        self.schedule_event = schedule_event  # run as a controller event, if still in office
        self.ongoing: dict[PartitionKey, ReplicaAssignment] = {}
        self._recheck_timer: asyncio.TimerHandle | None = None
        self._legacy_armed = False  # a watch on /admin/reassign_partitions is pending
        # Replicas removed while their broker was down: deleted when it comes back.
        self.removed_while_down: dict[int, set[PartitionKey]] = {}

    def assignment(self, topic: str, index: int) -> ReplicaAssignment | None:
        if (topic, index) in self.ongoing:
            return self.ongoing[(topic, index)]
        info = self.cache.topic(topic)
        if info is None or index not in info.assignment:
            return None
        return _assignment_of(info, index)

    # Requests ---------------------------------------------------------------------------
    async def alter(
        self, requests: Mapping[PartitionKey, Sequence[int] | None], allow_rf_change: bool = True
    ) -> dict[PartitionKey, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: per partition, the error code (and message)."""
        results: dict[PartitionKey, tuple[ErrorCode, str | None]] = {}
        accepted: dict[PartitionKey, tuple[int, ...]] = {}
        for key, replicas in requests.items():
            try:
                accepted[key] = self._validate(key, replicas, allow_rf_change)
            except KafkaError as refused:
                results[key] = (refused.error_code, refused.message)
        # The latest reassignment wins over one written by older tools.
        await self._remove_from_legacy(lambda key, _rs: key in accepted)
        results.update(await self._start_many(accepted))
        return results

    def _validate(
        self, key: PartitionKey, replicas: Sequence[int] | None, allow_rf_change: bool
    ) -> tuple[int, ...]:
        """The target replicas; KafkaError (code and message) when they are refused."""
        info = self.cache.topic(key[0])
        current = self.assignment(*key)
        if current is None or info is None or info.marked_for_deletion:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, "The partition does not exist.")
        if replicas is None:
            if not current.is_reassigning:
                raise KafkaError(ErrorCode.no_reassignment_in_progress)
            return current.origin
        why = invalid_target(replicas, current, set(self.context.live))
        if why is not None:
            raise KafkaError(ErrorCode.invalid_replica_assignment, why)
        if not allow_rf_change and len(replicas) != len(current.origin):
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                f"The replication factor is changed from {len(current.origin)} to {len(replicas)}",
            )
        return tuple(int(r) for r in replicas)

    def list(
        self, keys: Iterable[PartitionKey] | None = None
    ) -> dict[PartitionKey, ReplicaAssignment]:
        """Ongoing reassignments. The topic znodes (as cached) count too: a controller
        just elected answers before it has resumed them."""
        found = {**self._recorded(), **self.ongoing}
        if keys is None:
            return dict(sorted(found.items()))
        return {k: found[k] for k in keys if k in found}

    def _recorded(self) -> dict[PartitionKey, ReplicaAssignment]:
        """Reassignments the topic znodes record (adding or removing replicas)."""
        found = {}
        for info in list(self.cache.topics.values()):
            if info.marked_for_deletion:
                continue
            for index in sorted(set(info.adding) | set(info.removing)):
                if index in info.assignment:
                    found[(info.name, index)] = _assignment_of(info, index)
        return found

    async def resume(self) -> None:
        """A new controller: reassignments in the topic znodes go on (epoch bumped, so the
        replicas hear of them again), then any written to /admin/reassign_partitions."""
        self._legacy_armed = False  # a new ZooKeeper session has none of the old watches
        self.ongoing = self._recorded()
        for (topic, index), current in self.ongoing.items():
            log.info(
                "controller: resuming reassignment of %s-%d to %s", topic, index, current.target
            )
        await self._start_many({key: current.target for key, current in self.ongoing.items()})
        await self._read_legacy()

    async def isr_changed(self, keys: Iterable[PartitionKey]) -> None:
        """ISRs grew: reassignments whose targets are all in sync complete (together)."""
        waiting = {key: self.ongoing[key] for key in keys if key in self.ongoing}
        if not waiting:
            return

        async def steps() -> None:
            in_sync = await self._in_sync(waiting)
            await self._complete_many([(k, a) for k, a in waiting.items() if k in in_sync])

        await self._guarded_many(waiting, {}, steps())

    def _arm_recheck(self) -> None:
        """While reassignments are under way, look at their ISRs every RECHECK_S as well:
        completion is driven by /isr_change_notification, and a notification that never
        comes (a leader's ISR write whose announcement was lost with its session, or a
        completion left for "the next ISR change" when the ISR then stays as it is) must
        not leave a reassignment waiting forever. One batched read per round, only while
        something moves."""
        loop = asyncio.get_running_loop()
        timer = self._recheck_timer
        if timer is not None and not timer.cancelled() and loop.time() < timer.when():
            return  # one already armed
        self._recheck_timer = loop.call_later(RECHECK_S, self.schedule_event, self._recheck)

    async def _recheck(self) -> None:
        if not self.ongoing:
            return
        before = set(self.ongoing)
        await self.isr_changed(list(before))
        found = before - set(self.ongoing)
        if found:
            log.info("controller: %d reassignments found in sync by the periodic check", len(found))
        if self.ongoing:
            self._arm_recheck()

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.ongoing if k[0] == topic]:
            del self.ongoing[key]

    # The steps, each for many partitions at once ------------------------------------------
    # As Kafka's controller (pipelined ZooKeeper writes, one request per broker per
    # decision): the topic znodes of all partitions in one batch (a topic written once
    # whatever number of its partitions move), their states in one batch of fenced
    # writes, LeaderAndIsr / StopReplica / UpdateMetadata grouped per broker.
    async def _guarded_many(
        self, keys: Iterable[PartitionKey], outcomes: dict[PartitionKey, Outcome], steps
    ) -> dict[PartitionKey, Outcome]:
        """Run `steps`; the keys it did not decide get NONE, or the error it ended with."""
        try:
            await steps
        except KafkaError as exc:
            failed: Outcome = (exc.error_code, exc.message)
        except NoNodeError:
            failed = (ErrorCode.unknown_topic_or_partition, "The partition does not exist.")
        except Exception:
            log.exception("reassignment step failed")
            failed = (ErrorCode.unknown_server_error, None)
        else:
            failed = (ErrorCode.none, None)
        for key in keys:
            outcomes.setdefault(key, failed)
        return outcomes

    async def _start_many(
        self, targets: Mapping[PartitionKey, Sequence[int]]
    ) -> dict[PartitionKey, Outcome]:
        """Kafka's onPartitionReassignment for every partition of `targets`: record
        RS/AR/RR, then catch up or complete. Per partition its outcome."""
        outcomes: dict[PartitionKey, Outcome] = {}

        async def steps() -> None:
            plans: dict[PartitionKey, tuple[ReplicaAssignment, ReplicaAssignment]] = {}
            for key, target in targets.items():
                current = self.assignment(*key)
                if current is None:
                    outcomes[key] = _UNKNOWN
                else:
                    plans[key] = (current, current.reassign_to(tuple(target)))
            changed = {key: wanted for key, (current, wanted) in plans.items() if wanted != current}
            for key, failed in (await self._write_assignments(changed)).items():
                outcomes[key] = failed  # its topic znode is gone or kept changing
                plans.pop(key)
            # Replaced or cancelled reassignments: their adding replicas that stay out go now.
            unneeded = [
                (key, set(current.replicas) - set(wanted.replicas), wanted.replicas)
                for key, (current, wanted) in plans.items()
                if key in changed and set(current.replicas) - set(wanted.replicas)
            ]
            await self._drop_replicas_many(unneeded, allow_offline=True)
            moving = {key: wanted for key, (_c, wanted) in plans.items() if wanted.is_reassigning}
            self.ongoing.update(moving)
            if moving:
                self._arm_recheck()
            in_sync = await self._in_sync(moving)
            catching_up = [key for key in moving if key not in in_sync]
            bumped = await self._bump_epochs(catching_up)
            self._send_leader_and_isr_many(
                [(key, state, moving[key].replicas) for key, state in bumped.items()]
            )
            for key in catching_up:
                wanted = moving[key]
                log.info(
                    "controller: reassigning %s-%d: replicas %s, adding %s, removing %s",
                    *key,
                    list(wanted.replicas),
                    list(wanted.adding),
                    list(wanted.removing),
                )
            await self._complete_many(
                [(key, wanted) for key, (_c, wanted) in plans.items() if key not in catching_up]
            )

        return await self._guarded_many(targets, outcomes, steps())

    async def _complete_many(self, items: Sequence[tuple[PartitionKey, ReplicaAssignment]]):
        """RS = TRS for each: the leader into TRS and the removing replicas out of the ISR
        (epoch bumped), StopReplica(delete) to them, the topic znodes rewritten, then one
        UpdateMetadata per broker for all of them."""
        if not items:
            return
        states = await self._drop_replicas_many(
            [(key, set(current.removing), current.target) for key, current in items],
            allow_offline=False,
        )
        done: dict[PartitionKey, tuple[tuple[int, ...], PartitionState]] = {}
        for key, current in items:
            if key in states:
                done[key] = (current.target, states[key])
            else:
                log.info("controller: %s-%d waits for a live in-sync target to lead", *key)
        failed = await self._write_assignments(
            {key: ReplicaAssignment(target) for key, (target, _state) in done.items()}
        )
        for key in failed:  # still ongoing: completed again at its next ISR change
            done.pop(key)
        if not done:
            return
        for key in done:
            self.ongoing.pop(key, None)
        await self._remove_from_legacy(lambda k, rs: k in done and tuple(rs) == done[k][0])
        entries = [(t, i, state, list(target)) for (t, i), (target, state) in done.items()]
        self.channel.send_update_metadata(list(self.context.live), entries)
        for key, (target, _state) in done.items():
            log.info("controller: reassignment of %s-%d to %s completed", *key, list(target))

    async def _drop_replicas_many(
        self,
        items: Sequence[tuple[PartitionKey, Set[int], Sequence[int]]],
        allow_offline: bool,
    ) -> dict[PartitionKey, PartitionState]:
        """Per (partition, dropped, replicas_after): the leader into `replicas_after` and
        `dropped` out of the ISR (epoch bumped); tell the remaining replicas, delete the
        dropped ones. The new states written (a partition no replica could lead has none)."""
        if not items:
            return {}
        live = set(self.context.live)
        epoch = self.context.epoch

        def change(dropped: Set[int], replicas_after: Sequence[int]):
            def compute(state: PartitionState) -> PartitionState | None:
                found = shrunk_state(state, dropped, replicas_after, live, epoch)
                if found is None and allow_offline:
                    isr = [r for r in state.isr if r not in dropped]
                    found = PartitionState(-1, state.leader_epoch + 1, isr, epoch)
                return found

            return compute

        states = await self._write_states({key: change(d, after) for key, d, after in items})
        self._send_leader_and_isr_many(
            [(key, states[key], after) for key, _d, after in items if key in states]
        )
        stops: dict[int, dict[str, list[int]]] = {}
        for key, dropped, _after in items:
            if key not in states:
                continue
            for broker_id in sorted(dropped):
                if broker_id in self.context.live:
                    stops.setdefault(broker_id, {}).setdefault(key[0], []).append(key[1])
                else:
                    self.removed_while_down.setdefault(broker_id, set()).add(key)
        for broker_id, topics in stops.items():
            for topic, indexes in topics.items():
                self.channel.send_stop_replica(broker_id, topic, indexes, delete=True)
        return states

    def brokers_joined(self, brokers: Iterable[int]) -> None:
        """StopReplica(delete) for what was removed from these brokers while they were down
        (unless a later reassignment gave it back to them), one request per topic."""
        for broker_id in brokers:
            doomed: dict[str, list[int]] = {}
            for topic, index in sorted(self.removed_while_down.pop(broker_id, ())):
                current = self.assignment(topic, index)
                if current is not None and broker_id not in current.replicas:
                    doomed.setdefault(topic, []).append(index)
            for topic, indexes in doomed.items():
                self.channel.send_stop_replica(broker_id, topic, indexes, delete=True)

    async def _bump_epochs(
        self, keys: Sequence[PartitionKey]
    ) -> dict[PartitionKey, PartitionState]:
        epoch = self.context.epoch

        def bumped(state: PartitionState) -> PartitionState:
            return PartitionState(state.leader, state.leader_epoch + 1, list(state.isr), epoch)

        return await self._write_states(dict.fromkeys(keys, bumped))

    async def _write_states(
        self, changes: Mapping[PartitionKey, StateChange]
    ) -> dict[PartitionKey, PartitionState]:
        """The controller's conditional state writes, pipelined; the states written. Taken
        from the computations themselves: the cached topic may be replaced by a refresh
        meanwhile."""
        if not changes:
            return {}
        written: dict[PartitionKey, PartitionState] = {}

        def recorded(key: PartitionKey, compute: StateChange) -> StateChange:
            def record(state: PartitionState) -> PartitionState | None:
                found = compute(state)
                if found is None:
                    written.pop(key, None)
                else:
                    written[key] = found
                return found

            return record

        done = await self.partition_states.write_many(
            [(key[0], key[1], recorded(key, compute)) for key, compute in changes.items()]
        )
        if not self.context.is_active:  # the fence refused the write: we resigned
            raise KafkaError(ErrorCode.not_controller)
        return {key: written[key] for key in done if key in written}

    async def _in_sync(self, moving: Mapping[PartitionKey, ReplicaAssignment]) -> set[PartitionKey]:
        """The partitions whose targets are all in the ISR, read from ZooKeeper in one
        batch as Kafka does (the leaders write ISR changes there)."""
        if not moving:
            return set()
        keys = list(moving)
        found = await self.zk.get_json_many([zk_data.partition_state_path(*key) for key in keys])
        in_sync = set()
        for key, current in zip(keys, found, strict=True):
            if current is None:
                continue
            state = PartitionState.from_json(*current)
            self.cache.merge_state(key[0], key[1], state)
            if set(moving[key].target) <= set(state.isr):
                in_sync.add(key)
        return in_sync

    def _send_leader_and_isr_many(
        self, entries: Sequence[tuple[PartitionKey, PartitionState, Sequence[int]]]
    ) -> None:
        """LeaderAndIsr to every live replica of each partition, one request per broker."""
        per_broker: dict[int, list] = {}
        for (topic, index), state, replicas in entries:
            for broker_id in replicas:
                if broker_id in self.context.live:
                    per_broker.setdefault(broker_id, []).append(
                        (topic, index, state, list(replicas))
                    )
        for broker_id, states in per_broker.items():
            self.channel.send_leader_and_isr(broker_id, states)

    # ZooKeeper --------------------------------------------------------------------------
    async def _fenced(self, write) -> None:
        """Await a fenced write; if another controller took over, resign and stop."""
        try:
            await write
        except ControllerMovedError:
            await self.on_superseded()
            raise KafkaError(ErrorCode.not_controller) from None

    async def _write_assignments(
        self, assignments: Mapping[PartitionKey, ReplicaAssignment]
    ) -> dict[PartitionKey, Outcome]:
        """RS/AR/RR of many partitions in their topic znodes, each topic written once,
        conditional on its version and fenced, all topics in one batch (re-read in one
        batch on a clash). The partitions not written, each with its error: the topic
        znode is gone, or it changed under every one of WRITE_ATTEMPTS writes (answered
        per partition, as Kafka's controller answers each partition's own failure; the
        other topics' partitions were written and go on)."""
        by_topic: dict[str, dict[int, ReplicaAssignment]] = {}
        for (topic, index), assignment in assignments.items():
            by_topic.setdefault(topic, {})[index] = assignment
        missing: set[PartitionKey] = set()
        pending = sorted(by_topic)
        for _attempt in range(WRITE_ATTEMPTS):
            if not pending:
                break
            found = await self.zk.get_json_many([zk_data.topic_path(t) for t in pending])
            writes, topics = [], []
            for topic, current in zip(pending, found, strict=True):
                if current is None:
                    missing.update((topic, index) for index in by_topic[topic])
                    continue
                data, version = current
                _edit_topic_znode(data, by_topic[topic])
                writes.append((zk_data.topic_path(topic), zk_data.encode(data), version))
                topics.append(topic)
            pending = []
            if not writes:
                break
            try:
                results = await self.zk.fenced_set_many(writes, self.context.fence)
            except ControllerMovedError:
                await self.on_superseded()
                raise KafkaError(ErrorCode.not_controller) from None
            for topic, result in zip(topics, results, strict=True):
                if isinstance(result, BadVersionError):
                    pending.append(topic)
                elif isinstance(result, NoNodeError):
                    missing.update((topic, index) for index in by_topic[topic])
                else:
                    self._cache_assignments(topic, by_topic[topic])
        failed: dict[PartitionKey, Outcome] = dict.fromkeys(missing, _UNKNOWN)
        for topic in pending:  # left after the last attempt: it kept changing
            log.warning(
                "controller: topic znode of %s changed under %d writes; its reassignments "
                "are refused",
                topic,
                WRITE_ATTEMPTS,
            )
            clashed: Outcome = (
                ErrorCode.unknown_server_error,
                f"The assignment of topic {topic} kept changing while it was written.",
            )
            failed.update(dict.fromkeys(((topic, index) for index in by_topic[topic]), clashed))
        return failed

    def _cache_assignments(self, topic: str, assignments: Mapping[int, ReplicaAssignment]):
        info = self.cache.topic(topic)
        if info is None:
            return
        for index, assignment in assignments.items():
            info.assignment[index] = list(assignment.replicas)
            for mapping, replicas in (
                (info.adding, assignment.adding),
                (info.removing, assignment.removing),
            ):
                mapping.pop(index, None)
                if replicas:
                    mapping[index] = list(replicas)

    async def _read_legacy(self) -> None:
        """Start what /admin/reassign_partitions asks (watched for its creation); entries
        that cannot start are taken out, as Kafka does."""
        if not self._legacy_armed:
            self._legacy_armed = True
            exists = await self.zk.exists(zk_data.REASSIGN_PARTITIONS, watch=self._legacy_changed)
        else:
            exists = await self.zk.exists(zk_data.REASSIGN_PARTITIONS)
        if not exists:
            return
        found = await self.zk.get_json(zk_data.REASSIGN_PARTITIONS)
        entries = zk_data.parse_reassign_partitions(found[0] if found else None)
        outcomes: dict[PartitionKey, Outcome] = {}
        targets: dict[PartitionKey, tuple[int, ...]] = {}
        for key, replicas in entries.items():
            current = self.assignment(*key)
            if current is not None and current.is_reassigning and current.target == tuple(replicas):
                continue  # already under way
            try:
                targets[key] = self._validate(key, replicas, allow_rf_change=True)
            except KafkaError as refused:
                outcomes[key] = (refused.error_code, refused.message)
        outcomes.update(await self._start_many(targets))
        failed = set()
        for key, (code, message) in outcomes.items():
            if code != ErrorCode.none:
                log.warning(
                    "%s: %s-%d refused: %s %s",
                    zk_data.REASSIGN_PARTITIONS,
                    *key,
                    code.name,
                    message,
                )
                failed.add(key)
        if failed:
            await self._remove_from_legacy(lambda k, _rs: k in failed)

    def _legacy_changed(self, *_: object) -> None:
        self._legacy_armed = False
        self.schedule_event(self._read_legacy)

    async def _remove_from_legacy(self, drop) -> None:
        found = await self.zk.get_json(zk_data.REASSIGN_PARTITIONS)
        if found is None:
            return
        entries = zk_data.parse_reassign_partitions(found[0])
        kept = {k: rs for k, rs in entries.items() if not drop(k, rs)}
        if len(kept) == len(entries):
            return
        path, version = zk_data.REASSIGN_PARTITIONS, found[1]
        try:
            if kept:
                payload = zk_data.reassign_partitions_payload(kept)
                await self._fenced(
                    self.zk.fenced_set_json(path, payload, version, self.context.fence)
                )
            else:
                await self._fenced(self.zk.fenced_delete(path, version, self.context.fence))
        except (BadVersionError, NoNodeError):
            log.info("%s changed meanwhile; it is read again", zk_data.REASSIGN_PARTITIONS)
