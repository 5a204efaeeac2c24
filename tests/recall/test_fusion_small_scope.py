"""On a short history the words a question shares with a turn weigh more (Fusion.small_scope_weight),
and the weight falls back to the fixed one as the history grows."""

from __future__ import annotations

import numpy as np

from connector.lexical.bm25 import LexicalScore
from connector.recall.fusion import Fusion, fuse


def _rank(fusion: Fusion, scope_size: int) -> list[int]:
    # candidate 0: the query's words (a strong BM25 match) but a middling embedding;
    # candidate 1: the closest embedding and no shared word; the rest: weak on both
    n = 8
    dense = [0.45, 0.60] + [0.30 + 0.01 * i for i in range(n - 2)]
    lexical = [LexicalScore(6.0, ("forklift", "tacoma"), 8.0), None] + [
        LexicalScore(0.5, ("tacoma",), 8.0)
    ] * (n - 2)
    ranked = fuse(
        np.zeros(4, dtype=np.float32), np.zeros((n, 0), dtype=np.float32), lexical, [()] * n, set(),
        k=2, threshold=0.0, fusion=fusion, cosines=(dense, dense), scope_size=scope_size,
    )  # fmt: skip
    return [r.index for r in ranked]


def test_a_short_history_ranks_the_turn_with_the_questions_words_first() -> None:
    assert _rank(Fusion(hedge=False), 8)[0] == 1  # the fixed weight: the embedding wins
    assert _rank(Fusion(hedge=False, small_scope_weight=0.6), 8)[0] == 0


def test_a_long_history_keeps_the_fixed_weight() -> None:
    assert _rank(Fusion(hedge=False, small_scope_weight=0.6), 100_000)[0] == 1
