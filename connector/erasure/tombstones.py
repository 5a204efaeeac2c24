"""Tombstones of erased customers: ``forget`` writes one, every later write for the customer checks it.

A tombstone is keyed by (tenant, SHA-256 of tenant and customer id), so the store proves a customer
was erased without keeping the id it erased. Agent writes (``record_case``, ``record_turn``,
``learn``) raise :class:`ErasedCustomerError`; the ERP case ingest skips the customer's cases. An
operator lifts the erasure with ``connector forget CUSTOMER --lift`` (logged).
"""

from __future__ import annotations

import hashlib
import logging

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.clock import Clock
from connector.erasure.tables import ErasedCustomer
from connector.errors import ErasedCustomerError
from connector.scope import Scope

log = logging.getLogger(__name__)

erased_t: sa.Table = ErasedCustomer.__table__  # type: ignore[attr-defined]


def customer_digest(tenant: str, customer_id: str) -> str:
    """The tombstone key of a customer: the same in every process, and not the id itself."""
    return hashlib.sha256(f"erased-customer\x1f{tenant}\x1f{customer_id}".encode()).hexdigest()


class Erasures:
    """Reads and writes the tombstones in the relational store."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def erase(self, scope: Scope) -> None:
        """Leave the tombstone (before anything is deleted, so no write can slip in behind ``forget``)."""
        digest = customer_digest(scope.tenant, scope.customer_id)
        with self.engine.begin() as conn:
            if not self._exists(conn, scope.tenant, digest):
                conn.execute(
                    erased_t.insert().values(
                        tenant=scope.tenant, customer_digest=digest, erased_at=self.clock.now()
                    )
                )

    def lift(self, scope: Scope) -> bool:
        """Remove the tombstone; True if there was one. Logged: it lets the customer's data back in."""
        digest = customer_digest(scope.tenant, scope.customer_id)
        with self.engine.begin() as conn:
            removed = conn.execute(
                erased_t.delete().where(
                    erased_t.c.tenant == scope.tenant, erased_t.c.customer_digest == digest
                )
            ).rowcount
        if removed:
            log.warning(
                "erasure lifted for a customer of tenant %s: its memories are stored again", scope.tenant
            )
        return bool(removed)

    def is_erased(self, scope: Scope, conn: Connection | None = None) -> bool:
        digest = customer_digest(scope.tenant, scope.customer_id)
        if conn is not None:
            return self._exists(conn, scope.tenant, digest)
        with self.engine.connect() as own:
            return self._exists(own, scope.tenant, digest)

    def require_writable(self, scope: Scope, conn: Connection | None = None) -> None:
        """Raise :class:`ErasedCustomerError` if the customer was erased and not lifted."""
        if self.is_erased(scope, conn):
            raise ErasedCustomerError(scope.customer_id, scope.tenant)

    def erased_digests(self, tenant: str) -> set[str]:
        """Every tombstone of a tenant (the case ingest tests its customers against them)."""
        with self.engine.connect() as conn:
            return set(
                conn.execute(
                    sa.select(erased_t.c.customer_digest).where(erased_t.c.tenant == tenant)
                ).scalars()
            )

    @staticmethod
    def _exists(conn: Connection, tenant: str, digest: str) -> bool:
        found = conn.execute(
            sa.select(sa.literal(1)).where(erased_t.c.tenant == tenant, erased_t.c.customer_digest == digest)
        ).first()
        return found is not None
