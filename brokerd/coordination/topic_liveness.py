"""Whether a topic may have partition directories made for it: ZooKeeper decides.

Events reach a broker late and out of order (its topic watch, a controller request queued
before a deletion); a directory made from one of them for a topic being deleted would
outlive the deletion. So before a broker creates a partition's first directory it asks
ZooKeeper, and its deletions are serialised with its creations (a deletion that starts
after this check waits for the creation and removes what it made).
"""

from __future__ import annotations

from . import zk_client, zk_data


async def topic_is_live(client: zk_client.ZkClient, name: str, topic_id: str | None = None) -> bool:
    """True while /brokers/topics/<name> exists (with `topic_id`, when given and recorded)
    and /admin/delete_topics/<name> does not.

    A deletion creates the marker first and removes it last, so a deletion in flight
    shows in one of the two reads, marker first."""
    if await client.exists(zk_data.delete_topic_path(name)):
        return False
    found = await client.get_json(zk_data.topic_path(name))
    if found is None or not isinstance(found[0], dict):
        return False
    recorded = found[0].get("topic_id")
    return topic_id is None or recorded is None or recorded == topic_id
