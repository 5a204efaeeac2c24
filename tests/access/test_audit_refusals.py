"""Refused sign-ins (401s) are in the audit trail as ``unknown`` with the client's address, never the
token, and coalesced: a storm of refusals adds a bounded number of events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from connector.access import Keyring
from connector.audit import audit_t, list_events
from connector.audit.refusals import Refusals, RefusedSignIns
from connector.clock import FrozenClock
from connector.mcp_server.server import BearerAuth, build_server
from connector.memory import Memory
from connector.settings import Settings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TOKEN = "s3cret-token-0123456789"


def test_a_storm_of_401s_is_recorded_under_unknown_coalesced_and_without_the_token(
    settings: Settings, sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECTOR_MCP_TOKEN", TOKEN)

    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse("served")

    with Memory(settings, engine=sqlite_engine, llm=None, clock=FrozenClock(T0)) as memory:
        server = build_server(memory, default_principal=None)
        app = Starlette(routes=[Route("/mcp", ok, methods=["POST"])])
        guard = BearerAuth(app, Keyring.from_settings(memory.settings), refused=server.refused_sign_in)
        client = TestClient(guard)
        for n in range(200):
            assert client.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}{n}"}).status_code == 401
        assert client.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        server.close()
        events = list_events(memory.engine)
        with memory.engine.connect() as conn:
            stored = " ".join(str(v) for row in conn.execute(sa.select(audit_t)) for v in row)
    assert len(events) == 2  # the first refusal at once, the other 199 in one event
    assert {(e.who, e.action, e.outcome, e.remote) for e in events} == {
        ("unknown", "mcp.sign_in", "refused", "testclient")
    }
    assert sorted(e.repeats for e in events) == [1, 199]
    assert TOKEN not in stored


def test_each_window_adds_a_bounded_number_of_events_however_many_addresses() -> None:
    written: list[Refusals] = []
    clock = FrozenClock(T0)
    refusals = RefusedSignIns(written.append, now=clock.now, max_addresses=4)
    for n in range(1000):
        refusals.refused(f"10.0.{n % 50}.1")
    assert len(written) == 4  # the first refusal of each of the first four addresses, at once
    clock.advance(timedelta(minutes=1))
    refusals.refused("10.0.0.1")  # a new window: the last one's counts are written
    assert len(written) <= 2 * 4 + 1 + 1
    assert sum(r.repeats for r in written) == 1001
    assert {r.remote for r in written} == {None, "10.0.0.1", "10.0.1.1", "10.0.2.1", "10.0.3.1"}
    assert written[-1] == Refusals("10.0.0.1", 1, T0 + timedelta(minutes=1))
