"""The GROUP config resource (type 32, KIP-848): DescribeConfigs and IncrementalAlterConfigs
of consumer.session.timeout.ms / consumer.heartbeat.interval.ms, Kafka's validation, and the
heartbeat interval a group's members are given following the group's own value."""

from __future__ import annotations

import uuid

from brokerd.protocol.errors import ErrorCode as E
from tests.compat.test_groups_clients import create_topic
from tests.integration.test_consumer_group_heartbeat import hb, joined
from tests.integration.test_groups_protocol import ready_coordinator
from tests.integration.wire import WireClient, nested, request

GROUP = 32
SET, DELETE = 0, 1


def describe(client, group):
    response = client.call(
        request(
            32,
            4,
            resources=(
                nested(
                    32,
                    4,
                    "DescribeConfigsResource",
                    resource_type=GROUP,
                    resource_name=group,
                    configuration_keys=None,
                ),
            ),
            include_synonyms=True,
            include_documentation=True,
        )
    )
    result = response.results[0]
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


def alter(client, group, changes, validate_only=False):
    response = client.call(
        request(
            44,
            1,
            resources=(
                nested(
                    44,
                    1,
                    "AlterConfigsResource",
                    resource_type=GROUP,
                    resource_name=group,
                    configs=tuple(
                        nested(
                            44,
                            1,
                            "AlterableConfig",
                            name=name,
                            config_operation=operation,
                            value=value,
                        )
                        for name, operation, value in changes
                    ),
                ),
            ),
            validate_only=validate_only,
        )
    )
    return response.responses[0].error_code


def test_group_configs_described_altered_and_applied(group_broker, topic_name):
    create_topic(group_broker.bootstrap, topic_name, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(group_broker.bootstrap) as client:
        error, configs = describe(client, group)
        assert error == E.none
        # Defaults: the broker's group.consumer.* values, DEFAULT_CONFIG (5).
        assert configs == {
            "consumer.heartbeat.interval.ms": ("5000", 5),
            "consumer.session.timeout.ms": ("45000", 5),
        }
        # Kafka's validation: names, bounds, heartbeat below session.
        assert alter(client, group, [("no.such.config", SET, "1")]) == E.invalid_config
        assert alter(client, group, [("consumer.session.timeout.ms", SET, "100")]) == (
            E.invalid_config
        )
        assert alter(client, group, [("consumer.heartbeat.interval.ms", SET, "x")]) == (
            E.invalid_config
        )
        # validate_only changes nothing.
        assert alter(client, group, [("consumer.heartbeat.interval.ms", SET, "6000")], True) == 0
        assert describe(client, group)[1]["consumer.heartbeat.interval.ms"] == ("5000", 5)
        assert alter(client, group, [("consumer.heartbeat.interval.ms", SET, "6000")]) == 0
        assert alter(client, group, [("consumer.session.timeout.ms", SET, "50000")]) == 0
        assert describe(client, group)[1] == {
            "consumer.heartbeat.interval.ms": ("6000", 8),  # DYNAMIC_GROUP_CONFIG
            "consumer.session.timeout.ms": ("50000", 8),
        }
        # The group's members are given the group's heartbeat interval.
        ready_coordinator(client, group)
        member = uuid.uuid4().hex
        first = joined(client, group, member, topic_name)
        assert first.error_code == E.none
        assert first.heartbeat_interval.total_seconds() == 6.0
        # DELETE returns to the broker's default, for the next heartbeat too.
        assert alter(client, group, [("consumer.heartbeat.interval.ms", DELETE, None)]) == 0
        assert describe(client, group)[1]["consumer.heartbeat.interval.ms"] == ("5000", 5)
        again = hb(client, group, member, first.member_epoch)
        assert again.error_code == E.none
        assert again.heartbeat_interval.total_seconds() == 5.0
