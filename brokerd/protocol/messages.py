"""Building versioned kio messages from one set of values.

kio generates one dataclass per API version, each with only that version's fields, so a
handler builds its answer from a superset of values and drops what the version lacks.
"""

from __future__ import annotations

import dataclasses
import datetime
from functools import cache
from types import ModuleType, SimpleNamespace
from typing import Any

from kio.index import load_payload_module
from kio.static.constants import EntityType

from . import produce_legacy

NO_THROTTLE = datetime.timedelta(0)


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: type, **values: Any) -> Any:
    """An instance of `cls` from the values it has fields for."""
    names = _field_names(cls)
    return cls(**{name: value for name, value in values.items() if name in names})


def has_field(cls: type, name: str) -> bool:
    return name in _field_names(cls)


@cache  # kio imports the module by name at each call (~70 us): kept per (key, version)
def response_module(api_key: int, api_version: int) -> ModuleType | SimpleNamespace:
    if api_key == 0 and api_version in produce_legacy.RESPONSE_MODULES:
        return produce_legacy.RESPONSE_MODULES[api_version]
    return load_payload_module(api_key, api_version, EntityType.response)


@cache
def request_module(api_key: int, api_version: int) -> ModuleType:
    return load_payload_module(api_key, api_version, EntityType.request)
