"""Check every length in a message against the bytes left, before kio's native reader runs.

kio's native reader reserves an array's claimed element count before it reads the elements,
so a 16-byte frame claiming 2^32 elements makes it ask for 32 GiB, and the allocation
failure aborts the whole process (Rust's handle_alloc_error cannot be caught). This module
walks a message by its kio schema without building anything: each array count, string,
bytes and tagged-field length is checked against what is left of the frame, so that the
native reader only ever sees counts the frame can actually hold.

The walk is compiled once per schema into a closure, fixed-size runs of fields folded into
one skip, and arrays of fixed-size elements checked with one multiplication.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

# kio's kafka_type names with a fixed encoded width.
FIXED_WIDTH = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_VARIABLE = {"string", "bytes", "records"}

# pos -> new pos, or raise BoundsError; `end` is where the enclosing frame (or tag) stops.
Skip = Callable[[bytes, int, int], int]


class BoundsError(ValueError):
    """A length in the message claims more than the frame holds, or is malformed."""


def check(entity_type: type, frame: bytes, offset: int = 0) -> int:
    """Walk `entity_type` from `offset`; the offset after it, or BoundsError."""
    return _compiled(entity_type)(frame, offset, len(frame))


def _read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end and buf[pos] < 0x80:  # one byte: nearly every length in practice
        return buf[pos], pos + 1
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise BoundsError("varint runs past the end of the frame")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise BoundsError("varint longer than 5 bytes")


def _need(pos: int, size: int, end: int) -> None:
    if pos + size > end:
        raise BoundsError(f"{size} bytes claimed with {end - pos} left")


# Lengths ---------------------------------------------------------------------------------
def _compact_length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(length or -1 for null, pos after the prefix): uvarint length + 1."""
    value, pos = _read_uvarint(buf, pos, end)
    return value - 1, pos


def _legacy_length16(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    _need(pos, 2, end)
    (value,) = _INT16.unpack_from(buf, pos)
    if value < -1:
        raise BoundsError(f"negative length {value}")
    return value, pos + 2


def _legacy_length32(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    _need(pos, 4, end)
    (value,) = _INT32.unpack_from(buf, pos)
    if value < -1:
        raise BoundsError(f"negative length {value}")
    return value, pos + 4


def _null(name: str) -> BoundsError:
    return BoundsError(f"non-nullable field {name} was serialized as null")


@cache
def _sized(length_of, name: str | None) -> Skip:
    """A string or bytes field: a length prefix, then that many bytes. `name` is given when
    the field may not be null (Kafka's parsers refuse a null there, and so do we)."""

    def skip(buf: bytes, pos: int, end: int) -> int:
        length, pos = length_of(buf, pos, end)
        if length > 0:
            _need(pos, length, end)
            pos += length
        elif length < 0 and name is not None:
            raise _null(name)
        return pos

    return skip


def _variable_skip(kafka_type: str, flexible: bool, name: str | None) -> Skip:
    if flexible:
        return _sized(_compact_length, name)
    return _sized(_legacy_length16 if kafka_type == "string" else _legacy_length32, name)


# Arrays ----------------------------------------------------------------------------------
def _array(flexible: bool, element: Skip | int, min_element: int, name: str | None) -> Skip:
    """An array: its count checked against the bytes left before any element is walked;
    `name` is given when it may not be null."""
    count_of = _compact_length if flexible else _legacy_length32
    floor = max(min_element, 1)  # a zero-width element still may not claim more than left

    if isinstance(element, int):  # fixed-width elements: one check, no loop

        def skip_fixed(buf: bytes, pos: int, end: int) -> int:
            count, pos = count_of(buf, pos, end)
            if count > 0:
                size = count * element
                if count * floor > end - pos or size > end - pos:
                    raise BoundsError(f"array of {count} claims more than {end - pos} bytes")
                pos += size
            elif count < 0 and name is not None:
                raise _null(name)
            return pos

        return skip_fixed

    def skip(buf: bytes, pos: int, end: int) -> int:
        count, pos = count_of(buf, pos, end)
        if count > 0:
            if count * floor > end - pos:
                raise BoundsError(f"array of {count} claims more than {end - pos} bytes")
            for _ in range(count):
                pos = element(buf, pos, end)
        elif count < 0 and name is not None:
            raise _null(name)
        return pos

    return skip


def _array_of_fixed_flexible(width: int, tagged: Skip, min_element: int, name: str | None) -> Skip:
    """A compact array of flexible records whose fields have fixed widths: per element, a
    skip and a look at the tagged-field count, inline (the shape of most partition lists)."""

    def skip(buf: bytes, pos: int, end: int) -> int:
        count, pos = _compact_length(buf, pos, end)
        if count > 0:
            if count * min_element > end - pos:
                raise BoundsError(f"array of {count} claims more than {end - pos} bytes")
            for _ in range(count):
                pos += width
                if pos < end and buf[pos] == 0:
                    pos += 1
                else:
                    pos = tagged(buf, pos, end)  # raises when pos is at or past the end
        elif count < 0 and name is not None:
            raise _null(name)
        return pos

    return skip


# Tagged fields ---------------------------------------------------------------------------
def _tagged_section(known: dict[int, Skip]) -> Skip:
    def skip(buf: bytes, pos: int, end: int) -> int:
        count, pos = _read_uvarint(buf, pos, end)
        if count > end - pos:  # each tag takes at least two bytes
            raise BoundsError(f"{count} tagged fields claimed with {end - pos} bytes left")
        for _ in range(count):
            tag, pos = _read_uvarint(buf, pos, end)
            size, pos = _read_uvarint(buf, pos, end)
            _need(pos, size, end)
            stop = pos + size
            field_skip = known.get(tag)
            if field_skip is not None and field_skip(buf, pos, stop) > stop:
                raise BoundsError(f"tagged field {tag} runs past its size")
            pos = stop
        return pos

    return skip


# Compilation -----------------------------------------------------------------------------
def _unwrap(annotation: Any) -> tuple[Any, bool, bool]:
    """(inner type, is_array, nullable) of a kio field annotation."""
    nullable = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        annotation = args[0]
    if typing.get_origin(annotation) is tuple:
        return typing.get_args(annotation)[0], True, nullable
    return annotation, False, nullable


def _field_skip(field: dataclasses.Field, flexible: bool, legacy_string: bool) -> tuple:
    """(skip or fixed width, minimum width) of one field."""
    inner, is_array, nullable = _unwrap(field.type)
    kafka_type = field.metadata.get("kafka_type")
    # Nulls are refused by name where the schema forbids them (array elements of primitive
    # type are not checked, as before: kio and the handlers take them as they come).
    null_name = None if nullable or legacy_string else field.name
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        if nullable and not is_array:
            # A nullable struct (KIP-893, e.g. DescribeTopicPartitions' cursor): an int8
            # marker, -1 for null, then the struct when present.
            return _nullable_struct(_compiled(inner)), 1
        element: Skip | int = _compiled(inner)
        min_element = _min_width(inner)
        shape = _FIXED_SHAPES.get(inner)
        if shape is not None:
            width, tagged = shape
            if tagged is None:
                element = width  # a fixed-width record: arrays of it need no walk at all
            elif is_array:
                return _array_of_fixed_flexible(width, tagged, min_element, null_name), 1
    elif kafka_type in FIXED_WIDTH:
        element = FIXED_WIDTH[kafka_type]
        min_element = element
    elif kafka_type in _VARIABLE:
        if legacy_string:
            element = _sized(_legacy_length16, None)
        else:
            element = _variable_skip(kafka_type, flexible, None if is_array else null_name)
        min_element = 1 if flexible else (2 if kafka_type == "string" else 4)
    else:
        raise TypeError(f"{field.name}: unknown kafka_type {kafka_type!r}")
    if is_array:
        return _array(flexible, element, min_element, null_name), 1 if flexible else 4
    return element, min_element


def _nullable_struct(struct: Skip) -> Skip:
    def skip(buf: bytes, pos: int, end: int) -> int:
        _need(pos, 1, end)
        if buf[pos] == 0xFF:  # -1: null
            return pos + 1
        return struct(buf, pos + 1, end)

    return skip


@cache
def _min_width(entity_type: Any) -> int:  # a kio entity class (its __flexible__ is set)
    """The fewest bytes an entity can take: the bound for a count of them."""
    flexible = entity_type.__flexible__
    total = 1 if flexible else 0  # the tagged-field count
    for field in _body_fields(entity_type):
        total += _field_skip(field, flexible, False)[1]
    return total


def _body_fields(entity_type: type) -> list[dataclasses.Field]:
    # kio's schemas hold real types (no postponed annotations): its reader needs them too.
    return [f for f in dataclasses.fields(entity_type) if "tag" not in f.metadata]


def _tag_fields(entity_type: type) -> dict[int, dataclasses.Field]:
    return {f.metadata["tag"]: f for f in dataclasses.fields(entity_type) if "tag" in f.metadata}


# Entities whose fields all have fixed widths: (that width, the tagged-section walker or None
# when not flexible). Arrays of them are walked without a call per element.
_FIXED_SHAPES: dict[type, tuple[int, Skip | None]] = {}


@cache
def _compiled(entity_type: Any) -> Skip:  # a kio entity class (its __flexible__ is set)
    flexible = entity_type.__flexible__
    # Kafka's request header v2 keeps client_id a legacy (int16-length) string.
    is_request_header = entity_type.__name__ == "RequestHeader"
    steps: list[Skip | int] = []
    for field in _body_fields(entity_type):
        legacy = is_request_header and field.name == "client_id"
        step = _field_skip(field, flexible, legacy)[0]
        if isinstance(step, int) and steps and isinstance(steps[-1], int):
            steps[-1] += step  # fold runs of fixed-width fields into one skip
        else:
            steps.append(step)
    tagged = None
    if flexible:
        known = {tag: _single_value_skip(field) for tag, field in _tag_fields(entity_type).items()}
        tagged = _tagged_section(known)
    plan = tuple(steps)
    widths = [step for step in plan if isinstance(step, int)]
    if len(widths) == len(plan):
        _FIXED_SHAPES[entity_type] = (sum(widths), tagged)

    def skip(buf: bytes, pos: int, end: int) -> int:
        for step in plan:
            if step.__class__ is int:
                pos += step
                if pos > end:
                    raise BoundsError("fixed-width fields run past the end of the frame")
            else:  # `__class__ is` above is cheaper than isinstance, which mypy would narrow
                pos = step(buf, pos, end)  # type: ignore[operator]
        if tagged is not None:
            if pos < end and buf[pos] == 0:  # no tagged fields: the usual case, kept cheap
                return pos + 1
            pos = tagged(buf, pos, end)
        return pos

    return skip


def _single_value_skip(field: dataclasses.Field) -> Skip:
    """A tagged field's value: always in the flexible encoding."""
    step = _field_skip(field, True, False)[0]
    if isinstance(step, int):
        width = step

        def skip_fixed(buf: bytes, pos: int, end: int) -> int:
            _need(pos, width, end)
            return pos + width

        return skip_fixed
    return step
