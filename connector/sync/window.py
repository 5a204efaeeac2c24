"""Read windows and watermarks: the arithmetic that decides what a run reads and what it remembers.

A window has a closed start (the ERP filter is ``ge``), moved back by the lookback so late-arriving
rows are re-read, and floored to the cursor's granularity (SAP filters by whole days). Its end is
pinned when the run starts. The watermark is the largest modification time actually seen, never
"now", capped at the window end (rows stamped after it are read again next run) and floored to the
granularity, and it never moves backwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FINEST = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Window:
    """``since`` inclusive (None = everything), ``until`` = the run's start."""

    since: datetime | None
    until: datetime

    @property
    def is_full(self) -> bool:
        return self.since is None


def floor_to(value: datetime, granularity: timedelta) -> datetime:
    """``value`` rounded down to a multiple of ``granularity`` since the epoch (UTC)."""
    if granularity <= _FINEST:
        return value
    value = value.astimezone(UTC)
    return _EPOCH + ((value - _EPOCH) // granularity) * granularity


def window_for(
    watermark: datetime | None,
    *,
    until: datetime,
    lookback: timedelta,
    granularity: timedelta,
    full: bool = False,
) -> Window:
    """The window a run reads: everything when ``full`` or never synced, else from the watermark."""
    if full or watermark is None:
        return Window(since=None, until=until)
    return Window(since=floor_to(watermark - lookback, granularity), until=until)


def next_watermark(
    current: datetime | None, seen_max: datetime | None, *, until: datetime, granularity: timedelta
) -> datetime | None:
    """The watermark after a completed window: the true maximum seen, capped and floored."""
    if seen_max is None:
        return current
    candidate = floor_to(min(seen_max, until), granularity)
    if current is None:
        return candidate
    return max(current, candidate)
