"""``scripts/bench_sync``: how fast the sync job is, end to end over real HTTP.

The fake Acumatica runs in a child process (its own CPU, like a real ERP) and serves on
loopback. For SQLite and for PostgreSQL (a scratch database that is created and dropped) the
benchmark measures a full sync, a no-change incremental sync and an incremental sync after 1% of
the records changed, all through the real adapter and runner. Then, on one sample of records read
once over HTTP, it times the two write paths into empty stores: the sync's bulk upsert (one
classify SELECT and one executemany per page) and the row-by-row ORM baseline (select by key, add
or update, flush per row, commit per page); ``speedup_vs_row_by_row`` is their ratio. It prints a
table and, last, one line of JSON with the figures. ``--history`` first measures the ERP change
history's cost in alternated rounds on fresh store pairs (see ``scripts/_history_rounds.py``) and
prints its JSON line; ``--history-only`` stops there."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, select

from connector.adapters.factory import adapter_factory
from connector.clock import SystemClock
from connector.db.engine import create_db_engine
from connector.db.migrate import upgrade_to_head
from connector.erp.records import CaseRecord, DocumentRecord, PartyRecord, Record
from connector.semantic.tables import CrmCase, Document, Party, PartyAddress, PartyAttribute, PartyContact
from connector.semantic.upsert import _row_for, upsert_records  # _row_for: both paths write the same rows
from connector.settings import HistorySettings, Settings, SyncSettings, TenantSettings
from connector.sync.analyze import StatsKeeper
from connector.sync.runner import SyncRunner
from connector.sync.state import record_kind

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _history_rounds import history_rounds

STREAMS = ("Customer", "Invoice", "SalesOrder")
ENTITY_COUNT_ARGS = {"Customer": "customers", "Invoice": "invoices", "SalesOrder": "sales_orders"}
_CLOCK = SystemClock()
DEFAULT_PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


# What a 1% change changes: a tracked field of each entity (status, credit limit, balance).
_CHANGES: dict[str, Any] = {
    "Customer": lambda rec: {"CreditLimit": float(rec.get("CreditLimit") or 0) + 1000.0},
    "Invoice": lambda rec: {"Balance": 0.0, "Status": "Closed"},
    "SalesOrder": lambda rec: {"Status": "Shipping" if rec.get("Status") != "Shipping" else "Completed"},
}


# The fake in a child process -------------------------------------------------------------------
class _Controlled:
    """The fake plus a few ``/__bench/*`` control paths the benchmark uses between runs."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake

    def handle(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.startswith("/__bench/"):
            return self.fake.handle(request)  # type: ignore[no-any-return]
        action = request.url.path.rsplit("/", 1)[-1]
        if action == "reset":
            self.fake.reset_log()
            return httpx.Response(200, json={})
        if action == "lists":
            return httpx.Response(200, json={e: len(self.fake.list_requests(e)) for e in STREAMS})
        if action == "touch":  # stamp every n-th record of an entity: a realistic scattered change
            entity = request.url.params["entity"]
            count = int(request.url.params["count"])
            keys = self.fake.keys(entity)
            step = max(1, len(keys) // max(count, 1))
            offset = int(request.url.params.get("offset", 0)) % step  # another 1% each time
            chosen = keys[offset::step][:count]
            now = _CLOCK.now()
            for key in chosen:  # a tracked value changes too, so the history has something to record
                self.fake.modify(
                    entity, key, _CHANGES[entity](self.fake.record(entity, key)), modified_at=now
                )
            return httpx.Response(200, json={"stamped": len(chosen)})
        return httpx.Response(404, json={"error": action})


def _serve_fake(sizes: dict[str, Any], seed: int, conn: Any) -> None:  # pragma: no cover - child process
    from connector.testing.acumatica import FakeAcumatica
    from connector.testing.server import serve

    fake = FakeAcumatica(seed=seed, clock=SystemClock(), **sizes)
    server = serve(_Controlled(fake))
    conn.send({"url": server.url, "credentials": fake.credentials()})
    conn.recv()  # blocks until the parent says stop
    server.stop()


@dataclass
class FakeProcess:
    url: str
    credentials: dict[str, str]
    process: multiprocessing.process.BaseProcess
    conn: Any

    def control(self, action: str, **params: Any) -> Any:
        return httpx.post(f"{self.url}/__bench/{action}", params=params, timeout=600).json()

    def stop(self) -> None:
        self.conn.send("stop")
        self.process.join(30)


def start_fake(customers: int, documents: int, seed: int = 11) -> FakeProcess:
    sizes: dict[str, Any] = {
        "customers": customers,
        "invoices": documents * 3 // 5,
        "sales_orders": documents - documents * 3 // 5,
        "vendors": 0,
        "bills": 0,
        "cases": 0,
    }
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve_fake, args=(sizes, seed, child), daemon=True)
    process.start()
    hello = parent.recv()
    return FakeProcess(hello["url"], hello["credentials"], process, parent)


def tenant_for(fake: FakeProcess, page_size: int) -> TenantSettings:
    c = fake.credentials
    return TenantSettings(
        name="bench",
        kind="acumatica",
        base_url=fake.url,
        username=c["username"],
        password=c["password"],
        company=c["company"],
        branch=c["branch"],
        page_size=page_size,
        streams=list(STREAMS),
    )


# Measurements -----------------------------------------------------------------------------------
@dataclass
class Timed:
    seconds: float
    records: int
    written: int
    requests: dict[str, int]


def timed_sync(runner: SyncRunner, *, full: bool = False) -> Timed:
    start = time.perf_counter()
    report = runner.run(full=full)
    seconds = time.perf_counter() - start
    problem = report.first_problem()
    if problem is not None:
        raise SystemExit(f"bench_sync: {problem.stream} {problem.status}: {problem.error}")
    return Timed(
        seconds,
        sum(r.records_read for r in report.results),
        sum(r.inserted + r.updated for r in report.results),
        {r.stream: r.requests for r in report.results},
    )


_MODELS: dict[type, type[SQLModel]] = {PartyRecord: Party, DocumentRecord: Document, CaseRecord: CrmCase}


def fetch_sample(tenant: TenantSettings, limit: int) -> tuple[list[list[Record]], float]:
    """About ``limit`` records (pages of each stream) read once over HTTP, and the read rate."""
    from connector.adapters.factory import open_adapter

    per_stream = max(1, limit // len(STREAMS))
    batches: list[list[Record]] = []
    start = time.perf_counter()
    with open_adapter(tenant, sync=SyncSettings(), clock=SystemClock()) as adapter:
        for stream in STREAMS:
            taken = 0
            for page in adapter.read(stream, None, None):
                batch = page.records[: per_stream - taken]
                taken += len(batch)
                batches.append(batch)
                if taken >= per_stream:
                    break
    seconds = time.perf_counter() - start
    return batches, sum(len(b) for b in batches) / seconds


def bulk_upsert(engine: Engine, batches: list[list[Record]]) -> Timed:
    """The sync job's write path on in-memory records: one transaction and one upsert per page."""
    count = sum(len(b) for b in batches)
    stats = StatsKeeper(engine)  # as the runner does: keep PostgreSQL's statistics current
    start = time.perf_counter()
    for batch in batches:
        with engine.begin() as conn:
            counts = upsert_records(conn, batch, _CLOCK.now())
        if batch:
            stats.inserted(record_kind(batch[0])[0], counts.inserted)
    return Timed(time.perf_counter() - start, count, count, {})


def row_by_row(engine: Engine, batches: list[list[Record]]) -> Timed:
    """The naive write path: one SELECT by key and one INSERT/UPDATE (plus children) per record."""
    start = time.perf_counter()
    count = 0
    with Session(engine) as session:
        for batch in batches:
            for record in batch:
                model = _MODELS[type(record)]
                row = _row_for(record, _CLOCK.now())
                key_field = "kind" if model is Party else "doc_type" if model is Document else None
                query = select(model).where(
                    model.tenant == record.tenant,  # type: ignore[attr-defined]
                    model.external_id == record.external_id,  # type: ignore[attr-defined]
                )
                if key_field:
                    query = query.where(getattr(model, key_field) == row[key_field])
                existing = session.exec(query).first()
                if existing is None:
                    session.add(model(**row))
                else:
                    for name, value in row.items():
                        setattr(existing, name, value)
                if isinstance(record, PartyRecord):
                    _add_children(session, record)
                session.flush()
                count += 1
            session.commit()
    return Timed(time.perf_counter() - start, count, count, {})


def _add_children(session: Session, party: PartyRecord) -> None:
    owner: dict[str, Any] = {
        "tenant": party.tenant,
        "party_kind": party.kind,
        "party_external_id": party.external_id,
    }
    for i, c in enumerate(party.contacts):
        session.add(PartyContact(**owner, ordinal=i, role=c.role, name=c.name, email=c.email, phone=c.phone))
    for i, a in enumerate(party.addresses):
        session.add(
            PartyAddress(
                **owner,
                ordinal=i,
                role=a.role,
                line1=a.line1,
                line2=a.line2,
                city=a.city,
                region=a.region,
                postal_code=a.postal_code,
                country=a.country,
            )
        )
    for name, value in party.attributes.items():
        session.add(PartyAttribute(**owner, name=name, value=value))


class _Rows(list[list[str]]):
    """Table rows, each also echoed to stderr as soon as it is measured (a full run takes minutes)."""

    def append(self, row: list[str]) -> None:
        super().append(row)
        print("  ".join(row), file=sys.stderr, flush=True)


def _rate_row(label: str, run: str, t: Timed) -> list[str]:
    return [label, run, f"{t.records:,}", f"{t.seconds:.1f}", f"{t.records / t.seconds:,.0f}"]


def bench_stores(
    engines: dict[str, Engine], fake: FakeProcess, args: argparse.Namespace, rows: list[list[str]]
) -> dict[str, dict[str, Any]]:
    """Every phase on every store in turn, so each store sees the same ERP state and the same change."""
    tenant = tenant_for(fake, args.page_size)
    runners = {
        label: SyncRunner(
            engine,
            clock=_CLOCK,
            settings=Settings(tenants=[tenant]),
            cases=None,
            adapter_factory=adapter_factory(SyncSettings(), _CLOCK),
        )
        for label, engine in engines.items()
    }
    out: dict[str, dict[str, Any]] = {label: {} for label in engines}
    for label, runner in runners.items():
        full = timed_sync(runner)
        rows.append(_rate_row(label, "full sync", full))
        out[label] |= {"full_records_per_s": full.records / full.seconds, "full_s": full.seconds}
    for label, runner in runners.items():
        fake.control("reset")
        noop = timed_sync(runner)
        lists = fake.control("lists")
        rows.append(
            [label, "no-change incremental", f"{noop.records:,}", f"{noop.seconds:.2f}", f"lists {lists}"]
        )
        out[label] |= {"noop_s": noop.seconds, "noop_lists": lists}
    changed = 0
    for stream in STREAMS:
        changed += fake.control("touch", entity=stream, count=max(1, _size(args, stream) // 100))["stamped"]
    for label, runner in runners.items():
        one = timed_sync(runner)
        rows.append(
            [
                label,
                f"1% changed ({changed:,})",
                f"{one.records:,}",
                f"{one.seconds:.2f}",
                f"written {one.written:,}",
            ]
        )
        out[label] |= {"one_percent_changed": changed, "one_percent_rows_written": one.written}
        out[label] |= {"one_percent_s": one.seconds}
    batches, fetch_rate = fetch_sample(tenant, args.baseline_records)
    rows.append(
        ["-", "read only (HTTP + mapping)", f"{sum(len(b) for b in batches):,}", "", f"{fetch_rate:,.0f}"]
    )
    for label, engine in engines.items():
        for name, key, write in (
            ("bulk upsert", "bulk_upsert_records_per_s", bulk_upsert),
            ("row-by-row ORM", "row_by_row_records_per_s", row_by_row),
        ):
            scratch = scratch_like(engine, label)
            try:
                t = write(scratch, batches)
            finally:
                scratch.dispose()
            rows.append(_rate_row(label, f"write path: {name}", t))
            out[label][key] = t.records / t.seconds
        out[label]["read_only_records_per_s"] = fetch_rate
    return out


def history_rows(engine: Engine) -> tuple[int, int | None]:
    """(rows of the ERP change history, its bytes on disk with indexes where the store tells)."""
    with engine.connect() as conn:
        rows = int(conn.execute(sa.text("SELECT count(*) FROM erp_change")).scalar_one())
        try:
            if engine.dialect.name == "postgresql":
                size = conn.execute(sa.text("SELECT pg_total_relation_size('erp_change')")).scalar_one()
            else:
                size = conn.execute(
                    sa.text(
                        "SELECT sum(pgsize) FROM dbstat "
                        "WHERE name = 'erp_change' OR name LIKE 'ix_erp_change%'"
                    )
                ).scalar_one()
        except sa.exc.DBAPIError:
            size = None
    return rows, int(size) if size is not None else None


def _size(args: argparse.Namespace, stream: str) -> int:
    if stream == "Customer":
        return int(args.customers)
    invoices = args.documents * 3 // 5
    return int(invoices if stream == "Invoice" else args.documents - invoices)


# Stores -----------------------------------------------------------------------------------------
_scratch: list[tuple[Engine, str]] = []  # (admin engine, database) to drop at the end


def sqlite_store(directory: str, name: str) -> Engine:
    engine = create_db_engine(f"sqlite:///{os.path.join(directory, name)}")
    upgrade_to_head(engine)
    return engine


def pg_store(admin_url: str) -> Engine:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"bench_sync_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    _scratch.append((admin, name))
    engine = create_db_engine(
        sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    )
    upgrade_to_head(engine)
    return engine


def scratch_like(engine: Engine, label: str) -> Engine:
    if engine.dialect.name == "sqlite":
        directory = os.path.dirname(engine.url.database or ".")
        return sqlite_store(directory, f"baseline-{uuid.uuid4().hex[:6]}.sqlite3")
    admin_url = _scratch[0][0].url.render_as_string(hide_password=False)
    return pg_store(admin_url)


def drop_scratch() -> None:
    for admin, name in _scratch:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": name},
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()
    _scratch.clear()


# Entry point ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_sync", description=__doc__)
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument(
        "--baseline-records", type=int, default=15_000, help="records for the row-by-row baseline"
    )
    parser.add_argument("--pg-admin-url", default=os.environ.get("CONNECTOR_BENCH_PG_URL", DEFAULT_PG_ADMIN))
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true", help="with --history-only: PostgreSQL only")
    parser.add_argument(
        "--history",
        action="store_true",
        help="also measure the ERP change history's cost: alternated rounds with it on and off",
    )
    parser.add_argument(
        "--history-only",
        action="store_true",
        help="only the history's alternated rounds (implies --history)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="history rounds (a fresh store pair each)")
    parser.add_argument(
        "--incrementals", type=int, default=3, help="1%%-changed incremental pairs per history round"
    )
    parser.add_argument("--workdir", default=None, help="where the SQLite files go (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.skip_sqlite and not args.history_only:
        parser.error("--skip-sqlite applies to --history-only (the other runs compare against SQLite)")

    import tempfile

    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_sync_")
    started = time.perf_counter()
    fake = start_fake(args.customers, args.documents)
    print(
        f"fake Acumatica with {args.customers:,} customers and {args.documents:,} documents "
        f"ready in {time.perf_counter() - started:.1f}s at {fake.url}",
        file=sys.stderr,
    )
    rows: list[list[str]] = _Rows()
    history: dict[str, Any] = {}
    try:
        if args.history or args.history_only:
            history = bench_history(fake, args, workdir)
            print(json.dumps({"history": history}, sort_keys=True), flush=True)
            if args.history_only:
                return 0
        engines = {"sqlite": sqlite_store(workdir, "bench.sqlite3")}
        if not args.skip_postgres:
            engines["postgres"] = pg_store(args.pg_admin_url)
        results = bench_stores(engines, fake, args, rows)
    finally:
        fake.stop()
        drop_scratch()
    _print_table(rows)
    pg = results.get("postgres")
    lite = results["sqlite"]
    main_run = pg or lite
    summary = {
        "customers": args.customers,
        "documents": args.documents,
        "full_pg_records_per_s": round(pg["full_records_per_s"]) if pg else None,
        "full_sqlite_records_per_s": round(lite["full_records_per_s"]),
        "row_by_row_pg_records_per_s": round(pg["row_by_row_records_per_s"]) if pg else None,
        "row_by_row_sqlite_records_per_s": round(lite["row_by_row_records_per_s"]),
        "speedup_vs_row_by_row": round(
            main_run["bulk_upsert_records_per_s"] / main_run["row_by_row_records_per_s"], 1
        ),
        "bulk_upsert_pg_records_per_s": round(pg["bulk_upsert_records_per_s"]) if pg else None,
        "bulk_upsert_sqlite_records_per_s": round(lite["bulk_upsert_records_per_s"]),
        "read_only_records_per_s": round(main_run["read_only_records_per_s"]),
        "noop_incremental_s": round(main_run["noop_s"], 3),
        "noop_incremental_sqlite_s": round(lite["noop_s"], 3),
        "noop_list_requests_per_stream": main_run["noop_lists"],
        "one_percent_changed": main_run["one_percent_changed"],
        "one_percent_rows_written": main_run["one_percent_rows_written"],
        "one_percent_incremental_s": round(main_run["one_percent_s"], 3),
        "full_pg_s": round(pg["full_s"], 1) if pg else None,
        "full_sqlite_s": round(lite["full_s"], 1),
    }
    print(json.dumps(summary, sort_keys=True))
    return 0


def bench_history(fake: FakeProcess, args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    """The history's cost on each database: alternated rounds with it on and off (see _history_rounds)."""
    tenant = tenant_for(fake, args.page_size)

    def runner_for(engine: Engine, on: bool) -> SyncRunner:
        return SyncRunner(
            engine,
            clock=_CLOCK,
            settings=Settings(tenants=[tenant], history=HistorySettings(enabled=on)),
            cases=None,
            adapter_factory=adapter_factory(SyncSettings(), _CLOCK),
        )

    touched = [0]  # each touch changes other records: across rounds and databases, none twice

    def touch(_n: int) -> int:
        touched[0] += 1
        counts = {s: max(1, _size(args, s) // 100) for s in STREAMS}
        return sum(
            fake.control("touch", entity=s, count=n, offset=touched[0])["stamped"] for s, n in counts.items()
        )

    stores: dict[str, Callable[[], Engine]] = {}
    if not args.skip_sqlite:
        stores["sqlite"] = lambda: sqlite_store(workdir, f"history-{uuid.uuid4().hex[:6]}.sqlite3")
    if not args.skip_postgres:
        stores["postgres"] = lambda: pg_store(args.pg_admin_url)
    out: dict[str, Any] = {}
    for label, new_store in stores.items():
        out[label] = history_rounds(
            rounds=args.rounds,
            incrementals=args.incrementals,
            new_store=new_store,
            runner_for=runner_for,
            touch=touch,
            size_of=history_rows,
            drop=drop_store,
        )
        print(f"{label} history: {json.dumps(out[label], sort_keys=True)}", file=sys.stderr, flush=True)
    return out


def drop_store(engine: Engine) -> None:
    """Remove a store made by :func:`sqlite_store` or :func:`pg_store` (its file or its database)."""
    engine.dispose()
    if engine.dialect.name == "sqlite":
        path = engine.url.database or ""
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        return
    name = engine.url.database
    for admin, scratch in list(_scratch):
        if scratch == name:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
            admin.dispose()
            _scratch.remove((admin, scratch))


def _print_table(rows: list[list[str]]) -> None:
    header = ["store", "run", "records", "seconds", "rate / detail"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
