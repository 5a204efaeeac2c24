"""Case recall and turn recall each rank by a named profile: the dialogue rules stay with turns."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from test_fusion import ranked, speaker_turns, unit_vectors

from connector.lexical.bm25 import LexicalScore
from connector.recall.fusion import Fusion, fuse
from connector.recall.profiles import (
    CASE_PROFILES,
    DEFAULT_CASE_PROFILE,
    DEFAULT_TURN_PROFILE,
    TURN_PROFILES,
    check_profile,
    resolve,
)


def test_a_customer_name_half_the_cases_share_does_not_reorder_case_recall() -> None:
    # the speaker hedge makes room for turns not holding a widely shared query term (a speaker's
    # name); among ERP cases that term is the customer's or a product's name, and the case profile
    # ranks by the fused score alone, as the turn profile would without its hedge
    cosines, lexical = speaker_turns()
    case = ranked(cosines, lexical, CASE_PROFILES[DEFAULT_CASE_PROFILE])
    assert case == ranked(cosines, lexical, Fusion(hedge=False))
    assert case != ranked(cosines, lexical, TURN_PROFILES[DEFAULT_TURN_PROFILE])


def test_each_recall_takes_only_its_own_profile_names() -> None:
    assert check_profile("dialogue", TURN_PROFILES) is None
    assert check_profile(None, CASE_PROFILES) is None
    assert check_profile(Fusion(method="rrf"), CASE_PROFILES) is None
    problem = check_profile("plain", CASE_PROFILES)
    assert (
        problem == "profile must be one of ['case', 'dense', 'dialogue', 'lexical'] or a Fusion, got 'plain'"
    )


@pytest.mark.parametrize("profiles", [TURN_PROFILES, CASE_PROFILES])
def test_a_call_without_profile_keeps_the_parts_default(profiles: Mapping[str, Fusion]) -> None:
    default = Fusion(lexical_weight=0.4)
    assert resolve(None, profiles, default) is default
    assert resolve("lexical", profiles, default).method == "lexical"
    own = Fusion(method="rrf")
    assert resolve(own, profiles, default) is own


def test_session_aggregation_lifts_the_turns_of_the_strongest_session() -> None:
    # turn 1 answers the question turn 0 asks in the same session; turn 2 of another session embeds
    # a little closer than the answer. With the session's best score added, the answer passes it.
    cosines = [0.80, 0.50, 0.55, *[0.10 + 0.01 * i for i in range(12)]]
    lexical: list[LexicalScore | None] = [None] * len(cosines)
    query, vectors = unit_vectors(*cosines)
    groups = [0, 0, 1, *range(2, 14)]

    def order(fusion: Fusion) -> list[int]:
        found = fuse(query, vectors, lexical, [()] * len(cosines), set(), k=3, threshold=0.0, fusion=fusion,
                     groups=groups)  # fmt: skip
        return [f.index for f in found]

    assert order(Fusion(session_weight=0.0)) == [0, 2, 1]
    assert order(Fusion(session_weight=0.3)) == [0, 1, 2]


def test_over_long_turns_the_words_count_more_than_over_chat_lines() -> None:
    # a long answer holds the asked words (BM25 sees all of it) but embeds a little further than a
    # short turn on the topic; the embedder's window blurs long texts, so their scope leans lexical
    cosines = [0.40, 0.65, *[0.10 + 0.01 * i for i in range(18)]]
    lexical: list[LexicalScore | None] = [LexicalScore(6.0, ("router", "firmware"), 12.0), *[None] * 19]
    query, vectors = unit_vectors(*cosines)

    def first(mean_length: float) -> int:
        found = fuse(
            query, vectors, lexical, [()] * len(cosines), set(), k=3, threshold=0.0,
            fusion=TURN_PROFILES[DEFAULT_TURN_PROFILE], mean_length=mean_length, scope_size=500,
        )  # fmt: skip
        return found[0].index

    assert first(15.0) == 1  # chat-length turns: the dense side decides
    assert first(300.0) == 0  # long turns: the turn holding the words
