"""Window and watermark arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from connector.sync.window import floor_to, next_watermark, window_for

DAY = timedelta(days=1)
US = timedelta(microseconds=1)
UNTIL = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def test_never_synced_or_full_reads_everything() -> None:
    assert window_for(None, until=UNTIL, lookback=timedelta(minutes=5), granularity=US).since is None
    wm = datetime(2026, 3, 9, tzinfo=UTC)
    assert window_for(wm, until=UNTIL, lookback=timedelta(0), granularity=US, full=True).is_full


def test_window_starts_at_the_watermark_minus_lookback_floored() -> None:
    wm = datetime(2026, 3, 9, 0, 2, tzinfo=UTC)
    assert window_for(wm, until=UNTIL, lookback=timedelta(minutes=5), granularity=US).since == datetime(
        2026, 3, 8, 23, 57, tzinfo=UTC
    )
    assert window_for(wm, until=UNTIL, lookback=timedelta(minutes=5), granularity=DAY).since == datetime(
        2026, 3, 8, tzinfo=UTC
    )


def test_floor_converts_to_utc_first() -> None:
    from datetime import timezone

    local = datetime(2026, 3, 10, 1, 30, tzinfo=timezone(timedelta(hours=3)))
    assert floor_to(local, DAY) == datetime(2026, 3, 9, tzinfo=UTC)
    assert floor_to(local, US) == local


def test_watermark_is_the_max_seen_capped_at_the_window_end_and_never_moves_back() -> None:
    seen = datetime(2026, 3, 10, 9, 15, 30, 123456, tzinfo=UTC)
    assert next_watermark(None, seen, until=UNTIL, granularity=US) == seen
    assert next_watermark(None, seen, until=UNTIL, granularity=DAY) == datetime(2026, 3, 10, tzinfo=UTC)
    assert next_watermark(None, UNTIL + timedelta(hours=1), until=UNTIL, granularity=US) == UNTIL
    assert next_watermark(UNTIL, seen, until=UNTIL, granularity=US) == UNTIL
    assert next_watermark(seen, None, until=UNTIL, granularity=US) == seen
