"""The console's Sync page and run detail, in process (Starlette's test client over SQLite)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from connector.clock import FrozenClock
from connector.console import build_app
from connector.memory import Memory
from connector.settings import Settings
from connector.sync.runlog import run_t
from connector.sync.state import state_t as sync_state_t

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    with Memory(settings, clock=FrozenClock(NOW), llm=None) as memory:
        yield memory


def add_run(memory: Memory, stream: str, started: datetime, **values: object) -> int:
    row = {
        "tenant": "acme", "stream": stream, "mode": "incremental", "status": "ok", "started_at": started,
        "finished_at": started + timedelta(seconds=30), "window_start": started - timedelta(hours=1),
        "window_end": started, "records_read": 10, "inserted": 4, "updated": 3, "deleted": 1, "retries": 0,
        **values,
    }  # fmt: skip
    with memory.engine.begin() as conn:
        return int(conn.execute(run_t.insert().values(**row)).inserted_primary_key[0])


def test_each_stream_shows_its_last_run_lag_counts_and_a_chart_of_recent_runs(memory: Memory) -> None:
    add_run(memory, "Customer", NOW - timedelta(hours=5))
    last = add_run(
        memory, "Customer", NOW - timedelta(hours=2), records_read=120, inserted=7, updated=5, deleted=2,
        retries=3, problems="Customer C1: bad e-mail\nCustomer C2: <b>no name</b>",
    )  # fmt: skip
    add_run(memory, "SalesOrder", NOW - timedelta(minutes=10), status="failed", error="HTTP 503")
    with memory.engine.begin() as conn:
        conn.execute(sync_state_t.insert().values(tenant="acme", stream="Customer", watermark=NOW))
    client = TestClient(build_app(memory))

    page = client.get("/sync")

    assert page.status_code == 200
    row = re.search(r'<tr data-tenant="acme" data-stream="Customer">(.*?)</tr>', page.text, re.S)
    assert row is not None
    cells = row.group(1)
    assert f'href="/sync/run?id={last}"' in cells
    assert '<td class="lag lagging">2 h 0 min</td>' in cells  # past sync.expected_lag_minutes
    assert '<td class="num read">120</td>' in cells
    assert '<td class="num written">14</td>' in cells
    assert '<td class="num retries">3</td>' in cells
    assert '<td class="num problems">2</td>' in cells
    assert cells.count('<rect class="bar"') == 2  # both runs in the chart, oldest first
    assert "lag before it 3 h 0 min" in cells  # the second run started 3 h after the first's window
    failed = re.search(r'data-stream="SalesOrder">(.*?)</tr>', page.text, re.S)
    assert failed is not None and "HTTP 503" in failed.group(1) and 'class="badge fail"' in failed.group(1)
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert re.fullmatch(r"app;dur=[\d.]+, cpu;dur=[\d.]+", page.headers["server-timing"])


def test_a_run_shows_every_count_and_its_problems_escaped(memory: Memory) -> None:
    run_id = add_run(memory, "Customer", NOW, problems="Customer C2: <script>alert(1)</script>")
    client = TestClient(build_app(memory))

    page = client.get(f"/sync/run?id={run_id}")

    assert page.status_code == 200
    assert '<td data-field="records_read">10</td>' in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<script>" not in page.text
    assert client.get("/sync/run?id=999").status_code == 404
    assert client.get("/sync/run?id=x").status_code == 400


def test_without_a_token_off_loopback_every_page_asks_to_sign_in(memory: Memory) -> None:
    client = TestClient(build_app(memory, loopback=False))

    page = client.get("/sync")

    assert page.status_code == 401
    assert '<label for="token">Token</label>' in page.text
    assert client.get("/sync", headers={"authorization": "Bearer not-a-token"}).status_code == 401


def test_a_loopback_console_answers_only_its_own_host_names(memory: Memory) -> None:
    client = TestClient(build_app(memory, hosts={"127.0.0.1:8766"}), base_url="http://evil.example")

    assert client.get("/sync").status_code == 400
    assert (
        TestClient(build_app(memory, hosts={"127.0.0.1:8766"}), base_url="http://127.0.0.1:8766")
        .get("/sync")
        .status_code
        == 200
    )
