"""JAAS login module configuration as Kafka's `sasl.jaas.config` takes it.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

One login module (class name, control flag, `key=value` options, `;`); values quoted with
double quotes (backslash escapes the next character) or bare words; `/* */` and `//`
comments, as Java's StreamTokenizer reads it in Kafka's JaasConfig.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
_SPECIALS = set('=;"')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class JaasConfigError(ValueError):
    pass


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str):
    """(kind, value) pairs: 'word', 'quoted', or the special character itself."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasConfigError("unterminated comment")
            i = end + 2
        elif c == '"':
            value, i = _quoted(text, i + 1)
            yield "quoted", value
        elif c in _SPECIALS:
            yield c, c
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _SPECIALS:
                i += 1
            yield "word", text[start:i]


def _quoted(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    raise JaasConfigError("unterminated quoted value")


def parse_jaas_config(text: str) -> LoginModule:
    """The single login module of a sasl.jaas.config value (Kafka refuses none or several)."""
    tokens = list(_tokens(text))
    if not tokens:
        raise JaasConfigError("JAAS config entry not terminated by semicolon")
    modules = []
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise JaasConfigError("expected a login module name followed by a control flag")
        class_name, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in CONTROL_FLAGS:
            raise JaasConfigError(f"invalid control flag {tokens[i + 1][1]!r}")
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise JaasConfigError("JAAS config entry not terminated by semicolon")
            kind, value = tokens[i]
            if kind == ";":
                i += 1
                break
            if kind != "word" or i + 2 >= len(tokens) or tokens[i + 1][0] != "=":
                raise JaasConfigError(f"expected key=value in JAAS config, got {value!r}")
            if tokens[i + 2][0] not in ("word", "quoted"):
                raise JaasConfigError(f"JAAS config option {value} has no value")
            options[value] = tokens[i + 2][1]
            i += 3
        modules.append(LoginModule(class_name, flag, options))
    if len(modules) != 1:
        raise JaasConfigError(
            f"JAAS config property contains {len(modules)} login modules, should be 1 module"
        )
    return modules[0]
