"""Deterministic text of turns: JSON-safe tool payloads, transcripts and the non-LLM summary.

The non-LLM summary keeps every number, identifier and date of the turns it folds: each turn
becomes one line with a short gist plus every digit-bearing token and date that the gist cut.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.llm import NON_LLM_LABEL
from connector.storable import REPLACEMENT, storable_text
from connector.working.models import PinnedValue, Turn

GIST_CHARS = 160
_DIGIT_TOKEN = re.compile(r"[^\s;()\[\]{}\"'<>]*\d[^\s;()\[\]{}\"'<>]*")
_MONTH_DATE = re.compile(
    r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b"
    r"|\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.? \d{4}\b",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")


def json_safe(value: Any) -> Any:
    """A JSON value with exact decimals (as strings), ISO dates, and no NUL characters."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, str):
        return storable_text(value, nul=REPLACEMENT)
    if isinstance(value, dict):
        return {storable_text(str(k), nul=REPLACEMENT): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [json_safe(v) for v in items]
    if hasattr(value, "model_dump"):
        return json_safe(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    return str(value)


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def turn_text(turn: Turn) -> str:
    """The turn as one text: the message, or ``tool name(args) -> result`` for a tool call."""
    if turn.role != "tool" and turn.tool_name is None:
        return turn.content
    args = compact_json(turn.tool_args) if turn.tool_args is not None else ""
    parts = [f"{turn.tool_name or 'tool'}({args})"]
    if turn.tool_result is not None:
        parts.append(f"-> {compact_json(turn.tool_result)}")
    if turn.content.strip():
        parts.append(f"note: {turn.content}")
    return " ".join(parts)


def transcript(turns: Iterable[Turn], pinned: Sequence[PinnedValue] = ()) -> str:
    """Deterministic text of turns (with tool payloads) and pinned values, for LLM prompts."""
    lines = [f"[{t.seq}] {t.role}: {turn_text(t)}" for t in turns]
    if pinned:
        lines.append("Pinned values:")
        lines.extend(f"- {p.name} = {p.value} ({p.kind})" for p in pinned)
    return "\n".join(lines)


def key_values(text: str) -> list[str]:
    """Every digit-bearing token (numbers, ids, amounts, dates) and written-out date, in order."""
    found: dict[str, None] = {}
    for match in _MONTH_DATE.finditer(text):
        found.setdefault(match.group(0), None)
    for match in _DIGIT_TOKEN.finditer(text):
        token = match.group(0).strip(",.:!?")
        if token:
            found.setdefault(token, None)
    return list(found)


def gist(text: str, limit: int = GIST_CHARS) -> str:
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] or flat[:limit]
    return cut + " …"


def deterministic_fold(previous: str | None, turns: Sequence[Turn]) -> str:
    """Append one line per turn to the previous non-LLM summary (or start one)."""
    header = f"[{NON_LLM_LABEL}: one line per turn; every number, id and date kept]"
    lines = [previous] if previous else [header]
    for turn in turns:
        full = turn_text(turn)
        short = gist(full)
        missing = [v for v in key_values(full) if v not in short]
        refs = f" | values: {', '.join(missing)}" if missing else ""
        lines.append(f"#{turn.seq} {turn.role}: {short}{refs}")
    return "\n".join(lines)
