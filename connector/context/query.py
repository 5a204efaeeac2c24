"""Make the agent's query safe to embed: no control characters, bounded length, with warnings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from connector.context.quote import unsafe_chars
from connector.errors import ConnectorError

_WHITESPACE = re.compile(r"\s+")


class ContextInputError(ConnectorError, ValueError):
    """A build_context argument that cannot be used (a query that is not text, a tiny budget)."""


@dataclass(frozen=True, slots=True)
class CleanQuery:
    text: str
    warnings: tuple[str, ...]


def clean_query(query: object, max_chars: int) -> CleanQuery:
    """Strip control/format characters, collapse whitespace, trim to ``max_chars`` at a word boundary."""
    if not isinstance(query, str):
        raise ContextInputError(f"query must be text, got {type(query).__name__}")
    warnings: list[str] = []
    text = _WHITESPACE.sub(" ", query)  # newlines and tabs are whitespace, not control characters
    text, removed = unsafe_chars().subn("", text)
    if removed:
        warnings.append(f"{removed} control characters were removed from the query")
    text = _WHITESPACE.sub(" ", text).strip()
    if len(text) > max_chars:
        cut = text[:max_chars].rsplit(" ", 1)[0] or text[:max_chars]
        warnings.append(
            f"query trimmed from {len(text)} to {len(cut)} characters for case recall "
            f"(context.max_query_chars = {max_chars})"
        )
        text = cut
    if not text:
        warnings.append("query is empty: similar past cases were not searched")
    return CleanQuery(text=text, warnings=tuple(warnings))
