"""Transactional producers against a broker without a transaction coordinator.

brokerd does not implement transactions. Each client's init_transactions() must fail at
once with a fatal error that says so, rather than retry until its timeout as it does when
the coordinator is merely unavailable.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka import KafkaProducer
from kafka.errors import TransactionalIdAuthorizationFailedError


def test_confluent_init_transactions_fails_fatally(group_broker):
    producer = Producer(
        {"bootstrap.servers": group_broker.bootstrap, "transactional.id": f"tx-{uuid.uuid4()}"}
    )
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(30)
    error = raised.value.args[0]
    # A timeout would be _TIMED_OUT and retriable; this is the broker's fatal answer.
    assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error.fatal() and not error.retriable()
    assert "transactions are not supported by this broker" in error.str()


def test_kafka_python_init_transactions_fails_fatally(group_broker):
    producer = KafkaProducer(
        bootstrap_servers=group_broker.bootstrap,
        transactional_id=f"tx-{uuid.uuid4()}",
        max_block_ms=30000,
    )
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            producer.init_transactions()
    finally:
        producer.close(timeout=5)
