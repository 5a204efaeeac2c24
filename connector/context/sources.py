"""Reads of semantic memory for the context: the customer and sync freshness (documents: documents.py).

All reads share one connection and touch only indexed rows of one (tenant, customer). The
context builder never calls an ERP: the store is the ERP's copy, and its age is reported.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.models import Party, PartyAddress, PartyAttribute, PartyContact, SyncState

party_t: sa.Table = Party.__table__  # type: ignore[attr-defined]
contact_t: sa.Table = PartyContact.__table__  # type: ignore[attr-defined]
address_t: sa.Table = PartyAddress.__table__  # type: ignore[attr-defined]
attribute_t: sa.Table = PartyAttribute.__table__  # type: ignore[attr-defined]
sync_state_t: sa.Table = SyncState.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class CustomerFacts:
    party: Any
    contacts: tuple[Any, ...]
    addresses: tuple[Any, ...]
    attributes: tuple[tuple[str, str | None], ...]


# Statements are built once; each read only binds its parameters.
_TENANT: Any = sa.bindparam("tenant")
_KIND: Any = sa.bindparam("kind")
_PARTY_ID: Any = sa.bindparam("party")
_PARTY = sa.select(party_t).where(
    party_t.c.tenant == _TENANT,
    party_t.c.kind == _KIND,
    party_t.c.external_id == _PARTY_ID,
    party_t.c.deleted_at.is_(None),
)


def _children(table: sa.Table, *order: Any) -> Any:
    owner = (
        table.c.tenant == _TENANT,
        table.c.party_kind == _KIND,
        table.c.party_external_id == _PARTY_ID,
    )
    return sa.select(table).where(*owner).order_by(*order)


_CONTACTS = _children(contact_t, contact_t.c.ordinal, contact_t.c.id)
_ADDRESSES = _children(address_t, address_t.c.ordinal, address_t.c.id)
_ATTRIBUTES = _children(attribute_t, attribute_t.c.name)


def load_party(conn: Connection, tenant: str, kind: str, party_id: str) -> CustomerFacts | None:
    """The customer or vendor with its contacts, addresses and attributes, or None."""
    params = {"tenant": tenant, "kind": kind, "party": party_id}
    party = conn.execute(_PARTY, params).one_or_none()
    if party is None:
        return None
    return CustomerFacts(
        party=party,
        contacts=tuple(conn.execute(_CONTACTS, params)),
        addresses=tuple(conn.execute(_ADDRESSES, params)),
        attributes=tuple((a.name, a.value) for a in conn.execute(_ATTRIBUTES, params)),
    )


def close_matches(conn: Connection, tenant: str, kind: str, customer_id: str, limit: int = 5) -> list[str]:
    """Party ids of the tenant and kind whose id or name resembles ``customer_id`` (for the error)."""
    rows = conn.execute(
        sa.select(party_t.c.external_id, party_t.c.name).where(
            party_t.c.tenant == tenant, party_t.c.kind == kind, party_t.c.deleted_at.is_(None)
        )
    ).all()
    by_key: dict[str, str] = {}
    for external_id, name in rows:
        by_key.setdefault(external_id.upper(), external_id)
        if name:
            by_key.setdefault(name.upper(), external_id)
    wanted = customer_id.upper()
    found: list[str] = []
    for key in difflib.get_close_matches(wanted, sorted(by_key), n=limit * 2, cutoff=0.6):
        if by_key[key] not in found:
            found.append(by_key[key])
    for key in sorted(by_key):  # a prefix or substring match is a good hint too
        if len(found) >= limit:
            break
        if len(wanted) >= 3 and wanted in key and by_key[key] not in found:
            found.append(by_key[key])
    return found[:limit]


_STREAMS = (
    sa.select(sync_state_t.c.stream, sync_state_t.c.updated_at)
    .where(sync_state_t.c.tenant == _TENANT, sync_state_t.c.updated_at.is_not(None))
    .order_by(sync_state_t.c.stream)
)


def stream_freshness(conn: Connection, tenant: str) -> list[tuple[str, datetime]]:
    """(stream, last commit time) of the tenant's synced streams, by stream name."""
    return [(stream, updated_at) for stream, updated_at in conn.execute(_STREAMS, {"tenant": tenant})]
