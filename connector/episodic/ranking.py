"""Ranking a customer's entries: cosine by numpy, a calibrated threshold, document-number matches first.

Score thresholds are per embedding model because score scales differ between models.
How they were calibrated (``scripts/bench_episodic --skip-scale`` prints it, with the configured
embedder): on the labelled set in ``benchmarks/`` every semantic query (document-number queries are
matched lexically) is scored against every entry *of its own customer*; the scores of the expected
cases (true matches) and of the other cases (non-matches) form two distributions. The threshold is
the 1st percentile of the true-match scores, i.e. it keeps 99% of true matches, so it
almost never hides the right case and drops only clearly unrelated ones (recall ranks within one
customer, so precision comes from the scope and the top-k, not from the threshold).
OpenAI models are not calibrated here (no network on the build machines): they, and any other
model, get 0.0 (no threshold) until someone runs the calibration with them and adds the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from connector.embeddings.base import Vectors
from connector.episodic.documents import matches

SCORE_THRESHOLDS: dict[str, float] = {
    # 360 cases / 450 semantic queries: true matches p1 0.305, p5 0.357, median 0.625; non-matches of
    # the same customer median 0.272, p95 0.487; an unrelated question scores at most 0.13.
    "minilm-l6-v2-int8": 0.30,
    # Same set: true matches p1 0.318, p5 0.372; non-matches of the same customer p95 0.485.
    "minilm-l6-v2-qint8": 0.30,
}


def score_threshold(model_id: str) -> float:
    return SCORE_THRESHOLDS.get(model_id, 0.0)


@dataclass(frozen=True, slots=True)
class Ranked:
    index: int
    score: float
    matched_documents: tuple[str, ...]


def rank(
    query_vector: Vectors,
    vectors: Vectors,
    entry_doc_keys: Sequence[Sequence[str]],
    query_keys: set[str],
    *,
    k: int,
    threshold: float,
) -> list[Ranked]:
    """Top ``k``: entries naming a queried document first, then by similarity above the threshold."""
    if len(vectors) == 0:
        return []
    scores = vectors @ query_vector.reshape(-1)
    candidates = []
    for i, score in enumerate(scores.tolist()):
        named = matches(query_keys, entry_doc_keys[i]) if query_keys else ()
        if named or score >= threshold:
            candidates.append(Ranked(index=i, score=float(score), matched_documents=named))
    candidates.sort(key=lambda r: (-len(r.matched_documents), -r.score, r.index))
    return candidates[:k]


def cosine(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a.reshape(-1), b.reshape(-1)))
