"""The lexical side of a recall read from the store, while the customer's postings load into memory.

Why: holding a customer's postings (:mod:`connector.conversations.scope_terms`) means reading all of
them once per process, about 60 rows per long turn (578,000 for 10,000 turns of the public dev
split, seconds on a loaded machine). That read runs in the background
(:mod:`connector.conversations.scope_vectors`); until it is done a recall reads what it needs as
before it existed: each query term's document frequency (counted up to a cap), then the postings of
the terms it scores, one index range of the scope's key per term. The same scores either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Protocol

import numpy as np
import sqlalchemy as sa

from connector.lexical.tables import TURN_SOURCE
from connector.scope import Scope


class Terms(Protocol):
    """What the lexical side of a recall reads: held in memory, or from the store."""

    def frequencies(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """Each term's document frequency among the customer's turns, counted up to ``cap``
        (terms no turn holds left out)."""
        ...

    def postings_of(self, terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per term: the positions of the held turns holding it, and its frequency in each."""
        ...


def _df_statement(n_terms: int) -> sa.TextClause:
    one = (
        "SELECT :t{i}, COUNT(*) FROM (SELECT 1 FROM lexical_posting WHERE tenant = :tenant"
        " AND customer_id = :customer_id AND source = :source AND term = :t{i} LIMIT :cap) c{i}"
    )
    return sa.text(" UNION ALL ".join(one.format(i=i) for i in range(n_terms)))


def _postings_statement(n_terms: int) -> sa.TextClause:
    """One equality range of the scope's key per term: with ``IN`` over the terms PostgreSQL
    scanned the whole table when its statistics were stale (after an import)."""
    one = (
        "SELECT doc_id, term, tf FROM lexical_posting WHERE tenant = :tenant"
        " AND customer_id = :customer_id AND source = :source AND term = :t{i}"
    )
    return sa.text(" UNION ALL ".join(one.format(i=i) for i in range(n_terms)))


_DF: dict[int, sa.TextClause] = {}
_POSTINGS: dict[int, sa.TextClause] = {}
_NONE = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


class StoredTerms:
    """:class:`Terms` read through the recall's connection (see the module doc)."""

    def __init__(self, conn: sa.Connection, scope: Scope, index_of: dict[str, int], turns: int) -> None:
        self.conn = conn
        self.params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "source": TURN_SOURCE}
        self.index_of = index_of
        self.turns = turns

    def frequencies(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        if not terms:
            return {}
        statement = _DF.get(len(terms))
        if statement is None:
            statement = _DF[len(terms)] = _df_statement(len(terms))
        bound = {**self.params, "cap": cap, **{f"t{i}": t for i, t in enumerate(terms)}}
        result = self.conn.execute(statement, bound)
        rows = result.cursor.fetchall()  # plain tuples: a Row per posting cost twice the read
        result.close()
        return {str(t): int(c) for t, c in rows if c}

    def postings_of(self, terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        if not terms:
            return []
        statement = _POSTINGS.get(len(terms))
        if statement is None:
            statement = _POSTINGS[len(terms)] = _postings_statement(len(terms))
        bound = {**self.params, **{f"t{i}": t for i, t in enumerate(terms)}}
        result = self.conn.execute(statement, bound)
        rows = result.cursor.fetchall()
        result.close()
        if not rows:
            return [_NONE for _ in terms]
        docs, names, counts = zip(*rows, strict=True)
        at = np.fromiter(map(self.index_of.get, docs, repeat(-1)), dtype=np.int64, count=len(docs))
        number = {t: i for i, t in enumerate(terms)}
        term = np.fromiter(map(number.__getitem__, names), dtype=np.int64, count=len(names))
        tf = np.asarray(counts, dtype=np.float64)
        keep = (at >= 0) & (at < self.turns)  # not held (its vector is missing) or newer than the recall
        at, term, tf = at[keep], term[keep], tf[keep]
        return [(at[term == i], tf[term == i]) for i in range(len(terms))]
