"""Broker security configs (Kafka's BrokerSecurityConfigs and PasswordEncoderConfigs).

brokerd takes their definitions as Kafka writes them (brokerd.config.catalog); this is the
typed view of the ones read without a listener prefix. Per-listener values
(`listener.name.<l>.ssl.*`, `.sasl.*`) are looked up by name where the listener is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Kafka-defined security configs brokerd acts on (TLS listeners, SASL, principals,
# KIP-368 re-authentication, the authorizer), also as `listener.name.<l>.<config>`.
# DescribeConfigs must not call them "accepted but not applied".
APPLIED_SECURITY_CONFIGS = frozenset(
    {
        "authorizer.class.name",  # the ACL authorizer (brokerd.security.authorizer)
        "connection.failed.authentication.delay.ms",
        "connections.max.reauth.ms",
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.server.max.receive.size",
        "security.inter.broker.protocol",
        "ssl.cipher.suites",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.principal.mapping.rules",
        "ssl.protocol",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    }
)


@dataclass(frozen=True)
class SecurityConfig:
    sasl_mechanism_inter_broker_protocol: str
    sasl_server_max_receive_size: int
    ssl_principal_mapping_rules: str
    password_encoder_secret: str | None = field(repr=False)  # a secret: kept out of logs
