"""What ``build_context`` returns: sections of items with provenance and token counts, and the text."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

SECTION_ORDER: tuple[str, ...] = (
    "today",
    "erp_facts",
    "open_documents",
    "erp_changes",
    "pinned",
    "learned_facts",
    "past_cases",
    "earlier_conversations",
    "summary",
    "recent_turns",
)


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One rendered item. ``source`` is its provenance id (``document:acme/ar_invoice/INV-1``,
    ``turn:s-1#12``, ``case:C-7`` ...); ``truncated`` is True when the budget cut its text.

    ``score`` is a recall hit's dense (cosine) similarity (a learned fact's importance); a recalled
    past case or earlier conversation also carries its ``lexical_score`` (BM25), the
    ``fused_score`` the two ranked by, and the query terms it ``matched``."""

    source: str
    text: str
    tokens: int
    score: float | None = None
    truncated: bool = False
    lexical_score: float | None = None
    fused_score: float | None = None
    matched_terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ContextSection:
    name: str
    title: str
    items: tuple[ContextItem, ...]
    tokens: int
    dropped: int = 0
    cap: int = 0  # tokens this section's share allows (after fixed items)
    borrowed: int = 0  # tokens lent to it from shares other sections left unused


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The agent's context: ``text`` to put in the prompt, plus the structure it was built from.

    ``token_count`` is the count of ``text`` with ``tokenizer``; ``over_budget`` is True only when
    the items that are never dropped (ERP header, pinned values) alone exceed the budget.
    """

    customer_id: str
    party_kind: str
    tenant: str
    session_id: str | None
    today: datetime
    text: str
    sections: tuple[ContextSection, ...]
    warnings: tuple[str, ...]
    token_count: int
    token_budget: int
    tokenizer: str
    over_budget: bool
    erp_as_of: datetime | None
    summary_mode: str | None
    timings_ms: dict[str, float]

    def section(self, name: str) -> ContextSection:
        for section in self.sections:
            if section.name == name:
                return section
        raise KeyError(name)

    def to_dict(self, *, include_timings: bool = False) -> dict[str, Any]:
        """JSON-ready form; timings are left out by default so equal inputs give equal JSON."""
        data = asdict(self)
        if not include_timings:
            data.pop("timings_ms")
        return data
