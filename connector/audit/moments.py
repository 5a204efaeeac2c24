"""A moment the audit trail is filtered from or to, as the CLI and the console take it."""

from __future__ import annotations

from datetime import UTC, datetime

from connector.errors import ConfigError


def moment(flag: str, value: str | None) -> datetime | None:
    """``--since``/``--until``: a date (midnight UTC) or an ISO date-time with a UTC offset."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(f"{flag}: expected a date like 2026-03-01 or 2026-03-01T12:00:00+00:00") from None
    if parsed.tzinfo is None:
        if len(value.strip()) > 10:
            raise ConfigError(f"{flag}: give a UTC offset (e.g. +00:00) so the time is unambiguous")
        parsed = parsed.replace(tzinfo=UTC)
    return parsed
