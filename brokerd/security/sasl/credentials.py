"""SCRAM credentials in ZooKeeper as Kafka keeps them: /config/users/<sanitized user> holds
{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=..."}}
and a /config/changes/config_change_<seq> notification {"version":2,"entity_path":"users/<u>"}
tells brokers it changed. Brokers keep, as Kafka's CredentialCache does, what they read:
the names under /config/users and each looked-up user's node, each under a ZooKeeper watch
that drops it when it changes, and all of it when the ZooKeeper session changes (the old
session's watches are gone). So an authentication costs no ZooKeeper read once the user was
seen, and a name that is not a user none at all: a stream of unauthenticated client-first
messages cannot turn into a stream of ZooKeeper reads."""

from __future__ import annotations

import logging
from collections.abc import Callable
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
    """Looks a user's credential up for ScramServer, through the broker's ZkClient, with the
    watched cache the module's docstring describes."""

    def __init__(self, zk):
        self.zk = zk
        self._session: int | None = None  # the ZooKeeper session the cache was filled in
        self._names: set[str] | None = None  # sanitized names under /config/users
        self._names_generation = 0
        self._nodes: dict[str, Any] = {}  # sanitized name -> the node's data
        self._generations: dict[str, int] = {}  # bumped by each watch that fired

    async def __call__(self, user: str, mechanism: str) -> ScramCredential | None:
        if mechanism not in MECHANISMS:
            return None
        data = await self._node(sanitize(user))
        if data is None:
            return None
        return credential_from_node(data, mechanism)

    def _current_session(self) -> int | None:
        """The ZooKeeper session, None while disconnected (read through, keep nothing); a
        new session empties the cache, since the watches that kept it true died with the
        old one."""
        session = self.zk.session_id
        if session != self._session:
            self._session = session
            self._names = None
            self._nodes.clear()
            self._generations.clear()
        return session

    def _still(self, session: int | None) -> bool:
        """Whether what was read (and watched) in `session` may be kept."""
        return session is not None and self._current_session() == session

    async def _node(self, name: str) -> Any:
        session = self._current_session()
        if name in self._nodes:
            return self._nodes[name]
        names = self._names
        if names is None:
            generation = self._names_generation
            names = set(await self.zk.children(USERS_PATH, watch=self._names_changed))
            if generation == self._names_generation and self._still(session):
                self._names = names
        if name not in names:
            return None
        generation = self._generations.get(name, 0)
        found = await self.zk.get_json(f"{USERS_PATH}/{name}", watch=self._node_changed(name))
        if found is None:
            return None
        if generation == self._generations.get(name, 0) and self._still(session):
            self._nodes[name] = found[0]
        return found[0]

    def _names_changed(self, *_: object) -> None:
        self._names_generation += 1
        self._names = None

    def _node_changed(self, name: str) -> Callable[..., None]:
        def changed(*_: object) -> None:
            self._generations[name] = self._generations.get(name, 0) + 1
            self._nodes.pop(name, None)

        return changed
