"""Which customers ``record_case`` writes for: those semantic memory knows.

A case recorded under a mistyped id (``silverinst`` for ``SILVERINST``; ids are case-sensitive)
would be stored where no context ever shows it. So ``record_case`` refuses an id that is not a
live customer of the tenant, with one indexed read (``party``'s unique key), unless
``episodic.allow_unknown_customers`` is set. The error names no other customer: an agent must not
learn other ids; an operator's tool may add close matches. ERP case ingest is not checked: the
ERP is where its cases' customers come from.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.errors import UnknownCustomerError
from connector.scope import Scope
from connector.semantic.tables import Party

_PARTY: sa.Table = Party.__table__  # type: ignore[attr-defined]
_KNOWN: Any = sa.select(sa.literal(1)).where(
    _PARTY.c.tenant == sa.bindparam("tenant"),
    _PARTY.c.kind == "customer",
    _PARTY.c.external_id == sa.bindparam("customer_id"),
    _PARTY.c.deleted_at.is_(None),
)
ADVICE = (
    "record_case stores cases only for customers in semantic memory (ids are case-sensitive); "
    "set episodic.allow_unknown_customers = true to record cases for others"
)


def require_known_customer(engine: Engine, scope: Scope) -> None:
    """Raise :class:`UnknownCustomerError` unless ``scope``'s customer is a live party of its tenant."""
    with engine.connect() as conn:
        found = conn.execute(_KNOWN, {"tenant": scope.tenant, "customer_id": scope.customer_id}).first()
    if found is None:
        raise UnknownCustomerError(scope.customer_id, advice=ADVICE)
