"""The fake SAP's URL handling: resource paths, key predicates, ``$expand`` trees, ``$select``."""

from __future__ import annotations

import re
from dataclasses import dataclass

ExpandTree = dict[str, "ExpandTree"]

_RESOURCE = re.compile(r"^(?P<set>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<key>.*)\))?(?P<count>/\$count)?$")
_KEY_PART = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*)?'(?P<value>(?:[^']|'')*)'\s*(?:,|$)")


class QueryError(ValueError):
    """A resource path or query option the fake refuses with 400 (or 404 for unknown sets)."""


@dataclass(frozen=True, slots=True)
class Resource:
    entity_set: str
    key: dict[str, str] | list[str] | None
    count: bool


def parse_resource(path: str) -> Resource:
    """``A_Set``, ``A_Set/$count``, ``A_Set('1')`` or ``A_Set(K1='a',K2='b')``."""
    match = _RESOURCE.match(path)
    if match is None:
        raise QueryError(f"resource segment {path!r} is not an entity set")
    raw_key = match.group("key")
    key: dict[str, str] | list[str] | None = None
    if raw_key is not None:
        named: dict[str, str] = {}
        positional: list[str] = []
        pos = 0
        while pos < len(raw_key):
            part = _KEY_PART.match(raw_key, pos)
            if part is None or part.end() == pos:
                raise QueryError(f"malformed key predicate ({raw_key})")
            value = part.group("value").replace("''", "'")
            if part.group("name"):
                named[part.group("name")] = value
            else:
                positional.append(value)
            pos = part.end()
        if named and positional:
            raise QueryError("a key predicate cannot mix named and positional values")
        key = named or positional
    return Resource(match.group("set"), key, match.group("count") is not None)


def parse_expand_v2(text: str) -> ExpandTree:
    """``to_A/to_B,to_A/to_C`` into a tree."""
    tree: ExpandTree = {}
    for path in (p.strip() for p in text.split(",") if p.strip()):
        node = tree
        for step in path.split("/"):
            node = node.setdefault(step, {})
    return tree


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise QueryError("unbalanced parentheses in $expand")
        elif char == sep and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    if depth != 0:
        raise QueryError("unbalanced parentheses in $expand")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


SELECTED = "$select"  # the key of an expansion node's selected properties (names -> {})


def parse_expand_v4(text: str) -> ExpandTree:
    """``to_A($select=F,G;$expand=to_B,to_C),to_D`` into a tree; a node's ``$select`` is kept under
    :data:`SELECTED` (other nested options are ignored)."""
    tree: ExpandTree = {}
    for item in _split_top(text, ","):
        name, _, rest = item.partition("(")
        node = tree.setdefault(name.strip(), {})
        if rest:
            for option in _split_top(rest[:-1], ";"):
                key, _, value = option.partition("=")
                if key.strip() == "$expand":
                    node.update(parse_expand_v4(value))
                elif key.strip() == SELECTED:
                    node[SELECTED] = {n: {} for n in parse_select(value) or ()}
    return tree


def add_nested_select(tree: ExpandTree, names: list[str]) -> None:
    """v2's ``to_A/to_B/Field`` selections onto the expansion tree (the path must be expanded)."""
    for name in names:
        *path, field = name.split("/")
        node = tree
        for step in path:
            if step not in node:
                raise QueryError(f"$select path {name} names {step}, which is not expanded")
            node = node[step]
        node.setdefault(SELECTED, {})[field] = {}


def parse_select(text: str) -> list[str] | None:
    """The selected names, or None for all (``*`` or absent)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    return None if not names or "*" in names else names


def parse_int(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise QueryError(f"{name} must be a non-negative integer, got {value[:20]!r}")
    return int(value)
