"""SCRAM users through the Admin API (DescribeUserScramCredentials, AlterUserScramCredentials,
KIP-554), as Kafka's Admin client calls them: the client salts and hashes the password
(PBKDF2 with the mechanism's hash) and sends only the salted password, never the password.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.security.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, salted_password

from .errors import KafkaResponseError, check
from .requests import Nested
from .results import raise_for_errors

if TYPE_CHECKING:
    from .cluster import Cluster

DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
# Kafka's ScramMechanism types on the wire.
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {code: name for name, code in MECHANISM_TYPES.items()}
SALT_BYTES = 32


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str
    iterations: int


class ScramAdmin:
    cluster: Cluster

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[ScramCredentialInfo]]:
        """Every user with SCRAM credentials (or those named) and their mechanisms."""
        names = None if users is None else [Nested("UserName", name=u) for u in users]
        response = await self.cluster.call_any(DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": names})
        check(response.error_code, response.error_message, "DescribeUserScramCredentials")
        results: dict = {}
        for result in response.results:
            if result.error_code:
                results[result.user] = KafkaResponseError(
                    result.error_code, result.error_message, result.user
                )
                continue
            results[result.user] = [
                ScramCredentialInfo(MECHANISM_NAMES.get(int(c.mechanism), "UNKNOWN"), c.iterations)
                for c in result.credential_infos
            ]
        return raise_for_errors(results)

    async def upsert_user_scram_credential(
        self, user: str, mechanism: str, password: str, iterations: int = 8192
    ) -> None:
        """Create or replace the user's credential for `mechanism`."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {mechanism} is not one of {', '.join(MECHANISMS)}")
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be within [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
        salt = secrets.token_bytes(SALT_BYTES)
        upsertion = Nested(
            "ScramCredentialUpsertion",
            name=user,
            mechanism=MECHANISM_TYPES[mechanism],
            iterations=iterations,
            salt=salt,
            salted_password=salted_password(mechanism, password, salt, iterations),
        )
        await self._alter_scram({"deletions": [], "upsertions": [upsertion]}, user)

    async def delete_user_scram_credential(self, user: str, mechanism: str) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {mechanism} is not one of {', '.join(MECHANISMS)}")
        deletion = Nested(
            "ScramCredentialDeletion", name=user, mechanism=MECHANISM_TYPES[mechanism]
        )
        await self._alter_scram({"deletions": [deletion], "upsertions": []}, user)

    async def _alter_scram(self, values: dict, user: str) -> None:
        response = await self.cluster.call_any(ALTER_USER_SCRAM_CREDENTIALS, values)
        for result in response.results:
            check(result.error_code, result.error_message, f"AlterUserScramCredentials {user}")
