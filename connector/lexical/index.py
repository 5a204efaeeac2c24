"""Writing, deleting and searching the scoped lexical index (see :mod:`connector.lexical.tables`).

Writes take the caller's connection, so postings commit in the same transaction as the rows they
index (one executemany per table for a whole batch). A search reads, in one statement, the postings
of the query's terms and the lengths of the scope's documents; both filters start with the scope's
key, so nothing of another customer is read. Terms are bound parameters, never query syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from connector.lexical import bm25
from connector.lexical.bm25 import LexicalScore, Posting
from connector.lexical.tables import DOCS, POSTINGS
from connector.lexical.tokens import term_counts
from connector.scope import Scope

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class LexicalDocument:
    """One text to index under its scope, source and id."""

    scope: Scope
    doc_id: str
    text: str
    extra_terms: tuple[str, ...] = ()


def _scope_of(source: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        POSTINGS.c.tenant == sa.bindparam("tenant"),
        POSTINGS.c.customer_id == sa.bindparam("customer_id"),
        POSTINGS.c.source == source,
    )


def _search_statement(source: str) -> sa.CompoundSelect[Any]:
    postings = sa.select(POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf).where(
        *_scope_of(source), POSTINGS.c.term.in_(sa.bindparam("terms", expanding=True))
    )
    lengths = sa.select(DOCS.c.doc_id, sa.null().label("term"), DOCS.c.length).where(
        DOCS.c.tenant == sa.bindparam("tenant"),
        DOCS.c.customer_id == sa.bindparam("customer_id"),
        DOCS.c.source == source,
    )
    return sa.union_all(postings, lengths)


_SEARCHES: dict[str, sa.CompoundSelect[Any]] = {}


def write(conn: sa.Connection, source: str, documents: Sequence[LexicalDocument]) -> None:
    """Index new documents (ids not indexed yet: :func:`delete` the old terms of a changed one first)."""
    if not documents:
        return
    postings: list[tuple[str, str, str, str, str, int]] = []
    docs: list[dict[str, object]] = []
    for document in documents:
        counts = term_counts(document.text)
        counts.update(document.extra_terms)
        tenant, customer, doc_id = document.scope.tenant, document.scope.customer_id, document.doc_id
        docs.append({"tenant": tenant, "customer_id": customer, "source": source, "doc_id": doc_id,
                     "length": sum(counts.values())})  # fmt: skip
        postings.extend((tenant, customer, source, term, doc_id, tf) for term, tf in counts.items())
    conn.execute(sa.insert(DOCS), docs)
    if postings:
        _insert_postings(conn, postings)


_POSTING_COLUMNS = ("tenant", "customer_id", "source", "term", "doc_id", "tf")
_PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def _insert_postings(conn: sa.Connection, rows: list[tuple[str, str, str, str, str, int]]) -> None:
    """One executemany of plain tuples, straight to the driver: a batch's postings are ~40 rows per
    case, and building SQLAlchemy's per-row parameters cost twice the insert itself on SQLite.
    The values are bound parameters as before (plain strings and integers need no conversion)."""
    mark = _PLACEHOLDERS.get(conn.dialect.paramstyle)
    if mark is None:  # a driver with another parameter style: the general path
        conn.execute(sa.insert(POSTINGS), [dict(zip(_POSTING_COLUMNS, row, strict=True)) for row in rows])
        return
    columns = ", ".join(_POSTING_COLUMNS)
    marks = ", ".join([mark] * len(_POSTING_COLUMNS))
    conn.exec_driver_sql(f"INSERT INTO {POSTINGS.name} ({columns}) VALUES ({marks})", rows)


def delete(conn: sa.Connection, source: str, doc_ids: Iterable[str]) -> None:
    """Remove documents from the index (erasure, PII deletion, archive, re-indexing)."""
    ids = list(doc_ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        conn.execute(sa.delete(POSTINGS).where(POSTINGS.c.source == source, POSTINGS.c.doc_id.in_(chunk)))
        conn.execute(sa.delete(DOCS).where(DOCS.c.source == source, DOCS.c.doc_id.in_(chunk)))


def delete_scope(conn: sa.Connection, scope: Scope) -> int:
    """Remove every document of one customer, of every source; returns how many documents."""
    p, d = POSTINGS.c, DOCS.c
    conn.execute(sa.delete(POSTINGS).where(p.tenant == scope.tenant, p.customer_id == scope.customer_id))
    removed = conn.execute(
        sa.delete(DOCS).where(d.tenant == scope.tenant, d.customer_id == scope.customer_id)
    ).rowcount
    return int(removed or 0)


def delete_source_scope(conn: sa.Connection, scope: Scope, source: str) -> None:
    """Remove every document of one source of one customer (erasure of one kind of text)."""
    p, d = POSTINGS.c, DOCS.c
    conn.execute(
        sa.delete(POSTINGS).where(
            p.tenant == scope.tenant, p.customer_id == scope.customer_id, p.source == source
        )
    )
    conn.execute(
        sa.delete(DOCS).where(
            d.tenant == scope.tenant, d.customer_id == scope.customer_id, d.source == source
        )
    )


def read(
    conn: sa.Connection, scope: Scope, source: str, terms: Sequence[str]
) -> tuple[list[Posting], dict[str, int]]:
    """The scope's postings of ``terms`` and the lengths of the scope's documents."""
    if not terms:
        return [], {}
    statement = _SEARCHES.get(source)
    if statement is None:
        statement = _SEARCHES[source] = _search_statement(source)
    params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "terms": list(terms)}
    postings: list[Posting] = []
    lengths: dict[str, int] = {}
    for doc_id, term, tf in conn.execute(statement, params).all():  # fetched at once: 2x cheaper per row
        if term is None:
            lengths[doc_id] = tf
        else:
            postings.append(Posting(doc_id, term, tf))
    return postings, lengths


def search(
    conn: sa.Connection, scope: Scope, source: str, terms: Sequence[str], candidates: Iterable[str]
) -> dict[str, LexicalScore]:
    """BM25 of the scope's ``candidates`` (ids that may be returned) for the query ``terms``."""
    postings, lengths = read(conn, scope, source, terms)
    wanted = set(candidates)
    return bm25.score(postings, {d: n for d, n in lengths.items() if d in wanted}, query_terms=terms)
