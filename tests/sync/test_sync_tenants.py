"""One tenant that cannot sync never stops the others: each attempt leaves a run row with its reason.

Real HTTP to two fake Acumatica tenants on loopback, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.cli import main
from connector.clock import FrozenClock
from connector.commands.sync import EXIT_PARTLY_FAILED
from connector.memory import Memory
from connector.semantic.upsert import party_t
from connector.settings import Settings, TenantSettings
from connector.sync.runlog import run_t
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
STREAMS = ["Customer", "Vendor"]


@pytest.fixture
def served() -> Iterator[ServedFake]:
    fake = FakeAcumatica(seed=5, clock=FrozenClock(NOW), customers=8, vendors=3, invoices=0,
                         sales_orders=0, bills=0, cases=0)  # fmt: skip
    server = serve(fake)
    yield server
    server.stop()


def tenants(server: ServedFake) -> list[TenantSettings]:
    fake = server.fake
    assert isinstance(fake, FakeAcumatica)
    bad = fake.tenant_settings("first", base_url=server.url, streams=STREAMS, password=SecretStr("wrong-pw"))
    good = fake.tenant_settings("second", base_url=server.url, streams=STREAMS)
    return [bad, good]


def test_a_tenant_whose_login_fails_does_not_stop_the_next_one(engine: Engine, served: ServedFake) -> None:
    memory = Memory(Settings(tenants=tenants(served)), clock=FrozenClock(NOW), engine=engine, llm=None)

    report = memory.sync_runner().run()

    by_tenant = {(r.tenant, r.stream): r for r in report.results}
    assert {k: r.status for k, r in by_tenant.items()} == {
        ("first", "Customer"): "failed",
        ("first", "Vendor"): "failed",
        ("second", "Customer"): "ok",
        ("second", "Vendor"): "ok",
    }
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).where(party_t.c.tenant == "second")).scalar() == 11
        rows = conn.execute(sa.select(run_t).where(run_t.c.tenant == "first")).all()
    assert {r.stream: r.status for r in rows} == {"Customer": "failed", "Vendor": "failed"}
    for row in rows:
        assert row.error.startswith("first: ERP session failed: ERPAuthError")
        assert "\n" not in row.error and "wrong-pw" not in row.error


def test_cli_exits_partly_failed_and_status_shows_the_failed_tenant(
    served: ServedFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CONNECTOR_LOG_FORMAT", "json")
    listed = [
        json.loads(t.model_dump_json()) | {"password": t.password.get_secret_value() if t.password else None}
        for t in tenants(served)
    ]
    monkeypatch.setenv("CONNECTOR_TENANTS", json.dumps(listed))

    assert main(["sync"]) == EXIT_PARTLY_FAILED
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("connector: partly failed: 2 of 4 stream runs failed")
    assert "wrong-pw" not in err

    assert main(["sync", "status", "--json"]) == 0
    statuses = {(s["tenant"], s["stream"]): s for s in json.loads(capsys.readouterr().out)}
    assert statuses[("first", "Customer")]["last_run_status"] == "failed"
    assert "ERPAuthError" in statuses[("first", "Customer")]["last_run_error"]
    assert statuses[("second", "Vendor")]["last_run_status"] == "ok"
