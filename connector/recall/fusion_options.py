"""How a recall fuses its signals: the settings of :mod:`connector.recall.fusion`, apart from its
arithmetic (numpy), so the public API can name a :class:`Fusion` without loading either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FusionMethod = Literal["rrf", "weighted", "dense", "lexical"]
Normalise = Literal["zscore", "max"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How a recall fuses its signals (defaults calibrated on the labelled sets)."""

    method: FusionMethod = "weighted"
    rrf_k: float = 60.0
    lexical_weight: float = 0.2
    value_weight: float = 0.7  # the lexical weight when a candidate matches a value the query names
    normalise: Normalise = "zscore"
    lexical_floor: float = 0.1  # the lexical spread counted at least this share of the query's weight
    strong_lexical: float = 0.0
    hedge: bool = True  # alternate with the view de-biased for widely shared query terms (speakers)
    hedge_yes_no: bool = False  # hedge yes/no questions too (their evidence is the named person's)
    shared_term: float = 0.3  # a query term at least this share of the candidates hold is "shared"
    value_bonus: float = 1.0  # added to the fused score of a candidate holding a value the query names
    coverage: float = 0.3  # the lexical weight is full once the best candidate holds this share of the
    # query's content weight (its terms' idf, shared terms left out), proportionally less below
    centring: float = 0.5  # the share of each candidate's similarity to the scope's centroid taken off
    # its cosine before ranking (0: plain cosine), scaled by n / (n + centring_scope) for n candidates
    centring_scope: float = 50.0
    # Short histories (turn recall): with few candidates the dense z-scores are noisy and the words
    # a question shares with its evidence tell more; the lexical weight moves towards
    # ``small_scope_weight`` by small_scope / (n + small_scope) for a scope of n entries (None: off).
    small_scope_weight: float | None = None
    small_scope: float = 40.0
    # Session-level aggregation (turn recall): each candidate's fused score gains ``session_weight``
    # times the best fused score among the candidates of its session (0: off), so the turns of the
    # session that holds the strongest evidence rise together (an answer beside the question it answers).
    session_weight: float = 0.0
    # Long texts (turn recall): the embedder reads a window of ~256 tokens and pools it, so over long
    # turns (assistant answers of hundreds of words) its score blurs while BM25 still sees every
    # word; the lexical weight moves towards ``long_text_weight`` by L / (L + long_text) for a mean
    # lexical length of L tokens over the scope (None: off). Chat-length turns (~20 tokens) barely move.
    long_text_weight: float | None = None
    long_text: float = 100.0
