"""The dense score threshold per embedding model (ranking itself is :mod:`connector.recall.fusion`).

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

import numpy as np

from connector.embeddings.base import Vectors

SCORE_THRESHOLDS: dict[str, float] = {
    # 360 cases / 450 semantic queries: true matches p1 0.305, p5 0.357, median 0.625; non-matches of
    # the same customer median 0.272, p95 0.487; an unrelated question scores at most 0.13.
    "minilm-l6-v2-int8": 0.30,
    # Same set: true matches p1 0.318, p5 0.372; non-matches of the same customer p95 0.485.
    "minilm-l6-v2-qint8": 0.30,
    # Same set: true matches p1 0.302, p5 0.366; non-matches of the same customer p95 0.482.
    "minilm-l6-v2-qint8-mha": 0.30,
}


def score_threshold(model_id: str) -> float:
    return SCORE_THRESHOLDS.get(model_id, 0.0)


def cosine(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a.reshape(-1), b.reshape(-1)))
