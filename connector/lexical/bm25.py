"""BM25 over one scope's documents (Robertson/Sparck Jones idf, k1 1.2, b 0.75).

The statistics (document count, average length, document frequencies) come from the documents that
may be returned — the scope's recallable candidates — so another customer's vocabulary never moves a
score, and a term every candidate shares scores almost nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class LexicalScore:
    """A document's BM25 score and the query terms it contains."""

    score: float
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Posting:
    doc_id: str
    term: str
    tf: int


def score(
    postings: Iterable[Posting], lengths: Mapping[str, int], *, k1: float = K1, b: float = B
) -> dict[str, LexicalScore]:
    """BM25 of every document in ``lengths`` that holds a query term; postings of others are ignored."""
    if not lengths:
        return {}
    by_term: dict[str, list[Posting]] = {}
    for posting in postings:
        if posting.doc_id in lengths:
            by_term.setdefault(posting.term, []).append(posting)
    n = len(lengths)
    avgdl = max(sum(lengths.values()) / n, 1.0)
    totals: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    for term, hits in by_term.items():
        idf = math.log(1.0 + (n - len(hits) + 0.5) / (len(hits) + 0.5))
        for p in hits:
            norm = k1 * (1.0 - b + b * lengths[p.doc_id] / avgdl)
            totals[p.doc_id] = totals.get(p.doc_id, 0.0) + idf * p.tf * (k1 + 1.0) / (p.tf + norm)
            matched.setdefault(p.doc_id, []).append(term)
    return {doc: LexicalScore(total, tuple(sorted(matched[doc]))) for doc, total in totals.items()}
