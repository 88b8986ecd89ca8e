"""Java .properties files, as server.properties is read."""

from __future__ import annotations

import re


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value`, `key: value` or `key value`; # and ! comments; \\ joins."""
    props: dict[str, str] = {}
    logical = ""
    for raw_line in text.splitlines():
        line = raw_line.strip() if not logical else raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    match = _PROPERTY_SEPARATOR.search(line)
    if match is None:
        return line, ""
    return line[: match.start()], line[match.end() :]


_PROPERTY_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")
