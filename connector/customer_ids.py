"""One customer, one memory: writers refuse a case or width variant of a known customer id.

``learn`` and ``record_turn`` accept customers semantic memory does not hold (an agent may talk to
someone not yet synced), but an id that differs from a known customer's only in case, width or
compatibility form (``t3café``, a fullwidth ``Ｔ３ＣＡＦÉ`` for ``T3CAFÉ``) would open a second memory
for the same customer that no ``build_context`` ever shows. Such an id is refused with
:class:`~connector.errors.UnknownCustomerError`, as ``build_context`` and ``record_case`` refuse it;
the message names no other customer (an agent must not learn other ids). Another Unicode
normalisation form is not a variant: :mod:`connector.ids` already put it in NFC.

The check costs one indexed read per call for an id not recently seen; only an id that is not a
known customer reads the tenant's customer ids, folded once and kept for a minute.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.errors import UnknownCustomerError
from connector.ids import fold_key
from connector.scope import Scope
from connector.semantic.tables import Party

_PARTY: sa.Table = Party.__table__  # type: ignore[attr-defined]
_LIVE = (_PARTY.c.kind == "customer", _PARTY.c.deleted_at.is_(None))
_KNOWN: Any = sa.select(sa.literal(1)).where(
    _PARTY.c.tenant == sa.bindparam("tenant"), _PARTY.c.external_id == sa.bindparam("customer_id"), *_LIVE
)
_ALL: Any = sa.select(_PARTY.c.external_id).where(_PARTY.c.tenant == sa.bindparam("tenant"), *_LIVE)
_TTL_S = 60.0
_KNOWN_CACHE = 4096
ADVICE = (
    "it differs only in case or width from a customer in semantic memory; customer ids are exact, "
    "use the ERP's own spelling"
)


class CustomerIds:
    """Refuses variants of known customer ids for one engine (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], float] = {}
        self._folded: dict[str, tuple[float, dict[str, set[str]]]] = {}

    def require_not_variant(self, scope: Scope) -> None:
        """Raise UnknownCustomerError when ``scope``'s id is not a customer but a variant of one."""
        key = (scope.tenant, scope.customer_id)
        now = time.monotonic()
        with self._lock:
            seen = self._known.get(key)
        if seen is not None and now - seen < _TTL_S:
            return
        with self.engine.connect() as conn:
            known = conn.execute(_KNOWN, {"tenant": scope.tenant, "customer_id": scope.customer_id}).first()
            if known is not None:
                self._remember(key, now)
                return
            folded = self._folded_ids(conn, scope.tenant, now)
        if folded.get(fold_key(scope.customer_id), set()) - {scope.customer_id}:
            raise UnknownCustomerError(scope.customer_id, advice=ADVICE)

    def _remember(self, key: tuple[str, str], now: float) -> None:
        with self._lock:
            if len(self._known) >= _KNOWN_CACHE:
                self._known.clear()
            self._known[key] = now

    def _folded_ids(self, conn: sa.Connection, tenant: str, now: float) -> dict[str, set[str]]:
        with self._lock:
            cached = self._folded.get(tenant)
        if cached is not None and now - cached[0] < _TTL_S:
            return cached[1]
        folded: dict[str, set[str]] = {}
        for customer_id in conn.execute(_ALL, {"tenant": tenant}).scalars():
            folded.setdefault(fold_key(customer_id), set()).add(customer_id)
        with self._lock:
            self._folded[tenant] = (now, folded)
        return folded
