"""The garbage-collector pause is the process's choice: off for library runners, and always undone.

``gc`` is process-wide, so a runner built by an application leaves it alone; a runner that opts in
(``pause_gc=True``, as ``connector sync`` and ``connector schedule`` do) has it off while pages flow
and back on after, however the run ends.
"""

from __future__ import annotations

import gc

import pytest
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter
from test_sync_runner import START, T0, customer, make_memory

from connector.clock import FrozenClock
from connector.errors import ERPTransportError
from connector.sync.progress import NullReporter


def stub_with_pages(pages: int = 4) -> StubAdapter:
    erp = StubAdapter("acme", page_size=1)
    erp.add_stream("Customer", "party")
    erp.put("Customer", *[customer(f"C{i}", T0) for i in range(pages)])
    return erp


class GcWatcher(NullReporter):
    """Notes whether the collector is on after each committed page; may interrupt on a page."""

    def __init__(self, interrupt_on_page: int | None = None) -> None:
        self.enabled: list[bool] = []
        self.interrupt_on_page = interrupt_on_page

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        self.enabled.append(gc.isenabled())
        if page == self.interrupt_on_page:
            raise KeyboardInterrupt  # what SIGINT raises in the main thread


def test_a_library_runner_leaves_the_collector_on(engine: Engine) -> None:
    watcher = GcWatcher()
    erp = stub_with_pages()
    memory = make_memory(engine, FrozenClock(START))
    report = memory.sync_runner(adapter_factory=lambda tenant: erp, reporter=watcher).run()  # type: ignore[arg-type,return-value]
    assert report.ok and len(watcher.enabled) >= 4 and all(watcher.enabled)
    assert gc.isenabled()


def test_an_opted_in_runner_pauses_the_collector_while_pages_flow(engine: Engine) -> None:
    watcher = GcWatcher()
    erp = stub_with_pages()
    memory = make_memory(engine, FrozenClock(START))
    runner = memory.sync_runner(adapter_factory=lambda tenant: erp, reporter=watcher, pause_gc=True)  # type: ignore[arg-type,return-value]
    assert runner.run().ok
    assert len(watcher.enabled) >= 4 and not any(watcher.enabled)
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_interrupt(engine: Engine) -> None:
    watcher = GcWatcher(interrupt_on_page=2)
    erp = stub_with_pages()
    memory = make_memory(engine, FrozenClock(START))
    runner = memory.sync_runner(adapter_factory=lambda tenant: erp, reporter=watcher, pause_gc=True)  # type: ignore[arg-type,return-value]
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert watcher.enabled == [False, False]
    assert gc.isenabled()


def test_the_collector_comes_back_after_a_failed_run(engine: Engine) -> None:
    erp = stub_with_pages()

    def fail(stream: str, number: int) -> None:
        if number == 2:
            raise ERPTransportError("connection reset")

    erp.before_page = fail
    memory = make_memory(engine, FrozenClock(START))
    runner = memory.sync_runner(adapter_factory=lambda tenant: erp, pause_gc=True)  # type: ignore[arg-type,return-value]
    (result,) = runner.run().results
    assert result.status == "failed"
    assert gc.isenabled()
