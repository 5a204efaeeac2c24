"""The sync's write-path tuning: page transaction settings, garbage collection, read-ahead."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.sync.commits import tune_page_transaction
from connector.sync.gctune import COLLECT_EVERY_PAGES, automatic_gc_paused, page_committed


def _show(conn: sa.Connection, name: str) -> str | None:
    if conn.dialect.name != "postgresql":
        return None
    return str(conn.exec_driver_sql(f"SHOW {name}").scalar())


@pytest.mark.parametrize("durable", [False, True])
def test_page_settings_last_one_transaction(engine: Engine, durable: bool) -> None:
    with engine.begin() as conn:
        tune_page_transaction(conn, durable=durable)
        inside = _show(conn, "synchronous_commit")
        conn.execute(sa.text("SELECT 1"))  # the transaction still works
    with engine.connect() as conn:
        after = _show(conn, "synchronous_commit")
    if engine.dialect.name == "postgresql":
        assert (inside, after) == ("on" if durable else "off", "on")


def test_automatic_gc_is_off_inside_and_back_after_nesting() -> None:
    assert gc.isenabled()
    with automatic_gc_paused():
        assert not gc.isenabled()
        with automatic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_gc_left_off_by_the_application_stays_off() -> None:
    gc.disable()
    try:
        with automatic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_runs_in_threads_switch_gc_back_on_once_the_last_ends() -> None:
    entered, release = threading.Event(), threading.Event()

    def other_run() -> None:
        with automatic_gc_paused():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=other_run)
    thread.start()
    entered.wait(5)
    with automatic_gc_paused():
        pass
    assert not gc.isenabled()  # the other run still pages
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_young_generations_are_collected_every_few_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: collected.append(generation) or 0)
    for page in range(1, 2 * COLLECT_EVERY_PAGES + 1):
        page_committed(page)
    assert collected == [1, 1]


def test_toast_compression_is_lz4_for_one_transaction_where_offered(engine: Engine) -> None:
    with engine.connect() as conn:
        before = (
            conn.exec_driver_sql("SHOW default_toast_compression").scalar()
            if engine.dialect.name == "postgresql"
            else None
        )
    with engine.begin() as conn:
        tune_page_transaction(conn, durable=True)
        if engine.dialect.name != "postgresql":
            return
        offered = conn.exec_driver_sql(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        ).scalar()
        inside = conn.exec_driver_sql("SHOW default_toast_compression").scalar()
    with engine.connect() as conn:
        after = conn.exec_driver_sql("SHOW default_toast_compression").scalar()
    assert inside == ("lz4" if offered else before)
    assert after == before


def test_prefetcher_reads_at_most_depth_items_ahead_in_order() -> None:
    import time

    from connector.sync.prefetch import Prefetcher

    produced: list[int] = []

    def items() -> Iterator[int]:
        for i in range(10):
            produced.append(i)
            yield i

    with Prefetcher(items(), depth=2) as pages:
        deadline = time.monotonic() + 5
        while len(produced) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert len(produced) == 3  # two waiting in the queue, one in the producer's hand
        assert list(pages) == list(range(10))


def test_read_ahead_hashes_pages_and_closes_the_adapters_iterator() -> None:
    from connector.erp.records import Page, PartyRecord, content_hash
    from connector.sync.runner import _hashed

    record = PartyRecord(tenant="t", kind="customer", external_id="C1", name="N")
    closed: list[bool] = []

    def pages() -> Iterator[Page]:
        try:
            yield Page(stream="Customer", number=1, records=[record])
            yield Page(stream="Customer", number=2, records=[record])
        finally:
            closed.append(True)

    hashed = _hashed(pages())
    first = next(hashed)
    assert first.hashes == [content_hash(record)]
    hashed.close()
    assert closed == [True]
