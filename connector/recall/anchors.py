"""Time anchored on an ERP event in the question, resolved against the customer's own ERP history.

"Before the credit hold", "since they went on hold", "after the credit limit was raised", "when
invoice AR000123 was still open": such words name a date the question does not spell out, but the
ERP change history (:mod:`connector.semantic.history_reads`) holds it. :func:`find` reads the phrase
(words only, no store read: a question without one costs nothing more); :func:`resolve` reads the
customer's changes of the event's fields up to ``as_of`` and returns the span (start inclusive,
end exclusive) that recall then applies like a span the question's dates name
(:mod:`connector.recall.when`). An event not in the history resolves to None: nothing is narrowed
and no date is guessed.

Vocabulary (:data:`EVENTS`), each the latest such change at or before ``as_of``:

- ``hold``: the status changed to a hold ("credit hold", "went on hold", "were blocked"; a status
  holding "hold", "block" or "suspend");
- ``hold lifted``: the status changed from a hold to another ("the hold was lifted", "came off hold");
- ``credit limit raised`` / ``lowered`` / ``changed``: the credit limit went up / down / either way;
- ``terms changed``: the payment terms changed;
- ``document closed``: the named document was paid or closed ("AR000123 was paid", "... still open"):
  its balance went to zero, it stopped being open, or its status became closed or paid.

Relations: "before", "until", "prior to" give the span before the event; "after", "since", "once",
"following" the span from it on; "when"/"while" a document "was still open" (or "unpaid",
"outstanding") the span before it closed, "while they were on hold" the hold's own span (to its
lifting, if any), and "when" another event the week either side of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from connector.scope import Scope
from connector.semantic.history_reads import ErpChange, party_changes

FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
AROUND = timedelta(days=7)  # "when the credit limit was raised": the week either side of it

_HOLD = re.compile(r"hold|block|suspend", re.IGNORECASE)
_CLOSED = re.compile(r"closed|paid|settled|cleared|completed", re.IGNORECASE)
_BEFORE = ("before", "until", "till", "prior to", "up to")
_AFTER = ("after", "since", "once", "following")
_DURING = ("when", "while", "whilst")
_RELATION = "|".join(r.replace(" ", r"\s+") for r in (*_BEFORE, *_AFTER, *_DURING))
_GAP = r"(?:\s+[\w'’-]+){0,3}?"  # "before [the]", "since [they]", "when [invoice]"
_DOCUMENT = r"(?P<doc>[a-z]{0,6}[-/]?\d[\w/-]{2,})"


def _on_hold(value: Any) -> bool:
    return isinstance(value, str) and _HOLD.search(value) is not None


def _more(change: ErpChange) -> bool:
    old, new = change.old, change.new
    return isinstance(old, Decimal) and isinstance(new, Decimal) and new > old


def _less(change: ErpChange) -> bool:
    old, new = change.old, change.new
    return isinstance(old, Decimal) and isinstance(new, Decimal) and new < old


def _closed(change: ErpChange) -> bool:
    if change.field == "is_open":
        return change.new is False
    if change.field == "balance":
        return change.new == 0 and bool(change.old)
    return isinstance(change.new, str) and _CLOSED.search(change.new) is not None


@dataclass(frozen=True, slots=True)
class Event:
    """An ERP event the question may name: its words, the fields it changes, and which change it is."""

    name: str
    words: str  # a regular expression over the lowered question
    fields: tuple[str, ...]
    happened: Callable[[ErpChange], bool]
    entity: str = "party"  # "document": the change must be of the document the words name


#: The events read, in the order tried (a hold lifted before a hold: "the hold was lifted").
EVENTS: tuple[Event, ...] = (
    Event(
        "hold lifted",
        r"(?:the\s+)?(?:credit\s+)?hold\s+(?:was\s+|got\s+|had\s+been\s+)?(?:lifted|released|removed|ended)"
        r"|(?:came|come|taken|went|got)\s+off\s+(?:credit\s+)?hold|(?:was\s+|were\s+)?unblocked",
        ("status",),
        lambda c: _on_hold(c.old) and not _on_hold(c.new),
    ),
    Event(
        "hold",
        r"(?:went|go|put|placed|were|was|are|is|being)\s+on\s+(?:credit\s+)?hold|(?:credit\s+)?hold\b"
        r"|(?:were|was|got)\s+blocked|block(?:ing)?\b",
        ("status",),
        lambda c: _on_hold(c.new) and not _on_hold(c.old),
    ),
    Event(
        "credit limit raised",
        r"credit\s+limit\s+(?:was\s+|got\s+|had\s+been\s+)?(?:raised|increased|went\s+up|upped|extended)"
        r"|(?:raised|increased|upped|extended)\s+(?:the\s+|their\s+|its\s+)?credit\s+limit",
        ("credit_limit",),
        _more,
    ),
    Event(
        "credit limit lowered",
        r"credit\s+limit\s+(?:was\s+|got\s+|had\s+been\s+)?(?:lowered|reduced|cut|decreased|went\s+down)"
        r"|(?:lowered|reduced|cut|decreased)\s+(?:the\s+|their\s+|its\s+)?credit\s+limit",
        ("credit_limit",),
        _less,
    ),
    Event(
        "credit limit changed",
        r"credit\s+limit\s+(?:was\s+|got\s+)?changed|credit\s+limit\s+change"
        r"|changed?\s+(?:the\s+|their\s+|its\s+)?credit\s+limit",
        ("credit_limit",),
        lambda c: c.old != c.new,
    ),
    Event(
        "terms changed",
        r"(?:payment\s+)?terms\s+(?:were\s+|was\s+|got\s+)?changed|(?:payment\s+)?terms\s+change"
        r"|changed?\s+(?:the\s+|their\s+|its\s+)?(?:payment\s+)?terms",
        ("terms",),
        lambda c: c.old != c.new,
    ),
    Event(
        "document closed",
        rf"{_DOCUMENT}\s+(?:was|were|got|had\s+been|has\s+been|is)\s+(?:still\s+)?"
        r"(?P<state>paid|closed|settled|cleared|open|unpaid|outstanding)\b",
        ("is_open", "balance", "status"),
        _closed,
        entity="document",
    ),
)
_STILL_OPEN = ("open", "unpaid", "outstanding")


@dataclass(frozen=True, slots=True)
class Anchor:
    """An event phrase read from a question: which event, how the question relates to it, and the
    document it names (``document closed`` only)."""

    event: Event
    relation: str  # "before", "after" or "during"
    document: str | None = None
    still_open: bool = False  # "when AR000123 was still open": before it closed


# "when did they go on hold?" asks for the date: it anchors nothing
_ASKING = r"(?!\s+(?:did|do|does|will|would|could|can|should|has|have|had)\b)"
_PATTERNS = tuple(
    (event, re.compile(rf"\b(?P<rel>{_RELATION}){_ASKING}{_GAP}\s+(?:{event.words})", re.IGNORECASE))
    for event in EVENTS
)


def _relation(word: str) -> str:
    word = " ".join(word.lower().split())
    return "before" if word in _BEFORE else "after" if word in _AFTER else "during"


def find(query: str) -> Anchor | None:
    """The first event of :data:`EVENTS` the question anchors time on, or None (words only)."""
    for event, pattern in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        groups = match.groupdict()
        document = groups.get("doc")
        still_open = groups.get("state") in _STILL_OPEN
        return Anchor(event, _relation(match["rel"]), document, still_open)
    return None


def resolve(
    conn: sa.Connection, scope: Scope, anchor: Anchor, as_of: datetime
) -> tuple[datetime, datetime] | None:
    """The span ``anchor`` names for this customer, from its ERP changes up to ``as_of``; None when
    the history holds no such event (nothing is narrowed then)."""
    changes = party_changes(
        conn, scope.tenant, "customer", scope.customer_id, until=as_of, fields=anchor.event.fields
    )
    return span_of(anchor, changes)


def span_of(anchor: Anchor, changes: Sequence[ErpChange]) -> tuple[datetime, datetime] | None:
    """The span from ``changes`` (newest first, as :func:`party_changes` reads them)."""
    event = anchor.event
    own = [c for c in changes if c.entity == event.entity and c.field in event.fields and _names(anchor, c)]
    at = next((c.changed_at for c in own if event.happened(c)), None)
    if at is None:
        return None
    if anchor.relation == "before" or anchor.still_open:
        return FAR_PAST, at
    if anchor.relation == "after":
        return at, FAR_FUTURE
    if event.name == "hold":  # "while they were on hold": until the hold was lifted, if it was
        lifted = [c.changed_at for c in own if c.changed_at > at and EVENTS[0].happened(c)]
        return at, min(lifted) if lifted else FAR_FUTURE
    return at - AROUND, at + AROUND


def _names(anchor: Anchor, change: ErpChange) -> bool:
    """A document event's change must be of the document the question names."""
    if anchor.document is None:
        return True
    wanted = anchor.document.casefold()
    return wanted in {(change.number or "").casefold(), change.external_id.casefold()}
