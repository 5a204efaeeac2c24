"""Refused sign-ins (401s) in the audit trail, coalesced so that a storm cannot flood it.

A refusal is recorded as ``who="unknown"``, outcome ``refused``, with the client's address and
never the presented token. Per window (a minute by default) an address's first refusal is recorded
at once; its further refusals of the window become one event whose ``repeats`` counts them,
written when the window is over (at the next refusal after it, or when the server stops). At most
``max_addresses`` addresses a window get events of their own; refusals from any further address
are counted in one event without an address. A window therefore adds at most
``2 * max_addresses + 1`` events, however many requests are refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

#: The name a refused caller is recorded under: the token it sent matched no one.
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Refusals:
    """What one event records: ``repeats`` refusals from ``remote`` (None: other addresses)."""

    remote: str | None
    repeats: int
    at: datetime


class RefusedSignIns:
    """Counts refusals per window and address; hands ``write`` the events to record."""

    def __init__(
        self,
        write: Callable[[Refusals], None],
        *,
        now: Callable[[], datetime],
        window: timedelta = timedelta(minutes=1),
        max_addresses: int = 32,
    ) -> None:
        self._write = write
        self._now = now
        self._window = window
        self._max_addresses = max_addresses
        self._lock = threading.Lock()
        self._ends: datetime | None = None
        self._later: dict[str | None, int] = {}  # refusals after an address's first, this window

    def refused(self, remote: str | None) -> None:
        """One refused request from ``remote`` (the client's address, or None when unknown)."""
        now = self._now()
        with self._lock:
            due = self._roll(now)
            if remote not in self._later and len(self._later) < self._max_addresses:
                self._later[remote] = 0
                due.append(Refusals(remote, 1, now))
            elif remote in self._later:
                self._later[remote] += 1
            else:
                self._later[None] = self._later.get(None, 0) + 1
        for event in due:
            self._write(event)

    def flush(self) -> None:
        """Write the coalesced counts of the running window now (the server stops)."""
        with self._lock:
            due = self._close_window(self._now())
        for event in due:
            self._write(event)

    def _roll(self, now: datetime) -> list[Refusals]:
        if self._ends is not None and now < self._ends:
            return []
        due = self._close_window(now)
        self._ends = now + self._window
        return due

    def _close_window(self, now: datetime) -> list[Refusals]:
        due = [Refusals(remote, count, now) for remote, count in self._later.items() if count]
        self._later = {}
        self._ends = None
        return due
