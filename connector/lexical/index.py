"""Writing, deleting and searching the scoped lexical index (see :mod:`connector.lexical.tables`).

Writes take the caller's connection, so postings commit in the same transaction as the rows they
index (one executemany per table for a whole batch). A recall reads its candidates' document
lengths with the candidates themselves (:func:`with_lengths`: the candidate rows joined to their
documents by id and scope), then the postings of the query's terms (:func:`read_postings`, a filter
that starts with the scope's key), so nothing of another customer is read. Terms are bound
parameters, never query syntax.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from connector.db.chunks import chunks
from connector.db.copy_stream import copy_into
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
    counts: Mapping[str, int] | None = None  # ``text``'s term counts when already known


def _scope_of(source: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        POSTINGS.c.tenant == sa.bindparam("tenant"),
        POSTINGS.c.customer_id == sa.bindparam("customer_id"),
        POSTINGS.c.source == source,
    )


def _postings_statement(source: str) -> sa.Select[Any]:
    return sa.select(POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf).where(
        *_scope_of(source), POSTINGS.c.term.in_(sa.bindparam("terms", expanding=True))
    )


_POSTINGS: dict[str, sa.Select[Any]] = {}
LENGTH = "lexical_length"  # the label of :func:`with_lengths`' column in a candidate row


def with_lengths(table: sa.Table, source: str) -> tuple[sa.Join, sa.Label[Any]]:
    """``table`` (rows keyed by ``id``, scoped by ``tenant`` and ``customer_id``: episodic entries,
    indexed turns) outer-joined to its lexical documents of ``source``, and the length column to
    select with the candidates (``lexical_length``, NULL for a row not indexed).

    A document joins only the row of its own id *and* scope. Reading the lengths this way costs one
    primary-key lookup per candidate; reading every document of the scope cost a row per document
    the recall never scores (a customer in a 500-turn session has 500 turns its recall excludes)."""
    on = sa.and_(
        DOCS.c.source == source,
        DOCS.c.doc_id == table.c.id,
        DOCS.c.tenant == table.c.tenant,
        DOCS.c.customer_id == table.c.customer_id,
    )
    return table.outerjoin(DOCS, on), DOCS.c.length.label(LENGTH)


def write(conn: sa.Connection, source: str, documents: Sequence[LexicalDocument]) -> None:
    """Index new documents (ids not indexed yet: :func:`delete` the old terms of a changed one first)."""
    if not documents:
        return
    postings: list[tuple[str, str, str, str, str, int]] = []
    docs: list[tuple[str, str, str, str, int]] = []
    for document in documents:
        counts = Counter(document.counts) if document.counts is not None else term_counts(document.text)
        counts.update(document.extra_terms)
        tenant, customer, doc_id = document.scope.tenant, document.scope.customer_id, document.doc_id
        docs.append((tenant, customer, source, doc_id, sum(counts.values())))
        postings.extend((tenant, customer, source, term, doc_id, tf) for term, tf in counts.items())
    _insert_plain(conn, DOCS, _DOC_COLUMNS, docs)
    _insert_plain(conn, POSTINGS, _POSTING_COLUMNS, postings)


_DOC_COLUMNS = ("tenant", "customer_id", "source", "doc_id", "length")
_POSTING_COLUMNS = ("tenant", "customer_id", "source", "term", "doc_id", "tf")
_PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def _insert_plain(conn: sa.Connection, table: sa.Table, columns: Sequence[str], rows: list[Any]) -> None:
    """Rows of plain strings and integers (tuples in ``columns`` order) straight to the driver.

    A batch's postings are ~40 rows per case, and building SQLAlchemy's per-row parameters cost
    twice the insert itself on SQLite; on PostgreSQL, psycopg's executemany still sends one
    statement per row (the postings took half of a batch's write there), so it gets a ``COPY``
    instead: the same rows in the same transaction, as data, never as SQL text.
    """
    if not rows:
        return
    if conn.dialect.driver == "psycopg":

        def feed(copy: Any) -> None:
            for row in rows:
                copy.write_row(row)

        copy_into(conn, table.name, columns, feed)
        return
    mark = _PLACEHOLDERS.get(conn.dialect.paramstyle)
    if mark is None:  # a driver with another parameter style: the general path
        conn.execute(sa.insert(table), [dict(zip(columns, row, strict=True)) for row in rows])
        return
    marks = ", ".join([mark] * len(columns))
    conn.exec_driver_sql(f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})", rows)


def delete(conn: sa.Connection, source: str, doc_ids: Iterable[str]) -> None:
    """Remove documents from the index (erasure, PII deletion, archive, re-indexing)."""
    ids = list(doc_ids)
    for chunk in chunks(ids, _CHUNK):
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


def read_postings(conn: sa.Connection, scope: Scope, source: str, terms: Sequence[str]) -> list[Posting]:
    """The scope's postings of ``terms``."""
    if not terms:
        return []
    statement = _POSTINGS.get(source)
    if statement is None:
        statement = _POSTINGS[source] = _postings_statement(source)
    params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "terms": list(terms)}
    # fetched at once: 2x cheaper per row
    return [Posting(doc_id, term, tf) for doc_id, term, tf in conn.execute(statement, params).all()]


def search(
    conn: sa.Connection, scope: Scope, source: str, terms: Sequence[str], lengths: Mapping[str, int]
) -> dict[str, LexicalScore]:
    """BM25 of the scope's candidates (``lengths``: the documents that may be returned, with their
    lengths as :func:`with_lengths` read them) for the query ``terms``."""
    return bm25.score(read_postings(conn, scope, source, terms), lengths, query_terms=terms)
