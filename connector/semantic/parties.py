"""Reads of one party for the context: the customer or vendor with its contacts, addresses and
attributes (its documents: :mod:`connector.semantic.documents`).

All reads share the caller's connection and touch only indexed rows of one (tenant, party). The
context builder never calls an ERP: the store is the ERP's copy, and its age is reported.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.semantic.tables import Party, PartyAddress, PartyAttribute, PartyContact

party_t: sa.Table = Party.__table__  # type: ignore[attr-defined]
contact_t: sa.Table = PartyContact.__table__  # type: ignore[attr-defined]
address_t: sa.Table = PartyAddress.__table__  # type: ignore[attr-defined]
attribute_t: sa.Table = PartyAttribute.__table__  # type: ignore[attr-defined]


class ContactRow(NamedTuple):
    role: str
    name: str | None
    email: str | None
    phone: str | None


class AddressRow(NamedTuple):
    role: str
    line1: str | None
    line2: str | None
    city: str | None
    region: str | None
    postal_code: str | None
    country: str | None


@dataclass(frozen=True, slots=True)
class CustomerFacts:
    party: Any
    contacts: tuple[ContactRow, ...]
    addresses: tuple[AddressRow, ...]
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
_CONTACT, _ADDRESS, _ATTRIBUTE = 0, 1, 2
_FIELDS = 7  # an address's


def _children(table: sa.Table, part: int, ordinal: Any, name: Any, *fields: Any) -> Any:
    """One table's rows of the party as (part, ordinal, name, id, seven text fields), for the union."""
    owner = (
        table.c.tenant == _TENANT,
        table.c.party_kind == _KIND,
        table.c.party_external_id == _PARTY_ID,
    )
    padded = [*fields, *([sa.null()] * (_FIELDS - len(fields)))]
    head = [
        sa.literal_column(str(part), sa.Integer()).label("part"),
        ordinal.label("ordinal"),
        name.label("sort_name"),
    ]
    texts = (sa.cast(f, sa.Text()).label(f"f{i}") for i, f in enumerate(padded))
    return sa.select(*head, table.c.id, *texts).where(*owner)


_NO_ORDINAL, _NO_NAME = sa.literal_column("0", sa.Integer()), sa.cast(sa.literal_column("''"), sa.Text())
# The party's contacts and addresses (by ordinal, then id) and attributes (by name) in one read.
_DETAILS = sa.union_all(
    _children(contact_t, _CONTACT, contact_t.c.ordinal, _NO_NAME, contact_t.c.role, contact_t.c.name,
              contact_t.c.email, contact_t.c.phone),
    _children(address_t, _ADDRESS, address_t.c.ordinal, _NO_NAME, address_t.c.role, address_t.c.line1,
              address_t.c.line2, address_t.c.city, address_t.c.region, address_t.c.postal_code,
              address_t.c.country),
    _children(attribute_t, _ATTRIBUTE, _NO_ORDINAL, attribute_t.c.name, attribute_t.c.name,
              attribute_t.c.value),
).order_by("part", "ordinal", "sort_name", "id")  # fmt: skip


def load_party(conn: Connection, tenant: str, kind: str, party_id: str) -> CustomerFacts | None:
    """The customer or vendor with its contacts, addresses and attributes, or None."""
    params = {"tenant": tenant, "kind": kind, "party": party_id}
    party = conn.execute(_PARTY, params).one_or_none()
    if party is None:
        return None
    contacts: list[ContactRow] = []
    addresses: list[AddressRow] = []
    attributes: list[tuple[str, str | None]] = []
    for part, _, _, _, *fields in conn.execute(_DETAILS, params):
        if part == _CONTACT:
            contacts.append(ContactRow(*fields[:4]))
        elif part == _ADDRESS:
            addresses.append(AddressRow(*fields))
        else:
            attributes.append((fields[0], fields[1]))
    return CustomerFacts(party, tuple(contacts), tuple(addresses), tuple(attributes))


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
