"""The broker's SCRAM credential lookup over a real ZooKeeper: once a user was seen, an
authentication reads nothing from ZooKeeper, nor does a name that is no user; a changed
password, a deleted user and a new user are seen through ZooKeeper's watches; a new session
starts afresh. (Before: one ZooKeeper read per client-first message, unauthenticated ones
included.)"""

from __future__ import annotations

import asyncio
import time

import pytest

from brokerd.coordination.zk_client import ZkClient
from brokerd.security.sasl.credentials import USERS_PATH, ZkScramCredentials, user_path
from brokerd.security.sasl.scram import make_credential
from tests.harness import java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

MECHANISM = "SCRAM-SHA-512"


def node(password: str) -> dict:
    credential = make_credential(MECHANISM, password, 4096)
    return {"version": 1, "config": {MECHANISM: credential.to_text()}}


async def eventually(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "not seen in time"
        await asyncio.sleep(0.05)


async def test_lookups_are_served_from_a_watched_cache(zookeeper):
    zk = ZkClient(zookeeper.connect, "/scram-cache", 6000, connect_ms=10000)
    await zk.start()
    try:
        await zk.ensure_path(USERS_PATH)
        await zk.create_json(user_path("alice"), node("alice-secret"))
        lookup = ZkScramCredentials(zk)

        first = await lookup("alice", MECHANISM)
        assert first is not None
        before = zk.reads
        for _ in range(50):
            assert await lookup("alice", MECHANISM) == first
            assert await lookup(f"nobody-{_}", MECHANISM) is None
        assert zk.reads == before  # neither a known user nor an unknown name reads ZooKeeper

        # A new password: the node's watch drops the old credential.
        await zk.set_json(user_path("alice"), node("new-secret"))

        async def changed() -> bool:
            return await lookup("alice", MECHANISM) not in (None, first)

        await eventually(changed)

        # A new user is found (the watch on /config/users' children), a deleted one is gone.
        await zk.create_json(user_path("bob"), node("bob-secret"))

        async def bob_found() -> bool:
            return await lookup("bob", MECHANISM) is not None

        await eventually(bob_found)
        await zk.delete(user_path("alice"))

        async def alice_gone() -> bool:
            return await lookup("alice", MECHANISM) is None

        await eventually(alice_gone)

        # The deletion fires two watches (alice's node and the names'), the second possibly
        # after alice_gone already held, and each costs one read at the next lookup; once
        # both have fired, lookups read nothing again.
        async def served_from_the_cache() -> bool:
            reads = zk.reads
            assert await lookup("bob", MECHANISM) is not None
            assert await lookup("alice", MECHANISM) is None
            return zk.reads == reads

        await eventually(served_from_the_cache)
    finally:
        await zk.stop()


async def test_a_new_session_reads_again(zookeeper):
    zk = ZkClient(zookeeper.connect, "/scram-cache-session", 6000, connect_ms=10000)
    await zk.start()
    try:
        await zk.ensure_path(USERS_PATH)
        await zk.create_json(user_path("carol"), node("carol-secret"))
        lookup = ZkScramCredentials(zk)
        assert await lookup("carol", MECHANISM) is not None
        # As if the session had been replaced: what was kept under the old one's watches
        # is dropped and read again.
        lookup._session = -1
        before = zk.reads
        assert await lookup("carol", MECHANISM) is not None
        assert zk.reads > before
    finally:
        await zk.stop()
