"""Request handlers, one module per API family; HANDLERS maps api key -> handler."""

from __future__ import annotations

from . import api_versions, metadata

HANDLERS = {
    **api_versions.HANDLERS,
    **metadata.HANDLERS,
}
