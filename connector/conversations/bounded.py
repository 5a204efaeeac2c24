"""Ranking a customer's turns from two bounded candidate sets, whatever the length of their history.

The candidates are not every turn of the customer but the union of two top lists, each of at most
``per_signal`` turns:

- dense: the turns whose best vector (any part of a long turn) is closest to the query, from the
  customer's matrix held in memory (:mod:`connector.conversations.scope_vectors`): one product and
  a partial sort in numpy, the date and session filters applied as masks;
- lexical: the turns with the highest BM25 score over the query's terms that the customer's turns
  hold, rarest first, until ``POSTINGS_BUDGET`` postings (a term a large share of the turns hold adds
  little to any score). The postings are the customer's held ones
  (:mod:`connector.conversations.scope_terms`, no read of the store per recall; while they load,
  the store's: :mod:`connector.conversations.stored_terms`), scored in numpy
  with the customer's statistics (turn count, average length, each term's frequency), and serve
  the dense candidates' lexical scores too.

Those candidates are fused as before (:func:`~connector.recall.fusion.fuse`), the dense side
centred on the customer's whole centroid. A customer with fewer turns than the two lists hold
has every turn ranked, as before this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from connector.conversations.scope_vectors import Snapshot, epoch_seconds
from connector.lexical.bm25 import K1, B, LexicalScore, idf
from connector.recall.fusion import Fused, Fusion, fuse
from connector.recall.scoped_recall import RecallQuery

POSTINGS_BUDGET = 2_000  # postings the lexical top list reads at most (its terms' document frequencies)


@dataclass(frozen=True, slots=True)
class Filters:
    """Which of the customer's turns a recall may return."""

    not_before: datetime  # the retention window's start (or the caller's ``after``)
    not_after: datetime | None  # ``as_of`` (or the caller's ``until``)
    exclude_session: str | None
    named: tuple[datetime, datetime] | None = None  # the span the query's words name (when.py)


def rank(
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
    allowed, narrowed = _mask(snap, n, filters)
    if narrowed:  # the time the question names is evidence enough: its turns are not cut
        threshold = -np.inf
    if not allowed.any() or query.vector is None:
        query.cancel()
        return []
    df = snap.terms.frequencies(query.terms, POSTINGS_BUDGET + 1)
    lexical = _lexical(snap, n, df, query.terms)
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
        scope_size=int(allowed.sum()),
        groups=snap.session_code[chosen].tolist() if fusion.session_weight else None,
        mean_length=float(snap.lengths[:n][allowed].mean()) if fusion.long_text_weight is not None else None,
    )  # fmt: skip
    out = []
    for r in ranked:
        i = chosen[r.index]
        out.append(((snap.turn_ids[i], snap.sessions[i], snap.seqs[i], snap.hashes[i]), r))
    return out


def _mask(snap: Snapshot, n: int, filters: Filters) -> tuple[np.ndarray, bool]:
    """The turns a recall may return, and whether they are narrowed to the span the query names."""
    occurred = snap.occurred[:n]
    allowed = occurred >= epoch_seconds(filters.not_before)
    if filters.not_after is not None:
        allowed &= occurred <= epoch_seconds(filters.not_after)
    if filters.exclude_session is not None:
        code = snap.session_codes.get(filters.exclude_session)
        if code is not None:
            allowed &= snap.session_code[:n] != code
    if filters.named is not None:  # narrowed to the span the query names, unless nothing is in it
        start, end = filters.named
        inside = allowed & (occurred >= epoch_seconds(start)) & (occurred < epoch_seconds(end))
        if inside.any():
            return inside, True
    return allowed, False


def _dense(
    snap: Snapshot, n: int, vector: np.ndarray, fusion: Fusion, live: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per turn: its best cosine to the query over its parts, and the centred score the ranking uses
    (:func:`connector.recall.fusion._cosines`, centred on the customer's centroid, whose cosine
    to each vector the snapshot holds: one product per recall)."""
    cos = np.einsum("ij,j->i", snap.matrix, vector)
    strength = (
        fusion.centring * live / (live + fusion.centring_scope) if fusion.centring > 0 and live > 1 else 0.0
    )
    centred = cos - strength * snap.toward if strength else cos
    if len(snap.part_rows) == 0:  # one row per turn, in turn order
        return cos[:n].astype(np.float64), centred[:n].astype(np.float64)
    grouped, starts = snap.grouped, snap.starts[:n]
    dense = np.maximum.reduceat(cos[grouped], starts)[:n].astype(np.float64)
    ranking = np.maximum.reduceat(centred[grouped], starts)[:n].astype(np.float64)
    return dense, ranking


@dataclass(slots=True)
class _Lexical:
    """BM25 of every turn holding a read term (``scores``, per turn position), and the postings read
    (turn position and term, ordered by turn) to say which terms a candidate holds."""

    scores: np.ndarray
    at: np.ndarray
    term: np.ndarray
    used: list[str]
    query_weight: float

    def top(self, allowed: np.ndarray, limit: int) -> list[int]:
        held = np.flatnonzero((self.scores > 0) & allowed)
        if len(held) > limit:
            held = held[np.argpartition(-self.scores[held], limit - 1)[:limit]]
        return [int(i) for i in held]

    def of(self, chosen: list[int]) -> list[LexicalScore | None]:
        wanted = np.asarray(chosen, dtype=np.int64)
        lo = np.searchsorted(self.at, wanted, side="left").tolist()
        hi = np.searchsorted(self.at, wanted, side="right").tolist()
        out: list[LexicalScore | None] = []
        for i, a, b in zip(chosen, lo, hi, strict=True):
            if a == b:
                out.append(None)
                continue
            terms = tuple(sorted(self.used[t] for t in self.term[a:b].tolist()))
            out.append(LexicalScore(float(self.scores[i]), terms, self.query_weight))
        return out


def _lexical(snap: Snapshot, n: int, df: dict[str, int], terms: Sequence[str]) -> _Lexical:
    """The BM25 side over the query's terms the budget admits, rarest first (see the module doc)."""
    used: list[str] = []
    read = 0
    for name, count in sorted(df.items(), key=lambda item: (item[1], item[0])):
        if used and read + count > POSTINGS_BUDGET:
            break
        used.append(name)
        read += count
    weights = {t: idf(t, max(n, c), c) for t, c in df.items()}
    query_weight = sum(weights.get(t, idf(t, n, 0)) for t in dict.fromkeys(terms))
    empty = np.zeros(0, dtype=np.int64)
    if not used:
        return _Lexical(np.zeros(n, dtype=np.float64), empty, empty, used, query_weight)
    held = snap.terms.postings_of(used)
    at = np.concatenate([positions for positions, _ in held]).astype(np.int64)
    term = np.repeat(np.arange(len(used), dtype=np.int64), [len(positions) for positions, _ in held])
    tf = np.concatenate([tfs for _, tfs in held]).astype(np.float64)
    keep = at < n  # newer than this snapshot
    at, term, tf = at[keep], term[keep], tf[keep]
    lengths = snap.lengths[:n]
    avgdl = max(float(lengths.mean()) if n else 1.0, 1.0)
    norm = K1 * (1.0 - B + B * lengths[at] / avgdl)
    weight = np.asarray([weights[t] for t in used], dtype=np.float64)[term]
    scores = np.bincount(at, weights=weight * tf * (K1 + 1.0) / (tf + norm), minlength=n)
    order = np.argsort(at, kind="stable")
    return _Lexical(scores, at[order], term[order], used, query_weight)
