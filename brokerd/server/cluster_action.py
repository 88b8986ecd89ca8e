"""Which connections speak for a broker of the cluster: Kafka's CLUSTER_ACTION, by listener.

Kafka accepts LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown and follower
Fetches only from principals holding CLUSTER_ACTION on the cluster. brokerd does not
authenticate yet (PLAINTEXT only: every client is ANONYMOUS), so the listener is the
identity: a connection on the inter-broker or the control-plane listener is a broker, one on
any other listener is answered as Kafka answers a principal without the permission. The
protection is a listener of its own bound where only brokers reach it; with one listener for
everything, as Kafka without an authorizer, whoever reaches it is trusted.
"""

from __future__ import annotations

from .connection import current_listener


def broker_listener_names(config) -> frozenset[str]:
    names = {config.inter_broker_listener_name, config.control_plane_listener_name}
    return frozenset(name for name in names if name is not None)


def request_from_broker(config) -> bool:
    """The request being handled came in on a listener reserved for brokers."""
    listener = current_listener.get()
    return listener is not None and listener in broker_listener_names(config)
