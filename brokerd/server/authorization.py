"""The authorizer as request handlers use it: decisions for the principal and client address
of the request being handled (brokerd.server.connection's context variables), as Kafka's
AuthHelper does. Without `authorizer.class.name` every check passes, as in Kafka."""

from __future__ import annotations

from collections.abc import Iterable

from brokerd.coordination.acl_store import AclStore
from brokerd.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from brokerd.security.authorizer import AclAuthorizer, all_operations

from .connection import current_peer, current_principal

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
Op = AclOperation


def request_identity() -> tuple[str, str]:
    """(principal, client address) of the request being handled."""
    peer = current_peer.get()
    host = str(peer[0]) if peer else ""
    return current_principal.get(), host


class RequestAuthorizer:
    def __init__(self, authorizer: AclAuthorizer | None = None, store: AclStore | None = None):
        self.authorizer = authorizer
        self.store = store

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        if self.authorizer is None:
            return True
        principal, host = request_identity()
        return self.authorizer.authorize(principal, host, operation, resource_type, name)

    def cluster(self, operation: AclOperation) -> bool:
        return self.authorize(operation, CLUSTER, CLUSTER_NAME)

    def topic(self, operation: AclOperation, name: str) -> bool:
        return self.authorize(operation, TOPIC, name)

    def group(self, operation: AclOperation, name: str) -> bool:
        return self.authorize(operation, GROUP, name)

    def filter(
        self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> set[str]:
        """The names (deduplicated) the principal may do `operation` on."""
        unique = set(names)
        if self.authorizer is None:
            return unique
        principal, host = request_identity()
        return {
            name
            for name in unique
            if self.authorizer.authorize(principal, host, operation, resource_type, name)
        }

    def by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        if self.authorizer is None:
            return True
        principal, host = request_identity()
        return self.authorizer.authorize_by_resource_type(principal, host, operation, resource_type)

    def operations(self, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit field of one resource (all supported ones when
        there is no authorizer, as Kafka answers)."""
        if self.authorizer is None:
            return all_operations(resource_type)
        principal, host = request_identity()
        return self.authorizer.authorized_operations(principal, host, resource_type, name)


NO_AUTHORIZER = RequestAuthorizer()
