"""Fusing the two signals of a recall: the lexical BM25 score and the dense cosine similarity.

Every candidate of the scope gets both scores; entries naming a document the query names rank
first (as before), the rest by the fused score. Methods (see the README's episodic section for the
calibration on the three labelled sets): ``weighted`` (default) — ``w * z(bm25) + (1 - w) *
z(cosine)``, each signal standardised over the scope's candidates (z-score), with ``w`` =
``lexical_weight`` (0.2), or ``value_weight`` (0.7) when a candidate matches a number, amount, date
or document number the query names: such a value tells look-alike turns apart (the same event with
another amount or date), which the embedding cannot see. ``normalise="max"`` is the previous
``w * bm25 / max bm25 + (1 - w) * cosine``; ``rrf`` — reciprocal rank fusion, ``1/(k + dense
rank) + 1/(k + lexical rank)``; ``dense`` and ``lexical`` rank by one signal alone (baselines;
the plain cosine is ``Fusion(method="dense", centring=0)``).
The dense side is centred (session 8, ``centring``): each candidate's cosine less half its cosine
to the scope's mean vector (less with few candidates), so the entries most typical of the scope (a
speaker's small talk, which a question naming the speaker embeds close to) stop outranking the one
that says what was asked (see :func:`_cosines`).
Why z-scores: a cosine's spread within one customer is small (0.2-0.6) and differs per query, a
BM25 score has no fixed scale, and dividing by the maximum lets one strong lexical match flatten the
dense side; standardising puts both on "how far above this scope's usual candidate". The lexical
deviation counts as at least ``lexical_floor`` (0.1) of the query's weight (its terms' idf summed,
those no candidate holds included): when the only term found is the speaker's name, which half the
turns share, the lexical side is not inflated to a full standard deviation.
Two rules on top (session 6): a candidate holding a value the query names (a number, amount,
date or document number) gets ``value_bonus`` (1.0, in the fused score's standard-deviation units)
— exact evidence, as a document number is: "What costs 1750 for the term?" is answered by the turn
with 1,750.00 even when a look-alike holds "costs ... for the term" with another amount and embeds
closer. And the lexical weight follows how much of the question the best candidate holds
(``coverage``): full from 30% of the query's content weight (the idf of its terms, those no
candidate holds included, widely shared terms such as a speaker's name left out), proportionally
less below, so a stray match on one common word of an inference question ("Would Audrey enjoy a
visit to an art museum?": only "visit" is found) does not push out what the embedding found.
The dense score threshold cuts a candidate only if it is also lexically weak (no query term, or
below ``strong_lexical`` times the best lexical score of the scope) and names no queried document:
a hit with a lexical match is never cut.

Speaker hedge (``hedge``, on by default): a query term that at least ``shared_term`` (0.3) of the
candidates hold is, in a dialogue, a speaker's name ("Kenji: ..." starts half the turns). BM25 gives
it little (its idf is ~0.7), but the embedding of every turn of that speaker moves towards a
question naming them, so the dense side ranks the named speaker's turns first whatever they say.
That is right when the question is about what the speaker said, and wrong when the answer is the
other speaker's turn: a fact credited to the wrong person (LoCoMo's adversarial questions), a reply
that holds the words. So the hit list alternates between two views of the same candidates: the
fused score as above (first, so the top hit is unchanged), and the fused score with the dense side
de-biased for each shared term (the mean cosine of the candidates holding it minus that of the
others, taken off the candidates holding it), where the term counts only by its BM25 weight. When
no query term is shared that widely (ERP cases, most questions) the two views are one. A yes/no
question ("Would Nate enjoy a hiking holiday?") is not hedged (``hedge_yes_no`` off): it asks
whether something holds of the person it names, whose own turns answer it. On the chats that took
back 9 of the 15 open-domain questions the hedge had pushed out of the top 5, and moved no other
question of any set (no adversarial question there or in the business dialogues is a yes/no one).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from connector.embeddings.base import Vectors
from connector.lexical.bm25 import LexicalScore, idf
from connector.recall.document_keys import matches
from connector.recall.fusion_options import Fusion, FusionMethod, Normalise

__all__ = ["Fused", "Fusion", "FusionMethod", "Normalise", "fuse"]


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

# Plain lists, not numpy: a scope holds tens to hundreds of candidates, where numpy's per-call cost
# exceeds the arithmetic; only the top k become Fused objects. Standardising (twice with the hedge)
# goes through numpy from ``_NUMPY_FROM`` candidates (past conversations have up to 2,000).
_NUMPY_FROM = 200


def _ranks(values: Sequence[float]) -> list[int]:
    """1-based rank of each value, highest first (ties by position)."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    ranks = [0] * len(values)
    for position, i in enumerate(order, start=1):
        ranks[i] = position
    return ranks


def _zscores(values: Sequence[float], floor: float = 0.0) -> list[float]:
    """Each value's distance from the mean in standard deviations, the deviation taken as at least
    ``floor`` (all 0 when the values are equal)."""
    if len(values) > _NUMPY_FROM:
        array = np.asarray(values, dtype=np.float64)
        deviation = max(float(array.std()), floor)
        if deviation == 0.0:
            return [0.0] * len(values)
        scores: list[float] = ((array - array.mean()) / deviation).tolist()
        return scores
    mean = sum(values) / len(values)
    spread = max(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), floor)
    if spread == 0.0:
        return [0.0] * len(values)
    return [(v - mean) / spread for v in values]


def _is_value(term: str) -> bool:
    """A query term with a digit: a number, amount, date or document number."""
    return any(ch.isdigit() for ch in term)


def _shared_terms(held: Counter[str], n: int, share: float) -> list[str]:
    """The matched query terms at least ``share`` of the ``n`` candidates hold (and not all)."""
    return [term for term, count in held.items() if share * n <= count < n]


def _coverage(
    parts: Sequence[LexicalScore], held: Counter[str], shared: list[str], query_weight: float
) -> float:
    """How much of the query's content the best candidate holds: its matched terms' idf over the
    idf of all the query's terms (those no candidate holds included), widely shared terms (a
    speaker's name) left out of both. 0 when nothing but shared terms was asked."""
    n = len(parts)
    weights = {term: idf(term, n, count) for term, count in held.items()}
    for term in shared:
        del weights[term]
    content = query_weight - sum(idf(term, n, held[term]) for term in shared)
    if content <= 0.0 or not weights:
        return 0.0
    # many candidates hold the same terms (a speaker's name alone): each distinct set summed once
    best = max(sum(weights.get(term, 0.0) for term in terms) for terms in {part.terms for part in parts})
    return best / content


def _lexical_weight(
    fusion: Fusion, parts: Sequence[LexicalScore], held: Counter[str], shared: list[str], query_weight: float
) -> float:
    """The lexical side's weight for this query: ``value_weight`` when it names a value a candidate
    holds, else ``lexical_weight`` scaled down when no candidate holds much of what was asked."""
    if any(_is_value(term) for term in held):
        return fusion.value_weight
    if fusion.coverage <= 0.0:
        return fusion.lexical_weight
    return fusion.lexical_weight * min(1.0, _coverage(parts, held, shared, query_weight) / fusion.coverage)


def _fused_scores(
    dense: list[float],
    lexical: list[float],
    fusion: Fusion,
    *,
    weight: float = 0.0,
    query_weight: float = 0.0,
) -> list[float]:
    if fusion.method == "dense":
        return dense
    if fusion.method == "lexical":
        return lexical
    if fusion.method == "weighted":
        w = weight
        if fusion.normalise == "zscore":
            zd, zl = _zscores(dense), _zscores(lexical, fusion.lexical_floor * query_weight)
            return [w * lex + (1.0 - w) * d for d, lex in zip(zd, zl, strict=True)]
        top = max(lexical, default=0.0) or 1.0
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
    yes_no: bool = False,
    cosines: tuple[list[float], list[float]] | None = None,
    scope_size: int | None = None,
    groups: Sequence[int] | None = None,
    mean_length: float | None = None,
) -> list[Fused]:
    """Top ``k`` candidates: queried documents first, then by fused score, weak ones cut.

    ``yes_no``: the question asks whether something holds of the person it names
    (:func:`connector.recall.question_form.asks_yes_or_no`); it is not hedged unless
    ``fusion.hedge_yes_no``. ``cosines``: each candidate's cosine and centred score, computed by the
    caller (turn recall centres on the customer's whole history, not on its candidates); ``vectors``
    is then not read. ``scope_size``: how many entries the scope holds (default: the candidates).
    ``groups``: each candidate's session, for ``fusion.session_weight`` (None: no sessions).
    ``mean_length``: the scope's mean lexical length in tokens, for ``fusion.long_text_weight``."""
    n = len(lexical) if cosines is not None else len(vectors)
    if n == 0:
        return []
    if cosines is not None:
        dense, ranking = cosines
    elif query_vector is None:
        dense = ranking = [0.0] * n
    else:
        dense, ranking = _cosines(np.asarray(vectors), np.asarray(query_vector).reshape(-1), fusion)
    parts = [s or _NO_MATCH for s in lexical]
    lex = [p.score for p in parts]
    held = Counter(chain.from_iterable(part.terms for part in parts))
    shared = _shared_terms(held, n, fusion.shared_term)
    query_weight = max((p.query_weight for p in parts), default=0.0)
    weight = (
        _lexical_weight(fusion, parts, held, shared, query_weight) if fusion.method == "weighted" else 0.0
    )
    long_weight = fusion.long_text_weight
    if long_weight is not None and mean_length and weight < long_weight and held:
        weight += (long_weight - weight) * mean_length / (mean_length + fusion.long_text)
    if fusion.small_scope_weight is not None and weight < fusion.small_scope_weight and held:
        size = n if scope_size is None else scope_size
        pull = fusion.small_scope / (size + fusion.small_scope)
        weight += (fusion.small_scope_weight - weight) * pull
    fused = _fused_scores(ranking, lex, fusion, weight=weight, query_weight=query_weight)
    bonus = _value_bonus(parts, held, fusion)
    if bonus is not None:
        fused = [f + b for f, b in zip(fused, bonus, strict=True)]
    sessions = groups if fusion.session_weight and fusion.method == "weighted" else None
    if sessions is not None:
        fused = _with_sessions(fused, sessions, fusion.session_weight)
    named: list[tuple[str, ...]] = [()] * n
    if query_keys:
        named = [matches(query_keys, keys) for keys in entry_doc_keys]
    if fusion.method == "dense":
        kept = [i for i in range(n) if named[i] or dense[i] >= threshold]
    elif fusion.method == "lexical":
        kept = [i for i in range(n) if named[i] or lex[i] > 0]
    else:
        strong = fusion.strong_lexical * max(lex)
        kept = [i for i in range(n) if named[i] or dense[i] >= threshold or (lex[i] > 0 and lex[i] >= strong)]
    kept.sort(key=lambda i: (-len(named[i]), -fused[i], i))
    shown = fused
    hedged_question = fusion.hedge and (fusion.hedge_yes_no or not yes_no)
    if fusion.method == "weighted" and hedged_question and query_vector is not None:
        debiased = _without_shared_terms(ranking, parts, shared)
        if debiased is not None:
            hedged = _fused_scores(debiased, lex, fusion, weight=weight, query_weight=query_weight)
            if bonus is not None:
                hedged = [f + b for f, b in zip(hedged, bonus, strict=True)]
            if sessions is not None:
                hedged = _with_sessions(hedged, sessions, fusion.session_weight)
            # the second order's first 2k are enough for k hits whatever the first order took
            other = heapq.nsmallest(2 * k, kept, key=lambda i: (-len(named[i]), -hedged[i], i))
            kept, shown = _alternate(kept, other, k, fused, hedged)
    return [
        Fused(i, float(shown[i]), float(dense[i]), float(lex[i]), parts[i].terms, named[i]) for i in kept[:k]
    ]


def _cosines(matrix: np.ndarray, query: np.ndarray, fusion: Fusion) -> tuple[list[float], list[float]]:
    """Each candidate's cosine to the query, and the score the ranking uses: the cosine less
    ``centring`` (scaled by the scope's size) times the candidate's cosine to the scope's centroid.

    Why: the turns of one conversation, or the cases of one customer, share a direction (the
    speakers' names, the greetings and small talk, the customer's products) that every query
    naming them shares too, so the plain cosine ranks the most typical entries first whatever was
    asked ("Caroline: Not much, just the usual routine" for "What musical things has Caroline done?").
    Taking off each entry's closeness to the scope's mean keeps what is specific to it (the
    common-component removal of "all-but-the-top", and the hubness correction of CSLS). With a
    few candidates the mean is mostly the candidates themselves, hence the scaling by n / (n +
    ``centring_scope``). The threshold and the hit's ``dense`` part stay the plain cosine.

    The products are numpy's own loops (``einsum``), not BLAS: OpenBLAS splits a matrix-vector
    product of 2,000 x 384 over threads that sleep between recalls, and waking them on a busy
    machine cost 6 ms (p50; p95 10 ms) against 0.13 ms for the single-threaded loop."""
    n = len(matrix)
    strength = fusion.centring * n / (n + fusion.centring_scope) if fusion.centring > 0 and n > 1 else 0.0
    if strength == 0.0:
        cosines: list[float] = np.einsum("ij,j->i", matrix, query).tolist()
        return cosines, cosines
    # as few numpy calls as the arithmetic allows: each one may hand the GIL to the build's other
    # threads (the other recall, the query embedding) and wait to get it back
    total = matrix.sum(axis=0)
    both = np.einsum("ij,kj->ik", matrix, np.stack((query, total))).tolist()
    norm = math.sqrt(float(total @ total))
    weight = strength / norm if norm else 0.0  # 0: candidates that cancel out share nothing
    return [plain for plain, _ in both], [plain - weight * toward for plain, toward in both]


def _with_sessions(fused: list[float], groups: Sequence[int], weight: float) -> list[float]:
    """Each score plus ``weight`` times the best score of its group (its session's strongest turn)."""
    best: dict[int, float] = {}
    for score, group in zip(fused, groups, strict=True):
        if score > best.get(group, -math.inf):
            best[group] = score
    return [score + weight * best[group] for score, group in zip(fused, groups, strict=True)]


def _value_bonus(parts: Sequence[LexicalScore], held: Counter[str], fusion: Fusion) -> list[float] | None:
    """``value_bonus`` for each candidate holding a value the query names, 0 for the others (None
    when the fusion is not weighted or no candidate holds such a value)."""
    if fusion.method != "weighted" or not fusion.value_bonus:
        return None
    values = {term for term in held if _is_value(term)}
    if not values:
        return None
    return [fusion.value_bonus if not values.isdisjoint(part.terms) else 0.0 for part in parts]


def _without_shared_terms(
    dense: list[float], parts: Sequence[LexicalScore], shared: list[str]
) -> list[float] | None:
    """The cosines with the shift of every widely shared query term taken off the candidates holding
    it (None when no query term is that widely shared)."""
    n = len(dense)
    if not shared:
        return None
    out = list(dense)
    total = sum(dense)
    for term in shared:
        holders = [i for i, part in enumerate(parts) if term in part.terms]
        inside = sum(dense[i] for i in holders)
        shift = inside / len(holders) - (total - inside) / (n - len(holders))
        for i in holders:
            out[i] -= shift
    return out


def _alternate(
    first: list[int], second: list[int], k: int, first_scores: list[float], second_scores: list[float]
) -> tuple[list[int], list[float]]:
    """The top ``k`` taken from the two orders in turn (the first leads; a candidate already taken is
    skipped), queried documents still first (both orders start with them); each hit's shown score is
    the one of the order that placed it. Both orders start with the same queried documents, so
    those are all taken before any other candidate."""
    chosen: list[int] = []
    shown = list(first_scores)
    taken: set[int] = set()
    positions = [0, 0]
    orders = (first, second)
    scores = (first_scores, second_scores)
    turn = 0
    limit = min(k, len(first))
    while len(chosen) < limit:
        order, at = orders[turn], positions[turn]
        while at < len(order) and order[at] in taken:
            at += 1
        if at < len(order):
            i = order[at]
            chosen.append(i)
            taken.add(i)
            shown[i] = scores[turn][i]
            at += 1
        positions[turn] = at
        turn = 1 - turn
    return chosen, shown
