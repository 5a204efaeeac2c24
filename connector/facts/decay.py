"""Decay: importance × factor^(UTC calendar days since the fact's decay reference), then removal.

Each fact stores the day up to which it is decayed (``decay_day``). A pass decays every fact whose
reference lies before today by factor^(today − reference) and sets the reference to today, so the
result depends on elapsed days, not on runs: twice on one day decays once, and a missed day is
caught up by the next run. Confirming a fact resets its reference (see ``store_fact``).

The work is set-based: one UPDATE per distinct reference day (usually one: yesterday), guarded by
that day, so two concurrent passes cannot decay a fact twice, and the same statements run on
SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import Clock
from connector.facts.models import DecayReport
from connector.facts.tables import fact_t
from connector.settings import FactSettings

_EPOCH = date(1970, 1, 1)


def day_number(moment: datetime) -> int:
    """Days from 1970-01-01 to ``moment``'s UTC calendar date: the unit decay counts in."""
    return (moment.astimezone(UTC).date() - _EPOCH).days


def decay(engine: Engine, clock: Clock, settings: FactSettings) -> DecayReport:
    now = clock.now()
    today = day_number(now)
    decayed = 0
    with engine.begin() as conn:
        days = conn.execute(
            sa.select(fact_t.c.decay_day).where(fact_t.c.decay_day < today).distinct()
        ).scalars()
        for reference in sorted(days):
            decayed += conn.execute(
                fact_t.update()
                .where(fact_t.c.decay_day == reference)
                .values(
                    importance=fact_t.c.importance * settings.decay_factor ** (today - reference),
                    decay_day=today,
                )
            ).rowcount
        removed = conn.execute(fact_t.delete().where(fact_t.c.importance < settings.decay_threshold)).rowcount
    return DecayReport(
        as_of=now,
        factor=settings.decay_factor,
        threshold=settings.decay_threshold,
        facts_decayed=decayed,
        facts_removed=removed,
    )
