"""Shared by the field-match tests (every stored column equals the fake's value): sync a fake
through the real adapter and runner, read what was stored, list every difference."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.testing.sap import FakeSAP

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
Expect = Callable[[Mapping[str, Any]], Any]


def sync(engine: Engine, tenant: TenantSettings, factory: Callable[[TenantSettings], Any]) -> None:
    """One full sync of ``tenant`` (no lookback) through the adapters ``factory`` opens."""
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=FrozenClock(NOW), engine=engine, llm=None)
    report = memory.sync_runner(adapter_factory=factory).run()
    assert report.ok, [r.error for r in report.results]


def sync_sap(engine: Engine, fake: FakeSAP, stream: str) -> None:
    tenant = fake.tenant_settings(name="erp", page_size=20, streams=[stream])
    transport = fake.transport()
    sync(
        engine,
        tenant,
        lambda t: SAPAdapter(t, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport),
    )


def stored(engine: Engine, table: sa.Table, **where: str) -> dict[str, Any]:
    """The stored rows of ``table`` matching ``where``, by external id."""
    query = sa.select(table).where(*(table.c[k] == v for k, v in where.items()))
    with engine.connect() as conn:
        return {row.external_id: row for row in conn.execute(query)}


def mismatches(
    rows: Mapping[str, Any], source: Mapping[str, Mapping[str, Any]], columns: Mapping[str, Expect]
) -> list[str]:
    """``key.column: stored != expected`` for every difference, and keys missing on either side.
    Numbers compare as decimals (a decimal in ``extra`` is stored as its text); times to the
    millisecond, in UTC."""
    found = [f"{key}: not stored" for key in source if key not in rows]
    found += [f"{key}: stored but not in the fake" for key in rows if key not in source]
    for key, values in source.items():
        row = rows.get(key)
        if row is None:
            continue
        for column, expect in columns.items():
            want = expect(values)
            got = row.extra.get(column[6:]) if column.startswith("extra.") else getattr(row, column)
            if isinstance(want, float | Decimal):
                want = Decimal(str(want))
                got = Decimal(str(got)) if got is not None else None
            if isinstance(got, datetime) and isinstance(want, datetime):
                want = want.astimezone(UTC).replace(microsecond=want.microsecond // 1000 * 1000)
            if got != want:
                found.append(f"{key}.{column}: stored {got!r}, the fake has {want!r}")
    return found
