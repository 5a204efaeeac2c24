"""An injectable clock, so retention, decay, retries and lag checks are testable without sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock UTC time and real sleeping."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FrozenClock:
    """A clock that only moves when told to; ``sleep`` advances it and records the wait."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime")
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._now += timedelta(seconds=seconds)

    def advance(self, delta: timedelta | float) -> None:
        self._now += delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
