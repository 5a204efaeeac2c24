"""Case recall and turn recall each rank by a named profile: the dialogue rules stay with turns."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connector.recall.fusion import Fusion
from connector.recall.profiles import (
    CASE_PROFILES,
    DEFAULT_CASE_PROFILE,
    DEFAULT_TURN_PROFILE,
    TURN_PROFILES,
    check_profile,
    resolve,
)
from tests.test_fusion import ranked, speaker_turns


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
    problem = check_profile("dialogue", CASE_PROFILES)
    assert problem == "profile must be one of ['case', 'dense', 'lexical'] or a Fusion, got 'dialogue'"


@pytest.mark.parametrize("profiles", [TURN_PROFILES, CASE_PROFILES])
def test_a_call_without_profile_keeps_the_parts_default(profiles: Mapping[str, Fusion]) -> None:
    default = Fusion(lexical_weight=0.4)
    assert resolve(None, profiles, default) is default
    assert resolve("lexical", profiles, default).method == "lexical"
    own = Fusion(method="rrf")
    assert resolve(own, profiles, default) is own
