"""Cluster secrets (SASL passwords, TLS private keys) encrypted at rest.

The database holds only Fernet tokens (AES-128-CBC with an HMAC-SHA256), under a key from
DASHBOARD_CLUSTER_SECRETS_KEY or, when that is unset, derived from Django's SECRET_KEY, so
a copy of the database alone reveals no cluster's credentials. The plaintext exists only in
the process that connects, never in a form, an API answer or a log line.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class ClusterSecretError(Exception):
    """A stored secret cannot be read back (the key it was sealed with is gone)."""


def _fernet() -> Fernet:
    configured = settings.CLUSTER_SECRETS_KEY
    if configured:
        return Fernet(configured.encode())
    # A key of its own purpose: the SECRET_KEY's other uses (sessions, signing) never see it.
    digest = hashlib.sha256(b"brokerd cluster secrets\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def unseal(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except (InvalidToken, ValueError) as exc:
        raise ClusterSecretError(
            "a stored cluster secret cannot be decrypted: the secrets key changed since it "
            "was saved; enter the secret again"
        ) from exc
