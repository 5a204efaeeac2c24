"""The ERP session a sync run holds, kept sealed in the store so a killed run's session can be closed.

ERPs cap concurrent API sessions per licence (Acumatica's "API Login Limit"); a run killed before
it logs out leaves its session open until the ERP's idle timeout, and a few such runs lock every
later run out. So a run records its session (the adapter's session cookies) when it logs in and
removes the record after it logs out; the next run of the tenant finds a leftover record and has
the adapter close that session before logging in.

The record is sealed with a key derived from the tenant's own secret (Fernet: AES-128-CBC + HMAC),
so the store alone does not hand out a live ERP session; it is never logged. If the secret changed
since, the record cannot be opened and is dropped (that session ends at its idle timeout).
"""

from __future__ import annotations

import base64
import hashlib
import logging

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from connector.clock import Clock
from connector.erp.protocol import SessionHandoff
from connector.settings import TenantSettings
from connector.sync.tables import ErpSession

log = logging.getLogger(__name__)

session_t: sa.Table = ErpSession.__table__  # type: ignore[attr-defined]


def _fernet(secret: SecretStr, tenant: str) -> Fernet:
    digest = hashlib.sha256(
        b"erp-session\x00" + tenant.encode() + b"\x00" + secret.get_secret_value().encode()
    )
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


class ErpSessions:
    """Sealed session records, one per tenant."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def save(self, tenant: str, secret: SecretStr, session: str) -> None:
        sealed = _fernet(secret, tenant).encrypt(session.encode()).decode()
        try:
            with self.engine.begin() as conn:
                conn.execute(session_t.delete().where(session_t.c.tenant == tenant))
                conn.execute(
                    session_t.insert().values(tenant=tenant, opened_at=self.clock.now(), sealed=sealed)
                )
        except SQLAlchemyError as exc:  # bookkeeping: never the reason a sync fails
            log.warning("could not record the ERP session of tenant %s: %s", tenant, type(exc).__name__)

    def leftover(self, tenant: str, secret: SecretStr) -> str | None:
        """The session an earlier run of the tenant left open, if it recorded one that can be opened."""
        try:
            with self.engine.connect() as conn:
                sealed = conn.execute(
                    sa.select(session_t.c.sealed).where(session_t.c.tenant == tenant)
                ).scalar()
        except SQLAlchemyError as exc:
            log.warning("could not read the ERP session of tenant %s: %s", tenant, type(exc).__name__)
            return None
        if sealed is None:
            return None
        try:
            return _fernet(secret, tenant).decrypt(sealed.encode()).decode()
        except InvalidToken:
            log.warning(
                "the recorded ERP session of tenant %s cannot be opened (secret changed?); dropped", tenant
            )
            self.clear(tenant)
            return None

    def clear(self, tenant: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(session_t.delete().where(session_t.c.tenant == tenant))
        except SQLAlchemyError as exc:
            log.warning("could not clear the ERP session of tenant %s: %s", tenant, type(exc).__name__)


class SessionKeeper:
    """One tenant's session record around one adapter session (a no-op for adapters that cannot
    hand a session over, or tenants without a secret to seal it with)."""

    def __init__(self, store: ErpSessions, tenant: TenantSettings) -> None:
        self.store = store
        self.tenant = tenant.name
        self.secret = tenant.password or tenant.client_secret
        self._handoff: SessionHandoff | None = None

    def before_login(self, adapter: object) -> None:
        """Give the adapter the session an earlier run left open, to log out before it logs in."""
        if self.secret is None or not isinstance(adapter, SessionHandoff):
            return
        self._handoff = adapter
        adapter.prior_session = self.store.leftover(self.tenant, self.secret)

    def after_login(self) -> None:
        """Record the new session (sealed), in case this run is killed before it logs out."""
        if self._handoff is None or self.secret is None:
            return
        state = self._handoff.session_state()
        if state is None:
            self.store.clear(self.tenant)
        else:
            self.store.save(self.tenant, self.secret, state)

    def after_logout(self) -> None:
        """The adapter logged out (or never got in): no session of ours is left to close."""
        if self._handoff is not None:
            self.store.clear(self.tenant)
