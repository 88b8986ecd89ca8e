"""How this broker reaches a peer's endpoint (replica fetchers, the controller's channel,
controlled shutdown): Kafka's inter-broker client settings, built from this broker's own
configs for the peer's listener. It sits above both brokerd.security (TLS contexts, SASL
credentials) and brokerd.client (the connection's settings type), so neither of those two
imports the other's side."""

from __future__ import annotations

from brokerd.client.connection import PLAINTEXT, ClientSecurity
from brokerd.config import BrokerConfig, Endpoint
from brokerd.security.sasl.settings import SASL_PROTOCOLS, inter_broker_credentials
from brokerd.security.tls import TLS_PROTOCOLS, client_context


def peer_security(config: BrokerConfig | None, endpoint: Endpoint | None) -> ClientSecurity:
    """How this broker connects to a peer's endpoint: plaintext unless its listener speaks
    TLS, else with a client context built from this broker's configs for that listener; on
    a SASL listener authenticated with sasl.mechanism.inter.broker.protocol and that
    listener's JAAS username/password, as Kafka's brokers do."""
    if config is None or endpoint is None:
        return PLAINTEXT
    protocol = endpoint.security_protocol
    context = None
    if protocol in TLS_PROTOCOLS:
        context = client_context(config, endpoint.listener_name)
    if protocol in SASL_PROTOCOLS:
        credentials = inter_broker_credentials(config, endpoint.listener_name)
        return ClientSecurity(
            protocol,
            ssl_context=context,
            sasl_mechanism=credentials.mechanism,
            sasl_username=credentials.username,
            sasl_password=credentials.password,
        )
    if context is None:
        return PLAINTEXT
    return ClientSecurity("SSL", ssl_context=context)
