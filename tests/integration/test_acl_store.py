"""brokerd.coordination.acl_store on a real ZooKeeper, as two brokers would use it: ACLs
written by one store are applied by the other from the change notifications alone (it
rereads only the resources they name, never every ACL), concurrent writers both land
(conditional updates retried), and a node whose last ACL goes is deleted."""

from __future__ import annotations

import asyncio
import itertools

from brokerd.coordination.acl_store import AclStore
from brokerd.coordination.zk_client import ZkClient
from brokerd.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from brokerd.security.authorizer import AclAuthorizer

_chroots = itertools.count(1)


def entry(principal: str, op=AclOperation.READ) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)


def topic(name: str, pattern=PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pattern)


async def until(condition, timeout: float = 10.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def stores(zookeeper, count: int):
    chroot = f"/acl-store-{next(_chroots)}"
    out = []
    for _ in range(count):
        zk = ZkClient(zookeeper.connect, chroot, 10000, 30000)
        await zk.start()
        tasks: set[asyncio.Task] = set()

        def spawn(coroutine, tasks=tasks):
            task = asyncio.get_running_loop().create_task(coroutine)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            return task

        store = AclStore(zk, AclAuthorizer(), spawn=spawn)
        await store.start()
        out.append(store)
    return out


async def close(all_stores) -> None:
    for store in all_stores:
        store.close()
        await store.zk.stop()


def test_changes_reach_the_other_store_reading_only_what_changed(zookeeper):
    async def run():
        writer, reader = await stores(zookeeper, 2)
        try:
            many = [AclBinding(topic(f"t{i}"), entry("User:a")) for i in range(30)]
            await writer.create(many)
            assert await until(lambda: len(reader.authorizer.patterns()) == 30)
            reads_before = reader.zk.reads
            prefixed = topic("app-", PatternType.PREFIXED)
            await writer.create([AclBinding(prefixed, entry("User:b", AclOperation.WRITE))])
            assert await until(lambda: bool(reader.authorizer.acls(prefixed)))
            assert reader.authorizer.authorize(
                "User:b", "1.2.3.4", AclOperation.WRITE, ResourceType.TOPIC, "app-x"
            )
            # The notification and the one resource (plus re-arming the watch), not 31 nodes.
            assert reader.zk.reads - reads_before <= 4
            removed = await writer.delete(
                [AclBindingFilter(resource_type=ResourceType.TOPIC, name="t0")]
            )
            assert [b.pattern for b in removed[0]] == [topic("t0")]
            assert await until(lambda: not reader.authorizer.acls(topic("t0")))
            assert not await writer.zk.exists("/kafka-acl/Topic/t0")
        finally:
            await close([writer, reader])

    asyncio.run(run())


def test_concurrent_writers_to_one_resource_both_land(zookeeper):
    async def run():
        first, second = await stores(zookeeper, 2)
        try:
            pattern = topic("shared")
            await asyncio.gather(
                *(
                    store.create([AclBinding(pattern, entry(f"User:u{i}"))])
                    for i, store in enumerate([first, second] * 5)
                )
            )
            expected = {entry(f"User:u{i}") for i in range(10)}
            fresh = AclAuthorizer()
            await AclStore(first.zk, fresh).load_all()
            assert fresh.acls(pattern) == expected
            assert await until(lambda: second.authorizer.acls(pattern) == expected)
        finally:
            await close([first, second])

    asyncio.run(run())
