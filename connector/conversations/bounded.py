"""Ranking a customer's turns from two bounded candidate sets, whatever the length of their history.

The candidates are not every turn of the customer but the union of two top lists, each of at most
``per_signal`` turns:

- dense: the turns whose best vector (any part of a long turn) is closest to the query, from the
  customer's matrix held in memory (:mod:`connector.conversations.scope_vectors`): one product and
  a partial sort in numpy, the date and session filters applied as masks;
- lexical: the turns with the highest BM25 score, computed in SQL from the postings of the query's
  rarer terms (ascending document frequency until ``POSTINGS_BUDGET`` postings: a term half the turns
  hold adds little to any score and would make the read follow the history), without the length
  norm; the exact score of every candidate is then computed from its postings of all the query's
  terms, with the customer's statistics (turn count, average length, each term's frequency).

Those candidates are fused as before (:func:`~connector.episodic.fusion.fuse`), the dense side
centred on the customer's whole centroid. A customer with fewer turns than the two lists hold
has every turn ranked, as before this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import sqlalchemy as sa

from connector.conversations.scope_vectors import Snapshot, epoch_seconds
from connector.episodic.fusion import Fused, Fusion, fuse
from connector.episodic.scoped_recall import RecallQuery
from connector.lexical.bm25 import K1, B, LexicalScore, idf
from connector.lexical.tables import POSTINGS, TURN_SOURCE
from connector.scope import Scope

POSTINGS_BUDGET = 4_000  # postings the lexical top list reads at most (its terms' document frequencies)


@dataclass(frozen=True, slots=True)
class Filters:
    """Which of the customer's turns a recall may return."""

    not_before: datetime  # the retention window's start (or the caller's ``after``)
    not_after: datetime | None  # ``as_of`` (or the caller's ``before``)
    exclude_session: str | None


_DF = (
    sa.select(POSTINGS.c.term, sa.func.count())
    .where(
        POSTINGS.c.tenant == sa.bindparam("tenant"),
        POSTINGS.c.customer_id == sa.bindparam("customer_id"),
        POSTINGS.c.source == TURN_SOURCE,
        POSTINGS.c.term.in_(sa.bindparam("terms", expanding=True)),
    )
    .group_by(POSTINGS.c.term)
)
_CANDIDATE_POSTINGS = sa.select(POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf).where(
    POSTINGS.c.tenant == sa.bindparam("tenant"),
    POSTINGS.c.customer_id == sa.bindparam("customer_id"),
    POSTINGS.c.source == TURN_SOURCE,
    POSTINGS.c.term.in_(sa.bindparam("terms", expanding=True)),
    POSTINGS.c.doc_id.in_(sa.bindparam("docs", expanding=True)),
)


def _top_statement(n_terms: int) -> sa.TextClause:
    """BM25 without the length norm over the given terms' postings, best ``limit`` documents first."""
    values = ", ".join(f"(:t{i}, CAST(:w{i} AS FLOAT))" for i in range(n_terms))
    return sa.text(
        f"WITH q(term, w) AS (VALUES {values}) "
        "SELECT p.doc_id FROM lexical_posting p JOIN q ON q.term = p.term "
        "WHERE p.tenant = :tenant AND p.customer_id = :customer_id AND p.source = :source "
        f"GROUP BY p.doc_id ORDER BY SUM(q.w * p.tf * {K1 + 1.0} / (p.tf + {K1})) DESC, p.doc_id "
        "LIMIT :limit"
    )


_TOP: dict[int, sa.TextClause] = {}


def rank(
    conn: sa.Connection,
    scope: Scope,
    snap: Snapshot,
    query: RecallQuery,
    filters: Filters,
    *,
    k: int,
    per_signal: int,
    fusion: Fusion,
    threshold: float,
) -> list[tuple[tuple[str, str, int, str], Fused]]:
    """The top ``k`` turns as ``(id, session_id, seq, vector_hash)`` rows with their rank."""
    n = snap.turns
    allowed = _mask(snap, n, filters)
    if not allowed.any() or query.vector is None:
        query.cancel()
        return []
    params = {"tenant": scope.tenant, "customer_id": scope.customer_id}
    df = _document_frequencies(conn, params, query.terms)
    lexical_top = _lexical_top(conn, params, snap, n, df, per_signal)
    vector = np.asarray(query.vector.result(), dtype=np.float32).reshape(-1)
    dense, ranking = _dense(snap, n, vector, fusion, int(allowed.sum()))
    masked = np.where(allowed, ranking, -np.inf)
    take = min(per_signal, n)
    dense_top = np.argpartition(-masked, take - 1)[:take] if take < n else np.arange(n)
    chosen = sorted({int(i) for i in dense_top if allowed[i]} | {i for i in lexical_top if allowed[i]})
    if not chosen:
        return []
    scores = _exact_bm25(conn, params, snap, n, chosen, query.terms, df)
    ranked = fuse(
        vector, np.zeros((len(chosen), 0), dtype=np.float32), [scores.get(i) for i in chosen],
        [()] * len(chosen), set(),
        k=k, threshold=threshold, fusion=fusion, yes_no=query.yes_no,
        cosines=([float(dense[i]) for i in chosen], [float(ranking[i]) for i in chosen]),
    )  # fmt: skip
    out = []
    for r in ranked:
        i = chosen[r.index]
        out.append(((snap.turn_ids[i], snap.sessions[i], snap.seqs[i], snap.hashes[i]), r))
    return out


def _mask(snap: Snapshot, n: int, filters: Filters) -> np.ndarray:
    occurred = snap.occurred[:n]
    allowed = occurred >= epoch_seconds(filters.not_before)
    if filters.not_after is not None:
        allowed &= occurred <= epoch_seconds(filters.not_after)
    if filters.exclude_session is not None:
        code = snap.session_codes.get(filters.exclude_session)
        if code is not None:
            allowed &= snap.session_code[:n] != code
    return allowed


def _dense(
    snap: Snapshot, n: int, vector: np.ndarray, fusion: Fusion, live: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per turn: its best cosine to the query over its parts, and the centred score the ranking uses
    (:func:`connector.episodic.fusion._cosines`, centred on the customer's centroid)."""
    rows = snap.matrix
    norm = float(np.sqrt(snap.total @ snap.total))
    strength = (
        fusion.centring * live / (live + fusion.centring_scope)
        if fusion.centring > 0 and live > 1 and norm > 0
        else 0.0
    )
    if strength:
        both = np.einsum("ij,kj->ki", rows, np.stack((vector, (snap.total / norm).astype(np.float32))))
        cos, toward = both[0], both[1]
        centred = cos - strength * toward
    else:
        cos = np.einsum("ij,j->i", rows, vector)
        centred = cos
    dense = cos[snap.first[:n]].astype(np.float64)
    ranking = centred[snap.first[:n]].astype(np.float64)
    parts = snap.part_rows
    if len(parts):
        owners = snap.owner[parts]
        inside = owners < n
        parts, owners = parts[inside], owners[inside]
        np.maximum.at(dense, owners, cos[parts])
        np.maximum.at(ranking, owners, centred[parts])
    return dense, ranking


def _document_frequencies(
    conn: sa.Connection, params: dict[str, Any], terms: Sequence[str]
) -> dict[str, int]:
    if not terms:
        return {}
    return {str(t): int(c) for t, c in conn.execute(_DF, {**params, "terms": list(terms)}).all()}


def _lexical_top(
    conn: sa.Connection, params: dict[str, Any], snap: Snapshot, n: int, df: dict[str, int], limit: int
) -> list[int]:
    """The positions of the turns with the best BM25 (no length norm) over the rarer query terms."""
    if not df:
        return []
    used: list[tuple[str, int]] = []
    read = 0
    for term, count in sorted(df.items(), key=lambda item: (item[1], item[0])):
        if used and read + count > POSTINGS_BUDGET:
            break
        used.append((term, count))
        read += count
    statement = _TOP.get(len(used))
    if statement is None:
        statement = _TOP[len(used)] = _top_statement(len(used))
    bound: dict[str, Any] = {**params, "source": TURN_SOURCE, "limit": limit}
    for i, (term, count) in enumerate(used):
        bound[f"t{i}"] = term
        bound[f"w{i}"] = idf(term, max(n, count), count)
    positions = []
    for (doc_id,) in conn.execute(statement, bound).all():
        at = snap.index_of.get(doc_id)
        if at is not None and at < n:
            positions.append(at)
    return positions


def _exact_bm25(
    conn: sa.Connection,
    params: dict[str, Any],
    snap: Snapshot,
    n: int,
    chosen: list[int],
    terms: Sequence[str],
    df: dict[str, int],
) -> dict[int, LexicalScore]:
    """BM25 of the candidates with the customer's statistics (all its turns, not the candidates')."""
    if not df:
        return {}
    docs = {snap.turn_ids[i]: i for i in chosen}
    lengths = snap.lengths[:n]
    avgdl = max(float(lengths.mean()) if n else 1.0, 1.0)
    weights = {t: idf(t, max(n, c), c) for t, c in df.items()}
    query_weight = sum(weights.get(t, idf(t, n, 0)) for t in dict.fromkeys(terms))
    totals: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    postings = conn.execute(_CANDIDATE_POSTINGS, {**params, "terms": list(df), "docs": list(docs)}).all()
    for doc_id, term, tf in postings:
        i = docs[doc_id]
        norm = K1 * (1.0 - B + B * float(lengths[i]) / avgdl)
        totals[i] = totals.get(i, 0.0) + weights[term] * tf * (K1 + 1.0) / (tf + norm)
        matched.setdefault(i, []).append(term)
    return {i: LexicalScore(s, tuple(sorted(matched[i])), query_weight) for i, s in totals.items()}
