"""A small filter language over records, JSONPath-style paths into JSON keys and values.

    $.customer.id == 42 and value.amount >= 100
    $.items[*].sku == "A-1" or headers.source startswith "web"
    not (key in ["a", "b"]) and timestamp > 1700000000000

Roots: `$` and `value` (the value, parsed as JSON when it is JSON, else its UTF-8 text, else
null), `key` (the same for the key), `headers` (`headers.name` or `headers["content-type"]`:
the UTF-8 text of each header of that name), `partition`, `offset`, `timestamp`. Steps:
`.name`, `["any name"]`, `[3]` (negative counts from the end), `[*]` (every element or
member). A path names every value it reaches, and a comparison holds when one of them
satisfies it; a missing step reaches null. Operators: `==`, `!=`, `<`, `<=`, `>`, `>=`
(numbers with numbers, strings with strings), `contains` (substring, or a list element),
`startswith`, `endswith`, `in` (a list or a string on the right), `and`, `or`, `not`,
parentheses. A path alone holds when it reaches something other than null, false, 0 or
"". Literals: JSON strings (or single-quoted), numbers, true, false, null, lists of them.

Parsed into a tree of closures, never evaluated as Python: no names but these, no calls,
no attributes. Size, nesting and list length are bounded; evaluation visits each reached
JSON node once per wildcard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_LENGTH = 1000
MAX_DEPTH = 32
MAX_LIST = 100
MAX_STEPS = 32

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
  | (?P<string>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"|'(?:[^'\\]|\\.)*')
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|\.|\*|\$)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)
_WORD_OPS = {"contains", "startswith", "endswith", "in"}
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">=", *_WORD_OPS}
_ROOTS = {"value", "key", "headers", "partition", "offset", "timestamp"}
_KEYWORDS = {"and", "or", "not", "true", "false", "null", *_WORD_OPS}
_MISSING = object()


class FilterSyntaxError(ValueError):
    """The expression is not in the language; the message says where."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, string, op, word, end
    text: str
    position: int


def tokenize(source: str) -> list[Token]:
    if len(source) > MAX_LENGTH:
        raise FilterSyntaxError(f"an expression is at most {MAX_LENGTH} characters")
    tokens: list[Token] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            raise FilterSyntaxError(f"unexpected {source[position]!r} at {position + 1}")
        if match.lastgroup != "space":
            tokens.append(Token(match.lastgroup, match.group(), position))
        position = match.end()
    tokens.append(Token("end", "", len(source)))
    return tokens


def _string_literal(text: str) -> str:
    if text[0] == '"':
        return json.loads(text)
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _number_literal(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


# A compiled node takes the record's view and returns the values it reaches.
Node = Callable[["RecordView"], list]
Test = Callable[["RecordView"], bool]


class _Parser:
    def __init__(self, source: str):
        self.tokens = tokenize(source)
        self.index = 0
        self.depth = 0
        self.roots: set[str] = set()

    # Tokens -------------------------------------------------------------------------------
    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def accept(self, text: str) -> bool:
        token = self.peek()
        if token.kind in ("op", "word") and token.text == text:
            self.index += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            self.fail(f"expected {text!r}")

    def fail(self, message: str):
        token = self.peek()
        found = "the end" if token.kind == "end" else repr(token.text)
        raise FilterSyntaxError(f"{message} at {token.position + 1}, found {found}")

    def nested(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}")

    # Grammar ------------------------------------------------------------------------------
    def parse(self) -> Test:
        test = self.or_expr()
        if self.peek().kind != "end":
            self.fail("expected 'and', 'or' or the end")
        return test

    def or_expr(self) -> Test:
        parts = [self.and_expr()]
        while self.accept("or"):
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda view: any(part(view) for part in parts)

    def and_expr(self) -> Test:
        parts = [self.not_expr()]
        while self.accept("and"):
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda view: all(part(view) for part in parts)

    def not_expr(self) -> Test:
        if self.accept("not"):
            self.nested()
            inner = self.not_expr()
            self.depth -= 1
            return lambda view: not inner(view)
        return self.comparison()

    def comparison(self) -> Test:
        if self.accept("("):
            self.nested()
            inner = self.or_expr()
            self.expect(")")
            self.depth -= 1
            return inner
        left = self.operand()
        token = self.peek()
        if token.kind in ("op", "word") and token.text in _COMPARISONS:
            self.take()
            right = self.operand()
            compare = _OPERATORS[token.text]

            def test(view) -> bool:
                rights = right(view)
                return any(compare(a, b) for a in left(view) for b in rights)

            return test
        return lambda view: any(_truthy(v) for v in left(view))

    def operand(self) -> Node:
        token = self.peek()
        if token.kind == "op" and token.text == "$":
            self.take()
            self.roots.add("value")
            return self.steps(lambda view: [view.value()])
        if token.kind == "word" and token.text in _ROOTS:
            self.take()
            self.roots.add(token.text)
            return self.steps(_root(token.text))
        if token.kind == "op" and token.text == "[":
            values = self.list_literal()
            return lambda view: [values]
        value = self.literal()
        return lambda view: [value]

    def literal(self) -> Any:
        token = self.take()
        if token.kind == "string":
            return _string_literal(token.text)
        if token.kind == "number":
            return _number_literal(token.text)
        if token.kind == "word" and token.text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token.text]
        self.index -= 1
        self.fail("expected a path ($, value, key, headers, ...), a literal or '('")

    def list_literal(self) -> list:
        self.expect("[")
        values: list = []
        if not self.accept("]"):
            while True:
                values.append(self.literal())
                if len(values) > MAX_LIST:
                    self.fail(f"a list holds at most {MAX_LIST} values")
                if self.accept("]"):
                    break
                self.expect(",")
        return values

    def steps(self, node: Node) -> Node:
        count = 0
        while True:
            if self.accept("."):
                token = self.take()
                if token.kind != "word":
                    self.index -= 1
                    self.fail("expected a name after '.'")
                node = _member(node, token.text)
            elif self.peek().text == "[" and self.peek().kind == "op":
                self.take()
                token = self.take()
                if token.kind == "op" and token.text == "*":
                    node = _every(node)
                elif token.kind == "string":
                    node = _member(node, _string_literal(token.text))
                elif token.kind == "number" and re.fullmatch(r"-?[0-9]+", token.text):
                    node = _element(node, int(token.text))
                else:
                    self.index -= 1
                    self.fail("expected a name, an index or * in [ ]")
                self.expect("]")
            else:
                return node
            count += 1
            if count > MAX_STEPS:
                self.fail(f"a path has at most {MAX_STEPS} steps")


def _root(name: str) -> Node:
    if name == "value":
        return lambda view: [view.value()]
    if name == "key":
        return lambda view: [view.key()]
    if name == "headers":
        return lambda view: [view.headers()]
    return lambda view: [getattr(view, name)]


def _member(node: Node, name: str) -> Node:
    def step(view) -> list:
        out = []
        for value in node(view):
            if isinstance(value, HeaderValues):
                out.extend(value.get(name) or [None])
            elif isinstance(value, dict):
                out.append(value.get(name))
            else:
                out.append(None)
        return out

    return step


def _element(node: Node, index: int) -> Node:
    def step(view) -> list:
        out = []
        for value in node(view):
            if isinstance(value, list) and -len(value) <= index < len(value):
                out.append(value[index])
            else:
                out.append(None)
        return out

    return step


def _every(node: Node) -> Node:
    def step(view) -> list:
        out = []
        for value in node(view):
            if isinstance(value, list):
                out.extend(value)
            elif isinstance(value, HeaderValues):
                out.extend(v for vs in value.values() for v in vs)
            elif isinstance(value, dict):
                out.extend(value.values())
        return out

    return step


# Comparisons: JSON's types kept apart (true is not 1, "1" is not 1).
def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(a, b) -> bool:
    if _number(a) and _number(b):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _ordered(check):
    def compare(a, b) -> bool:
        if (_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return check(a, b)
        return False

    return compare


def _contains(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return b in a
    if isinstance(a, list):
        return any(_same(item, b) for item in a)
    return False


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": _same,
    "!=": lambda a, b: not _same(a, b),
    "<": _ordered(lambda a, b: a < b),
    "<=": _ordered(lambda a, b: a <= b),
    ">": _ordered(lambda a, b: a > b),
    ">=": _ordered(lambda a, b: a >= b),
    "contains": _contains,
    "in": lambda a, b: _contains(b, a),
    "startswith": lambda a, b: isinstance(a, str) and isinstance(b, str) and a.startswith(b),
    "endswith": lambda a, b: isinstance(a, str) and isinstance(b, str) and a.endswith(b),
}


def _truthy(value) -> bool:
    return value is not None and value is not False and value != 0 and value != ""


# What an expression sees of a record ------------------------------------------------------
class HeaderValues(dict):
    """Header name -> the UTF-8 texts (None when not text) of every header of that name."""


def decode_json(data: bytes | None) -> Any:
    """The bytes as JSON if they are JSON, else as UTF-8 text, else None."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


class RecordView:
    """One record as expressions see it; the key and value are decoded once, when needed."""

    __slots__ = ("record", "_key", "_value")

    def __init__(self, record):
        self.record = record
        self._key = _MISSING
        self._value = _MISSING

    @property
    def partition(self) -> int:
        return self.record.partition

    @property
    def offset(self) -> int:
        return self.record.offset

    @property
    def timestamp(self) -> int:
        return self.record.timestamp

    def key(self):
        if self._key is _MISSING:
            self._key = decode_json(self.record.key)
        return self._key

    def value(self):
        if self._value is _MISSING:
            self._value = decode_json(self.record.value)
        return self._value

    def headers(self) -> HeaderValues:
        found = HeaderValues()
        for name, raw in self.record.headers:
            try:
                text = None if raw is None else raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            found.setdefault(name, []).append(text)
        return found


def compile_filter(source: str) -> Callable[[Any], bool]:
    """A predicate over records (anything with partition, offset, timestamp, key, value and
    headers); FilterSyntaxError if `source` is not in the language."""
    test = _Parser(source).parse()
    return lambda record: test(RecordView(record))
