"""Broker security configs (Kafka's BrokerSecurityConfigs and PasswordEncoderConfigs).

brokerd takes their definitions as Kafka writes them (brokerd.config.catalog); this is the
typed view of the ones read without a listener prefix. Per-listener values
(`listener.name.<l>.ssl.*`, `.sasl.*`) are looked up by name where the listener is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SecurityConfig:
    sasl_mechanism_inter_broker_protocol: str
    sasl_server_max_receive_size: int
    ssl_principal_mapping_rules: str
    password_encoder_secret: str | None = field(repr=False)  # a secret: kept out of logs
