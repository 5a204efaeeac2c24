"""The fake SAP's ``$filter``: parsed once into a Python closure, then run over the rows.

Supports what the adapters send and a bit more: ``eq ne gt ge lt le``, ``and or not``,
parentheses, ``null``, ``true``/``false``, numbers, strings (``'O''Brien'``), v2 typed literals
``datetime'...'`` and ``datetimeoffset'...'`` (v2 only), v4 bare dates and timestamps (v4 only),
and ``substringof`` / ``startswith`` / ``endswith`` / ``contains``. A date field compares as
midnight UTC of its day, as SAP does.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

Predicate = Callable[[dict[str, Any]], bool]

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<lp>\() | (?P<rp>\)) | (?P<comma>,)
  | (?P<typed>(?:datetimeoffset|datetime|time|guid)'(?:[^']|'')*')
  | (?P<str>'(?:[^']|'')*')
  | (?P<dt>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?(?![\w-]))
  | (?P<num>-?\d+(?:\.\d+)?[MmLlDdFf]?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_/]*)
)""",
    re.VERBOSE,
)
_COMPARISONS = {"eq", "ne", "gt", "ge", "lt", "le"}
_FUNCTIONS = {"substringof", "startswith", "endswith", "contains"}


class FilterError(ValueError):
    """A ``$filter`` the fake cannot parse or that names an unknown property."""


def _instant(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise FilterError(f"invalid timestamp literal {text!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


class _Literal:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _literal(kind: str, text: str) -> _Literal:
    if kind == "str":
        return _Literal(text[1:-1].replace("''", "'"))
    if kind == "dt":
        return _Literal(_instant(text))
    if kind == "num":
        try:
            return _Literal(Decimal(text.rstrip("MmLlDdFf")))
        except InvalidOperation:
            raise FilterError(f"invalid number {text!r}") from None
    prefix, _, quoted = text.partition("'")
    body = quoted[:-1].replace("''", "'")
    if prefix in ("datetime", "datetimeoffset"):
        return _Literal(_instant(body))
    if prefix == "time":
        return _Literal(body)
    return _Literal(body)  # guid


class _Parser:
    def __init__(self, text: str, fields: Collection[str], version: str) -> None:
        self.version = version
        self.tokens = self._tokenize(text)
        self.pos = 0
        self.fields = fields

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        text = text.strip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise FilterError(f"unexpected character at position {pos}: {text[pos : pos + 12]!r}")
            kind = match.lastgroup
            assert kind is not None
            tokens.append((kind, match.group(kind)))
            pos = match.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        return tokens

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (kind is not None and token[0] != kind):
            raise FilterError(f"expected {kind or 'more input'} at token {self.pos}")
        self.pos += 1
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token[0] == "name" and token[1] == word:
            self.pos += 1
            return True
        return False

    def parse(self) -> Predicate:
        if not self.tokens:
            raise FilterError("empty $filter")
        predicate = self.parse_or()
        if self.peek() is not None:
            raise FilterError(f"unexpected {self.peek()[1]!r} after the expression")  # type: ignore[index]
        return predicate

    def parse_or(self) -> Predicate:
        parts = [self.parse_and()]
        while self.keyword("or"):
            parts.append(self.parse_and())
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2:
            first, second = parts
            return lambda row: first(row) or second(row)
        return lambda row: any(p(row) for p in parts)

    def parse_and(self) -> Predicate:
        parts = [self.parse_not()]
        while self.keyword("and"):
            parts.append(self.parse_not())
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2:
            first, second = parts
            return lambda row: first(row) and second(row)
        return lambda row: all(p(row) for p in parts)

    def parse_not(self) -> Predicate:
        if self.keyword("not"):
            inner = self.parse_not()
            return lambda row: not inner(row)
        return self.parse_primary()

    def parse_primary(self) -> Predicate:
        token = self.peek()
        if token is not None and token[0] == "lp":
            self.take("lp")
            inner = self.parse_or()
            self.take("rp")
            return inner
        if token is not None and token[0] == "name" and token[1] in _FUNCTIONS:
            return self.parse_function()
        left = self.operand()
        op = self.take("name")[1]
        if op not in _COMPARISONS:
            raise FilterError(f"unknown operator {op!r}; expected one of {', '.join(sorted(_COMPARISONS))}")
        right = self.operand()
        if isinstance(left, _Literal) and isinstance(right, str):
            left, right, op = right, left, {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}.get(op, op)
        if not isinstance(left, str) or not isinstance(right, _Literal):
            raise FilterError("a comparison needs a property on one side and a literal on the other")
        return _comparison(left, op, right.value)

    def operand(self) -> str | _Literal:
        kind, text = self.take()
        if kind == "name":
            if text in ("true", "false"):
                return _Literal(text == "true")
            if text == "null":
                return _Literal(None)
            if text not in self.fields:
                raise FilterError(f"property {text!r} not found")
            return text
        if kind == "typed" and self.version == "v4" and not text.startswith("guid"):
            raise FilterError(
                f"{text.partition(chr(39))[0]}'...' literals are OData v2; v4 writes {text[:4]}... bare"
            )
        if kind == "dt" and self.version == "v2":
            raise FilterError(
                f"a bare date {text!r} is OData v4; v2 writes datetime'...' or datetimeoffset'...'"
            )
        if kind in ("str", "dt", "num", "typed"):
            return _literal(kind, text)
        raise FilterError(f"unexpected {text!r}")

    def parse_function(self) -> Predicate:
        name = self.take("name")[1]
        self.take("lp")
        first = self.operand()
        self.take("comma")
        second = self.operand()
        self.take("rp")
        if name == "substringof":
            first, second = second, first
        if (
            not isinstance(first, str)
            or not isinstance(second, _Literal)
            or not isinstance(second.value, str)
        ):
            raise FilterError(f"{name} needs a property and a string literal")
        field, needle = first, second.value
        checks: dict[str, Callable[[str], bool]] = {
            "substringof": lambda v: needle in v,
            "contains": lambda v: needle in v,
            "startswith": lambda v: v.startswith(needle),
            "endswith": lambda v: v.endswith(needle),
        }
        check = checks[name]
        return lambda row: isinstance(row.get(field), str) and check(row[field])


def _comparison(field: str, op: str, literal: Any) -> Predicate:
    if literal is None:
        if op == "eq":
            return lambda row: row.get(field) is None
        if op == "ne":
            return lambda row: row.get(field) is not None
        raise FilterError(f"null can only be compared with eq or ne, not {op}")
    if isinstance(literal, datetime):
        return _temporal(field, op, literal)
    if op == "eq":
        return lambda row: row.get(field) == literal
    if op == "ne":
        return lambda row: row.get(field) != literal
    compare = _ORDERING[op]
    return lambda row: (value := row.get(field)) is not None and compare(value, literal)


def _temporal(field: str, op: str, literal: datetime) -> Predicate:
    """Compare a date, datetime or null field with a timestamp literal without converting each row.

    A date is midnight of its day: against a midnight literal it compares by day with the same
    operator; against a later time of day, ``ge``/``gt`` mean "a later day" and ``le``/``lt``
    "this day or earlier".
    """
    day = literal.date()
    midnight = literal.timetz().replace(tzinfo=None) == time(0)
    if midnight:
        day_op = op
    else:
        day_op = {"ge": "gt", "gt": "gt", "le": "le", "lt": "le", "eq": "never", "ne": "always"}[op]
    compare_day = _ORDERING.get(day_op)
    compare = _ORDERING.get(op)

    def predicate(row: dict[str, Any]) -> bool:
        value = row.get(field)
        if value is None:
            return op == "ne"
        kind = type(value)
        if kind is date:
            if compare_day is not None:
                return compare_day(value, day)
            return day_op == "always"
        if kind is not datetime:
            raise TypeError(f"{field} is not a date or timestamp")
        assert compare is not None
        return compare(value, literal)

    return predicate


_ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt,
    "ge": operator.ge,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "ne": operator.ne,
}


def compile_filter(text: str, fields: Collection[str], version: str = "v2") -> Predicate:
    """A predicate over rows for ``text`` in the literal syntax of OData ``version``.

    Like SAP, v2 refuses v4's bare dates and v4 refuses v2's ``datetime'...'`` literals.
    FilterError names what is wrong.
    """
    return _Parser(text, fields, version).parse()
