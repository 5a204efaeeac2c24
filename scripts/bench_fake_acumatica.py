"""Measure the fake Acumatica: data generation, serving a page, a full read over loopback HTTP.

``python scripts/bench_fake_acumatica.py [--customers 100000] [--documents 200000] [--read]``
prints one line per measurement. Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import time

from connector.adapters.acumatica import STREAMS, AcumaticaAdapter
from connector.settings import SyncSettings
from connector.testing.acumatica import FakeAcumatica
from connector.testing.acumatica_render import parse_shape
from connector.testing.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=200_000, help="split 50/30/20 into AR, SO and AP")
    parser.add_argument("--read", action="store_true", help="also read every customer over loopback HTTP")
    args = parser.parse_args(argv)
    docs = args.documents
    started = time.perf_counter()
    fake = FakeAcumatica(
        seed=0,
        customers=args.customers,
        vendors=max(1, args.customers // 20),
        invoices=docs // 2,
        sales_orders=docs * 3 // 10,
        bills=docs // 5,
        cases=max(1, args.customers // 10),
    )
    print(
        f"generated {args.customers} customers and {docs} documents in {time.perf_counter() - started:.1f} s"
    )
    for entity in ("Customer", "Invoice", "SalesOrder"):
        table = fake.tables[entity]
        expand = ",".join(STREAMS[entity].expand_at(fake.versions[-1]))  # what the adapter asks for
        shape = parse_shape(table.definition, None, expand, None, version=fake.versions[-1])
        renderer = fake._renderer(entity, fake.versions[-1])
        rows = table.ordered()
        middle = len(rows) // 2
        started = time.perf_counter()
        body = renderer.page(rows[middle : middle + 1000], shape, middle + 1)
        elapsed = (time.perf_counter() - started) * 1000
        print(f"rendered a page of 1,000 {entity} records ({len(body) / 1e6:.1f} MB) in {elapsed:.0f} ms")
        text = f"{table.definition.change_field} ge datetimeoffset'{fake.as_of.year - 1}-06-01T00:00:00Z'"
        started = time.perf_counter()
        matched = len(table.select(text))
        elapsed = (time.perf_counter() - started) * 1000
        print(f"  first delta query ({matched} matches, builds the index) in {elapsed:.0f} ms")
    if args.read:
        with serve(fake) as server:
            tenant = fake.tenant_settings(base_url=server.url, requests_per_minute=100_000)
            started = time.perf_counter()
            with AcumaticaAdapter(tenant, sync=SyncSettings()) as adapter:
                count = sum(len(page.records) for page in adapter.read("Customer", None))
            elapsed = time.perf_counter() - started
            print(f"read {count} customers over loopback HTTP into canonical records in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
