"""The fusion of the lexical and dense scores, on hand-made scores (no model, no store): a value the
question names decides between look-alikes, a match on nothing but a name every turn shares does not
outweigh the dense side, queried documents rank first, and a lexical match is never cut."""

from __future__ import annotations

import numpy as np
import pytest

from connector.episodic.fusion import Fusion, fuse
from connector.lexical import bm25
from connector.lexical.bm25 import LexicalScore, Posting


def unit_vectors(*cosines: float) -> tuple[np.ndarray, np.ndarray]:
    """A query vector and candidates whose cosine to it are ``cosines``."""
    query = np.array([1.0, 0.0], dtype=np.float32)
    rows = [[c, float(np.sqrt(1.0 - c * c))] for c in cosines]
    return query, np.asarray(rows, dtype=np.float32)


def ranked(
    cosines: list[float], lexical: list[LexicalScore | None], fusion: Fusion = Fusion(), **kw: object
) -> list[int]:
    query, vectors = unit_vectors(*cosines)
    keys = kw.get("entry_doc_keys") or [()] * len(cosines)
    found = fuse(
        query, vectors, lexical, keys, set(kw.get("query_keys") or ()),  # type: ignore[arg-type]
        k=10, threshold=0.3, fusion=fusion,
    )  # fmt: skip
    return [f.index for f in found]


def test_the_amount_the_question_names_beats_a_look_alike_with_a_higher_cosine() -> None:
    # "Which invoice was the 900 payment for?": the right turn names 900; two look-alike payments
    # share the words and embed closer to the question, the rest are unrelated turns (BM25 as
    # bm25.score gives it, the value's idf doubled)
    weight = 12.0
    lexical = [
        LexicalScore(7.6, ("900",), weight),
        LexicalScore(3.2, ("invoic", "payment"), weight),
        LexicalScore(2.6, ("invoic",), weight),
        *[None] * 7,
    ]
    cosines = [0.40, 0.55, 0.50, 0.35, 0.34, 0.33, 0.32, 0.31, 0.30, 0.30]
    assert ranked(cosines, lexical)[0] == 0
    assert ranked(cosines, lexical, Fusion(method="dense"))[0] == 1


def test_a_match_on_a_name_half_the_turns_share_does_not_outweigh_the_dense_side() -> None:
    # "Is Nate into arts and crafts?": only "nate" (in half the turns) is found; "art" and "craft"
    # are in no turn, so the query's weight is mostly unmatched and the dense side decides
    name_only = LexicalScore(0.7, ("nate",), 13.0)
    cosines = [0.52, 0.55, 0.40, 0.38, 0.36, 0.35]
    lexical = [name_only, None, name_only, None, name_only, None]
    assert ranked(cosines, lexical)[0] == 1
    # without the floor, the shared name alone would lift every one of the speaker's turns
    assert ranked(cosines, lexical, Fusion(lexical_floor=0.0))[0] == 0


def test_a_strong_lexical_match_still_wins_when_the_query_is_mostly_matched() -> None:
    # "When did Caroline go to the LGBTQ support group?" among 30 turns: one holds all the words
    lexical = [LexicalScore(9.0, ("lgbtq", "support", "group"), 9.5), *[None] * 29]
    cosines = [0.42, 0.48, *[0.30 + 0.002 * i for i in range(28)]]
    assert ranked(cosines, lexical)[0] == 0


def test_queried_documents_rank_first_and_lexical_matches_are_never_cut() -> None:
    lexical: list[LexicalScore | None] = [None, LexicalScore(1.0, ("priya",), 4.0), None]
    order = ranked(
        [0.9, 0.05, 0.1], lexical, entry_doc_keys=[(), (), ("inv004821",)], query_keys={"inv004821"}
    )
    assert order == [2, 0, 1]  # the named document, then by fused score; 1 has cosine 0.05 but a term


@pytest.mark.parametrize("fusion", [Fusion(), Fusion(normalise="max"), Fusion(method="rrf")])
def test_one_candidate_or_equal_scores_rank_without_error(fusion: Fusion) -> None:
    assert ranked([0.5], [None], fusion) == [0]
    assert ranked([0.5, 0.5], [None, None], fusion) == [0, 1]


def test_bm25_weighs_a_named_value_above_the_words_every_look_alike_shares() -> None:
    lengths = {f"d{i}": 10 for i in range(20)}
    postings = [Posting("d0", "900", 1)]
    postings += [Posting(f"d{i}", "invoic", 1) for i in range(1, 8)]
    postings += [Posting(f"d{i}", "payment", 1) for i in range(1, 5)]
    scores = bm25.score(postings, lengths, query_terms=["invoic", "900", "payment"])
    assert max(scores, key=lambda d: scores[d].score) == "d0"


def test_bm25_query_weight_counts_the_terms_no_document_holds() -> None:
    lengths = {"a": 5, "b": 5, "c": 5}
    postings = [Posting("a", "nate", 1), Posting("b", "nate", 1)]
    found_only = bm25.score(postings, lengths, query_terms=["nate"])
    with_absent = bm25.score(postings, lengths, query_terms=["nate", "art", "craft"])
    assert with_absent["a"].score == found_only["a"].score
    assert with_absent["a"].query_weight > 3 * found_only["a"].query_weight
    assert with_absent["a"].query_weight == with_absent["b"].query_weight
