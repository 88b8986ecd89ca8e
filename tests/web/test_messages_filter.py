"""The message browser's filter language (dashboard/core/record_expr.py): what it matches,
what it refuses, and that it stays bounded on hostile expressions and values."""

from __future__ import annotations

import json

import pytest

from brokerd.client.consumer import ConsumerRecord
from dashboard.core.record_expr import MAX_DEPTH, FilterSyntaxError, compile_filter


def record(value, key=b"k", headers=(), partition=0, offset=7, timestamp=1000):
    if not isinstance(value, bytes | None):
        value = json.dumps(value).encode()
    return ConsumerRecord("t", partition, offset, timestamp, 0, key, value, tuple(headers))


ORDER = {
    "id": 42,
    "customer": {"name": "Ada", "tier": "gold"},
    "amount": 99.5,
    "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
    "paid": True,
    "note": None,
    "my-field": "x",
}


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("$.id == 42", True),
        ("value.id == 42.0", True),
        ('$.id == "42"', False),  # JSON types stay apart
        ("$.paid == 1", False),
        ("$.paid == true and $.amount > 99 and $.amount <= 99.5", True),
        ('$.customer.name == "Ada" or $.id == 0', True),
        ("$.customer.name < 'B'", True),
        ('$.customer.name contains "d"', True),
        ('$.customer.name startswith "Ad" and $.customer.name endswith "da"', True),
        ('$.customer.tier in ["gold", "platinum"]', True),
        ('not ($.customer.tier in ["gold"])', False),
        ('$.items[*].sku == "B-7"', True),
        ('$.items[0].sku == "B-7"', False),
        ('$.items[-1].sku == "B-7"', True),
        ("$.items[5].sku == null", True),
        ("$.missing == null", True),
        ("$.missing.deeper[0] == null", True),
        ("$.note", False),
        ("$.paid", True),
        ('$["my-field"] == "x"', True),
        ("$.items[*].qty > 1", True),
        ("$.items[*].qty > 2", False),
        ('$.items contains {"a": 1} == false', None),  # objects are not literals
        ('key == "k" and partition == 0 and offset >= 7 and timestamp < 2000', True),
        ('headers.source == "web"', True),
        ('headers["content-type"] startswith "application/"', True),
        ("headers.absent == null", True),
        ('$.amount > "a"', False),  # no order between a number and a string
        ("(($.id == 42))", True),
    ],
)
def test_expressions_over_a_json_value(expression, expected):
    headers = [("source", b"web"), ("content-type", b"application/json"), ("bin", b"\xff")]
    if expected is None:
        with pytest.raises(FilterSyntaxError):
            compile_filter(expression)
        return
    assert compile_filter(expression)(record(ORDER, headers=headers)) is expected


def test_text_binary_and_null_values():
    assert compile_filter('value == "plain text"')(record(b"plain text"))
    assert compile_filter('value contains "text"')(record(b"plain text"))
    assert not compile_filter("$.a == 1")(record(b"\xff\x00"))  # binary: null
    assert compile_filter("value == null")(record(b"\xff\x00"))
    assert compile_filter("value == null")(record(None))  # a tombstone
    assert compile_filter('key == "cust-42"')(record({}, key=b"cust-42"))
    assert not compile_filter('key == "cust-42"')(record({}, key=b"cust-426"))
    assert compile_filter("key == 42")(record({}, key=b"42"))  # a JSON key


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "$.a ==",
        "$.a = 1",
        "__import__('os').system('true')",
        "$.a == 1 and",
        "$..a == 1",
        "$.a[",
        "$.a[1.5] == 1",
        "(($.a == 1)",
        "$.a == 1)",
        "open('x')",
        "$.a == 'unterminated",
        "$.a == 1 ; $.b == 2",
    ],
)
def test_what_is_not_in_the_language_is_refused_with_a_position(expression):
    with pytest.raises(FilterSyntaxError) as refused:
        compile_filter(expression)
    assert str(refused.value)


def test_names_are_json_members_never_python_attributes():
    assert compile_filter("value.__class__ == null")(record(ORDER))
    assert compile_filter("$.__class__.__name__ == 1")(record({"__class__": {"__name__": 1}}))
    assert not compile_filter("$.keys")(record(ORDER))  # dict.keys is not reached


def test_hostile_expressions_and_values_stay_bounded():
    with pytest.raises(FilterSyntaxError, match="at most"):
        compile_filter("$.a == 1 or " * 100 + "$.a == 1")  # over the length limit
    with pytest.raises(FilterSyntaxError, match="nested deeper"):
        compile_filter("(" * (MAX_DEPTH + 1) + "$.a" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(FilterSyntaxError, match="nested deeper"):
        compile_filter("not " * (MAX_DEPTH + 1) + "$.a")
    assert compile_filter("(" * 10 + "$.a == 1" + ")" * 10)(record({"a": 1}))
    # A value nested past what the JSON parser takes is treated as text, not an error.
    deep = b"[" * 100_000 + b"]" * 100_000
    assert not compile_filter("$[0] == 1")(record(deep))
    assert compile_filter("value startswith '[[['")(record(deep))
