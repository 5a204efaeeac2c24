"""One generation per customer: how a recall process knows which indexed turns it has not read yet.

Every write of a customer's indexed turns bumps ``conv_scope.generation`` in the same transaction
and stamps its rows with the new value; every removal bumps ``epoch`` too. A process that holds the
customer's vectors in memory (:mod:`connector.conversations.scope_vectors`) reads one row per recall:
the same generation and epoch, nothing to read; a higher generation, the rows stamped above the one it
holds; another epoch, everything again. A customer's row starts at a random epoch, so a row erased
with the customer and created again by later turns is never mistaken for the one a process held.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from connector.conversations.tables import SCOPES
from connector.scope import Scope


class ScopeState(NamedTuple):
    generation: int
    epoch: int


def _insert(conn: sa.Connection) -> Any:
    return postgresql.insert(SCOPES) if conn.dialect.name == "postgresql" else sqlite.insert(SCOPES)


def bump(conn: sa.Connection, scope: Scope) -> int:
    """The customer's next generation (in the caller's transaction): what its new rows are stamped with."""
    statement = _insert(conn).values(
        tenant=scope.tenant, customer_id=scope.customer_id, generation=1, epoch=secrets.randbits(30)
    )
    statement = statement.on_conflict_do_update(
        index_elements=[SCOPES.c.tenant, SCOPES.c.customer_id],
        set_={"generation": SCOPES.c.generation + 1},
    ).returning(SCOPES.c.generation)
    return int(conn.execute(statement).scalar_one())


def removed(conn: sa.Connection, scopes: Iterable[tuple[str, str]]) -> None:
    """Rows of these customers were removed: every process reads their turns again."""
    for tenant, customer_id in sorted(set(scopes)):
        conn.execute(
            sa.update(SCOPES)
            .where(SCOPES.c.tenant == tenant, SCOPES.c.customer_id == customer_id)
            .values(generation=SCOPES.c.generation + 1, epoch=SCOPES.c.epoch + 1)
        )


_STATE = sa.select(SCOPES.c.generation, SCOPES.c.epoch).where(
    SCOPES.c.tenant == sa.bindparam("tenant"), SCOPES.c.customer_id == sa.bindparam("customer_id")
)


def state(conn: sa.Connection, scope: Scope) -> ScopeState | None:
    """The customer's generation and epoch (None: nothing indexed, or erased)."""
    row = conn.execute(_STATE, {"tenant": scope.tenant, "customer_id": scope.customer_id}).one_or_none()
    return None if row is None else ScopeState(int(row[0]), int(row[1]))


def forget(conn: sa.Connection, scope: Scope) -> None:
    """Erasure: the customer's row goes (a later write starts a new epoch)."""
    conn.execute(
        sa.delete(SCOPES).where(SCOPES.c.tenant == scope.tenant, SCOPES.c.customer_id == scope.customer_id)
    )
