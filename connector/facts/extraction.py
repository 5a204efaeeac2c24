"""The consolidation prompt and the validation of what the LLM answers.

The LLM's answer is untrusted input: it must be one JSON object of the documented shape, or the
whole job fails and its sessions stay unconsolidated. Nothing half-parsed is ever stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from connector.errors import LLMError
from connector.facts.normalise import MAX_FACT_CHARS, clean_content
from connector.resources import prompt_text

PROMPT_FILE = "consolidate.md"
MAX_FACTS_PER_ANSWER = 30
MAX_INPUT_CHARS = 24_000
_OMITTED = "[... earlier turns omitted ...]\n"


class ExtractedFact(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1, max_length=MAX_FACT_CHARS)
    importance: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    category: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z_ -]+$")
    erp_field: str | None = Field(default=None, max_length=64)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        cleaned = clean_content(value)
        if not cleaned:
            raise ValueError("blank fact")
        return cleaned

    @field_validator("category")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.strip().lower().replace(" ", "_").replace("-", "_")


class Extraction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFact] = Field(max_length=MAX_FACTS_PER_ANSWER)


def parse_extraction(text: str) -> Extraction:
    """Validate the LLM's answer; raise LLMError naming the first problem (never the whole answer)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMError(f"consolidation answer is not JSON ({exc.msg} at position {exc.pos})") from None
    try:
        return Extraction.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        raise LLMError(
            f"consolidation answer does not validate: {where}: {first['msg']} ({exc.error_count()} errors)"
        ) from None


@dataclass(frozen=True, slots=True)
class Transcript:
    session_id: str
    text: str


def render_conversations(transcripts: Sequence[Transcript]) -> str:
    """The conversations as quoted data blocks, in the given (deterministic) order."""
    blocks = []
    for item in transcripts:
        quoted = "\n".join(f"> {line}" for line in item.text.splitlines())
        blocks.append(f"Conversation {item.session_id}:\n{quoted}")
    return "\n\n".join(blocks)


def fit_transcripts(transcripts: Sequence[Transcript], limit: int = MAX_INPUT_CHARS) -> list[Transcript]:
    """As many whole transcripts as fit ``limit``; at least the first, cut to its most recent part.

    Sessions left out stay unconsolidated and go into a later run's call.
    """
    chosen: list[Transcript] = []
    used = 0
    for item in transcripts:
        if used + len(item.text) > limit:
            if not chosen:
                chosen.append(Transcript(item.session_id, _OMITTED + item.text[-(limit - len(_OMITTED)) :]))
            break
        chosen.append(item)
        used += len(item.text)
    return chosen


def user_message(conversations: str, known_facts: Sequence[str]) -> str:
    known = "\n".join(f"- {fact}" for fact in known_facts) or "(none)"
    return f"Known facts:\n{known}\n\nConversations (quoted data):\n\n{conversations}\n"


def system_prompt() -> str:
    return prompt_text(PROMPT_FILE)


def input_checksum(system: str, model: str, conversations: str) -> str:
    """SHA-256 of what determines the extraction: prompt, model and the conversations.

    Known facts are left out on purpose: they change with every confirmation and decay, and a
    conversation that was already consolidated has nothing new to teach.
    """
    digest = hashlib.sha256()
    for part in (system, model, conversations):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
