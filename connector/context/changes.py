"""The "Recent ERP changes" section: what changed in the ERP for this customer, with provenance.

Changes of the last ``history.window_days`` (up to the context's ``as_of``), newest first. Three
things move a change up: the query names its field ("when did their credit limit change?": that
field's history is read beyond the window) or its document, and it happened since the customer's
last conversation (the section then says so, so the agent can tell the customer what is new).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.context.candidates import Candidate
from connector.semantic.history_reads import ErpChange, describe, party_changes
from connector.settings import HistorySettings
from connector.working.tables import WorkSession

SECTION = "erp_changes"
_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]

# Words of a question that point at a tracked field.
_FIELD_WORDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), fields)
    for pattern, fields in (
        (r"\bcredit\b", ("credit_limit",)),
        (r"\b(status|hold|on-hold|active|inactive|blocked|suspended)\b", ("status",)),
        (r"\bterms?\b", ("terms",)),
        (r"\b(balance|paid|pay|payment|owe|outstanding)\b", ("balance", "is_open")),
        (r"\bdue\b", ("due_date",)),
        (r"\bcurrenc(y|ies)\b", ("currency",)),
        (r"\btax\b", ("tax_zone", "tax_id")),
        (r"\b(amount|total)\b", ("amount",)),
        (r"\bclass\b", ("party_class",)),
        (r"\b(deleted|removed|cancell?ed)\b", ("deleted",)),
    )
)


def asked_fields(query: str) -> tuple[str, ...]:
    """The tracked fields a question names, in the order of the patterns."""
    found: dict[str, None] = {}
    for pattern, fields in _FIELD_WORDS:
        if pattern.search(query):
            found.update(dict.fromkeys(fields))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class ChangesView:
    """What the section shows: the changes in rank order and the last conversation, if any."""

    changes: tuple[ErpChange, ...]
    last_conversation: datetime | None
    since_last: int  # how many of the changes happened after the last conversation


# Built once; each read binds its parameters. Session ids are never blank, so "" excludes none.
_LAST_CONVERSATION = sa.select(sa.func.max(_session_t.c.updated_at)).where(
    _session_t.c.tenant == sa.bindparam("tenant"),
    _session_t.c.customer_id == sa.bindparam("customer_id"),
    _session_t.c.updated_at <= sa.bindparam("until"),
    _session_t.c.session_id != sa.bindparam("current"),
)


def last_conversation_end(
    conn: Connection, tenant: str, customer_id: str, current: str | None, until: datetime
) -> datetime | None:
    """When the customer's latest earlier session (not ``current``) last changed, up to ``until``."""
    params = {"tenant": tenant, "customer_id": customer_id, "until": until, "current": current or ""}
    value: datetime | None = conn.execute(_LAST_CONVERSATION, params).scalar()
    return value


def read_changes(
    conn: Connection,
    settings: HistorySettings,
    *,
    tenant: str,
    party_kind: str,
    customer_id: str,
    query: str,
    documents: Sequence[str],
    session_id: str | None,
    until: datetime,
) -> ChangesView:
    """The changes the section ranks (at most ``max_context_changes`` plus the asked fields')."""
    limit = settings.max_context_changes
    if not settings.enabled or limit == 0:
        return ChangesView((), None, 0)
    owner = (conn, tenant, party_kind, customer_id)
    recent = party_changes(
        *owner, since=until - timedelta(days=settings.window_days), until=until, limit=limit
    )
    fields = asked_fields(query)
    asked = party_changes(*owner, until=until, fields=fields, limit=limit) if fields else []
    named = {d.casefold() for d in documents}
    last = (
        last_conversation_end(conn, tenant, customer_id, session_id, until)
        if party_kind == "customer"
        else None
    )

    def rank(change: ErpChange) -> tuple[int, int, float]:
        steered = change.field in fields or (change.number or "").casefold() in named
        since = last is not None and change.changed_at > last
        return (0 if steered else 1, 0 if since else 1, -change.changed_at.timestamp())

    unique = {(c.entity, c.kind, c.external_id, c.field, c.changed_at): c for c in [*recent, *asked]}
    ordered = sorted(unique.values(), key=rank)
    since_last = sum(1 for c in ordered if last is not None and c.changed_at > last)
    return ChangesView(tuple(ordered), last, since_last)


def change_items(view: ChangesView) -> list[Candidate]:
    """One line per change, after a line on the last conversation when the customer had one."""
    items: list[Candidate] = []
    last = view.last_conversation
    if not view.changes:
        return items
    if last is not None:
        head = (
            f"Since the customer's last conversation on {last:%Y-%m-%d}: {view.since_last} ERP change(s)."
            if view.since_last
            else f"No ERP changes since the customer's last conversation on {last:%Y-%m-%d}."
        )
        items.append(
            Candidate(SECTION, f"conversation-end:{last:%Y-%m-%dT%H:%M:%SZ}", head, rank=-1, order=-1)
        )
    for rank, change in enumerate(view.changes):
        since = " [since last conversation]" if last is not None and change.changed_at > last else ""
        source = (
            f"erp-change:{change.tenant}/{change.entity}/{change.kind}/{change.external_id}#{change.field}"
        )
        items.append(
            Candidate(
                SECTION,
                f"{source}@{change.changed_at:%Y-%m-%dT%H:%M:%SZ}",
                f"- {describe(change)}{since}",
                rank=rank,
                order=rank,
            )
        )
    return items
