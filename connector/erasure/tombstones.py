"""Tombstones of erased customers: ``forget`` writes one, every later write for the customer checks it.

A tombstone is keyed by (tenant, SHA-256 of tenant and customer id), so the store proves a customer
was erased without keeping the id it erased. Agent writes (``record_case``, ``record_turn``,
``learn``) raise :class:`ErasedCustomerError`; the ERP case ingest skips the customer's cases. An
operator lifts the erasure with ``connector forget CUSTOMER --lift`` (logged). Beside the tombstone,
an erasure stays *pending* until Chroma dropped the customer's vectors (``erasure_pending``); lifting
leaves that mark, since what an unfinished erasure left in Chroma is still to be found.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.audit.pending import write_announced
from connector.clock import Clock
from connector.db.chunks import chunks
from connector.erasure.tables import ErasedCustomer, PendingErasure
from connector.errors import ErasedCustomerError
from connector.scope import Scope

log = logging.getLogger(__name__)

erased_t: sa.Table = ErasedCustomer.__table__  # type: ignore[attr-defined]
pending_t: sa.Table = PendingErasure.__table__  # type: ignore[attr-defined]
_IN_LIST = 300  # customers per query: well inside SQLite's and PostgreSQL's parameter limits


def customer_digest(tenant: str, customer_id: str) -> str:
    """The tombstone key of a customer: the same in every process, and not the id itself."""
    return hashlib.sha256(f"erased-customer\x1f{tenant}\x1f{customer_id}".encode()).hexdigest()


class Erasures:
    """Reads and writes the tombstones in the relational store."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def erase(self, scope: Scope) -> bool:
        """Leave the tombstone (before anything is deleted, so no write can slip in behind ``forget``)
        and mark the erasure pending until :meth:`vectors_erased`.

        Returns whether an earlier erasure of the customer was still pending (it failed or was
        interrupted before Chroma dropped every vector): then Chroma may hold vectors of the
        customer that no row names any more, and ``forget`` searches for them by metadata.
        """
        key = {"tenant": scope.tenant, "customer_digest": customer_digest(scope.tenant, scope.customer_id)}
        now = self.clock.now()
        with self.engine.begin() as conn:
            if not self._exists(conn, **key):
                conn.execute(erased_t.insert().values(**key, erased_at=now))
            earlier = self._pending(conn, **key)
            if not earlier:
                conn.execute(pending_t.insert().values(**key, since=now))
            write_announced(conn)  # forget's: earlier events scrubbed, its own added, with the tombstone
        return earlier

    def vectors_erased(self, scope: Scope) -> None:
        """Chroma dropped every vector of the customer: the erasure is no longer pending."""
        digest = customer_digest(scope.tenant, scope.customer_id)
        with self.engine.begin() as conn:
            conn.execute(
                pending_t.delete().where(
                    pending_t.c.tenant == scope.tenant, pending_t.c.customer_digest == digest
                )
            )

    def all_vectors_erased(self) -> None:
        """Every collection was rebuilt from the rows without erased customers: nothing is pending."""
        with self.engine.begin() as conn:
            conn.execute(pending_t.delete())

    def lift(self, scope: Scope) -> bool:
        """Remove the tombstone; True if there was one. Logged: it lets the customer's data back in."""
        digest = customer_digest(scope.tenant, scope.customer_id)
        with self.engine.begin() as conn:
            removed = conn.execute(
                erased_t.delete().where(
                    erased_t.c.tenant == scope.tenant, erased_t.c.customer_digest == digest
                )
            ).rowcount
            write_announced(conn)  # Memory.lift_erasure's event: commits with the lift
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

    def erased_among(self, scopes: Iterable[Scope], conn: Connection | None = None) -> list[Scope]:
        """The scopes of ``scopes`` whose customer was erased and not lifted, in their order: one
        query per few hundred customers (a batch's customers are checked together, not one by one)."""
        wanted = {(s.tenant, customer_digest(s.tenant, s.customer_id)): s for s in dict.fromkeys(scopes)}
        if not wanted:
            return []
        if conn is None:
            with self.engine.connect() as own:
                return self.erased_among(wanted.values(), own)
        keys = list(wanted)
        found: set[tuple[str, str]] = set()
        for chunk in chunks(keys, _IN_LIST):
            statement = sa.select(erased_t.c.tenant, erased_t.c.customer_digest).where(
                erased_t.c.tenant.in_(sorted({tenant for tenant, _ in chunk})),
                erased_t.c.customer_digest.in_([digest for _, digest in chunk]),
            )
            found.update((r.tenant, r.customer_digest) for r in conn.execute(statement))
        return [scope for key, scope in wanted.items() if key in found]

    def require_all_writable(self, scopes: Iterable[Scope], conn: Connection | None = None) -> None:
        """Raise :class:`ErasedCustomerError` for the first of ``scopes`` that was erased (one query)."""
        erased = self.erased_among(scopes, conn)
        if erased:
            raise ErasedCustomerError(erased[0].customer_id, erased[0].tenant)

    def erased_digests(self, tenant: str) -> set[str]:
        """Every tombstone of a tenant (the case ingest tests its customers against them)."""
        with self.engine.connect() as conn:
            return set(
                conn.execute(
                    sa.select(erased_t.c.customer_digest).where(erased_t.c.tenant == tenant)
                ).scalars()
            )

    @staticmethod
    def _pending(conn: Connection, tenant: str, customer_digest: str) -> bool:
        found = conn.execute(
            sa.select(sa.literal(1)).where(
                pending_t.c.tenant == tenant, pending_t.c.customer_digest == customer_digest
            )
        ).first()
        return found is not None

    @staticmethod
    def _exists(conn: Connection, tenant: str, customer_digest: str) -> bool:
        found = conn.execute(
            sa.select(sa.literal(1)).where(
                erased_t.c.tenant == tenant, erased_t.c.customer_digest == customer_digest
            )
        ).first()
        return found is not None
