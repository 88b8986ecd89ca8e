"""Leaders and ISRs of existing partitions (Kafka's PartitionStateMachine with its elections).

New states when brokers go or come, for a broker in controlled shutdown, and on demand
(ElectLeaders, preferred-leader rebalancing), each written through the PartitionStateWriter;
then LeaderAndIsr to the replicas and UpdateMetadata to the brokers. The controller calls
these inside its events: nothing here takes the event lock or checks office.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Set

from brokerd.config import BrokerConfig
from brokerd.protocol.errors import ErrorCode

from . import election
from .channel import BrokerRequests, PartitionStateEntry
from .controller_context import ControllerContext
from .metadata import MetadataCache
from .partition_states import PartitionStateWriter
from .zk_data import PartitionState

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


class PartitionStateMachine:
    def __init__(
        self,
        cache: MetadataCache,
        context: ControllerContext,
        states: PartitionStateWriter,
        requests: BrokerRequests,
        config: BrokerConfig | None = None,
    ):
        self.cache = cache
        self.context = context
        self.states = states
        self.requests = requests
        self.config = config

    def all_partitions(self) -> list[PartitionKey]:
        return [
            (info.name, p)
            for info in list(self.cache.topics.values())
            for p in sorted(info.assignment)
        ]

    # Brokers gone or back ---------------------------------------------------------------
    async def elect_offline(
        self, live: Set[int], dead: Set[int] = frozenset()
    ) -> list[PartitionKey]:
        """New states for partitions whose leader is not live (elected from the ISR) or
        whose ISR names a dead broker; written conditionally, re-read on a version clash."""
        changes = []
        for topic, index in self.all_partitions():
            info = self.cache.topic(topic)
            if info is None or index not in info.states:
                continue
            state = info.states[index]
            involved = state.leader not in live or any(b in dead for b in state.isr)
            if not involved:
                continue
            replicas = info.assignment[index]

            def compute(
                current: PartitionState, t: str = topic, rs: list[int] = replicas
            ) -> PartitionState | None:
                return self.next_state(t, rs, current, live)

            changes.append((topic, index, compute))
        return await self.states.write_many(changes)

    def next_state(
        self, topic: str, replicas: list[int], state: PartitionState, live: Set[int]
    ) -> PartitionState | None:
        live_isr = [r for r in state.isr if r in live]
        if state.leader in live:
            if live_isr == state.isr:
                return None
            leader, isr = state.leader, live_isr  # a follower died: it leaves the ISR
        else:
            candidates = [
                r for r in replicas if r in live_isr and r not in self.context.shutting_down
            ]
            candidates = candidates or [r for r in replicas if r in live_isr]
            if candidates:
                leader, isr = candidates[0], live_isr
            elif self.unclean_allowed(topic) and any(r in live for r in replicas):
                leader = next(r for r in replicas if r in live)
                isr = [leader]
                log.warning("controller: unclean leader election of %d for %s", leader, topic)
            else:
                if state.leader == -1:
                    return None
                leader, isr = -1, state.isr  # offline until an ISR member returns
        return PartitionState(
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=self.context.epoch,
        )

    def unclean_allowed(self, topic: str) -> bool:
        """unclean.leader.election.enable: the topic's value, else the broker's."""
        info = self.cache.topic(topic)
        value = (info.configs if info else {}).get("unclean.leader.election.enable")
        if value is None and self.config is not None:
            return self.config.log.unclean_leader_election_enable
        return str(value).lower() == "true"

    # Controlled shutdown ----------------------------------------------------------------
    async def move_leadership_off(self, broker_id: int) -> list[PartitionKey]:
        """Leadership of replicated partitions away from `broker_id` (in controlled
        shutdown) and it out of their ISRs; the partitions it still leads."""
        live = set(self.context.live)
        changes = []
        for topic, index in self.all_partitions():
            info = self.cache.topic(topic)
            if info is None:
                continue
            replicas = info.assignment.get(index, [])
            if broker_id not in replicas or len(replicas) < 2 or index not in info.states:
                continue

            def away(state: PartitionState, rs: list[int] = replicas) -> PartitionState | None:
                return election.away_from(
                    broker_id, rs, state, live, self.context.shutting_down, self.context.epoch
                )

            changes.append((topic, index, away))
        changed = await self.states.write_many(changes)
        remaining = []
        for topic, index, _away in changes:
            state = self.cache.partition_state(topic, index)
            if state is not None and state.leader == broker_id:
                remaining.append((topic, index))
        self.send_leader_and_isr(live, changed)
        self.send_update_metadata(live, changed)
        log.info(
            "controller: controlled shutdown of %d moved %d partitions, %d remain",
            broker_id,
            len(changed),
            len(remaining),
        )
        return remaining

    # Elections on demand ----------------------------------------------------------------
    async def elect_leaders(
        self, election_type: int, partitions: Iterable[PartitionKey] | None
    ) -> dict[PartitionKey, ErrorCode]:
        """Per partition: NONE when a new leader was written, else why not."""
        strategy = election.preferred if election_type == election.PREFERRED else election.unclean
        keys = self.all_partitions() if partitions is None else partitions
        live = set(self.context.live)
        results: dict[PartitionKey, ErrorCode] = {}
        changes = []
        outcomes: dict[PartitionKey, list[PartitionState | ErrorCode]] = {}
        for topic, index in keys:
            info = self.cache.topic(topic)
            if info is None or index not in info.states:
                results[(topic, index)] = ErrorCode.unknown_topic_or_partition
                continue
            outcome: list[PartitionState | ErrorCode] = []
            outcomes[(topic, index)] = outcome
            results[(topic, index)] = ErrorCode.unknown_server_error  # unless written below
            replicas = info.assignment.get(index, [])

            def choose(
                state: PartitionState,
                rs: list[int] = replicas,
                out: list[PartitionState | ErrorCode] = outcome,
            ) -> PartitionState | None:
                found = strategy(rs, state, live, self.context.shutting_down, self.context.epoch)
                out[:] = [found]
                return found if isinstance(found, PartitionState) else None

            changes.append((topic, index, choose))
        changed = await self.states.write_many(changes)
        written = set(changed)
        for key in changed:
            results[key] = ErrorCode.none
        for key, outcome in outcomes.items():
            if key not in written and outcome and isinstance(outcome[0], ErrorCode):
                results[key] = outcome[0]
        self.send_leader_and_isr(live, changed)
        self.send_update_metadata(live, changed)
        return results

    def imbalanced_partitions(self, threshold_percent: int) -> list[PartitionKey]:
        """Partitions to hand back to their preferred leader: for every broker whose share
        of preferred partitions led elsewhere exceeds `threshold_percent`
        (leader.imbalance.per.broker.percentage), those whose preferred replica is live, in
        the ISR and not stopping."""
        by_preferred: dict[int, list[PartitionKey]] = {}
        for topic, index in self.all_partitions():
            info = self.cache.topic(topic)
            if info is None:
                continue
            replicas = info.assignment.get(index, [])
            if replicas and index in info.states:
                by_preferred.setdefault(replicas[0], []).append((topic, index))
        out = []
        for broker_id, keys in by_preferred.items():
            if broker_id not in self.context.live or broker_id in self.context.shutting_down:
                continue
            elsewhere = [
                (t, p)
                for t, p in keys
                if self.cache.topics[t].states[p].leader != broker_id
                and broker_id in self.cache.topics[t].states[p].isr
            ]
            if elsewhere and len(elsewhere) * 100 > threshold_percent * len(keys):
                out.extend(elsewhere)
        return out

    # Requests to brokers ----------------------------------------------------------------
    def send_leader_and_isr(self, brokers: Set[int], partitions: Iterable[PartitionKey]) -> None:
        """LeaderAndIsr to those of `brokers` (if live) that replicate the partitions."""
        by_broker: dict[int, list[PartitionStateEntry]] = {}
        for topic, index in partitions:
            info = self.cache.topic(topic)
            if info is None or index not in info.states:
                continue
            replicas = info.assignment.get(index, [])
            for broker_id in replicas:
                if broker_id in brokers and broker_id in self.context.live:
                    by_broker.setdefault(broker_id, []).append(
                        (topic, index, info.states[index], replicas)
                    )
        for broker_id, states in by_broker.items():
            self.requests.send_leader_and_isr(broker_id, states)

    def send_update_metadata(self, brokers: Set[int], partitions: Iterable[PartitionKey]) -> None:
        """UpdateMetadata with the partitions' states to each of `brokers` that is live."""
        states: list[PartitionStateEntry] = []
        for topic, index in partitions:
            info = self.cache.topic(topic)
            if info is not None and index in info.states:
                states.append((topic, index, info.states[index], info.assignment.get(index, [])))
        live = self.context.live
        self.requests.send_update_metadata([b for b in brokers if b in live], states)
