"""Which requests speak for a broker of the cluster: Kafka's CLUSTER_ACTION.

Kafka accepts LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown and follower
Fetches only from principals holding CLUSTER_ACTION on the cluster. With an authorizer
(`authorizer.class.name`) that is the check: the principal (a broker's SASL user or
certificate, normally in `super.users`) needs CLUSTER_ACTION on `kafka-cluster`, on any
listener. Without one, the listener is the identity: a connection on the inter-broker or the
control-plane listener is a broker, one on any other listener is answered as Kafka answers a
principal without the permission; with one listener for everything, whoever reaches it is
trusted, as in Kafka without an authorizer.
"""

from __future__ import annotations

from brokerd.security.acl import AclOperation

from .authorization import NO_AUTHORIZER, RequestAuthorizer
from .connection import current_listener


def broker_listener_names(config) -> frozenset[str]:
    names = {config.inter_broker_listener_name, config.control_plane_listener_name}
    return frozenset(name for name in names if name is not None)


def request_from_broker(config, auth: RequestAuthorizer = NO_AUTHORIZER) -> bool:
    """The request being handled may act for a broker: CLUSTER_ACTION on the cluster with
    an authorizer, else it came in on a listener reserved for brokers."""
    if auth.enabled:
        return auth.cluster(AclOperation.CLUSTER_ACTION)
    listener = current_listener.get()
    return listener is not None and listener in broker_listener_names(config)
