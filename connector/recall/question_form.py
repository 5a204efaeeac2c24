"""What form a recall's question takes, where the ranking depends on it.

A yes/no question ("Would Nate enjoy a hiking holiday?", "Is Gina close to her family?") states
something about the person it names and asks whether it holds; what answers it is what that person
said or did, so the speaker hedge of the fusion (:mod:`connector.recall.fusion`), which makes room
for the other speaker's turns, only pushes the evidence down. A question that asks what, who or
when ("Which band did Calvin see live?") may be about a fact the other speaker owns, and keeps it.
English only: in another language no question is read as yes/no, and every one keeps the hedge.
"""

from __future__ import annotations

import re

# An English yes/no question opens with an auxiliary or modal verb (after any quote or bracket).
_YES_NO = re.compile(
    r"^\W*(?:am|is|are|was|were|do|does|did|have|has|had|can|could|will|would|shall|should|may"
    r"|might|must)(?:n't)?\b",
    re.IGNORECASE,
)


def asks_yes_or_no(question: str) -> bool:
    """Whether ``question`` is an English yes/no question (it opens with an auxiliary verb)."""
    return _YES_NO.match(question[:64]) is not None
