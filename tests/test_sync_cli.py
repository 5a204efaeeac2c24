"""``connector sync``, ``connector sync status`` and ``connector schedule`` wiring: exit codes,
one-line reasons, JSON lines when not interactive."""

from __future__ import annotations

import gc
import json
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sync_stub import StubAdapter
from test_sync_runner import customer

from connector.adapters import factory as adapters_factory
from connector.cli import main
from connector.clock import Clock
from connector.erp.protocol import Adapter
from connector.settings import SyncSettings, TenantSettings
from connector.sync.locks import stream_lock

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def erp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StubAdapter:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv(
        "CONNECTOR_TENANTS",
        json.dumps([{"name": "acme", "kind": "acumatica", "base_url": "http://127.0.0.1:9"}]),
    )
    monkeypatch.setenv("CONNECTOR_LOG_FORMAT", "json")
    adapter = StubAdapter("acme")
    adapter.add_stream("Customer", "party")
    adapter.put("Customer", *[customer(f"C{i}", T0 + timedelta(minutes=i)) for i in range(5)])

    def factory(sync: SyncSettings, clock: Clock) -> object:
        def open_stub(tenant: TenantSettings) -> AbstractContextManager[Adapter]:
            return adapter

        return open_stub

    monkeypatch.setattr(adapters_factory, "adapter_factory", factory)
    return adapter


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_sync_exits_0_and_logs_json_lines(erp: StubAdapter, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sync"]) == 0
    events = json_lines(capsys.readouterr().err)
    finished = [e for e in events if e["event"] == "stream_finished"]
    assert finished and finished[0]["status"] == "ok" and finished[0]["inserted"] == 5
    assert {"stream_started", "page", "stream_finished"} <= {str(e["event"]) for e in events}


def test_the_sync_command_pauses_the_collector_while_pages_flow(erp: StubAdapter) -> None:
    collecting: list[bool] = []
    erp.before_page = lambda stream, number: collecting.append(gc.isenabled())
    assert main(["sync"]) == 0
    assert collecting and not any(collecting)  # the command is a sync process: it opts in
    assert gc.isenabled()


def test_failed_stream_exits_1_with_a_one_line_reason(
    erp: StubAdapter, capsys: pytest.CaptureFixture[str]
) -> None:
    erp.malformed_pages.add(("Customer", 1))
    assert main(["sync"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("connector: sync of acme/Customer failed: SyncError: acme/Customer: page 1 failed")


def test_locked_stream_exits_3_already_running(erp: StubAdapter, capsys: pytest.CaptureFixture[str]) -> None:
    from connector.commands._common import memory_from_settings

    engine = memory_from_settings().engine
    with stream_lock(engine, "acme", "Customer"):
        assert main(["sync"]) == 3
    assert "sync of acme/Customer is already running" in capsys.readouterr().err


def test_unknown_tenant_exits_2(erp: StubAdapter, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sync", "--tenant", "nope"]) == 2
    assert "unknown tenant 'nope'" in capsys.readouterr().err


def test_status_reports_last_run_watermark_and_lag(
    erp: StubAdapter, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sync", "--stream", "Customer"]) == 0
    erp.malformed_pages.add(("Customer", 1))
    assert main(["sync"]) == 1
    capsys.readouterr()

    assert main(["sync", "status", "--json"]) == 0
    [status] = json.loads(capsys.readouterr().out)
    assert status["tenant"] == "acme" and status["stream"] == "Customer"
    assert status["last_run_status"] == "failed"
    assert "page 1 failed" in status["last_run_error"]
    assert status["watermark"].startswith("2026-03-01 08:04")
    assert status["failures_since_ok"] == 1
    assert status["lag_s"] is not None and status["lag_s"] >= 0
