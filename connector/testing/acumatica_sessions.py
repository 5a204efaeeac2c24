"""Sessions and OAuth tokens of the fake Acumatica, timed by an injectable clock.

A cookie session ends at logout or after ``idle_timeout`` without requests; a bearer token at
its expiry. Both count against the licence's API login limit (``max_sessions``), which is why a
client that forgets to log out eventually sees "API Login Limit".
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from connector.clock import Clock


class LoginLimitReached(Exception):
    """More concurrent sessions than the licence allows."""


@dataclass(slots=True)
class Session:
    token: str
    user: str
    kind: Literal["cookie", "bearer"]
    created: datetime
    last_seen: datetime
    expires_at: datetime | None = None


class SessionBook:
    def __init__(self, clock: Clock, *, idle_timeout: timedelta, max_sessions: int) -> None:
        self._clock = clock
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._refresh: dict[str, str] = {}  # refresh token -> user
        self.logins = 0
        self.logouts = 0

    def _alive(self, session: Session, now: datetime) -> bool:
        if session.expires_at is not None:
            return now < session.expires_at
        return now - session.last_seen <= self.idle_timeout

    def _purge(self) -> None:
        now = self._clock.now()
        for token in [t for t, s in self._sessions.items() if not self._alive(s, now)]:
            del self._sessions[token]

    @property
    def active(self) -> int:
        self._purge()
        return len(self._sessions)

    def open(
        self, user: str, kind: Literal["cookie", "bearer"], lifetime: timedelta | None = None
    ) -> Session:
        self._purge()
        if len(self._sessions) >= self.max_sessions:
            raise LoginLimitReached
        now = self._clock.now()
        session = Session(
            token=secrets.token_hex(16),
            user=user,
            kind=kind,
            created=now,
            last_seen=now,
            expires_at=now + lifetime if lifetime is not None else None,
        )
        self._sessions[session.token] = session
        self.logins += 1
        return session

    def find(self, token: str | None) -> Session | None:
        """The live session for ``token`` (touching its idle timer), else None."""
        if not token:
            return None
        session = self._sessions.get(token)
        if session is None:
            return None
        now = self._clock.now()
        if not self._alive(session, now):
            del self._sessions[token]
            return None
        session.last_seen = now
        return session

    def close(self, token: str | None) -> bool:
        if token and self._sessions.pop(token, None) is not None:
            self.logouts += 1
            return True
        return False

    def expire_all(self) -> None:
        self._sessions.clear()

    def issue_refresh(self, user: str) -> str:
        token = secrets.token_hex(24)
        self._refresh[token] = user
        return token

    def redeem_refresh(self, token: str) -> str | None:
        """The user of a refresh token; each refresh token is used once (rotation)."""
        return self._refresh.pop(token, None)
