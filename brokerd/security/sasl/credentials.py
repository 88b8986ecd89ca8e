"""SCRAM credentials in ZooKeeper as Kafka keeps them: /config/users/<sanitized user> holds
{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=..."}}
and a /config/changes/config_change_<seq> notification {"version":2,"entity_path":"users/<u>"}
tells brokers it changed. Brokers read the node at each authentication (no cache to go stale)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from .scram import MECHANISMS, ScramCredential

log = logging.getLogger(__name__)

USERS_PATH = "/config/users"


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: URL-encoded, `*` and `~` encoded as well."""
    return quote(name, safe="").replace("~", "%7E")


def user_path(user: str) -> str:
    return f"{USERS_PATH}/{sanitize(user)}"


def credential_from_node(data: Any, mechanism: str) -> ScramCredential | None:
    config = data.get("config") if isinstance(data, dict) else None
    text = config.get(mechanism) if isinstance(config, dict) else None
    if not isinstance(text, str):
        return None
    try:
        return ScramCredential.from_text(text)
    except ValueError as exc:
        log.warning("ignoring a malformed %s credential: %s", mechanism, exc)
        return None


class ZkScramCredentials:
    """Looks a user's credential up for ScramServer, through the broker's ZkClient."""

    def __init__(self, zk):
        self.zk = zk

    async def __call__(self, user: str, mechanism: str) -> ScramCredential | None:
        if mechanism not in MECHANISMS:
            return None
        found = await self.zk.get_json(user_path(user))
        if found is None:
            return None
        return credential_from_node(found[0], mechanism)
