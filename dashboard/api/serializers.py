"""Request bodies and query parameters, validated before anything reaches a broker."""

from __future__ import annotations

import base64
import binascii
import json

from rest_framework import serializers

from dashboard.core import record_expr
from dashboard.core.records import parse_cursor

from .resources import TOPIC_NAME

MAX_PARTITIONS = 10_000
MAX_REPLICATION = 32
CONFIG_NAME = r"^[a-z0-9][a-z0-9._-]{0,254}$"
MAX_SCAN = 1_000_000


class ConfigEntrySerializer(serializers.Serializer):
    name = serializers.RegexField(CONFIG_NAME)
    value = serializers.CharField(allow_null=True, allow_blank=True, max_length=10_000)


class TopicCreateSerializer(serializers.Serializer):
    topic_name = serializers.RegexField(TOPIC_NAME.pattern, max_length=249)
    partitions_count = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_PARTITIONS
    )
    replication_factor = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_REPLICATION
    )
    configs = ConfigEntrySerializer(many=True, required=False)
    validate_only = serializers.BooleanField(required=False, default=False)

    def validate_topic_name(self, value: str) -> str:
        if value in (".", ".."):
            raise serializers.ValidationError("'.' and '..' are not topic names")
        return value


class ConfigAlterEntrySerializer(serializers.Serializer):
    name = serializers.RegexField(CONFIG_NAME)
    value = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=10_000
    )
    operation = serializers.ChoiceField(
        choices=["SET", "DELETE", "APPEND", "SUBTRACT"], required=False, default="SET"
    )

    def validate(self, attrs):
        if attrs["operation"] != "DELETE" and attrs.get("value") is None:
            raise serializers.ValidationError(f"{attrs['operation']} needs a value")
        return attrs


class ConfigAlterBatchSerializer(serializers.Serializer):
    data = ConfigAlterEntrySerializer(many=True, allow_empty=False, max_length=1000)
    validate_only = serializers.BooleanField(required=False, default=False)


class ConfigUpdateSerializer(serializers.Serializer):
    value = serializers.CharField(allow_blank=True, max_length=10_000)


class PageQuerySerializer(serializers.Serializer):
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=100)
    page_token = serializers.CharField(required=False, max_length=249, default="")


class RecordDataSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["STRING", "BINARY", "JSON"], default="STRING")
    data = serializers.JSONField(allow_null=True)

    def validate(self, attrs):
        kind, data = attrs["type"], attrs.get("data")
        if data is None:
            attrs["bytes"] = None
        elif kind == "STRING":
            if not isinstance(data, str):
                raise serializers.ValidationError("STRING data must be a string")
            attrs["bytes"] = data.encode()
        elif kind == "BINARY":
            if not isinstance(data, str):
                raise serializers.ValidationError("BINARY data must be a base64 string")
            try:
                attrs["bytes"] = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise serializers.ValidationError("BINARY data is not valid base64") from None
        else:
            attrs["bytes"] = json.dumps(data).encode()
        if attrs["bytes"] is not None and len(attrs["bytes"]) > 1 << 20:
            raise serializers.ValidationError("data is larger than 1 MiB")
        return attrs


class RecordHeaderSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=1000)
    value = serializers.CharField(allow_null=True, help_text="base64", max_length=100_000)

    def validate_value(self, value):
        if value is None:
            return None
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise serializers.ValidationError("header value is not valid base64") from None


class ProduceRecordSerializer(serializers.Serializer):
    partition_id = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    key = RecordDataSerializer(required=False, allow_null=True)
    value = RecordDataSerializer(required=False, allow_null=True)
    headers = RecordHeaderSerializer(many=True, required=False, max_length=100)


MATCH_MODES = ["exact", "substring"]


class BrowseQuerySerializer(serializers.Serializer):
    partition_id = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    offset = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        help_text="start at this offset (in every partition read)",
    )
    timestamp = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        help_text="start at the first record at or after this time (ms since the epoch)",
    )
    from_end = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=100_000,
        help_text="start this many records before the end: the newest N records of the topic "
        "(of partition_id if given) across its partitions by timestamp, counted in records "
        "(compaction gaps and control batches do not count); with N <= limit, exactly the "
        "last N records",
    )
    cursor = serializers.CharField(
        required=False,
        max_length=20_000,
        help_text="go on where an answer stopped: its scan.next_cursor "
        "(partition:offset,...); partitions it does not name start at their log start",
    )
    key = serializers.CharField(
        required=False,
        max_length=10_000,
        trim_whitespace=False,
        help_text="only records whose key is exactly this (UTF-8), or contains it with "
        "key_match=substring",
    )
    key_match = serializers.ChoiceField(
        choices=MATCH_MODES, required=False, default="exact", help_text="how `key` matches"
    )
    value = serializers.CharField(
        required=False,
        max_length=10_000,
        trim_whitespace=False,
        help_text="only records whose value is exactly this (UTF-8), or contains it with "
        "value_match=substring",
    )
    value_match = serializers.ChoiceField(
        choices=MATCH_MODES, required=False, default="exact", help_text="how `value` matches"
    )
    filter = serializers.CharField(
        required=False,
        max_length=record_expr.MAX_LENGTH,
        help_text="an expression over the record, e.g. $.customer.id == 42 and "
        'headers.source startswith "web" (paths into JSON keys and values with $/value, '
        "key, headers, partition, offset, timestamp; == != < <= > >= contains startswith "
        "endswith in and or not)",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)
    max_scan = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SCAN,
        default=10_000,
        help_text="stop after reading this many records (the answer says how far it got; "
        "a scan also stops after about 5 s)",
    )

    def validate_cursor(self, value: str) -> dict[int, int]:
        try:
            return parse_cursor(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_filter(self, value: str) -> str:
        try:
            record_expr.compile_filter(value)
        except record_expr.FilterSyntaxError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate(self, attrs):
        starts = [k for k in ("offset", "timestamp", "from_end", "cursor") if k in attrs]
        if len(starts) > 1:
            raise serializers.ValidationError(
                f"give one of offset, timestamp, from_end, cursor: {starts}"
            )
        return attrs


GROUP_ID_MAX = 255


class GroupPageQuerySerializer(serializers.Serializer):
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=100)
    page_token = serializers.CharField(
        required=False, max_length=GROUP_ID_MAX, default="", help_text="the last group id seen"
    )


class ResetTopicSerializer(serializers.Serializer):
    topic_name = serializers.RegexField(TOPIC_NAME.pattern, max_length=249)
    partitions = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_PARTITIONS),
        required=False,
        allow_empty=False,
        max_length=MAX_PARTITIONS,
        help_text="omitted: every partition of the topic",
    )


class OffsetResetSerializer(serializers.Serializer):
    to = serializers.ChoiceField(choices=["earliest", "latest", "timestamp", "offset", "shift"])
    timestamp = serializers.IntegerField(
        required=False, min_value=0, max_value=2**63 - 1, help_text="ms since the epoch"
    )
    offset = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1)
    shift_by = serializers.IntegerField(
        required=False,
        min_value=-(2**63),
        max_value=2**63 - 1,
        help_text="to=shift: moved by this many offsets (negative: back), clamped to the log",
    )
    topics = ResetTopicSerializer(
        many=True,
        required=False,
        max_length=1000,
        help_text="omitted: every topic the group has committed offsets for",
    )
    dry_run = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs):
        needed = {"timestamp": "timestamp", "offset": "offset", "shift": "shift_by"}.get(
            attrs["to"]
        )
        if needed and needed not in attrs:
            raise serializers.ValidationError(f"to={attrs['to']} needs '{needed}'")
        return attrs
