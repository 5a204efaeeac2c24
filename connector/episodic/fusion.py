"""Fusing the two signals of a recall: the lexical BM25 score and the dense cosine similarity.

Every candidate of the scope gets both scores; entries naming a document the query names rank
first (as before), the rest by the fused score. Methods (see the README's episodic section for the
calibration on the labelled sets): ``rrf`` — reciprocal rank fusion, ``1/(k + dense rank) +
1/(k + lexical rank)``, which needs no score scales; ``weighted`` — ``w * bm25 / max bm25 +
(1 - w) * cosine``; ``dense`` and ``lexical`` rank by one signal alone (baselines in the benchmark).
The dense score threshold cuts a candidate only if it is also lexically weak (no query term, or
below ``strong_lexical`` times the best lexical score of the scope) and names no queried document:
a hit with a strong lexical score is never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from connector.embeddings.base import Vectors
from connector.episodic.documents import matches
from connector.lexical.bm25 import LexicalScore

FusionMethod = Literal["rrf", "weighted", "dense", "lexical"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How a recall fuses its signals (defaults calibrated on the labelled sets)."""

    method: FusionMethod = "weighted"
    rrf_k: float = 60.0
    lexical_weight: float = 0.3
    strong_lexical: float = 0.0


@dataclass(frozen=True, slots=True)
class Fused:
    """One ranked candidate with the parts of its rank."""

    index: int
    fused: float
    dense: float
    lexical: float
    matched_terms: tuple[str, ...]
    matched_documents: tuple[str, ...]


_NO_MATCH = LexicalScore(0.0, ())


def _ranks(values: Sequence[float]) -> list[int]:
    """1-based rank of each value, highest first (ties by position)."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    ranks = [0] * len(values)
    for position, i in enumerate(order, start=1):
        ranks[i] = position
    return ranks


def _fused_scores(dense: list[float], lexical: list[float], fusion: Fusion) -> list[float]:
    if fusion.method == "dense":
        return dense
    if fusion.method == "lexical":
        return lexical
    if fusion.method == "weighted":
        top = max(lexical, default=0.0) or 1.0
        w = fusion.lexical_weight
        return [w * lex / top + (1.0 - w) * d for d, lex in zip(dense, lexical, strict=True)]
    dense_rank, lexical_rank = _ranks(dense), _ranks(lexical)
    return [
        1.0 / (fusion.rrf_k + dr) + (1.0 / (fusion.rrf_k + lr) if lex > 0 else 0.0)
        for dr, lr, lex in zip(dense_rank, lexical_rank, lexical, strict=True)
    ]


def fuse(
    query_vector: Vectors | None,
    vectors: Vectors,
    lexical: Sequence[LexicalScore | None],
    entry_doc_keys: Sequence[Sequence[str]],
    query_keys: set[str],
    *,
    k: int,
    threshold: float,
    fusion: Fusion,
) -> list[Fused]:
    """Top ``k`` candidates: queried documents first, then by fused score, weak ones cut."""
    if len(vectors) == 0:
        return []
    if query_vector is None:
        dense = [0.0] * len(vectors)
    else:
        dense = (np.asarray(vectors) @ np.asarray(query_vector).reshape(-1)).tolist()
    parts = [s or _NO_MATCH for s in lexical]
    lexical_scores = [p.score for p in parts]
    fused = _fused_scores(dense, lexical_scores, fusion)
    strong = fusion.strong_lexical * max(lexical_scores, default=0.0)
    kept: list[Fused] = []
    for i, score in enumerate(fused):
        named = matches(query_keys, entry_doc_keys[i]) if query_keys else ()
        lex = lexical_scores[i]
        if fusion.method == "dense":
            passes = dense[i] >= threshold
        elif fusion.method == "lexical":
            passes = lex > 0
        else:
            passes = dense[i] >= threshold or (lex > 0 and lex >= strong)
        if named or passes:
            kept.append(Fused(i, float(score), float(dense[i]), float(lex), parts[i].terms, named))
    kept.sort(key=lambda f: (-len(f.matched_documents), -f.fused, f.index))
    return kept[:k]
