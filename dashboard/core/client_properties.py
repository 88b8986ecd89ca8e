"""A Kafka client's .properties, as `kafka-console-producer.sh --command-config` takes them,
read into the security settings the platform stores for a cluster.

Java clients' names (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*,
ssl.keystore.* with type PEM, ssl.key.password, ssl.endpoint.identification.algorithm) and
librdkafka's (sasl.username/sasl.password, ssl.ca.location, ssl.certificate.location,
ssl.key.location) both work, so a team's existing client settings register a cluster as
they are. Stores are PEM only (Kafka 2.7+); JKS and PKCS12 are refused with a clear message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from brokerd.config.properties import parse_properties
from brokerd.security.sasl.jaas import JaasConfigError, parse_jaas_config

from .cluster_secrets import unseal
from .models import Cluster, SaslMechanism, SecurityProtocol


class ClientPropertiesError(ValueError):
    pass


@dataclass(frozen=True)
class ClusterSecurity:
    security_protocol: str = SecurityProtocol.PLAINTEXT
    sasl_mechanism: str = ""
    sasl_username: str = ""
    sasl_password: str = ""
    ssl_ca_pem: str = ""
    ssl_certificate_pem: str = ""
    ssl_key_pem: str = ""
    ssl_check_hostname: bool = True

    def apply_to(self, cluster: Cluster) -> None:
        cluster.security_protocol = self.security_protocol
        cluster.sasl_mechanism = self.sasl_mechanism
        cluster.sasl_username = self.sasl_username
        cluster.set_sasl_password(self.sasl_password)
        cluster.ssl_ca_pem = self.ssl_ca_pem
        cluster.ssl_certificate_pem = self.ssl_certificate_pem
        cluster.set_ssl_key(self.ssl_key_pem)
        cluster.ssl_check_hostname = self.ssl_check_hostname


def read_client_properties(text: str) -> ClusterSecurity:
    props = parse_properties(text)
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in SecurityProtocol.values:
        raise ClientPropertiesError(f"security.protocol {protocol} is not one of {_names()}")
    settings: dict = {"security_protocol": protocol}
    if protocol.startswith("SASL_"):
        settings.update(_sasl(props))
    if protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
        settings.update(_tls(props))
    return ClusterSecurity(**settings)


def _names() -> str:
    return ", ".join(SecurityProtocol.values)


def _sasl(props: dict[str, str]) -> dict:
    # Kafka's default mechanism is GSSAPI (Kerberos), which the platform does not speak.
    mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI"
    if mechanism not in SaslMechanism.values:
        supported = ", ".join(SaslMechanism.values)
        raise ClientPropertiesError(f"sasl.mechanism {mechanism} is not supported ({supported})")
    username, password = props.get("sasl.username", ""), props.get("sasl.password", "")
    if jaas := props.get("sasl.jaas.config"):
        try:
            options = parse_jaas_config(jaas).options
        except JaasConfigError as exc:
            raise ClientPropertiesError(f"sasl.jaas.config: {exc}") from exc
        username, password = options.get("username", ""), options.get("password", "")
    if not username or not password:
        raise ClientPropertiesError(
            "SASL needs a user and a password: sasl.jaas.config with username= and password=, "
            "or sasl.username and sasl.password"
        )
    return {"sasl_mechanism": mechanism, "sasl_username": username, "sasl_password": password}


def _tls(props: dict[str, str]) -> dict:
    for store in ("ssl.truststore", "ssl.keystore"):
        kind = props.get(f"{store}.type", "PEM").upper()
        if kind != "PEM" and (f"{store}.location" in props):
            raise ClientPropertiesError(f"{store}.type {kind}: only PEM stores are supported")
    ca = props.get("ssl.truststore.certificates") or _read(
        props.get("ssl.truststore.location") or props.get("ssl.ca.location")
    )
    certificate = props.get("ssl.keystore.certificate.chain", "")
    key = props.get("ssl.keystore.key", "")
    if keystore := props.get("ssl.keystore.location"):
        # A PEM key store holds the private key and the certificate chain in one file.
        certificate = key = _read(keystore)
    certificate = certificate or _read(props.get("ssl.certificate.location"))
    key = key or _read(props.get("ssl.key.location"))
    if bool(certificate) != bool(key):
        raise ClientPropertiesError("a client certificate needs its private key, and the reverse")
    password = props.get("ssl.key.password")
    return {
        "ssl_ca_pem": ca,
        "ssl_certificate_pem": _certificates(certificate) if certificate else "",
        "ssl_key_pem": _private_key(key, password) if key else "",
        "ssl_check_hostname": props.get("ssl.endpoint.identification.algorithm", "https") != "",
    }


def _read(path: str | None) -> str:
    if not path:
        return ""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ClientPropertiesError(f"cannot read {path}: {exc.strerror}") from exc


def _certificates(pem: str) -> str:
    blocks = [
        block.split("-----END CERTIFICATE-----")[0]
        for block in pem.split("-----BEGIN CERTIFICATE-----")[1:]
    ]
    if not blocks:
        raise ClientPropertiesError("the key store holds no PEM certificate")
    return "".join(
        f"-----BEGIN CERTIFICATE-----{body}-----END CERTIFICATE-----\n" for body in blocks
    )


def _private_key(pem: str, password: str | None) -> str:
    """The key unencrypted (it is stored sealed): ssl.key.password opens an encrypted one."""
    try:
        key = serialization.load_pem_private_key(
            pem.encode(), password.encode() if password else None
        )
    except (ValueError, TypeError) as exc:
        raise ClientPropertiesError(
            f"the private key cannot be read (wrong or missing ssl.key.password?): {exc}"
        ) from exc
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def stored_security(cluster: Cluster) -> ClusterSecurity:
    """The cluster's stored settings, secrets unsealed (for a process that connects)."""
    return ClusterSecurity(
        security_protocol=cluster.security_protocol,
        sasl_mechanism=cluster.sasl_mechanism,
        sasl_username=cluster.sasl_username,
        sasl_password=unseal(cluster.sasl_password_sealed) if cluster.sasl_password_sealed else "",
        ssl_ca_pem=cluster.ssl_ca_pem,
        ssl_certificate_pem=cluster.ssl_certificate_pem,
        ssl_key_pem=unseal(cluster.ssl_key_sealed) if cluster.ssl_key_sealed else "",
        ssl_check_hostname=cluster.ssl_check_hostname,
    )


JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_client_properties(cluster: Cluster, directory: Path) -> Path:
    """The cluster's settings as a Kafka client .properties in `directory` (with its PEM
    stores beside it), secrets unsealed into files only this user reads; the caller removes
    the directory once the process that needs them is done."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    def private(name: str, text: str) -> Path:
        path = directory / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        return path

    security = stored_security(cluster)
    lines = [f"security.protocol={security.security_protocol}"]
    if security.security_protocol.startswith("SASL_"):
        module = JAAS_MODULES[security.sasl_mechanism]
        lines += [
            f"sasl.mechanism={security.sasl_mechanism}",
            f"sasl.jaas.config={module} required username={_quoted(security.sasl_username)} "
            f"password={_quoted(security.sasl_password)};",
        ]
    if security.security_protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
        if security.ssl_ca_pem:
            ca = private("truststore.pem", security.ssl_ca_pem)
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
        if security.ssl_certificate_pem:
            keystore = private(
                "keystore.pem", security.ssl_key_pem + "\n" + security.ssl_certificate_pem
            )
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
        if not security.ssl_check_hostname:
            lines.append("ssl.endpoint.identification.algorithm=")
    return private("client.properties", "\n".join(lines) + "\n")
