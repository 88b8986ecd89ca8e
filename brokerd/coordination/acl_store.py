"""ACLs in ZooKeeper, as Kafka's AclAuthorizer keeps them, and the broker's copy kept current.

Each resource pattern is one znode (`/kafka-acl/Topic/orders`,
`/kafka-acl-extended/prefixed/Group/app-`) holding `{"version":1,"acls":[...]}`. A writer
updates the node conditionally on its version (retrying on a concurrent change), deletes it
when its last ACL goes, and then adds a sequential change notification naming the resource
(`/kafka-acl-changes/acl_changes_<seq>`: `TOPIC:orders`; `/kafka-acl-extended-changes/...`:
the ExtendedAclChangeEvent JSON). Every broker watches both change paths and rereads only the
resources the new notifications name (never everything); notifications older than 15 minutes
are purged, as Kafka's ZkNodeChangeNotificationListener does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from brokerd.security.acl import (
    ACL_RESOURCE_TYPES,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
    decode_acls,
    decode_change,
    encode_acls,
    encode_extended_change,
    encode_literal_change,
)
from brokerd.security.authorizer import AclAuthorizer

from . import zk_data
from .zk_client import ZkClient

log = logging.getLogger(__name__)

CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener default
_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


def resource_path(pattern: ResourcePattern) -> str:
    return zk_data.acl_resource_path(
        pattern.pattern_type.name, pattern.resource_type.kafka_name, pattern.name
    )


def change_notification(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(sequential path prefix, payload) of the change notification for `pattern`."""
    prefix = zk_data.acl_change_prefix(pattern.pattern_type.name)
    if pattern.pattern_type == PatternType.LITERAL:
        return prefix, encode_literal_change(pattern)
    return prefix, encode_extended_change(pattern)


class AclStore:
    def __init__(
        self,
        zk: ZkClient,
        authorizer: AclAuthorizer,
        spawn: Callable[[Coroutine[Any, Any, None]], object] | None = None,
    ):
        self.zk = zk
        self.authorizer = authorizer
        self._spawn = spawn  # watch callbacks cannot await
        self._last_seen: dict[str, int] = {}  # change path -> last sequence applied
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._closed = False

    # Loading and change notifications ----------------------------------------------------
    async def start(self) -> None:
        """Watch the change paths (first, so nothing written meanwhile is missed), then read
        every ACL into the authorizer."""
        for path in zk_data.ACL_PATHS:
            await self.zk.ensure_path(path)
        for changes in (zk_data.ACL_LITERAL_CHANGES, zk_data.ACL_EXTENDED_CHANGES):
            children = await self._watch_changes(changes)
            self._last_seen[changes] = max((_sequence(c) for c in children), default=-1)
        await self.load_all()

    def close(self) -> None:
        self._closed = True

    async def resync(self) -> None:
        """After a new ZooKeeper session (the old one's watches are gone): watch again and
        reread everything, as Kafka's listener does when its session is re-established."""
        for changes in (zk_data.ACL_LITERAL_CHANGES, zk_data.ACL_EXTENDED_CHANGES):
            async with self._locks[changes]:
                children = await self._watch_changes(changes)
                self._last_seen[changes] = max((_sequence(c) for c in children), default=-1)
        await self.load_all()

    async def load_all(self) -> None:
        """Read every ACL (one pipelined batch per level, not a round trip per resource),
        then replace the authorizer's copy (patterns gone are dropped)."""
        types: list[tuple[PatternType, ResourceType, str]] = []
        for pattern_type in _PATTERN_TYPES:
            root = zk_data.acl_root(pattern_type.name)
            for type_name in await self.zk.children(root):
                try:
                    types.append(
                        (pattern_type, ResourceType.parse(type_name), f"{root}/{type_name}")
                    )
                except ValueError:
                    continue
        names = await self.zk.children_many([base for _, _, base in types])
        patterns = [
            ResourcePattern(resource_type, name, pattern_type)
            for (pattern_type, resource_type, _), children in zip(types, names, strict=True)
            for name in children or ()
        ]
        nodes = await self.zk.get_many([resource_path(p) for p in patterns])
        found: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for pattern, node in zip(patterns, nodes, strict=True):
            if node is None:
                continue
            try:
                found[pattern] = decode_acls(node[0])
            except ValueError:
                log.warning("ignoring unreadable ACLs at %s", resource_path(pattern))
        for pattern in self.authorizer.patterns():
            if pattern not in found:
                self.authorizer.set_acls(pattern, ())
        for pattern, entries in found.items():
            self.authorizer.set_acls(pattern, entries)

    async def _watch_changes(self, path: str) -> list[str]:
        def fired(*_: object) -> None:
            if not self._closed and self._spawn is not None:
                self._spawn(self._process_changes(path))

        return await self.zk.children(path, watch=fired)

    async def _process_changes(self, path: str) -> None:
        """A watch fired: re-arm it and apply the notifications not seen yet (one pass at a
        time per path; a change during a pass fires the re-armed watch again)."""
        async with self._locks[path]:
            await self._apply_new(path, await self._watch_changes(path))

    async def _apply_new(self, path: str, children: list[str]) -> None:
        extended = path == zk_data.ACL_EXTENDED_CHANGES
        fresh = sorted(
            (c for c in children if _sequence(c) > self._last_seen.get(path, -1)), key=_sequence
        )
        if not fresh:
            return
        # One batch for the notifications, one for the resources they name.
        notes = await self.zk.get_many([f"{path}/{child}" for child in fresh])
        self._last_seen[path] = max(self._last_seen.get(path, -1), _sequence(fresh[-1]))
        patterns: dict[ResourcePattern, None] = {}
        for child, note in zip(fresh, notes, strict=True):
            if note is None:
                continue
            try:
                patterns[decode_change(note[0], extended)] = None
            except (ValueError, KeyError, TypeError):
                log.warning("ignoring an unreadable ACL change notification %s/%s", path, child)
        nodes = await self.zk.get_many([resource_path(p) for p in patterns])
        for pattern, node in zip(patterns, nodes, strict=True):
            try:
                entries = decode_acls(node[0]) if node is not None else frozenset()
            except ValueError:
                log.warning("ignoring unreadable ACLs at %s", resource_path(pattern))
                entries = frozenset()
            self.authorizer.set_acls(pattern, entries)
        log.info("applied %d ACL change notification(s) from %s", len(fresh), path)
        await self._purge_obsolete(path, sorted(children, key=_sequence))

    async def _purge_obsolete(self, path: str, children: list[str]) -> None:
        """Delete notifications older than 15 minutes, oldest first, up to the first young one."""
        now_ms = time.time() * 1000
        for child in children:
            created = await self.zk.creation_time_ms(f"{path}/{child}")
            if created is None:
                continue
            if now_ms - created < CHANGE_EXPIRATION_MS:
                return
            await self.zk.delete(f"{path}/{child}")

    # Reads and writes --------------------------------------------------------------------
    async def _read(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        """The pattern's ACLs and the node's version (-1: no node)."""
        found = await self.zk.get(resource_path(pattern))
        if found is None:
            return frozenset(), -1
        try:
            return decode_acls(found[0]), found[1]
        except ValueError:
            log.warning("ignoring unreadable ACLs at %s", resource_path(pattern))
            return frozenset(), found[1]

    async def update(
        self,
        pattern: ResourcePattern,
        change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> frozenset[AccessControlEntry]:
        """Read-modify-write one pattern's node (conditional on its version, retried on a
        concurrent change), then notify every broker; the new ACLs."""
        path = resource_path(pattern)
        while True:
            current, version = await self._read(pattern)
            wanted = frozenset(change(current))
            if wanted == current:
                self.authorizer.set_acls(pattern, current)
                return current
            try:
                if not wanted:
                    await self.zk.delete_at_version(path, version)
                elif version < 0:
                    await self.zk.create_raw(path, encode_acls(wanted))
                else:
                    await self.zk.set_raw(path, encode_acls(wanted), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
            break
        prefix, payload = change_notification(pattern)
        await self.zk.create_sequential_raw(prefix, payload)
        self.authorizer.set_acls(pattern, wanted)
        return wanted

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add ACLs (already validated), grouped by resource pattern."""
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = defaultdict(set)
        for binding in bindings:
            by_pattern[binding.pattern].add(binding.entry)
        for pattern, entries in by_pattern.items():

            def add(
                current: frozenset[AccessControlEntry], new: set[AccessControlEntry] = entries
            ) -> frozenset[AccessControlEntry]:
                return current | new

            await self.update(pattern, add)

    async def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter the bindings it removed (a binding
        more than one filter matches counts for the first, as in Kafka)."""
        patterns = set(self.authorizer.patterns())
        for acl_filter in filters:  # a filter naming one exact pattern reads it even if not cached
            exact = _exact_pattern(acl_filter)
            if exact is not None:
                patterns.add(exact)
        deleted: dict[AclBinding, int] = {}
        for pattern in patterns:
            matching = [(i, f) for i, f in enumerate(filters) if f.matches_pattern(pattern)]
            if not matching:
                continue

            def remove(current, pattern=pattern, matching=matching):
                keep = set()
                for entry in current:
                    index = next((i for i, f in matching if f.matches_entry(entry)), None)
                    if index is None:
                        keep.add(entry)
                    else:
                        deleted.setdefault(AclBinding(pattern, entry), index)
                return frozenset(keep)

            await self.update(pattern, remove)
        out: list[list[AclBinding]] = [[] for _ in filters]
        for binding, index in deleted.items():
            out[index].append(binding)
        return out


def _exact_pattern(acl_filter: AclBindingFilter) -> ResourcePattern | None:
    if (
        acl_filter.name is not None
        and acl_filter.resource_type in ACL_RESOURCE_TYPES
        and acl_filter.pattern_type in _PATTERN_TYPES
    ):
        return ResourcePattern(acl_filter.resource_type, acl_filter.name, acl_filter.pattern_type)
    return None


def _sequence(child: str) -> int:
    try:
        return int(child.removeprefix(zk_data.ACL_CHANGE_PREFIX))
    except ValueError:
        return -1
