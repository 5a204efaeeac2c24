"""ERP sessions do not pile up: a run killed before it logs out leaves its Acumatica session open,
and the next run logs that session out before logging in, so killed runs never exhaust the
licence's API logins. Real processes (SIGKILL) against the fake Acumatica over loopback HTTP, on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from paths import ROOT
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import Settings, TenantSettings
from connector.sync.erp_sessions import session_t
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)

KILLED_AFTER_LOGIN = """
import os, signal, sys
from connector.sync import runner

def die(conn, run):  # the first page's transaction: logged in, the session recorded, no logout
    os.kill(os.getpid(), signal.SIGKILL)

runner.save_counters = die
from connector.cli import main
sys.exit(main(["sync"]))
"""


@pytest.fixture
def served() -> Iterator[ServedFake]:
    fake = FakeAcumatica(seed=2, customers=5, vendors=0, invoices=0, sales_orders=0, bills=0, cases=0,
                         max_sessions=1)  # fmt: skip
    server = serve(fake)
    yield server
    server.stop()


def tenant(served: ServedFake, **overrides: object) -> TenantSettings:
    fake = served.fake
    assert isinstance(fake, FakeAcumatica)
    return fake.tenant_settings("acme", base_url=served.url, streams=["Customer"], **overrides)  # type: ignore[arg-type]


def run_process(tmp_path: Path, served: ServedFake, engine: Engine, script: str | None) -> int:
    settings = tenant(served, max_retries=0).model_dump(mode="json")  # a refused login fails at once
    settings["password"] = served.fake.password  # type: ignore[attr-defined]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNECTOR_")} | {
        "CONNECTOR_TENANTS": json.dumps([settings]),
        "CONNECTOR_DATABASE__URL": engine.url.render_as_string(hide_password=False),
        "CONNECTOR_DATA_DIR": str(tmp_path / "data"),
        "CONNECTOR_LOG_FORMAT": "json",
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-c", script] if script else [sys.executable, "-m", "connector.cli", "sync"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done.returncode


def test_killed_syncs_leave_no_session_piled_up(engine: Engine, served: ServedFake, tmp_path: Path) -> None:
    fake = served.fake
    assert isinstance(fake, FakeAcumatica)

    for _ in range(3):  # the licence allows one session at a time
        assert run_process(tmp_path, served, engine, KILLED_AFTER_LOGIN) == -9
        assert fake.active_sessions == 1  # the killed run's own; the one before it was logged out

    with engine.connect() as conn:
        sealed = conn.execute(sa.select(session_t.c.sealed)).scalar_one()
    assert "ASP.NET_SessionId" not in sealed and ".ASPXAUTH" not in sealed  # sealed, not plain cookies

    assert run_process(tmp_path, served, engine, None) == 0
    assert fake.active_sessions == 0
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(session_t)).scalar_one() == 0


def test_the_login_limit_error_names_open_sessions_as_the_likely_cause(
    engine: Engine, served: ServedFake
) -> None:
    fake = served.fake
    assert isinstance(fake, FakeAcumatica)
    fake.sessions.open(fake.username, "cookie")  # a session someone else left open
    settings = Settings(tenants=[tenant(served, max_retries=0)])
    memory = Memory(settings, clock=FrozenClock(NOW), engine=engine, llm=None)

    [result] = memory.sync_runner().run().results

    assert result.status == "failed"
    assert "API Login Limit" in (result.error or "") and "sessions left open" in (result.error or "")
