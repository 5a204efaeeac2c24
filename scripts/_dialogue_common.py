"""What the two dialogue-set generators share: running a generator and writing its two files.

``make_conversation_dataset.py`` and ``make_chat_dataset.py`` are written apart on purpose (so the
fusion is not tuned to one generator's habits); only the plumbing around their ``build`` lives here,
so both sets keep one file layout: ``<prefix>_turns.jsonl`` and ``<prefix>_questions.jsonl``, one
JSON object per line with sorted keys, and one summary line on stdout.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Row = dict[str, Any]
Build = Callable[[random.Random, int], tuple[list[Row], list[Row]]]


def write_dialogue_set(build: Build, *, seed: int, conversations: int, out: Path, prefix: str) -> None:
    """Build ``conversations`` conversations from one seeded stream (``build(rng, n)`` for n = 0, 1,
    ...: the order is part of the output) and write them under ``out``."""
    rng = random.Random(seed)
    turns: list[Row] = []
    questions: list[Row] = []
    for n in range(conversations):
        t, q = build(rng, n)
        turns += t
        questions += q
    out.mkdir(exist_ok=True)
    _write_jsonl(out / f"{prefix}_turns.jsonl", turns)
    _write_jsonl(out / f"{prefix}_questions.jsonl", questions)
    kinds: dict[str, int] = {}
    for question in questions:
        kinds[question["kind"]] = kinds.get(question["kind"], 0) + 1
    print(f"{len(turns)} turns, {len(questions)} questions, {conversations} conversations, kinds {kinds}")


def _write_jsonl(path: Path, rows: Iterable[Row]) -> None:
    with path.open("w") as handle:
        handle.writelines(json.dumps(row, sort_keys=True) + "\n" for row in rows)
