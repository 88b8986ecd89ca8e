"""Member liveness timers (Kafka's DelayedHeartbeat): a member that neither heartbeats nor
waits on the coordinator within its session timeout is expired, and a member id handed out
with MEMBER_ID_REQUIRED (KIP-394) lapses if the member does not join with it in time.

The timers are loop timers hanging off the group and its members; what expiry means for
the group is the coordinator's, told through the two callbacks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .group import Group, Member

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


class HeartbeatTimers:
    def __init__(
        self,
        is_current: Callable[[Group], bool],
        on_member_expired: Callable[[Group, Member], None],
        on_pending_member_expired: Callable[[Group, str], None],
    ):
        """`is_current(group)` says whether the group is still served here (a timer of an
        unloaded or deleted group does nothing)."""
        self._is_current = is_current
        self._on_member_expired = on_member_expired
        self._on_pending_member_expired = on_pending_member_expired

    # Members --------------------------------------------------------------------------
    def schedule(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        """(Re)start the member's session: it expires after `timeout_ms`, by default its
        session timeout, unless scheduled again."""
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        delay = (member.session_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        member.heartbeat_timer = asyncio.get_running_loop().call_later(
            delay, self._expired, group, member.member_id, time.monotonic()
        )

    def cancel(self, member: Member) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _expired(self, group: Group, member_id: str, scheduled_at: float) -> None:
        if not self._is_current(group) or not group.has(member_id):
            return
        member = group.get(member_id)
        member.heartbeat_timer = None
        new_and_stuck = (
            member.is_new and (time.monotonic() - scheduled_at) * 1000 >= NEW_MEMBER_JOIN_TIMEOUT_MS
        )
        if (member.is_awaiting_join or member.is_awaiting_sync) and not new_and_stuck:
            self.schedule(group, member)  # waiting on us is not being dead
            return
        log.info(
            "member %s of group %s failed to heartbeat; removing it", member_id, group.group_id
        )
        self._on_member_expired(group, member)

    # Pending members (KIP-394) --------------------------------------------------------
    def schedule_pending(self, group: Group, member_id: str, timeout_ms: int) -> None:
        group.pending_timers[member_id] = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self._pending_expired, group, member_id
        )

    def cancel_pending(self, group: Group, member_id: str) -> None:
        timer = group.pending_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _pending_expired(self, group: Group, member_id: str) -> None:
        group.pending_timers.pop(member_id, None)
        self._on_pending_member_expired(group, member_id)
