"""``connector sync``, ``connector sync status`` and ``connector schedule`` wiring: exit codes,
one-line reasons, JSON lines when not interactive."""

from __future__ import annotations

import gc
import io
import json
import re
import sys
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console
from sync_stub import StubAdapter
from test_sync_runner import customer

from connector.adapters import factory as adapters_factory
from connector.cli import main
from connector.clock import Clock
from connector.commands.sync import print_status
from connector.erp.protocol import Adapter
from connector.settings import SyncSettings, TenantSettings
from connector.sync.locks import stream_lock
from connector.sync.status import StreamStatus

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


class Terminal(io.StringIO):
    """A stdout that says it is a terminal, as an operator's shell is."""

    def isatty(self) -> bool:
        return True


def shown(text: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).splitlines()


def test_status_reads_at_80_columns(
    erp: StubAdapter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["sync", "--stream", "Customer"]) == 0
    erp.malformed_pages.add(("Customer", 1))
    assert main(["sync"]) == 1
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "80")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["sync", "status"]) == 0
    lines = shown(terminal.getvalue())
    assert all(len(line) <= 80 for line in lines), lines
    [row] = [line for line in lines if line.startswith("acme/Customer ")]  # one line per stream
    assert row.split()[:2] == ["acme/Customer", "failed"] and row.split()[-1] == "1", row
    assert "2026-03-01 08:04" in row  # the watermark, to the minute (UTC)
    [error] = [line for line in lines if line.startswith("acme/Customer: ")]
    assert "page 1 failed" in error


def test_status_at_80_columns_keeps_the_stream_and_the_reason_of_long_lines() -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    tenant = "s4hana-production-europe-west-" + "x" * 34  # the longest tenant name (64)
    error = (
        f"SyncError: {tenant}/BusinessPartner: SAP GET https://s4.example.com/sap/opu/odata/sap/"
        "API_BUSINESS_PARTNER/A_BusinessPartner?$filter=x failed with HTTP 401 (check the username)"
    )
    status = StreamStatus(
        tenant, "BusinessPartner", now - timedelta(days=3), "failed", now - timedelta(hours=2),
        now - timedelta(hours=2), error, now - timedelta(days=2, hours=4), 187_200.0, True, 12, None, None,
    )  # fmt: skip
    out = io.StringIO()
    print_status([status], Console(file=out, width=80), now)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert all(len(line) <= 80 for line in lines), lines
    [row] = [line for line in lines if "/BusinessPartner " in line]
    assert row.startswith("s4hana-") and row.split()[1:] == [
        "failed", "2h00m", "ago", "2026-02-26", "12:00", "2d04h", "12"
    ]  # fmt: skip
    [reason] = [line for line in lines if "/BusinessPartner: " in line]
    assert "SAP GET …/A_BusinessPartner failed with HTTP 401" in reason
