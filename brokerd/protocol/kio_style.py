"""Message classes in kio's schema style, for the APIs kio no longer ships.

kio reads and writes any frozen, slotted, keyword-only dataclass whose class attributes say
what it is: __type__ (a request, a response or an entity nested in one), __api_key__,
__version__, __flexible__ and __header_schema__. A `Message` declares those once per API
version; its decorators turn a plain annotated class into such a dataclass.
"""

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

    # dataclass_transform: type checkers see each decorated class as the frozen,
    # keyword-only dataclass it becomes, so a misspelt field fails the check.
    @dataclass_transform(frozen_default=True, kw_only_default=True)
    def request(self, cls: _Class) -> _Class:
        return self._entity(cls, EntityType.request, self.request_header)

    @dataclass_transform(frozen_default=True, kw_only_default=True)
    def request_part(self, cls: _Class) -> _Class:
        return self._entity(cls, EntityType.nested, self.request_header)

    @dataclass_transform(frozen_default=True, kw_only_default=True)
    def response(self, cls: _Class) -> _Class:
        return self._entity(cls, EntityType.response, self.response_header)

    @dataclass_transform(frozen_default=True, kw_only_default=True)
    def response_part(self, cls: _Class) -> _Class:
        return self._entity(cls, EntityType.nested, self.response_header)

    def _entity(self, cls: Any, kind: EntityType, header: type) -> Any:
        cls.__type__ = kind
        cls.__api_key__ = i16(self.api_key)
        cls.__version__ = i16(self.version)
        cls.__flexible__ = self.flexible
        cls.__header_schema__ = header
        return dataclass(frozen=True, slots=True, kw_only=True)(cls)
