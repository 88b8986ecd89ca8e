"""DescribeConfigs (32) from a context of a config and a hand-filled metadata cache: the
topic's overrides and the broker's static values with their sources, and Kafka's per-resource
errors for an unknown topic, an illegal name, another broker's id and a non-numeric id."""

from brokerd.config import SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER
from brokerd.coordination.metadata import TopicInfo
from brokerd.protocol.errors import ErrorCode
from brokerd.server.handlers.configs import BROKER, TOPIC, handle_describe_configs
from tests.integration.wire import nested, request
from tests.unit.server.handler_context import broker_config, call, context, metadata_cache


def _describe(*resources, synonyms=False):
    return request(
        32,
        4,
        resources=tuple(
            nested(
                32,
                4,
                "DescribeConfigsResource",
                resource_type=kind,
                resource_name=name,
                configuration_keys=keys,
            )
            for kind, name, keys in resources
        ),
        include_synonyms=synonyms,
        include_documentation=False,
    )


async def test_topic_and_broker_configs_with_their_sources():
    config = broker_config({"log.segment.bytes": "2048"})
    metadata = metadata_cache(config)
    metadata.topics["t"] = TopicInfo(
        "t", "AAAAAAAAAAAAAAAAAAAAAQ", {0: [1]}, configs={"retention.ms": "5000"}
    )
    ctx = context(config, metadata=metadata)
    keys = ("retention.ms", "segment.bytes", "cleanup.policy")
    response = await call(
        handle_describe_configs,
        ctx,
        _describe((TOPIC, "t", keys), (BROKER, "1", ("log.segment.bytes",)), synonyms=True),
    )
    topic, broker = response.results
    assert topic.error_code == ErrorCode.none
    entries = {c.name: c for c in topic.configs}
    assert set(entries) == set(keys)
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == (
        "5000",
        SOURCE_DYNAMIC_TOPIC,
    )
    # Not overridden: the broker's static log.segment.bytes, named as its synonym.
    assert (entries["segment.bytes"].value, entries["segment.bytes"].config_source) == (
        "2048",
        SOURCE_STATIC_BROKER,
    )
    # Its synonyms as Kafka lists them: the static value, then KafkaConfig's default.
    assert [(s.name, s.value, s.source) for s in entries["segment.bytes"].synonyms] == [
        ("log.segment.bytes", "2048", SOURCE_STATIC_BROKER),
        ("log.segment.bytes", "1073741824", SOURCE_DEFAULT),
    ]
    assert entries["cleanup.policy"].config_source == SOURCE_DEFAULT
    (segment,) = broker.configs
    assert (segment.name, segment.value, segment.config_source) == (
        "log.segment.bytes",
        "2048",
        SOURCE_STATIC_BROKER,
    )


async def test_per_resource_errors():
    ctx = context()
    response = await call(
        handle_describe_configs,
        ctx,
        _describe(
            (TOPIC, "missing", None),
            (TOPIC, "bad/name", None),
            (BROKER, "2", None),
            (BROKER, "one", None),
        ),
    )
    codes = [(r.resource_name, r.error_code) for r in response.results]
    assert codes == [
        ("missing", ErrorCode.unknown_topic_or_partition),
        ("bad/name", ErrorCode.invalid_topic_exception),
        ("2", ErrorCode.invalid_request),
        ("one", ErrorCode.invalid_request),
    ]
    assert response.results[2].error_message == ("Unexpected broker id, expected 1, but received 2")
