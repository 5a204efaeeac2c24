"""Decay: importance × factor^(whole days since the fact's decay reference), then threshold removal.

Each fact stores its decay reference time (``decayed_at``); a pass applies only the whole days
elapsed since then and moves the reference forward by exactly those days, so the result depends on
elapsed time, not on how often the job runs: twice on one day decays once, and a skipped day is
caught up by the next run. Confirming a fact resets its reference (see ``store_fact``). An update
only applies if the reference is unchanged, so two concurrent passes cannot decay a fact twice.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa

from connector.facts.models import DecayReport
from connector.facts.tables import fact_t

if TYPE_CHECKING:
    from connector.memory import Memory

DAY = timedelta(days=1)
BATCH = 1000


def decay(memory: Memory) -> DecayReport:
    settings = memory.settings.facts
    now = memory.clock.now()
    decayed = 0
    last_id = 0
    update = (
        fact_t.update()
        .where(fact_t.c.id == sa.bindparam("b_id"), fact_t.c.decayed_at == sa.bindparam("b_old"))
        .values(importance=sa.bindparam("b_importance"), decayed_at=sa.bindparam("b_new"))
    )
    while True:
        with memory.engine.begin() as conn:
            rows = conn.execute(
                sa.select(fact_t.c.id, fact_t.c.importance, fact_t.c.decayed_at)
                .where(fact_t.c.decayed_at <= now - DAY, fact_t.c.id > last_id)
                .order_by(fact_t.c.id)
                .limit(BATCH)
            ).all()
            if not rows:
                break
            params = []
            for row in rows:
                days = (now - row.decayed_at) // DAY
                params.append(
                    {
                        "b_id": row.id,
                        "b_old": row.decayed_at,
                        "b_importance": row.importance * settings.decay_factor**days,
                        "b_new": row.decayed_at + days * DAY,
                    }
                )
            decayed += conn.execute(update, params).rowcount
            last_id = rows[-1].id
    with memory.engine.begin() as conn:
        removed = conn.execute(fact_t.delete().where(fact_t.c.importance < settings.decay_threshold)).rowcount
    return DecayReport(
        as_of=now,
        factor=settings.decay_factor,
        threshold=settings.decay_threshold,
        facts_decayed=decayed,
        facts_removed=removed,
    )
