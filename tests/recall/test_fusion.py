"""The fusion of the lexical and dense scores, on hand-made scores (no model, no store): a value the
question names decides between look-alikes, a match on nothing but a name every turn shares does not
outweigh the dense side, queried documents rank first, and a lexical match is never cut."""

from __future__ import annotations

import numpy as np
import pytest

from connector.lexical import bm25
from connector.lexical.bm25 import LexicalScore, Posting
from connector.recall.fusion import Fused, Fusion, fuse


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
    # without the floor (and without the coverage scaling, which also sees that nothing but the
    # shared name was found), the shared name alone would lift every one of the speaker's turns
    assert ranked(cosines, lexical, Fusion(lexical_floor=0.0, coverage=0.0))[0] == 0
    assert ranked(cosines, lexical, Fusion(lexical_floor=0.0))[0] == 1


def test_a_strong_lexical_match_still_wins_when_the_query_is_mostly_matched() -> None:
    # "When did Caroline go to the LGBTQ support group?" among 30 turns: one holds all the words, a
    # turn that holds none embeds a little closer (1 standard deviation of these cosines)
    lexical = [LexicalScore(9.0, ("lgbtq", "support", "group"), 9.5), *[None] * 29]
    cosines = [0.42, 0.46, *[0.30 + 0.002 * i for i in range(28)]]
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


def speaker_turns() -> tuple[list[float], list[LexicalScore | None]]:
    """ "Where did Kenji's boy move?" in a chat where Kenji starts half the turns: his turns embed
    close to any question naming him; the answer is the other speaker's turn (0.26), which holds
    "move" but not "kenji" (the fact credited to the wrong speaker, or said in a reply)."""
    weight = 9.0
    kenji = LexicalScore(0.6, ("kenji",), weight)
    cosines = [0.50, *[0.55 - 0.01 * i for i in range(10)], 0.26, *[0.30 - 0.02 * i for i in range(9)]]
    lexical = [
        LexicalScore(3.6, ("kenji", "move"), weight), *[kenji] * 10, LexicalScore(3.0, ("move",), weight),
        *[None] * 9,
    ]  # fmt: skip
    return cosines, lexical


def test_the_other_speakers_turn_holding_the_words_reaches_the_top_five() -> None:
    cosines, lexical = speaker_turns()
    hedged = ranked(cosines, lexical)
    assert 11 in hedged[:5]
    assert 11 not in ranked(cosines, lexical, Fusion(hedge=False))  # the named speaker's 10 turns first
    assert hedged[0] == 0  # the first hit is the fused score's, as without the hedge


def test_a_yes_no_question_about_the_named_speaker_is_not_hedged() -> None:
    # "Would Kenji move abroad?" asks whether something holds of Kenji: his own turns answer it,
    # so the other speaker's turn is not given a slot; "hedge_yes_no" hedges it as before
    cosines, lexical = speaker_turns()
    query, vectors = unit_vectors(*cosines)
    keys: list[tuple[str, ...]] = [()] * len(cosines)

    def hits(fusion: Fusion) -> list[int]:
        found = fuse(query, vectors, lexical, keys, set(), k=10, threshold=0.3, fusion=fusion, yes_no=True)
        return [f.index for f in found]

    assert hits(Fusion()) == ranked(cosines, lexical, Fusion(hedge=False))
    assert hits(Fusion(hedge_yes_no=True)) == ranked(cosines, lexical)


def test_without_a_term_most_candidates_share_the_hedge_changes_nothing() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(2, 30))
        cosines = [float(c) for c in rng.uniform(0.0, 0.9, n)]
        lexical: list[LexicalScore | None] = [
            LexicalScore(float(rng.uniform(0.5, 6.0)), (f"t{i}",), 8.0) if rng.random() < 0.5 else None
            for i in range(n)
        ]  # every term held by one candidate: nothing is widely shared
        assert ranked(cosines, lexical) == ranked(cosines, lexical, Fusion(hedge=False))


def test_the_hedge_reorders_the_kept_candidates_and_keeps_queried_documents_first() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(3, 11))  # at most k: every kept candidate is returned
        cosines = [float(c) for c in rng.uniform(0.0, 0.9, n)]
        lexical: list[LexicalScore | None] = [
            LexicalScore(float(rng.uniform(0.3, 6.0)), ("name",) if rng.random() < 0.6 else ("word",), 8.0)
            if rng.random() < 0.8 else None
            for _ in range(n)
        ]  # fmt: skip
        keys = [("inv1",) if i == n - 1 else () for i in range(n)]
        hedged = ranked(cosines, lexical, entry_doc_keys=keys, query_keys={"inv1"})
        plain = ranked(cosines, lexical, Fusion(hedge=False), entry_doc_keys=keys, query_keys={"inv1"})
        assert hedged[0] == n - 1 == plain[0]
        assert len(hedged) == len(set(hedged)) and set(hedged) == set(plain)


def test_the_turn_holding_the_amount_asked_for_ranks_first_even_when_it_embeds_far() -> None:
    # "What costs 1750 for the term?": the turn with 1,750.00 is worded otherwise ("for ten weeks")
    # and embeds far from the question; a look-alike holds "costs ... for the term" with another
    # amount. Holding the value the question names is exact evidence, like a document number.
    weight = 15.0
    lexical = [
        LexicalScore(7.5, ("1750",), weight),
        LexicalScore(7.3, ("cost", "term"), weight),
        LexicalScore(3.6, ("cost",), weight),
        LexicalScore(3.4, ("term",), weight),
        *[None] * 16,
    ]
    cosines = [0.10, 0.33, 0.25, 0.22, *[0.02 * i for i in range(16)]]
    assert ranked(cosines, lexical)[0] == 0
    assert ranked(cosines, lexical, Fusion(value_bonus=0.0))[0] == 1


def test_a_match_on_a_small_share_of_the_question_counts_less_than_the_dense_side() -> None:
    # "Would Audrey enjoy a visit to an art museum?" (Audrey in half the turns): only "visit" is
    # found, in one turn about a grandma's visit that embeds nearly as close as Audrey's painting;
    # "enjoy", "art" and "museum" are in no turn. The best candidate holds a fifth of what was asked,
    # so the lexical side counts for a fifth of its weight there and the dense side decides.
    weight = 23.5
    audrey, visit = LexicalScore(0.45, ("audrey",), weight), LexicalScore(4.4, ("visit",), weight)
    lexical = [visit, *[audrey, None] * 15]
    cosines = [0.52, 0.54, *[0.20 + 0.01 * i for i in range(29)]]
    assert ranked(cosines, lexical)[0] == 1
    assert ranked(cosines, lexical, Fusion(coverage=0.0))[0] == 0


def scope_with_small_talk(small_talk: int) -> tuple[np.ndarray, np.ndarray]:
    """A query naming a speaker, ``small_talk`` turns of that speaker's small talk (close to the
    query only through the name they share), and one turn that answers it (index 0)."""
    name, answer, chatter = np.eye(3, dtype=np.float32)
    query = 0.8 * name + 0.6 * answer
    rows = [0.2 * name + 0.98 * answer] + [0.99 * name + 0.141 * chatter] * small_talk
    return query / np.linalg.norm(query), np.asarray([r / np.linalg.norm(r) for r in rows])


def test_the_turn_that_answers_outranks_small_talk_that_shares_only_the_speakers_name() -> None:
    query, vectors = scope_with_small_talk(60)
    lexical: list[LexicalScore | None] = [None] * len(vectors)

    def top(fusion: Fusion) -> Fused:
        return fuse(query, vectors, lexical, [()] * len(vectors), set(), k=5, threshold=0.3, fusion=fusion)[0]

    assert top(Fusion(centring=0.0)).index != 0  # the plain cosine: the small talk (0.79 against 0.75)
    found = top(Fusion())
    assert found.index == 0
    # the hit shows the plain cosine, not the centred score that ranked it
    assert found.dense == pytest.approx(float(vectors[0] @ query), abs=1e-6)
    assert top(Fusion(method="dense")).index == 0  # the dense side alone is centred too


def test_centring_fades_with_few_candidates_and_never_cuts_by_itself() -> None:
    query, vectors = scope_with_small_talk(3)  # the mean is mostly the candidates themselves
    lexical: list[LexicalScore | None] = [None] * len(vectors)
    hits = fuse(query, vectors, lexical, [()] * len(vectors), set(), k=5, threshold=0.7, fusion=Fusion())
    # every candidate above the threshold by its plain cosine is kept, whatever its centred score
    assert sorted(h.index for h in hits) == [0, 1, 2, 3]
    plain = fuse(
        query, vectors, lexical, [()] * len(vectors), set(), k=5, threshold=0.7, fusion=Fusion(centring=0.0)
    )
    assert [h.index for h in hits] == [h.index for h in plain]  # 4 candidates: strength 0.04, order kept
