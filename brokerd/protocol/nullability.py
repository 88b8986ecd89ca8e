"""Reject nulls in non-nullable fields, as Kafka's generated parsers do.

kio reads a null array or string even where the schema forbids it; handlers must not
meet one, so a decoded request is checked once (an invalid request closes the connection).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any


class NullFieldError(ValueError):
    pass


@cache
def _field_rules(cls: type) -> tuple[tuple[str, bool, type | None], ...]:
    """(name, nullable, nested entity type or None) for each field of a kio entity."""
    rules = []
    for f in dataclasses.fields(cls):
        annotation = f.type
        args = typing.get_args(annotation)
        nullable = isinstance(annotation, types.UnionType) and type(None) in args
        inner = (
            next((a for a in args if a is not type(None)), annotation) if nullable else annotation
        )
        nested = None
        if typing.get_origin(inner) is tuple:
            element = typing.get_args(inner)[0]
            if dataclasses.is_dataclass(element):
                nested = element
        elif dataclasses.is_dataclass(inner):
            nested = inner
        rules.append((f.name, nullable, nested))
    return tuple(rules)


def check_non_nullable(entity: Any) -> None:
    for name, nullable, nested in _field_rules(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                raise NullFieldError(f"non-nullable field {name} was serialized as null")
            continue
        if nested is not None:
            for item in value if isinstance(value, tuple) else (value,):
                check_non_nullable(item)
