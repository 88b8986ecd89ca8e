"""SASL settings for test brokers: PLAIN users in the listener's JAAS config, as Kafka
writes it (tests/harness.py turns `_` into `.` in keyword props, so these go in as a dict)."""

from __future__ import annotations

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
INVALID = "Authentication failed: Invalid username or password"


def plain_jaas(username: str = "admin", password: str = "admin-secret", users=None) -> str:
    entries = " ".join(f'user_{name}="{secret}"' for name, secret in (users or USERS).items())
    return f'{PLAIN_MODULE} required username="{username}" password="{password}" {entries};'


def sasl_listener_props(listener: str, mechanisms: str = "PLAIN", **extra: str) -> dict[str, str]:
    prefix = f"listener.name.{listener.lower()}"
    return {
        f"{prefix}.sasl.enabled.mechanisms": mechanisms,
        f"{prefix}.plain.sasl.jaas.config": plain_jaas(),
        **extra,
    }


def sasl_broker(
    new_broker, zookeeper, tmp_path_factory, protocol="SASL_PLAINTEXT", props=None, **kwargs
):
    """A started broker whose client listener speaks `protocol` with PLAIN."""
    process = new_broker(zookeeper, tmp_path_factory, client_protocol=protocol, **kwargs)
    process.props.update(sasl_listener_props(protocol))
    process.props.update(props or {})
    return process.start()
