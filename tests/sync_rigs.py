"""The sync rig: the fake Acumatica served over loopback HTTP (with a hook before each list request), a
frozen clock, a tenant and a store; shared by the sync fault, MCP and telemetry tests, which drive real
``connector`` processes against it."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from paths import ROOT
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.result import SyncReport
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
NO_CASES = ["Customer", "Vendor", "Invoice", "SalesOrder", "Bill"]


class Hooked:
    """Serves a fake and calls ``on_list(entity, n)`` before the n-th list request to an entity."""

    def __init__(self, fake: FakeAcumatica) -> None:
        self.fake = fake
        self.lists: Counter[str] = Counter()
        self.on_list: Callable[[str, int], None] | None = None

    def handle(self, request: httpx.Request) -> httpx.Response:
        if "$top" in request.url.params:
            entity = request.url.path.rstrip("/").rsplit("/", 1)[-1]
            self.lists[entity] += 1
            if self.on_list is not None:
                self.on_list(entity, self.lists[entity])
        return self.fake.handle(request)


@dataclass
class Rig:
    fake: FakeAcumatica
    hooked: Hooked
    server: ServedFake
    clock: FrozenClock
    tenant: TenantSettings
    engine: Engine

    def memory(self, **sync: Any) -> Memory:
        settings = Settings(tenants=[self.tenant], sync=SyncSettings(**sync))
        return Memory(settings, clock=self.clock, engine=self.engine, llm=None)

    def run(self, *, full: bool = False, streams: list[str] | None = None, **sync: Any) -> SyncReport:
        return self.memory(**sync).sync_runner().run(streams=streams, full=full)


@pytest.fixture
def rig_factory(engine: Engine) -> Iterator[Callable[..., Rig]]:
    """Rigs on the parametrized store (SQLite and PostgreSQL)."""
    yield from rigs_on(engine)


@pytest.fixture
def pg_rig_factory(pg_engine: Engine) -> Iterator[Callable[..., Rig]]:
    """Rigs on PostgreSQL only (locks across sessions, a server that goes away)."""
    yield from rigs_on(pg_engine)


def rigs_on(engine: Engine) -> Iterator[Callable[..., Rig]]:
    """Makes rigs on ``engine``; the fakes' servers stop when the generator is closed."""
    servers: list[ServedFake] = []

    def make(*, page_size: int = 25, streams: list[str] | None = None, **sizes: int) -> Rig:
        clock = FrozenClock(NOW)
        counts = {
            "customers": 60,
            "vendors": 10,
            "invoices": 120,
            "sales_orders": 40,
            "bills": 20,
            "cases": 30,
        }
        counts.update(sizes)
        fake = FakeAcumatica(seed=3, clock=clock, **counts)
        hooked = Hooked(fake)
        server = serve(hooked)
        servers.append(server)
        tenant = fake.tenant_settings(
            "acme", base_url=server.url, page_size=page_size, streams=streams or NO_CASES, max_retries=8
        )
        return Rig(fake, hooked, server, clock, tenant, engine)

    yield make
    for server in servers:
        server.stop()


def sync_env(tmp_path: Path, rig: Rig, db_url: str) -> dict[str, str]:
    """The environment of a ``connector sync`` process that talks to the rig's served fake."""
    tenant = rig.tenant.model_dump(mode="json")
    tenant["password"] = rig.fake.password
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNECTOR_")}
    return env | {
        "CONNECTOR_TENANTS": json.dumps([tenant]),
        "CONNECTOR_DATABASE__URL": db_url,
        "CONNECTOR_DATA_DIR": str(tmp_path / "data"),
        "CONNECTOR_LOG_FORMAT": "json",
        "PYTHONPATH": str(ROOT),
    }
