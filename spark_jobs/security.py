"""How the jobs reach a secured cluster: Kafka client properties become data source options
with Spark's Kafka prefix (kafka.security.protocol, kafka.sasl.mechanism,
kafka.sasl.jaas.config, kafka.ssl.truststore.location, ...), as Spark's own Kafka source
takes them, and those options become the brokerd client's ClientSecurity.

The jobs get the properties as a file (`--command-config`, like Kafka's tools) so that no
password is on a command line; stores are PEM files (ssl.*.type=PEM).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from brokerd.client.connection import ClientSecurity
from brokerd.config.properties import parse_properties
from brokerd.security.sasl.jaas import parse_jaas_config

from .offsets import option

PREFIX = "kafka."


def options_from_properties(path: str | Path) -> list[str]:
    """`kafka.<name>=<value>` for each client property in the file."""
    return [f"{PREFIX}{k}={v}" for k, v in parse_properties(Path(path).read_text()).items()]


def client_security(options: Mapping[str, str]) -> ClientSecurity:
    def get(name: str, default: str | None = None) -> str | None:
        return option(options, PREFIX + name, default)

    protocol = (get("security.protocol") or "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return ClientSecurity()
    settings: dict = {"security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        keystore = get("ssl.keystore.location")
        settings.update(
            ssl_cafile=get("ssl.truststore.location") or get("ssl.ca.location"),
            # A PEM key store holds the key and the certificate chain in one file.
            ssl_certfile=keystore,
            ssl_password=get("ssl.key.password"),
            ssl_check_hostname=get("ssl.endpoint.identification.algorithm", "https") != "",
        )
    if protocol.startswith("SASL_"):
        username, password = get("sasl.username"), get("sasl.password")
        if jaas := get("sasl.jaas.config"):
            login = parse_jaas_config(jaas).options
            username, password = login.get("username"), login.get("password")
        settings.update(
            sasl_mechanism=get("sasl.mechanism") or get("sasl.mechanisms") or "GSSAPI",
            sasl_username=username,
            sasl_password=password,
        )
    return ClientSecurity(**settings)
