"""``scripts/bench_sap_sync``: how fast an SAP tenant syncs, end to end over real HTTP.

The fake SAP runs in a child process (its own CPU, like a real ERP) and serves on loopback; each
stream (``BusinessPartner``, ``SalesOrder``, ``BillingDocument``, ``OpenItem``) is synced in full
into a fresh SQLite store through the real adapter and runner, ``--repeat`` times, and the median
seconds and records/s per stream are printed, then one line of JSON. ``--odata-version v4`` reads
the sales order and billing document services over v4. ``--catalog`` syncs with another stream
catalog (e.g. one without the order items, to compare runs that read the same data)."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from connector.adapters.sap import SAPAdapter
from connector.clock import SystemClock
from connector.db.engine import create_db_engine
from connector.db.migrate import upgrade_to_head
from connector.memory import Memory
from connector.settings import Settings, SyncSettings, TenantSettings

STREAMS = ("BusinessPartner", "SalesOrder", "BillingDocument", "OpenItem")


def _serve(sizes: dict[str, Any], conn: Any) -> None:  # pragma: no cover - child process
    from connector.testing.sap import FakeSAP
    from connector.testing.server import serve

    fake = FakeSAP(**sizes)
    server = serve(fake)
    fake.base_url = server.url
    conn.send({"url": server.url, "username": fake.gate.username, "password": fake.gate.password})
    conn.recv()
    server.stop()


def _tenant(hello: dict[str, Any], version: str, stream: str, page_size: int) -> TenantSettings:
    return TenantSettings(
        name="s4",
        kind="sap",
        base_url=hello["url"],
        sap_client="100",
        odata_version=version,
        auth="basic",
        username=hello["username"],
        password=hello["password"],
        page_size=page_size,
        streams=[stream],
    )


def sync_once(tenant: TenantSettings, catalog: Path | None) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = create_db_engine(f"sqlite:///{tmp}/bench.sqlite3")
        upgrade_to_head(engine)
        settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
        memory = Memory(settings, clock=SystemClock(), engine=engine, llm=None)

        def factory(t: TenantSettings) -> SAPAdapter:
            return SAPAdapter(t, sync=settings.sync, transport=httpx.HTTPTransport(), catalog_path=catalog)

        start = time.perf_counter()
        report = memory.sync_runner(adapter_factory=factory).run()
        elapsed = time.perf_counter() - start
        engine.dispose()
    assert report.ok, [r.error for r in report.results]
    return elapsed, sum(r.records_read for r in report.results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", type=int, default=2000)
    parser.add_argument("--suppliers", type=int, default=500)
    parser.add_argument("--sales-orders", type=int, default=4000)
    parser.add_argument("--billing-documents", type=int, default=3000)
    parser.add_argument("--odata-version", choices=("v2", "v4"), default="v2")
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--streams", default=",".join(STREAMS))
    parser.add_argument("--catalog", type=Path, default=None)
    args = parser.parse_args()
    sizes = {
        "seed": 11,
        "customers": args.customers,
        "suppliers": args.suppliers,
        "sales_orders": args.sales_orders,
        "billing_documents": args.billing_documents,
        "odata_version": args.odata_version,
    }
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(sizes, child), daemon=True)
    process.start()
    hello = parent.recv()
    figures: dict[str, dict[str, float]] = {}
    try:
        for stream in args.streams.split(","):
            tenant = _tenant(hello, args.odata_version, stream, args.page_size)
            sync_once(tenant, args.catalog)  # warm-up: the fake's caches, the imports
            runs = [sync_once(tenant, args.catalog) for _ in range(args.repeat)]
            seconds = statistics.median(r[0] for r in runs)
            figures[stream] = {"seconds": round(seconds, 3), "records": runs[0][1]}
            print(
                f"{stream:16s} {seconds:7.3f} s  {runs[0][1]:7d} records  {runs[0][1] / seconds:9.0f} rec/s"
            )
    finally:
        parent.send("stop")
        process.join(10)
    print(json.dumps({"odata_version": args.odata_version, "streams": figures}))


if __name__ == "__main__":
    main()
