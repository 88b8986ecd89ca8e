"""The principal of a TLS client: its certificate's distinguished name, mapped by Kafka's
`ssl.principal.mapping.rules` (SslPrincipalMapper).

The name is the subject in RFC 2253 form, as Java's X500Principal.getName() prints it (the
most specific RDN first: `CN=alice,OU=eng,O=acme,C=US`). Rules are `DEFAULT` (the name as
is) or `RULE:pattern/replacement/[LU]`, tried in order; the first whose pattern matches the
whole name gives the principal (replacement with `$1` groups, L/U to lower/upper case). A
name no rule matches is an authentication failure, as in Kafka.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER_TYPE = "User"
ANONYMOUS = "User:ANONYMOUS"

# RFC 2253's keywords (others print as their dotted OID); Python names them in full.
_KEYWORDS = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5"}


class PrincipalMappingError(ValueError):
    """No rule of ssl.principal.mapping.rules matches the name, or the rules are malformed."""


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject: tuple) -> str:
    """RFC 2253 text of a subject as `ssl.SSLSocket.getpeercert()` gives it (RDNs in
    certificate order, each a tuple of (attribute, value) pairs)."""
    rdns = []
    for rdn in reversed(subject):
        parts = []
        for attribute, value in rdn:
            keyword = _KEYWORDS.get(attribute) or _OIDS.get(attribute) or attribute
            parts.append(f"{keyword}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        # Java's Matcher.replaceAll: $n are groups; the whole name matched, so one pass.
        result = self.pattern.sub(_java_replacement(self.replacement), name, count=1)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


def _java_replacement(replacement: str) -> str:
    """Java's `$1` / `\\$` replacement syntax as Python's `\\g<1>`."""
    out = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            out.append(f"\\g<{replacement[i + 1 : j]}>")
            i = j
        else:
            out.append(char.replace("\\", "\\\\"))
            i += 1
    return "".join(out)


# One rule: DEFAULT, or RULE:pattern/replacement/ with an optional L or U; `\/` escapes.
_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


def parse_rules(text: str | list[str] | None) -> list[_Rule]:
    """ssl.principal.mapping.rules (a string in Kafka; a list is joined back)."""
    if isinstance(text, list):
        text = ",".join(text)
    text = (text or "DEFAULT").strip()
    rules: list[_Rule] = []
    position = 0
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise PrincipalMappingError(
                f"ssl.principal.mapping.rules: invalid rule at {text[position:]!r}"
            )
        if match.group(1):
            rules.append(_Rule(None))
        else:
            try:
                pattern = re.compile(match.group(2).replace("\\/", "/"))
            except re.error as exc:
                raise PrincipalMappingError(
                    f"ssl.principal.mapping.rules: bad pattern {match.group(2)!r}: {exc}"
                ) from exc
            rules.append(_Rule(pattern, match.group(3).replace("\\/", "/"), match.group(4)))
        position = match.end()
    return rules


class PrincipalMapper:
    def __init__(self, rules: str | list[str] | None):
        self.rules = parse_rules(rules)

    def name(self, distinguished: str) -> str:
        for rule in self.rules:
            result = rule.apply(distinguished)
            if result is not None:
                return result
        raise PrincipalMappingError(
            f"no ssl.principal.mapping.rules rule matches {distinguished!r}"
        )

    def principal(self, peer_certificate: dict | None) -> str:
        """`User:<mapped name>` for a verified peer certificate, else User:ANONYMOUS."""
        subject = (peer_certificate or {}).get("subject")
        if not subject:
            return ANONYMOUS
        return f"{USER_TYPE}:{self.name(distinguished_name(subject))}"
