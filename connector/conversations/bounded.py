"""Ranking a customer's turns from two bounded candidate sets, whatever the length of their history.

The candidates are not every turn of the customer but the union of two top lists, each of at most
``per_signal`` turns:

- dense: the turns whose best vector (any part of a long turn) is closest to the query, from the
  customer's matrix held in memory (:mod:`connector.conversations.scope_vectors`): one product and
  a partial sort in numpy, the date and session filters applied as masks;
- lexical: the turns with the highest BM25 score over the query's terms that the customer's turns
  hold, rarest first, until ``POSTINGS_BUDGET`` postings (a term a large share of the turns hold adds
  little to any score, and reading its postings would make the cost follow the history). The
  postings are read once (one index range per term), scored in numpy with the customer's statistics
  (turn count, average length, each term's frequency), and serve the dense candidates' lexical
  scores too.

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

POSTINGS_BUDGET = 3_000  # postings the lexical top list reads at most (its terms' document frequencies)


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
_POSTINGS = sa.select(POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf).where(
    POSTINGS.c.tenant == sa.bindparam("tenant"),
    POSTINGS.c.customer_id == sa.bindparam("customer_id"),
    POSTINGS.c.source == TURN_SOURCE,
    POSTINGS.c.term.in_(sa.bindparam("terms", expanding=True)),
)


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
    lexical = _lexical(conn, params, snap, n, df, query.terms)
    lexical_top = lexical.top(allowed, per_signal)
    vector = np.asarray(query.vector.result(), dtype=np.float32).reshape(-1)
    dense, ranking = _dense(snap, n, vector, fusion, int(allowed.sum()))
    masked = np.where(allowed, ranking, -np.inf)
    take = min(per_signal, n)
    dense_top = np.argpartition(-masked, take - 1)[:take] if take < n else np.arange(n)
    chosen = sorted({int(i) for i in dense_top if allowed[i]} | set(lexical_top))
    if not chosen:
        return []
    scores = lexical.of(chosen)
    ranked = fuse(
        vector, np.zeros((len(chosen), 0), dtype=np.float32), scores,
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


@dataclass(slots=True)
class _Lexical:
    """BM25 of every turn holding a read term (``scores``, per turn position) and, per turn, the
    terms it holds."""

    scores: np.ndarray
    terms: dict[int, list[str]]
    query_weight: float

    def top(self, allowed: np.ndarray, limit: int) -> list[int]:
        held = np.flatnonzero((self.scores > 0) & allowed)
        if len(held) > limit:
            held = held[np.argpartition(-self.scores[held], limit - 1)[:limit]]
        return [int(i) for i in held]

    def of(self, chosen: list[int]) -> list[LexicalScore | None]:
        return [
            LexicalScore(float(self.scores[i]), tuple(sorted(self.terms[i])), self.query_weight)
            if i in self.terms
            else None
            for i in chosen
        ]


def _lexical(
    conn: sa.Connection,
    params: dict[str, Any],
    snap: Snapshot,
    n: int,
    df: dict[str, int],
    terms: Sequence[str],
) -> _Lexical:
    """The BM25 side over the query's terms the budget admits, rarest first (see the module doc)."""
    scores = np.zeros(n, dtype=np.float64)
    used: list[str] = []
    read = 0
    for term, count in sorted(df.items(), key=lambda item: (item[1], item[0])):
        if used and read + count > POSTINGS_BUDGET:
            break
        used.append(term)
        read += count
    weights = {t: idf(t, max(n, c), c) for t, c in df.items()}
    query_weight = sum(weights.get(t, idf(t, n, 0)) for t in dict.fromkeys(terms))
    held: dict[int, list[str]] = {}
    if not used:
        return _Lexical(scores, held, query_weight)
    rows = conn.execute(_POSTINGS, {**params, "terms": used}).all()
    index_of = snap.index_of
    at = np.empty(len(rows), dtype=np.int64)
    tf = np.empty(len(rows), dtype=np.float64)
    weight = np.empty(len(rows), dtype=np.float64)
    kept = 0
    for doc_id, term, count in rows:
        i = index_of.get(doc_id)
        if i is None or i >= n:  # not held yet (its vector is missing) or newer than this snapshot
            continue
        at[kept], tf[kept], weight[kept] = i, count, weights[term]
        held.setdefault(i, []).append(term)
        kept += 1
    at, tf, weight = at[:kept], tf[:kept], weight[:kept]
    lengths = snap.lengths[:n]
    avgdl = max(float(lengths.mean()) if n else 1.0, 1.0)
    norm = K1 * (1.0 - B + B * lengths[at] / avgdl)
    np.add.at(scores, at, weight * tf * (K1 + 1.0) / (tf + norm))
    return _Lexical(scores, held, query_weight)
