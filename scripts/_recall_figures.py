"""recall@1/5/10 and MRR@10 from the rank each question's first expected hit got (0: not found),
overall and per question kind: one definition for every quality set of ``bench_episodic``."""

from __future__ import annotations

from typing import Any


def figures(ranks: list[int]) -> dict[str, float]:
    """recall@1/5/10 and MRR of these ranks (1-based, 0 = not in the top 10)."""
    n = len(ranks)
    return {
        "r1": round(sum(r == 1 for r in ranks) / n, 3),
        "r5": round(sum(0 < r <= 5 for r in ranks) / n, 3),
        "r10": round(sum(r > 0 for r in ranks) / n, 3),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 3),
    }


def per_kind_figures(per_kind: dict[str, list[int]]) -> dict[str, Any]:
    """``all`` and each kind's figures, and the ranks themselves (``ranks``: for paired comparisons)."""
    every = [r for ranks in per_kind.values() for r in ranks]
    return {
        "all": figures(every),
        **{kind: figures(ranks) for kind, ranks in sorted(per_kind.items())},
        "ranks": {"all": every, **per_kind},
    }
