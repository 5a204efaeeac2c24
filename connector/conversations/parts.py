"""Long turns in parts: what each vector of a turn is made from.

The embedder reads a text's first 256 tokens (about 180 English words), so a long assistant answer
was recallable by its opening only. A turn's first vector is still made from its whole indexed text
(the embedder keeps the opening, as before, so existing vectors stay valid); a turn longer than
``PART_WORDS`` words gets further parts: windows of ``PART_WORDS`` words starting every ``STEP``
words (consecutive parts overlap by ``PART_WORDS - STEP`` words, so a sentence cut by one window is
whole in the next), at most ``MAX_PARTS`` in all. A hit on any part is a hit on the turn.
"""

from __future__ import annotations

import hashlib
import re

PART_WORDS = 150  # words per part: under the embedder's 256-token window for ordinary prose
STEP = 120  # consecutive parts overlap by 30 words
MAX_PARTS = 24  # the first ~2,900 words of a turn are embedded; the lexical index holds all of it
_WORD = re.compile(r"\S+")


def part_texts(text: str) -> list[str]:
    """The texts of a turn's second and later parts (empty for a turn that fits one window)."""
    spans = [m.span() for m in _WORD.finditer(text)]
    if len(spans) <= PART_WORDS:
        return []
    parts: list[str] = []
    for start in range(STEP, len(spans), STEP):
        if len(parts) + 1 >= MAX_PARTS:
            break
        end = min(start + PART_WORDS, len(spans))
        parts.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            break
    return parts


def part_id(turn_id: str, part: int) -> str:
    """The id of a turn's ``part`` (1-based after the turn's own first part): row and vector id."""
    return hashlib.sha256(f"part\x1f{turn_id}\x1f{part}".encode()).hexdigest()[:32]
