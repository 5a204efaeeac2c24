"""The ERP change history through a sync killed with SIGKILL mid-page: after the rerun every change
is recorded exactly once (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from sync_rigs import NOW, Rig, rig_factory
from test_sync_faults import KILLER, sync_subprocess

from connector.semantic.tracking import change_t

__all__ = ["rig_factory"]  # the fixture, from tests/sync_rigs.py


def changes(rig: Rig) -> Counter[tuple[str, str]]:
    with rig.engine.connect() as conn:
        rows = conn.execute(sa.select(change_t.c.external_id, change_t.c.field))
        return Counter((row.external_id, row.field) for row in rows)


def test_a_sync_killed_mid_page_then_rerun_records_each_change_exactly_once(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = rig_factory(streams=["Customer", "Invoice"], customers=60, invoices=60)
    assert rig.run().ok  # the baseline: no changes
    assert changes(rig) == Counter()
    later = NOW + timedelta(seconds=1)
    customers = rig.fake.keys("Customer")
    for key in customers:
        limit = float(rig.fake.record("Customer", key).get("CreditLimit") or 0)
        rig.fake.modify("Customer", key, {"CreditLimit": limit + 1000.0}, modified_at=later)
    db_url = rig.engine.url.render_as_string(hide_password=False)

    killed = sync_subprocess(tmp_path, rig, db_url, "2", script=KILLER)  # dies inside page 2's transaction
    assert killed.returncode == -9, killed.stderr
    first = changes(rig)
    assert 0 < len(first) < len(customers)  # the committed page's changes only
    assert set(first.values()) == {1}

    rerun = sync_subprocess(tmp_path, rig, db_url, "sync")
    assert rerun.returncode == 0, rerun.stderr
    recorded = changes(rig)
    assert set(recorded) == {(key, "credit_limit") for key in customers}
    assert set(recorded.values()) == {1}  # none lost, none twice
