"""The sync runner: read each stream's window through its adapter and upsert it, page by page.

Per (tenant, stream), under the stream lock:

1. Load the state, close runs a killed process left open, pin the window (closed start = watermark
   minus the lookback, floored to the stream's granularity; end = now) and open a ``sync_run`` row.
   Reads ask for the window's start and no upper bound (a record stamped ahead of our clock is
   stored at once); the end only caps the watermark (``sync.clock_skew_tolerance_s`` says when a
   stamp is far enough ahead to warn of).
2. Read pages. Each page is upserted in its own transaction together with the run's counters.
   The adapter gives no ordering guarantee (Acumatica cannot sort), so a watermark taken from an
   early page could skip rows a later page carries: the watermark therefore advances only in the
   transaction of the page that completes the window. A run that dies half-way re-reads the same
   window next time, and the unchanged rows cost a hash comparison, not a write.
3. Reconcile deletions with a key scan when due (``--full``, a full read, or the interval passed).
4. Close the run row with its status, counts and a one-line error.

Between pages the runner checks its :class:`StopFlag`; a stop finishes and commits the current
page, leaves the watermark where it was, and lets the adapter log out.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError, StatementError

from connector.clock import Clock
from connector.db.diagnosis import cause
from connector.db.engine import safe_url
from connector.erp.protocol import Adapter, AdapterFactory, KeyReader, StreamSpec
from connector.erp.records import Page, content_hash
from connector.errors import AlreadyRunning, ConfigError, ConnectorError, StoreError, SyncError
from connector.ids import canonical_id, id_problem
from connector.redact import redact
from connector.semantic.tracking import ChangeRecorder, tracked_fields
from connector.semantic.upsert import (
    case_t,
    document_t,
    live_external_ids,
    mark_missing_deleted,
    party_t,
    upsert_records,
)
from connector.settings import Settings, TenantSettings
from connector.sync.analyze import StatsKeeper
from connector.sync.commits import tune_page_transaction
from connector.sync.erp_sessions import ErpSessions, SessionKeeper
from connector.sync.gctune import automatic_gc_paused, page_committed
from connector.sync.locks import Fence, stream_lock
from connector.sync.prefetch import Prefetcher
from connector.sync.progress import NullReporter, Reporter
from connector.sync.repair import repair_page
from connector.sync.result import StreamResult, SyncReport
from connector.sync.runlog import RunRecord, abandon_stale_runs, finish_run, save_counters, start_run
from connector.sync.screen import screen_page
from connector.sync.signals import StopFlag
from connector.sync.state import (
    StreamState,
    load_state,
    record_kind,
    remember_kinds,
    save_state,
    stream_kinds,
)
from connector.sync.tracing import TracingReporter
from connector.sync.window import Window, next_watermark, window_for

log = logging.getLogger(__name__)

_TABLES: dict[str, sa.Table] = {"party": party_t, "document": document_t, "case": case_t}
_MAX_PASSES = 3
_PROBE_GRANULARITY = timedelta(seconds=1)
# Pages read ahead while one is written: two keep the reader busy while the writer waits on the
# database, and the database busy while the reader waits on the ERP (one left gaps in both).
_PREFETCH_DEPTH = 2
_UNSEEN = object()


def _lead(delta: timedelta) -> str:
    """How far ahead, in its largest units: 2m00s, 1h05m, 1d00h."""
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


class CaseIngest(Protocol):
    """What the runner calls after a Case stream (``EpisodicMemory.ingest_erp_cases``)."""

    def ingest_erp_cases(self, tenant: str) -> int: ...


def _hashed(pages: Iterable[Page]) -> Iterator[Page]:
    """Pages screened by the id rule (:mod:`connector.sync.screen`) with their content hashes
    computed: on the read-ahead thread, which otherwise waits for the writer (the writer's chain of
    hashing, formatting and the database bounded a full sync). Closing this closes the adapter's."""
    source = iter(pages)
    try:
        for page in source:
            screen_page(page)
            if page.hashes is None:
                page.hashes = [content_hash(record) for record in page.records]
            yield page
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


def _has_rows(conn: sa.Connection, tenant: str, kind: tuple[str, str]) -> bool:
    """Whether the store holds any row (live or deleted) of this tenant and (record_type, kind)."""
    record_type, name = kind
    table = _TABLES[record_type]
    cond = [table.c.tenant == tenant]
    if record_type != "case":
        cond.append((table.c.kind if record_type == "party" else table.c.doc_type) == name)
    return conn.execute(sa.select(sa.literal(1)).where(*cond).limit(1)).first() is not None


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line, for the runs table and the exit message."""
    if isinstance(exc, SQLAlchemyError):
        orig = getattr(exc, "orig", None)
        kind = type(orig).__name__ if orig is not None else type(exc).__name__
        named = cause(exc)
        text = f"database error: {named} ({kind})" if named else f"database error: {kind}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return redact(" ".join(text.split()))[:1000]  # the runs table and `sync status` never show a secret


def _declared_streams(opened: object) -> list[StreamSpec]:
    """The streams an adapter declares before it logs in (none when the factory gives no adapter)."""
    declared = getattr(opened, "streams", None)
    if not callable(declared):
        return []
    try:
        return list(declared())
    except ConnectorError:
        return []


class _StreamRun:
    """The state of one (tenant, stream) run while it reads pages."""

    def __init__(
        self,
        runner: SyncRunner,
        adapter: Adapter,
        spec: StreamSpec,
        state: StreamState,
        window: Window,
        fence: Fence,
    ) -> None:
        self.runner = runner
        self.fence = fence  # checked in every transaction that writes the stream's data
        self.adapter = adapter
        self.spec = spec
        self.state = state
        self.window = window
        self.seen_max: datetime | None = None
        self.known_kinds: set[tuple[str, str]] = set()
        self.requests_at_start = adapter.request_count
        self.retries_at_start = adapter.retry_count
        self.run: RunRecord | None = None
        self.hold_watermark = False  # the window never read stably: do not advance
        # The adapter's paging cannot skip a record (keyset or anchored pages; see
        # docs/guides/sync-reliability.md): no probe for changes after a pass is needed.
        self.stable_paging = bool(getattr(adapter, "stable_paging", False))
        # (key -> stamp) of the records the current pass read, so a probe tells a change made
        # during the pass from a record stamped ahead of our clock that the pass already read.
        self.pass_seen: dict[tuple[str, str, str], datetime | None] = {}
        self.pass_problems: set[object] = set()
        # Records stamped further ahead of the connector's clock than the tolerance: how many, the
        # first few keys and the largest lead.
        self.ahead_count = 0
        self.ahead_keys: list[str] = []
        self.ahead_most = timedelta(0)
        self.stats = StatsKeeper(runner.engine)
        # A stream that never completed a window is most likely being loaded for the first time:
        # its pages are COPied in without the classify query until a key turns out to exist.
        self.presume_new = state.watermark is None and state.last_full_at is None
        # Whether a kind of record this run delivered had rows in the store before the run wrote
        # any: if none had, nothing can be missing and the key scan can skip its ERP requests.
        self.preexisting = False

    @property
    def tenant(self) -> str:
        return self.state.tenant

    @property
    def stream(self) -> str:
        return self.state.stream


class SyncRunner:
    """Runs ``connector sync`` for the configured tenants and streams of one deployment.

    ``settings`` names the tenants and holds the sync section; ``cases`` receives the closed ERP
    cases after a Case stream (None: they stay in the ``crm_case`` table).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        settings: Settings,
        cases: CaseIngest | None,
        adapter_factory: AdapterFactory,
        reporter: Reporter | None = None,
        stop: StopFlag | None = None,
        pause_gc: bool = False,
    ) -> None:
        """``pause_gc``: switch Python's automatic garbage collector off while pages flow (see
        :mod:`connector.sync.gctune`); it is process-wide, so only a process that is a sync opts in."""
        self.engine = engine
        self.pause_gc = pause_gc
        self.clock = clock
        self.settings = settings
        self.cases = cases
        self.adapter_factory = adapter_factory  # the composition root's: this job imports no ERP code
        self.reporter: Reporter = TracingReporter(reporter or NullReporter())
        self.stop = stop or StopFlag()

    # Entry points ------------------------------------------------------------------------------
    def run(
        self, tenant: str | None = None, *, streams: Iterable[str] | None = None, full: bool = False
    ) -> SyncReport:
        """Sync one tenant (by name) or all configured tenants."""
        settings = self.settings
        if tenant is not None:
            tenants = [settings.tenant(tenant)]
        elif settings.tenants:
            tenants = list(settings.tenants)
        else:
            raise ConfigError("no ERP tenant is configured: add [[tenants]] to config/connector.toml")
        wanted = list(streams) if streams is not None else None
        results: list[StreamResult] = []
        for tenant_settings in tenants:
            if self.stop.requested:
                break
            results.extend(self.run_tenant(tenant_settings, streams=wanted, full=full))
        return SyncReport(results, interrupted_by=self.stop.reason)

    def run_tenant(
        self, tenant: TenantSettings, *, streams: list[str] | None = None, full: bool = False
    ) -> list[StreamResult]:
        """Open one ERP session for the tenant and sync its streams one after the other.

        A tenant whose session cannot be opened (wrong password, unreachable ERP, a setting its
        adapter refuses) or breaks mid-way does not stop the others: each stream it did not run gets
        a ``failed`` run row with the one-line reason, which ``sync status`` shows.
        """
        results: list[StreamResult] = []
        planned: list[str] = list(streams) if streams is not None else []
        selecting = False
        session = SessionKeeper(ErpSessions(self.engine, self.clock), tenant)
        try:
            opened = self.adapter_factory(tenant)
            planned = planned or [spec.name for spec in _declared_streams(opened)]
            session.before_login(opened)
            with opened as adapter:
                session.after_login()
                selecting = True
                specs = self._select(tenant, adapter.streams(), streams)
                selecting = False
                planned = [spec.name for spec in specs]
                for spec in specs:
                    if self.stop.requested:
                        break
                    results.append(self._run_locked(adapter, spec, full))
        except ConnectorError as exc:
            if selecting:
                raise  # an unknown --stream name is the caller's mistake, not the tenant's
            reason = f"{tenant.name}: ERP session failed: {one_line(exc)}"
            ran = {r.stream for r in results}
            for name in [n for n in planned if n not in ran] or ["*"]:
                results.append(self._record_failure(tenant.name, name, reason, full=full))
        finally:
            session.after_logout()
        return results

    def _record_failure(self, tenant: str, stream: str, reason: str, *, full: bool) -> StreamResult:
        """A ``failed`` run row for a stream that could not start (no lock is needed: it writes no data)."""
        now = self.clock.now()
        mode = "full" if full else "incremental"
        result = StreamResult(tenant, stream, "failed", mode=mode, error=reason)
        try:
            with self.engine.begin() as conn:
                run = start_run(
                    conn, tenant, stream, mode=mode, started_at=now, window_start=None, window_end=None
                )
                finish_run(conn, run, status="failed", finished_at=now, error=reason)
            result.run_id = run.id
        except SQLAlchemyError as exc:
            self.reporter.message(
                "error", f"could not record the failed run: {one_line(exc)}", tenant=tenant, stream=stream
            )
        self.reporter.stream_finished(result)
        return result

    # One stream --------------------------------------------------------------------------------
    def _select(
        self, tenant: TenantSettings, specs: list[StreamSpec], wanted: list[str] | None
    ) -> list[StreamSpec]:
        if wanted is None:
            return specs
        by_name = {s.name.lower(): s for s in specs}
        unknown = [w for w in wanted if w.lower() not in by_name]
        if unknown:
            known = ", ".join(s.name for s in specs) or "none"
            raise ConfigError(
                f"tenant {tenant.name} has no stream {', '.join(unknown)}; its streams: {known}"
            )
        return [by_name[w.lower()] for w in wanted]

    def _run_locked(self, adapter: Adapter, spec: StreamSpec, full: bool) -> StreamResult:
        sync = self.settings.sync
        try:
            with stream_lock(
                self.engine,
                adapter.tenant,
                spec.name,
                on_locked=sync.on_locked,
                wait_s=sync.lock_wait_s,
            ) as fence:
                result = self._run_stream(adapter, spec, full, fence)
        except AlreadyRunning as exc:
            self.reporter.message("warning", str(exc), tenant=adapter.tenant, stream=spec.name)
            return StreamResult(adapter.tenant, spec.name, "locked", error=str(exc))
        except (StoreError, SQLAlchemyError) as exc:  # the store failed before or after the run proper
            result = StreamResult(adapter.tenant, spec.name, "failed", error=one_line(exc))
            self.reporter.stream_finished(result)
            return result
        if spec.record_type == "case" and result.status == "ok":
            self._ingest_cases(result)
        return result

    def _run_stream(self, adapter: Adapter, spec: StreamSpec, full: bool, fence: Fence) -> StreamResult:
        clock = self.clock
        started = clock.now()
        try:
            with self.engine.begin() as conn:
                state = load_state(conn, adapter.tenant, spec.name)
                abandon_stale_runs(conn, adapter.tenant, spec.name, started)
                window = window_for(
                    state.watermark,
                    until=started,
                    lookback=timedelta(seconds=self.settings.sync.lookback_seconds),
                    granularity=spec.cursor_granularity,
                    full=full,
                )
                mode = "full" if window.is_full else "incremental"
                stream_run = _StreamRun(self, adapter, spec, state, window, fence)
                stream_run.run = start_run(
                    conn,
                    adapter.tenant,
                    spec.name,
                    mode=mode,
                    started_at=started,
                    window_start=window.since,
                    window_end=window.until,
                )
        except SQLAlchemyError as exc:
            raise StoreError(
                f"cannot start the sync of {adapter.tenant}/{spec.name}: database "
                f"{safe_url(str(self.engine.url))}: {one_line(exc)}"
            ) from None
        self.reporter.stream_started(adapter.tenant, spec.name, window.since, window.until)
        status: str = "ok"
        error: str | None = None
        key_scanned = False
        try:
            with automatic_gc_paused() if self.pause_gc else nullcontext():
                interrupted = self._read_window(stream_run)
            if interrupted:
                status = "interrupted"
                error = f"stopped by {self.stop.reason} after page {stream_run.run.counters.pages}"
            elif self._key_scan_due(stream_run, full):
                self._key_scan(stream_run)
                key_scanned = True
        except (ConnectorError, SQLAlchemyError) as exc:
            status, error = "failed", one_line(exc)
        except BaseException as exc:
            self._close(
                stream_run, "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed", one_line(exc)
            )
            raise
        return self._close(stream_run, status, error, key_scanned=key_scanned)

    def _close(
        self, sr: _StreamRun, status: str, error: str | None, *, key_scanned: bool = False
    ) -> StreamResult:
        run = sr.run
        assert run is not None
        self._count_requests(sr, run.counters)
        finished = self.clock.now()
        watermark = sr.state.watermark
        try:
            with self.engine.begin() as conn:
                finish_run(
                    conn,
                    run,
                    status=status,
                    finished_at=finished,
                    error=error,
                    latest_stamp=sr.seen_max,
                    watermark_held=sr.hold_watermark if status == "ok" else None,
                )
                watermark = load_state(conn, sr.tenant, sr.stream).watermark
        except SQLAlchemyError as exc:
            # The database is gone: the row stays "running" and the next run marks it abandoned.
            self.reporter.message(
                "error", f"could not close run {run.id}: {one_line(exc)}", tenant=sr.tenant, stream=sr.stream
            )
        result = StreamResult(
            tenant=sr.tenant,
            stream=sr.stream,
            status=status,  # type: ignore[arg-type]
            run_id=run.id,
            mode=run.mode,
            window_start=run.window_start,
            window_end=run.window_end,
            watermark=watermark,
            duration_s=(finished - run.started_at).total_seconds(),
            key_scan=key_scanned,
            error=error,
            **run.counters.as_values(),
        )
        self.reporter.stream_finished(result)
        return result

    # Pages -------------------------------------------------------------------------------------
    def _read_window(self, sr: _StreamRun) -> bool:
        """Read and commit every page of the window. True when a stop request ended it early.

        Both ERP adapters page so that no change during a read can skip a record
        (``stable_paging``: SAP by key, Acumatica by anchored overlapping pages). For an adapter
        that does not, ``$skip`` paging is not a snapshot: after a multi-page read the runner asks
        the ERP for records stamped since the pass began and reads the window again when one was
        not read as it is now (unchanged rows cost a hash comparison). If the ERP keeps changing
        through every pass, the watermark stays where it was and the next run repeats.
        """
        pass_started = sr.window.until
        for attempt in range(1, _MAX_PASSES + 1):
            last, pages_read, stopped = self._read_pass(sr)
            if stopped:
                return True
            if last is None:
                self._commit_page(sr, Page(stream=sr.stream, number=0, records=[], requests=0), final=True)
                self._say_clock_skew(sr)
                return False
            stable = pages_read <= 1 or sr.stable_paging or not self._changed_since(sr, pass_started)
            if stable or attempt == _MAX_PASSES:
                if not stable:
                    sr.hold_watermark = True
                    self.reporter.message(
                        "warning",
                        f"records kept changing during {attempt} reads of the window; the watermark stays "
                        "and the next run reads the window again",
                        tenant=sr.tenant,
                        stream=sr.stream,
                    )
                self._commit_page(sr, last, final=True)
                self._say_clock_skew(sr)
                return False
            self._commit_page(sr, last, final=False)
            self.reporter.message(
                "info",
                "records changed while the window was paged; reading it again so none is skipped",
                tenant=sr.tenant,
                stream=sr.stream,
            )
            pass_started = self.clock.now()
        raise AssertionError("unreachable")  # pragma: no cover

    def _read_pass(self, sr: _StreamRun) -> tuple[Page | None, int, bool]:
        """Commit every page but the last, which is returned uncommitted with the page count.

        The caller commits the last page with the watermark. On a stop request the page in hand is
        committed and ``stopped`` is True.
        """
        # Every read of the run asks for the same window: from its start, with no upper bound, so a
        # record stamped ahead of our clock is stored at once (the watermark is clamped instead).
        pages = Prefetcher(_hashed(sr.adapter.read(sr.stream, sr.window.since, None)), depth=_PREFETCH_DEPTH)
        pending: Page | None = None
        count = 0
        sr.pass_seen.clear()
        sr.pass_problems.clear()
        sr.ahead_count, sr.ahead_keys, sr.ahead_most = 0, [], timedelta(0)
        with pages:
            while True:
                try:
                    following = next(pages, None)
                except ConnectorError as exc:
                    if pending is not None:
                        self._commit_page(sr, pending, final=False)
                    assert sr.run is not None
                    raise SyncError(
                        f"{sr.tenant}/{sr.stream}: page {sr.run.counters.pages + 1} failed: {one_line(exc)}"
                    ) from exc
                if following is None:
                    return pending, count, False
                count += 1
                if not sr.stable_paging:
                    sr.pass_seen.update((r.key, r.source_modified_at) for r in following.records)
                    sr.pass_problems.update(getattr(p, "key", p) for p in following.problems)
                if pending is not None:
                    self._commit_page(sr, pending, final=False)
                pending = following
                if self.stop.requested:
                    self._commit_page(sr, pending, final=False)
                    return None, count, True

    def _changed_since(self, sr: _StreamRun, moment: datetime) -> bool:
        """Whether the ERP lists a record changed at or after ``moment`` that the pass did not read
        as it is now (the same window as every read: no upper bound). A record stamped ahead of our
        clock, which the pass read, is no change: it must not make every run read its window again."""
        if sr.spec.cursor_granularity > _PROBE_GRANULARITY:
            return False  # a day-granular filter cannot tell; the next run re-reads the day anyway
        probe: Iterator[Page] = iter(sr.adapter.read(sr.stream, moment, None))
        try:
            for page in probe:
                screen_page(page)
                if any(sr.pass_seen.get(r.key, _UNSEEN) != r.source_modified_at for r in page.records):
                    return True
                if any(getattr(p, "key", p) not in sr.pass_problems for p in page.problems):
                    return True
            return False
        finally:
            close = getattr(probe, "close", None)
            if close is not None:
                close()

    def _note_ahead(self, sr: _StreamRun, page: Page) -> None:
        """Count the page's records stamped further ahead of the connector's clock than the tolerance."""
        horizon = sr.window.until + timedelta(seconds=self.settings.sync.clock_skew_tolerance_s)
        for record in page.records:
            stamp = record.source_modified_at
            if stamp is None or stamp <= horizon:
                continue
            sr.ahead_count += 1
            sr.ahead_most = max(sr.ahead_most, stamp - sr.window.until)
            if len(sr.ahead_keys) < 5:
                sr.ahead_keys.append(record.external_id)

    def _say_clock_skew(self, sr: _StreamRun) -> None:
        """One warning (and a line in the run's problems) for records stamped ahead of our clock."""
        if not sr.ahead_count:
            return
        shown = ", ".join(sr.ahead_keys) + (" ..." if sr.ahead_count > len(sr.ahead_keys) else "")
        line = (
            f"clock skew: {sr.ahead_count} record(s) stamped up to {_lead(sr.ahead_most)} ahead of the "
            f"connector's clock (more than sync.clock_skew_tolerance_s = "
            f"{self.settings.sync.clock_skew_tolerance_s}): {shown}; stored at once, the watermark "
            "stays at the run's start until the clocks agree (check the ERP's and this host's clocks)"
        )
        assert sr.run is not None
        sr.run.problems.append(line)
        self.reporter.message("warning", line, tenant=sr.tenant, stream=sr.stream)

    def _commit_page(self, sr: _StreamRun, page: Page, *, final: bool) -> None:
        """Upsert one page, update the run's counters and, on the last page, the watermark."""
        run = sr.run
        assert run is not None
        number = run.counters.pages + 1
        self._check_page(sr, page, number)
        page_max = page.max_modified or max(
            (r.source_modified_at for r in page.records if r.source_modified_at is not None), default=None
        )
        if page_max is not None:
            sr.seen_max = page_max if sr.seen_max is None else max(sr.seen_max, page_max)
            if page_max > sr.window.until:
                self._note_ahead(sr, page)
        try:
            self._write_page(sr, page, final=final)
        except (StatementError, UnicodeError) as exc:
            # A value no store can hold (a NUL, a lone surrogate)? Only now is the page searched.
            notes = repair_page(page, self.settings.sync.on_malformed_record, tenant=sr.tenant)
            if not notes:
                raise
            for note in notes:
                self.reporter.message("warning", note, tenant=sr.tenant, stream=sr.stream, page=number)
            run.problems.extend(f"page {number}: {note}" for note in notes)
            try:
                self._write_page(sr, page, final=final)
            except BaseException:
                del run.problems[-len(notes) :]
                raise
            log.debug("page %s written after repair (first attempt: %s)", number, type(exc).__name__)

    def _write_page(self, sr: _StreamRun, page: Page, *, final: bool) -> None:
        """One page's transaction: fence, upsert, counters and (on the last page) the watermark."""
        run = sr.run
        assert run is not None
        counters = dataclasses.replace(run.counters)
        now = self.clock.now()
        kinds = {record_kind(r) for r in page.records} - sr.known_kinds
        with self.engine.begin() as conn:
            tune_page_transaction(conn, durable=final)
            sr.fence.check(conn)
            if not sr.preexisting and any(_has_rows(conn, sr.tenant, kind) for kind in kinds):
                sr.preexisting = True
            history = self._history(run.id, now)
            upserted = upsert_records(
                conn, page.records, now, presume_new=sr.presume_new, hashes=page.hashes, history=history
            )
            if kinds:
                remember_kinds(conn, sr.tenant, sr.stream, kinds)
            if page.records or page.requests:
                counters.pages += 1
            counters.records_read += len(page.records)
            counters.inserted += upserted.inserted
            counters.updated += upserted.updated
            counters.unchanged += upserted.unchanged
            counters.skipped += len(page.problems)
            self._count_requests(sr, counters)
            run.counters, previous = counters, run.counters
            try:
                save_counters(conn, run)
                if final:
                    self._save_watermark(conn, sr, now)
            except BaseException:
                run.counters = previous
                raise
        sr.known_kinds |= kinds
        if upserted.presumption_failed:
            sr.presume_new = False
        if self.pause_gc:
            page_committed(counters.pages)
        sr.stats.inserted(sr.spec.record_type, upserted.inserted)
        self.reporter.page_done(
            sr.tenant, sr.stream, counters.pages, len(page.records), counters.records_read
        )

    def _history(self, run_id: int, now: datetime) -> ChangeRecorder | None:
        """The recorder of tracked-field changes for one transaction (None: history is off)."""
        conf = self.settings.history
        if not conf.enabled:
            return None
        return ChangeRecorder(tracked_fields(conf), seen_at=now, run_id=run_id)

    def _check_page(self, sr: _StreamRun, page: Page, number: int) -> None:
        foreign = next((r for r in page.records if r.tenant != sr.tenant), None)
        if foreign is not None:
            raise SyncError(
                f"{sr.tenant}/{sr.stream}: page {number} carries a record of tenant {foreign.tenant!r}; "
                "the adapter mapped it to the wrong scope"
            )
        if page.problems and self.settings.sync.on_malformed_record == "fail":
            first = page.problems[0]
            raise SyncError(
                f"{sr.tenant}/{sr.stream}: page {number} has {len(page.problems)} malformed record(s), "
                f"first {getattr(first, 'key', None)!r}: {getattr(first, 'reason', first)} "
                "(sync.on_malformed_record = 'fail')"
            )
        for problem in page.problems:
            key, reason = getattr(problem, "key", None), getattr(problem, "reason", problem)
            line = f"skipped malformed record {key!r}: {reason}"
            assert sr.run is not None
            sr.run.problems.append(f"page {number}: {line}")
            self.reporter.message(
                "warning",
                line,
                tenant=sr.tenant,
                stream=sr.stream,
                page=number,
            )
        for note in page.notes:  # rows passed over on purpose: said in the run, not counted as malformed
            assert sr.run is not None
            sr.run.problems.append(f"page {number}: {note}")
            self.reporter.message("info", note, tenant=sr.tenant, stream=sr.stream, page=number)

    def _save_watermark(self, conn: sa.Connection, sr: _StreamRun, now: datetime) -> None:
        watermark = next_watermark(
            sr.state.watermark,
            None if sr.hold_watermark else sr.seen_max,
            until=sr.window.until,
            granularity=sr.spec.cursor_granularity,
        )
        values: dict[str, datetime | None] = {"watermark": watermark}
        if sr.window.is_full and not sr.hold_watermark:
            values["last_full_at"] = sr.window.until
        save_state(conn, sr.tenant, sr.stream, now, **values)

    def _count_requests(self, sr: _StreamRun, counters: Any) -> None:
        counters.requests = sr.adapter.request_count - sr.requests_at_start
        counters.retries = sr.adapter.retry_count - sr.retries_at_start

    # Deletions ---------------------------------------------------------------------------------
    def _key_scan_due(self, sr: _StreamRun, full: bool) -> bool:
        last = sr.state.last_key_scan_at
        if full or sr.window.is_full or last is None:
            return True
        interval = timedelta(hours=self.settings.sync.key_scan_interval_hours)
        return self.clock.now() - last >= interval

    def _key_scan(self, sr: _StreamRun) -> None:
        """Mark rows of this stream's kinds that the ERP no longer lists as deleted (never removed)."""
        run = sr.run
        assert run is not None
        if self._nothing_to_delete(sr):
            self._finish_key_scan(sr, 0, self.clock.now())
            return
        # Keys compared in the one id form the store holds them in (connector.ids), remembering
        # the ERP's own spelling for a read by key.
        listed = {canonical_id(key): key for key in sr.adapter.scan_keys(sr.stream)}
        keys = set(listed)
        if keys and isinstance(sr.adapter, KeyReader):
            self._read_missing(sr, sr.adapter, listed)
        now = self.clock.now()
        with self.engine.begin() as conn:
            sr.fence.check(conn)
            deleted = 0
            if keys:
                for record_type, kind in stream_kinds(conn, sr.tenant, sr.stream):
                    scope_kind = None if record_type == "case" else kind
                    deleted += mark_missing_deleted(
                        conn, _TABLES[record_type], sr.tenant, scope_kind, keys, now,
                        history=self._history(run.id, now),
                    )  # fmt: skip
            else:
                self.reporter.message(
                    "warning",
                    "key scan listed no records; not marking anything deleted (an empty answer is more "
                    "likely a permission or filter problem than an empty ERP)",
                    tenant=sr.tenant,
                    stream=sr.stream,
                )
            self._finish_key_scan(sr, deleted, now, conn)

    def _read_missing(self, sr: _StreamRun, reader: KeyReader, listed: dict[str, str]) -> None:
        """Read the records the ERP lists but the store lacks: no delta filter selects some records
        (an SAP partner whose creation and change dates are both null), so only the scan finds them."""
        with self.engine.connect() as conn:
            stored: set[str] = set()
            for record_type, kind in stream_kinds(conn, sr.tenant, sr.stream):
                scope_kind = None if record_type == "case" else kind
                stored |= live_external_ids(conn, _TABLES[record_type], sr.tenant, scope_kind)
        # A key outside the id rule is never stored: its read names it, the scan need not repeat that.
        missing = {key for key in listed.keys() - stored if id_problem(key) is None}
        if not missing:
            return
        self.reporter.message(
            "info",
            f"key scan found {len(missing)} record(s) the store lacks (no change or creation stamp a "
            "delta read could select); reading them by key",
            tenant=sr.tenant,
            stream=sr.stream,
        )
        for page in _hashed(reader.read_keys(sr.stream, [listed[key] for key in missing])):
            self._commit_page(sr, page, final=False)

    def _nothing_to_delete(self, sr: _StreamRun) -> bool:
        """Every kind of the stream was first stored by this run: only rows it just read exist.

        A first load then skips the scan's requests (a second read of every key); a record the
        ERP deleted while it was read is found by the next scan, as if deleted just after this one.
        """
        if sr.preexisting or not sr.known_kinds:
            return False
        with self.engine.connect() as conn:
            kinds = set(stream_kinds(conn, sr.tenant, sr.stream))
        return kinds <= sr.known_kinds

    def _finish_key_scan(
        self, sr: _StreamRun, deleted: int, now: datetime, conn: sa.Connection | None = None
    ) -> None:
        """Count the deletions and stamp ``last_key_scan_at`` (in ``conn``'s transaction if given)."""
        run = sr.run
        assert run is not None
        if conn is None:
            with self.engine.begin() as own:
                self._finish_key_scan(sr, deleted, now, own)
            return
        run.counters.deleted += deleted
        self._count_requests(sr, run.counters)
        save_counters(conn, run)
        save_state(conn, sr.tenant, sr.stream, now, last_key_scan_at=now)

    # After a Case stream -----------------------------------------------------------------------
    def _ingest_cases(self, result: StreamResult) -> None:
        """Closed ERP cases become episodic entries; a failed ingest marks the stream (the cases stay)."""
        if self.cases is None:
            return
        try:
            count = self.cases.ingest_erp_cases(result.tenant)
        except ConnectorError as exc:
            result.error = f"episodic ingest failed: {one_line(exc)}"
            self.reporter.message("error", result.error, tenant=result.tenant, stream=result.stream)
            return
        self.reporter.message(
            "info",
            f"ingested {count} closed case(s) into episodic memory",
            tenant=result.tenant,
            stream=result.stream,
        )
