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
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, NoNodeError

from brokerd.protocol.errors import ErrorCode, KafkaError

from . import zk_data
from .channel import BrokerRequests
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .partition_states import PartitionStateWriter
from .zk_client import ControllerMovedError, ZkClient
from .zk_data import PartitionState

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]
WRITE_ATTEMPTS = 5


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
        for key, target in accepted.items():
            results[key] = await self._start_guarded(key, target)
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
        for (topic, index), current in list(self.ongoing.items()):
            log.info(
                "controller: resuming reassignment of %s-%d to %s", topic, index, current.target
            )
            await self._start_guarded((topic, index), current.target)
        await self._read_legacy()

    async def isr_changed(self, keys: Iterable[PartitionKey]) -> None:
        """An ISR grew: reassignments whose targets are all in sync complete."""
        for key in keys:
            current = self.ongoing.get(key)
            if current is not None and await self._targets_in_sync(key, current):
                await self._guarded(self._complete(key, current))

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.ongoing if k[0] == topic]:
            del self.ongoing[key]

    # The steps --------------------------------------------------------------------------
    async def _start_guarded(
        self, key: PartitionKey, target: Sequence[int]
    ) -> tuple[ErrorCode, str | None]:
        return await self._guarded(self._start(key, tuple(target)))

    async def _guarded(self, step) -> tuple[ErrorCode, str | None]:
        try:
            await step
        except KafkaError as exc:
            return exc.error_code, exc.message
        except NoNodeError:
            return ErrorCode.unknown_topic_or_partition, "The partition does not exist."
        except Exception:
            log.exception("reassignment step failed")
            return ErrorCode.unknown_server_error, None
        return ErrorCode.none, None

    async def _start(self, key: PartitionKey, target: tuple[int, ...]) -> None:
        """Kafka's onPartitionReassignment: record RS/AR/RR, then catch up or complete."""
        current = self.assignment(*key)
        if current is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, "The partition does not exist.")
        wanted = current.reassign_to(target)
        if wanted != current:
            await self._write_assignment(key, wanted)
            # A replaced or cancelled reassignment: its adding replicas that stay out go now.
            unneeded = set(current.replicas) - set(wanted.replicas)
            if unneeded:
                await self._drop_replicas(key, unneeded, wanted.replicas, allow_offline=True)
        if wanted.is_reassigning:
            self.ongoing[key] = wanted
        if wanted.is_reassigning and not await self._targets_in_sync(key, wanted):
            state = await self._bump_epoch(key)
            if state is not None:
                self._send_leader_and_isr(key, state, wanted.replicas, wanted.replicas)
            log.info(
                "controller: reassigning %s-%d: replicas %s, adding %s, removing %s",
                *key,
                list(wanted.replicas),
                list(wanted.adding),
                list(wanted.removing),
            )
        else:
            await self._complete(key, wanted)

    async def _complete(self, key: PartitionKey, current: ReplicaAssignment) -> None:
        target = current.target
        state = await self._drop_replicas(key, set(current.removing), target, allow_offline=False)
        if state is None:
            log.info("controller: %s-%d waits for a live in-sync target to lead", *key)
            return
        await self._write_assignment(key, ReplicaAssignment(target))
        self.ongoing.pop(key, None)
        await self._remove_from_legacy(lambda k, rs: k == key and tuple(rs) == target)
        for broker_id in self.context.live:
            self.channel.send_update_metadata(broker_id, [(key[0], key[1], state, list(target))])
        log.info("controller: reassignment of %s-%d to %s completed", *key, list(target))

    async def _drop_replicas(
        self,
        key: PartitionKey,
        dropped: Set[int],
        replicas_after: Sequence[int],
        allow_offline: bool,
    ) -> PartitionState | None:
        """Leader into `replicas_after` and `dropped` out of the ISR (epoch bumped), tell
        the remaining replicas, delete the dropped ones. The new state, None if no replica
        could lead."""
        live = set(self.context.live)
        epoch = self.context.epoch

        def compute(state: PartitionState) -> PartitionState | None:
            found = shrunk_state(state, dropped, replicas_after, live, epoch)
            if found is None and allow_offline:
                isr = [r for r in state.isr if r not in dropped]
                found = PartitionState(-1, state.leader_epoch + 1, isr, epoch)
            return found

        state = await self._write_state(key, compute)
        if state is None:
            return None
        self._send_leader_and_isr(key, state, replicas_after, replicas_after)
        for broker_id in sorted(dropped):
            if broker_id in self.context.live:
                self.channel.send_stop_replica(broker_id, key[0], [key[1]], delete=True)
            else:
                self.removed_while_down.setdefault(broker_id, set()).add(key)
        return state

    def brokers_joined(self, brokers: Iterable[int]) -> None:
        """StopReplica(delete) for what was removed from these brokers while they were down
        (unless a later reassignment gave it back to them)."""
        for broker_id in brokers:
            for topic, index in sorted(self.removed_while_down.pop(broker_id, ())):
                current = self.assignment(topic, index)
                if current is not None and broker_id not in current.replicas:
                    self.channel.send_stop_replica(broker_id, topic, [index], delete=True)

    async def _bump_epoch(self, key: PartitionKey) -> PartitionState | None:
        epoch = self.context.epoch

        def bumped(state: PartitionState) -> PartitionState:
            return PartitionState(state.leader, state.leader_epoch + 1, list(state.isr), epoch)

        return await self._write_state(key, bumped)

    async def _write_state(self, key: PartitionKey, compute) -> PartitionState | None:
        """The controller's conditional state write; the state written (None: none was).
        Taken from `compute` itself: the cached topic may be replaced by a refresh meanwhile."""
        written: list[PartitionState] = []

        def recorded(state: PartitionState) -> PartitionState | None:
            found = compute(state)
            written[:] = [found] if found is not None else []
            return found

        done = await self.partition_states.write(key[0], key[1], recorded)
        if not self.context.is_active:  # the fence refused the write: we resigned
            raise KafkaError(ErrorCode.not_controller)
        return written[0] if done and written else None

    async def _targets_in_sync(self, key: PartitionKey, current: ReplicaAssignment) -> bool:
        """Read from ZooKeeper, as Kafka does: the leader writes ISR changes there."""
        found = await self.zk.get_json(zk_data.partition_state_path(*key))
        if found is None:
            return False
        state = PartitionState.from_json(*found)
        self.cache.merge_state(key[0], key[1], state)
        return set(current.target) <= set(state.isr)

    def _send_leader_and_isr(
        self, key: PartitionKey, state: PartitionState, replicas: Sequence[int], to: Iterable[int]
    ) -> None:
        for broker_id in to:
            if broker_id in self.context.live:
                self.channel.send_leader_and_isr(
                    broker_id, [(key[0], key[1], state, list(replicas))]
                )

    # ZooKeeper --------------------------------------------------------------------------
    async def _fenced(self, write) -> None:
        """Await a fenced write; if another controller took over, resign and stop."""
        try:
            await write
        except ControllerMovedError:
            await self.on_superseded()
            raise KafkaError(ErrorCode.not_controller) from None

    async def _write_assignment(self, key: PartitionKey, assignment: ReplicaAssignment) -> None:
        """One partition's RS/AR/RR in /brokers/topics/<t>, conditional on its version."""
        topic, index = key
        path = zk_data.topic_path(topic)
        for _attempt in range(WRITE_ATTEMPTS):
            found = await self.zk.get_json(path)
            if found is None:
                raise NoNodeError(path)
            data, version = found
            data["version"] = max(int(data.get("version", 1)), 2)
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
            try:
                await self._fenced(self.zk.fenced_set_json(path, data, version, self.context.fence))
            except BadVersionError:
                continue
            break
        else:
            raise KafkaError(ErrorCode.unknown_server_error, f"{path} kept changing")
        info = self.cache.topic(topic)
        if info is not None:
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
        failed = set()
        for key, replicas in entries.items():
            current = self.assignment(*key)
            if current is not None and current.is_reassigning and current.target == tuple(replicas):
                continue  # already under way
            try:
                target = self._validate(key, replicas, allow_rf_change=True)
            except KafkaError as refused:
                code, message = refused.error_code, refused.message
            else:
                code, message = await self._start_guarded(key, target)
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
