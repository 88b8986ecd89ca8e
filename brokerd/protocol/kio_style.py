"""Message classes in kio's schema style, for the APIs kio no longer ships.

kio reads and writes any frozen, slotted, keyword-only dataclass whose class attributes say
what it is: __type__ (a request, a response or an entity nested in one), __api_key__,
__version__, __flexible__ and __header_schema__. A `Message` declares those once per API
version; `request(message)`, `response(message)` and their `_part` twins turn a plain annotated
class into such a dataclass.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, dataclass_transform

from kio.static.constants import EntityType
from kio.static.primitive import i16

_Class = TypeVar("_Class", bound=type)


@dataclass(frozen=True)
class Message:
    api_key: int
    version: int
    flexible: bool
    request_header: type
    response_header: type


# Decorator factories marked dataclass_transform: type checkers see each decorated class as
# the frozen, keyword-only dataclass it becomes, so a misspelt field fails the check.
@dataclass_transform(frozen_default=True, kw_only_default=True)
def request(message: Message) -> Callable[[_Class], _Class]:
    return _entity(message, EntityType.request, message.request_header)


@dataclass_transform(frozen_default=True, kw_only_default=True)
def request_part(message: Message) -> Callable[[_Class], _Class]:
    return _entity(message, EntityType.nested, message.request_header)


@dataclass_transform(frozen_default=True, kw_only_default=True)
def response(message: Message) -> Callable[[_Class], _Class]:
    return _entity(message, EntityType.response, message.response_header)


@dataclass_transform(frozen_default=True, kw_only_default=True)
def response_part(message: Message) -> Callable[[_Class], _Class]:
    return _entity(message, EntityType.nested, message.response_header)


def _entity(message: Message, kind: EntityType, header: type) -> Callable[[Any], Any]:
    def decorate(cls: Any) -> Any:
        cls.__type__ = kind
        cls.__api_key__ = i16(message.api_key)
        cls.__version__ = i16(message.version)
        cls.__flexible__ = message.flexible
        cls.__header_schema__ = header
        return dataclass(frozen=True, slots=True, kw_only=True)(cls)

    return decorate
