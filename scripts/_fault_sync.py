"""The fault trial's sync probes: records changed, deleted and inserted on pages already read while a
window is paged (both ERPs), ERP clocks ahead of the connector's, an id longer than the id rule
allows. Each runs ``connector sync`` processes against a fake ERP served over loopback HTTP and
compares the store with the ERP afterwards."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from _fault_rigs import AheadClock, Outcome, Trial, cli, connector_env, tenant_json
from sync_rigs import Hooked  # type: ignore[import-not-found]

from connector.clock import SystemClock
from connector.semantic.upsert import party_t
from connector.sync.runlog import run_t
from connector.sync.state import state_t
from connector.testing.acumatica import FakeAcumatica
from connector.testing.sap import FakeSAP
from connector.testing.server import ServedFake, serve

WINDOW = 600  # changed customers in the incremental window, as in the issue
DELETED = 50  # deleted from the first page while the window is paged
PAGE = 100
NO_OTHERS: dict[str, Any] = {"vendors": 0, "invoices": 0, "sales_orders": 0, "bills": 0, "cases": 0}


def live_customers(url: str) -> dict[str, str | None]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(party_t.c.external_id, party_t.c.name).where(
                    party_t.c.kind == "customer", party_t.c.deleted_at.is_(None)
                )
            )
            return {r.external_id: r.name for r in rows}
    finally:
        engine.dispose()


def last_runs(url: str, stream: str, n: int) -> list[Any]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(run_t).where(run_t.c.stream == stream).order_by(run_t.c.id.desc()).limit(n)
            )
            return list(reversed(list(rows)))
    finally:
        engine.dispose()


def watermark(url: str, stream: str) -> datetime | None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            query = sa.select(state_t.c.watermark).where(state_t.c.stream == stream)
            value: datetime | None = conn.execute(query).scalar()
            return value
    finally:
        engine.dispose()


@dataclass
class Erp:
    """A fake ERP served over HTTP, the stream read and how to change and read its customers."""

    kind: str
    fake: Any
    hooked: Hooked
    server: ServedFake
    stream: str
    entity: str
    password: str

    def env(self, data_dir: Any, url: str, **extra: str) -> dict[str, str]:
        tenant = self.fake.tenant_settings(
            "erp", base_url=self.server.url, page_size=PAGE, streams=[self.stream]
        )
        return connector_env(data_dir, url, [tenant_json(tenant, self.password)], chroma=None, **extra)

    def customers(self) -> dict[str, str]:
        if self.kind == "acumatica":
            return {k: self.fake.record("Customer", k)["CustomerName"] for k in self.fake.keys("Customer")}
        partners = self.fake.data.partners
        return {k: partners[k]["BusinessPartnerFullName"] for k in self.fake.data.customers}

    def order(self) -> list[str]:
        """Customer keys in the order the ERP pages them."""
        if self.kind == "acumatica":
            return list(self.fake.keys("Customer"))
        return sorted(self.fake.data.customers)

    def rename(self, key: str, name: str, at: datetime) -> None:
        if self.kind == "acumatica":
            self.fake.modify("Customer", key, {"CustomerName": name}, modified_at=at)
        else:
            self.fake.modify("A_BusinessPartner", key, at=at, BusinessPartnerFullName=name)

    def delete(self, key: str) -> None:
        self.fake.delete("Customer" if self.kind == "acumatica" else "A_BusinessPartner", key)

    def insert(self, like: str, at: datetime) -> None:
        if self.kind == "acumatica":
            self.fake.add(
                "Customer", {**self.fake.record("Customer", like), "CustomerID": "NEWCOMER"}, modified_at=at
            )
        else:
            self.fake.add_partner(created=at, changed=at)

    def stop(self) -> None:
        self.server.stop()


def serve_erp(kind: str, customers: int, clock: Any = None) -> Erp:
    clock = clock or SystemClock()
    if kind == "acumatica":
        fake: Any = FakeAcumatica(seed=7, clock=clock, customers=customers, **NO_OTHERS)
        stream, entity, password = "Customer", "Customer", fake.password
    else:
        fake = FakeSAP(
            seed=5,
            customers=customers,
            suppliers=0,
            both=0,
            sales_orders=0,
            billing_documents=0,
            roleless=0,
            clock=clock,
            now=clock.now(),
        )
        stream, entity, password = "BusinessPartner", "A_BusinessPartner", fake.gate.password
    hooked = Hooked(fake)
    return Erp(kind, fake, hooked, serve(hooked), stream, entity, password)


def _differences(erp: Erp, url: str) -> tuple[int, int, int]:
    """(missing or stale in the store, live in the store but gone from the ERP, ERP customers)."""
    truth, stored = erp.customers(), live_customers(url)
    lost = sum(1 for key, name in truth.items() if stored.get(key, object()) != name)
    return lost, len(set(stored) - set(truth)), len(truth)


def paging(trial: Trial, kind: str, store: str) -> Outcome:
    """Deletes, inserts and an update on the first page while the window is paged; then the next run."""
    name = f"paging {kind} [{store}]"
    directory = trial.directory(f"paging-{kind}-{store}")
    url = trial.database(store, directory)
    erp = serve_erp(kind, WINDOW + 100)
    try:
        env = erp.env(directory / "data", url)
        first = cli(env, "sync")
        if first.code != 0:
            return Outcome(name, False, f"first sync exit {first.code}", first.err[-300:])
        order = erp.order()
        changed = order[:WINDOW]
        now = datetime.now(UTC)
        for key in changed:
            erp.rename(key, f"New name of {key}", now)

        def change(entity: str, number: int) -> None:  # before the second page of the window
            if entity != erp.entity or number != 2:
                return
            for key in changed[1 : 1 + DELETED]:
                erp.delete(key)
            erp.rename(changed[0], "Renamed on page one", datetime.now(UTC))
            erp.insert(changed[300], datetime.now(UTC))

        erp.hooked.lists.clear()
        erp.hooked.on_list = change
        during = cli(env, "sync")
        erp.hooked.on_list = None
        truth, stored = erp.customers(), live_customers(url)
        before_run = changed[1 + DELETED :]  # changed before the run began (the rest is the next run's)
        unread = sum(1 for key in before_run if stored.get(key) != truth.get(key))
        scan = env | {"CONNECTOR_SYNC__KEY_SCAN_INTERVAL_HOURS": "0.0001"}  # the deletion scan is due
        time.sleep(1)
        after = cli(scan, "sync")
        lost, stale, total = _differences(erp, url)
    finally:
        erp.stop()
    codes = (during.code, after.code)
    ok = codes == (0, 0) and unread == 0 and lost == 0 and stale == 0
    figure = (
        f"window {WINDOW}, {DELETED} deleted + 1 inserted + 1 updated on page 1: {unread} unread by the run; "
        f"after the next incremental run {lost} lost, {stale} stale of {total}"
    )
    return Outcome(name, ok, figure, "" if codes == (0, 0) else f"exit codes {codes}: {after.err[-300:]}")


def _status(env: dict[str, str]) -> dict[str, Any]:
    ran = cli(env, "sync", "status", "--json")
    data = json.loads(ran.out)
    rows = data if isinstance(data, list) else data.get("streams", data)
    return rows[0] if isinstance(rows, list) and rows else {}


def clock_skew(trial: Trial, ahead: timedelta, runs: int = 4) -> Outcome:
    """One change stamped ``ahead`` of the connector's clock among ordinary ones, then several runs."""
    label = f"{int(ahead.total_seconds())} s" if ahead < timedelta(hours=1) else f"{ahead.days} day"
    name = f"clock skew {label} ahead [sqlite]"
    directory = trial.directory(f"skew-{int(ahead.total_seconds())}")
    url = trial.database("sqlite", directory)
    erp = serve_erp("acumatica", 250, AheadClock())
    try:
        env = erp.env(directory / "data", url)
        if (first := cli(env, "sync")).code != 0:
            return Outcome(name, False, f"first sync exit {first.code}", first.err[-300:])
        keys = erp.order()
        future = keys[0]
        stamps = {future: datetime.now(UTC) + ahead}
        erp.rename(future, "Stamped ahead", stamps[future])
        marks: list[datetime | None] = [watermark(url, "Customer")]
        reads: list[int] = []
        window: list[int] = []
        for i in range(runs):
            time.sleep(1.1)
            for key in keys[1 + i * 40 : 1 + (i + 1) * 40]:
                stamps[key] = datetime.now(UTC) - timedelta(seconds=1)
                erp.rename(key, f"Run {i} name of {key}", stamps[key])
            ran = cli(env, "sync")
            if ran.code != 0:
                return Outcome(name, False, f"run {i + 1} exit {ran.code}", ran.err[-300:])
            run = last_runs(url, "Customer", 1)[0]
            start = (
                run.window_start.replace(tzinfo=UTC) if run.window_start.tzinfo is None else run.window_start
            )
            window.append(sum(1 for stamp in stamps.values() if stamp >= start))  # the window's records
            reads.append(int(run.records_read))
            marks.append(watermark(url, "Customer"))
        stored = live_customers(url)
        status = _status(env)
    finally:
        erp.stop()
    advanced = sum(1 for a, b in itertools.pairwise(marks) if a is not None and b is not None and b > a)
    lost = sum(1 for key, value in erp.customers().items() if stored.get(key) != value)
    health, warnings = status.get("health"), status.get("warnings") or []
    warned = health == "warn" and any("clock skew" in w for w in warnings)
    ok = advanced == runs and lost == 0 and all(r <= w * 1.1 + 4 for r, w in zip(reads, window, strict=True))
    if ahead > timedelta(seconds=300):
        ok = ok and warned
    figure = (
        f"records read {reads} for windows of {window} (one pass: each read once); "
        f"watermark advanced {advanced}/{runs} runs; "
        f"{lost} records lost or stale; status {health}{' (clock skew)' if warned else ''}"
    )
    return Outcome(name, ok, figure, "; ".join(warnings)[:200])


def long_id(trial: Trial, store: str) -> Outcome:
    """A 129-character customer id among 47 others: skipped and named, the streams go on."""
    name = f"129-char id [{store}]"
    directory = trial.directory(f"long-id-{store}")
    url = trial.database(store, directory)
    fake = FakeAcumatica(
        seed=4, clock=SystemClock(), customers=47, vendors=0, invoices=60, sales_orders=0, bills=0, cases=0
    )
    long_key = "L" * 129
    fake.add("Customer", {**fake.record("Customer", fake.keys("Customer")[0]), "CustomerID": long_key})
    server = serve(fake)
    try:
        tenant = fake.tenant_settings(
            "erp", base_url=server.url, page_size=20, streams=["Customer", "Invoice"]
        )
        env = connector_env(
            directory / "data",
            url,
            [tenant_json(tenant, fake.password)],
            CONNECTOR_SYNC__ON_MALFORMED_RECORD="skip",
        )
        ran = cli(env, "sync")
        stored = live_customers(url)
        runs = {r.stream: r for r in last_runs(url, "Customer", 1) + last_runs(url, "Invoice", 1)}
    finally:
        server.stop()
    problems = (runs["Customer"].problems or "") if "Customer" in runs else ""
    named = long_key[:40] in problems and "129 characters" in problems  # the id, shortened, and why
    statuses = {s: r.status for s, r in runs.items()}
    kept = len(set(stored) & set(fake.keys("Customer")) - {long_key})
    ok = kept == 47 and long_key not in stored and named and statuses == {"Customer": "ok", "Invoice": "ok"}
    figure = f"{kept} of 47 stored, long id {'named' if named else 'NOT named'} in the run's problems, "
    figure += f"streams {statuses}, exit {ran.code}"
    return Outcome(name, ok, figure, "" if ok else ran.err[-300:])
