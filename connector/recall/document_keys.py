"""Which of an entry's document keys a query names: a ranking signal both recalls share."""

from __future__ import annotations

from collections.abc import Iterable


def matches(query_keys: set[str], entry_keys: Iterable[str]) -> tuple[str, ...]:
    """Entry keys the query names, by full key or by the digits of a bare query number."""
    hits = []
    for key in entry_keys:
        digits = key.rsplit("-", 1)[-1]
        if key in query_keys or digits in query_keys:
            hits.append(key)
    return tuple(sorted(hits))
