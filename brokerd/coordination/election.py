"""Leader choices the controller makes on request, as Kafka's election strategies do.

Each function takes a partition's assignment and current state and returns the next state
(leader epoch bumped) or, when nothing may change, the Kafka error that says why. The
controller writes the result conditionally and sends LeaderAndIsr.
"""

from __future__ import annotations

from collections.abc import Set

from brokerd.protocol.errors import ErrorCode

from .zk_data import PartitionState

PREFERRED = 0
UNCLEAN = 1


def _next(state: PartitionState, leader: int, isr: list[int], epoch: int) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr, controller_epoch=epoch
    )


def preferred(
    replicas: list[int],
    state: PartitionState,
    live: Set[int],
    shutting_down: Set[int],
    controller_epoch: int,
) -> PartitionState | ErrorCode:
    """The first assigned replica leads again if it is live and in the ISR."""
    if not replicas:
        return ErrorCode.unknown_topic_or_partition
    wanted = replicas[0]
    if state.leader == wanted:
        return ErrorCode.election_not_needed
    if wanted not in live or wanted not in state.isr or wanted in shutting_down:
        return ErrorCode.preferred_leader_not_available
    return _next(state, wanted, list(state.isr), controller_epoch)


def unclean(
    replicas: list[int],
    state: PartitionState,
    live: Set[int],
    shutting_down: Set[int],
    controller_epoch: int,
) -> PartitionState | ErrorCode:
    """For a partition without a live leader: a live ISR member if any, else any live
    replica (which may lose acknowledged records: the operator asked for it)."""
    if state.leader in live:
        return ErrorCode.election_not_needed
    usable = [r for r in replicas if r in live and r not in shutting_down]
    in_isr = [r for r in usable if r in state.isr]
    if in_isr:
        return _next(state, in_isr[0], [r for r in state.isr if r in live], controller_epoch)
    if usable:
        return _next(state, usable[0], [usable[0]], controller_epoch)
    return ErrorCode.eligible_leaders_not_available


def away_from(
    stopping: int,
    replicas: list[int],
    state: PartitionState,
    live: Set[int],
    shutting_down: Set[int],
    controller_epoch: int,
) -> PartitionState | None:
    """Controlled shutdown: lead from another live ISR member (in assignment order) and drop
    the stopping broker from the ISR; None when it neither leads nor is in the ISR, or
    when no other ISR member could take over (the partition then stays where it is)."""
    remaining = [r for r in state.isr if r != stopping and r in live]
    if state.leader == stopping:
        candidates = [r for r in replicas if r in remaining and r not in shutting_down]
        if not candidates:
            return None
        return _next(state, candidates[0], remaining, controller_epoch)
    if stopping in state.isr and remaining and state.leader in remaining:
        return _next(state, state.leader, remaining, controller_epoch)
    return None
