"""Deterministic text of turns: JSON-safe tool payloads and transcripts (summaries: summary.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.storable import REPLACEMENT, storable_text
from connector.working.models import PinnedValue, Turn


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
