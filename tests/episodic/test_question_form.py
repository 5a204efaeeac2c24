"""Yes/no questions, which the fusion does not hedge towards the other speaker."""

from __future__ import annotations

import pytest

from connector.recall.question_form import asks_yes_or_no


@pytest.mark.parametrize(
    "question",
    [
        "Would Nate enjoy a hiking holiday?",
        "Is Gina close to her family?",
        "Does Dave care about giving back?",
        "did invoice INV-1001 get paid",
        "Didn't Calvin say he would call back?",
        '"Has the credit memo been issued?"',
        "Can we expect the delivery on 14 March?",
    ],
)
def test_a_question_opening_with_an_auxiliary_verb_asks_yes_or_no(question: str) -> None:
    assert asks_yes_or_no(question)


@pytest.mark.parametrize(
    "question",
    [
        "Which band did Calvin see live?",
        "What did Nate plant in the garden?",
        "When is the 312.40 credit due?",
        "Isabel's trip to Lisbon",  # a name that starts like "is" is not the verb
        "Doesburg warehouse delay",
        "Ist die Rechnung bezahlt?",  # another language: never read as yes/no, so always hedged
        "",
        "?!",
    ],
)
def test_other_questions_and_plain_text_do_not(question: str) -> None:
    assert not asks_yes_or_no(question)
