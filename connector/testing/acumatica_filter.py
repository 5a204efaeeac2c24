"""A small OData v3 ``$filter`` engine for the fake Acumatica.

Supports ``eq ne gt ge lt le``, ``and or not``, parentheses, ``substringof``, ``startswith``,
``endswith``, ``tolower``/``toupper``, linked fields (``MainContact/Email``) and custom fields
(``cf.String(f='Document.AttrPOREQ')``), over strings (case-insensitive, as SQL Server compares
them), numbers, booleans, ``datetimeoffset'…'``, ``datetime'…'`` (server-local) and ``date'…'``.
:meth:`Filter.bounds` exposes a range on one field so the store can answer from a sorted index.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any

Getter = Callable[[Any], Any]  # row -> value
RowValues = Callable[[Any, str], Any]  # (row, field path) -> plain value


class FilterError(ValueError):
    """A ``$filter`` the fake cannot parse or evaluate (the real server answers 400/500 too)."""


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<typed>(?:datetimeoffset|datetime|date|guid|time)'(?:[^']|'')*')
      | (?P<string>'(?:[^']|'')*')
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[mMdDfFlL]?)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<punct>[(),=])
    )""",
    re.VERBOSE,
)
_COMPARISONS = frozenset({"eq", "ne", "gt", "ge", "lt", "le"})
_CUSTOM_FUNCTIONS = frozenset({"cf.String", "cf.Decimal", "cf.Int", "cf.Boolean", "cf.DateTime", "cf.Short"})


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise FilterError(
                f"$filter: unexpected character at position {position}: {text[position : position + 20]!r}"
            )
        kind = match.lastgroup
        assert kind is not None
        tokens.append(_Tok(kind, match.group(kind)))
        position = match.end()
    return tokens


@dataclass(frozen=True, slots=True)
class Bound:
    """A range on one field, read from the top-level ``and`` conjuncts of a filter."""

    low: Any = None
    low_inclusive: bool = True
    high: Any = None
    high_inclusive: bool = True


class Filter:
    """A parsed filter: ``matches(row)`` and :meth:`bounds` for index lookups."""

    def __init__(self, text: str, predicate: Getter, conjuncts: list[tuple[str, str, Any]]) -> None:
        self.text = text
        self._predicate = predicate
        self._conjuncts = conjuncts

    def matches(self, row: Any) -> bool:
        return self._predicate(row) is True

    def bounds(self, field: str) -> Bound | None:
        """The tightest range on ``field`` implied by the top-level ``and`` comparisons, if any."""
        low: Any = None
        low_inclusive = True
        high: Any = None
        high_inclusive = True
        found = False
        for name, operator, value in self._conjuncts:
            if name != field or not isinstance(value, datetime):
                continue
            found = True
            if operator in ("ge", "gt", "eq") and (
                low is None or value > low or (value == low and operator == "gt")
            ):
                low, low_inclusive = value, operator != "gt"
            if operator in ("le", "lt", "eq") and (
                high is None or value < high or (value == high and operator == "lt")
            ):
                high, high_inclusive = value, operator != "lt"
        return Bound(low, low_inclusive, high, high_inclusive) if found else None


class _Parser:
    def __init__(self, text: str, lookup: RowValues, local_tz: tzinfo) -> None:
        self.tokens = _tokenize(text)
        self.position = 0
        self.lookup = lookup
        self.local_tz = local_tz
        self.conjuncts: list[tuple[str, str, Any]] = []

    # Token helpers ------------------------------------------------------------------------------
    def peek(self) -> _Tok | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> _Tok:
        token = self.peek()
        if token is None:
            raise FilterError("$filter ends too early")
        self.position += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text != text:
            raise FilterError(f"$filter: expected {text!r}, got {token.text!r}")

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "name" and token.text == word:
            self.position += 1
            return True
        return False

    # Grammar ------------------------------------------------------------------------------------
    def parse(self) -> Getter:
        predicate = self.or_expr(top=True)
        extra = self.peek()
        if extra is not None:
            raise FilterError(f"$filter: unexpected {extra.text!r}")
        return predicate

    def or_expr(self, top: bool = False) -> Getter:
        parts = [self.and_expr(top)]
        while self.keyword("or"):
            parts.append(self.and_expr(False))
        if len(parts) == 1:
            return parts[0]
        if top:
            self.conjuncts.clear()
        return lambda row: any(part(row) is True for part in parts)

    def and_expr(self, top: bool) -> Getter:
        parts = [self.not_expr(top)]
        while self.keyword("and"):
            parts.append(self.not_expr(top))
        if len(parts) == 1:
            return parts[0]
        return lambda row: all(part(row) is True for part in parts)

    def not_expr(self, top: bool) -> Getter:
        if self.keyword("not"):
            inner = self.not_expr(False)
            return lambda row: inner(row) is not True
        return self.comparison(top)

    def comparison(self, top: bool) -> Getter:
        left, left_field = self.operand()
        token = self.peek()
        if token is None or token.kind != "name" or token.text not in _COMPARISONS:
            return left
        operator = self.take().text
        right, right_field = self.operand()
        if top and left_field is not None and right_field is None:
            constant = right(None)
            self.conjuncts.append((left_field, operator, constant))
        return _compare(left, operator, right, self.local_tz)

    def operand(self) -> tuple[Getter, str | None]:
        token = self.take()
        if token.text == "(":
            inner = self.or_expr(False)
            self.expect(")")
            return inner, None
        if token.kind in ("string", "typed", "number"):
            value = self.literal(token)
            return (lambda row: value), None
        if token.kind == "name":
            if token.text in ("true", "false"):
                flag = token.text == "true"
                return (lambda row: flag), None
            if token.text == "null":
                return (lambda row: None), None
            nxt = self.peek()
            if nxt is not None and nxt.text == "(":
                return self.function(token.text), None
            path = token.text
            lookup = self.lookup
            return (lambda row: lookup(row, path)), path
        raise FilterError(f"$filter: unexpected {token.text!r}")

    def function(self, name: str) -> Getter:
        self.expect("(")
        if name in _CUSTOM_FUNCTIONS:
            if not self.keyword("f"):
                raise FilterError(f"$filter: {name} expects f='View.Field'")
            self.expect("=")
            token = self.take()
            if token.kind != "string":
                raise FilterError(f"$filter: {name} expects f='View.Field'")
            path = "cf:" + token.text[1:-1].replace("''", "'")
            self.expect(")")
            lookup = self.lookup
            return lambda row: lookup(row, path)
        args = [self.or_expr(False)]
        while self.peek() is not None and self.peek().text == ",":  # type: ignore[union-attr]
            self.take()
            args.append(self.or_expr(False))
        self.expect(")")
        return _function(name, args)

    def literal(self, token: _Tok) -> Any:
        if token.kind == "string":
            return token.text[1:-1].replace("''", "'")
        if token.kind == "number":
            text = token.text.rstrip("mMdDfFlL")
            try:
                return int(text) if re.fullmatch(r"-?\d+", text) else Decimal(text)
            except InvalidOperation:
                raise FilterError(f"$filter: bad number {token.text!r}") from None
        prefix, _, quoted = token.text.partition("'")
        body = quoted[:-1].replace("''", "'")
        try:
            if prefix == "datetimeoffset":
                value = datetime.fromisoformat(body.replace("Z", "+00:00"))
                if value.tzinfo is not None:
                    return value.astimezone(UTC)
            if prefix == "datetime":
                naive = datetime.fromisoformat(body)
                if naive.tzinfo is None:
                    naive = naive.replace(tzinfo=self.local_tz)
                return naive.astimezone(UTC)
            if prefix == "date":
                return date.fromisoformat(body)
        except ValueError:
            raise FilterError(f"$filter: bad {prefix} literal {body!r}") from None
        if prefix == "datetimeoffset":
            raise FilterError(f"$filter: datetimeoffset literal {body!r} has no offset")
        return body  # guid and time literals compare as text


def _function(name: str, args: list[Getter]) -> Getter:
    def text_args(row: Any) -> list[str | None]:
        values = [arg(row) for arg in args]
        return [None if value is None else str(value).casefold() for value in values]

    if name == "substringof" and len(args) == 2:
        return lambda row: (lambda a: a[0] is not None and a[1] is not None and a[0] in a[1])(text_args(row))
    if name == "startswith" and len(args) == 2:
        return lambda row: (lambda a: a[0] is not None and a[1] is not None and a[0].startswith(a[1]))(
            text_args(row)
        )
    if name == "endswith" and len(args) == 2:
        return lambda row: (lambda a: a[0] is not None and a[1] is not None and a[0].endswith(a[1]))(
            text_args(row)
        )
    if name in ("tolower", "toupper") and len(args) == 1:
        arg = args[0]
        return lambda row: (lambda value: None if value is None else str(value))(arg(row))
    raise FilterError(f"$filter: unsupported function {name}() with {len(args)} argument(s)")


def _normalise(left: Any, right: Any, local_tz: tzinfo) -> tuple[Any, Any]:
    """Bring two values to one comparable type, as the server's SQL would."""
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold(), right.casefold()
    if isinstance(left, bool) or isinstance(right, bool):
        if isinstance(left, bool) and isinstance(right, bool):
            return left, right
    elif isinstance(left, (int, float, Decimal)) and isinstance(right, (int, float, Decimal)):
        return Decimal(str(left)), Decimal(str(right))
    if isinstance(left, (datetime, date)) and isinstance(right, (datetime, date)):
        return _as_datetime(left, local_tz), _as_datetime(right, local_tz)
    raise FilterError(f"$filter: cannot compare {type(left).__name__} with {type(right).__name__}")


def _as_datetime(value: date, local_tz: tzinfo) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.combine(value, time(0), tzinfo=local_tz).astimezone(UTC)


def _compare(left: Getter, operator: str, right: Getter, local_tz: tzinfo) -> Getter:
    def evaluate(row: Any) -> bool:
        a, b = left(row), right(row)
        if a is None or b is None:
            if operator == "eq":
                return a is None and b is None
            if operator == "ne":
                return not (a is None and b is None)
            return False
        a, b = _normalise(a, b, local_tz)
        if operator == "eq":
            return bool(a == b)
        if operator == "ne":
            return bool(a != b)
        if operator == "gt":
            return bool(a > b)
        if operator == "ge":
            return bool(a >= b)
        if operator == "lt":
            return bool(a < b)
        return bool(a <= b)

    return evaluate


_WORDS = frozenset({"and", "or", "not", "true", "false", "null", *_COMPARISONS})


def field_paths(text: str) -> list[str]:
    """The field paths a filter names (``CustomerID``, ``MainContact/Email``), not functions or
    custom fields, so the server can refuse a name its endpoint version does not define."""
    tokens = _tokenize(text)
    paths = []
    for index, token in enumerate(tokens):
        if token.kind != "name" or token.text in _WORDS:
            continue
        following = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if following not in ("(", "="):
            paths.append(token.text)
    return paths


def parse_filter(text: str, lookup: RowValues, *, local_tz: tzinfo = UTC) -> Filter:
    """Parse ``text``; ``lookup(row, path)`` returns a field's plain value (path ``cf:View.Field``
    for custom fields)."""
    parser = _Parser(text, lookup, local_tz)
    predicate = parser.parse()
    return Filter(text, predicate, parser.conjuncts)
