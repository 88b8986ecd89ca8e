"""Fixtures of the compatibility tests."""

import pytest

from tests.compat.java_client import start_java_client


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """Kafka's Java client (kafka-clients from .venv/java), one JVM per module."""
    client = start_java_client(tmp_path_factory.mktemp("java"))
    yield client
    client.close()
