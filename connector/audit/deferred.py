"""Access events recorded off the request's path, by one worker thread.

An MCP read (``get_context``) must stay within a few milliseconds of the library call; a commit per
call would add its own latency (an fsync on PostgreSQL). Reads and refusals are therefore handed to
one worker, which writes whatever is waiting in one transaction. :meth:`DeferredRecorder.close`
(on server shutdown) writes what is left. Events beyond ``limit`` waiting are dropped with a
WARNING: a flood of calls against a stalled database must not grow memory without bound.
"""

from __future__ import annotations

import logging
import queue
import threading
from datetime import datetime

from sqlalchemy.engine import Engine

from connector.audit.table import audit_t
from connector.audit.trail import event_values

log = logging.getLogger(__name__)

_Event = tuple[Engine, dict[str, object]]


class DeferredRecorder:
    """Queue of audit events written by a daemon thread, in batches."""

    def __init__(self, *, limit: int = 10_000) -> None:
        self._queue: queue.Queue[_Event | threading.Event] = queue.Queue(maxsize=limit)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0

    def submit(
        self,
        engine: Engine,
        who: str,
        action: str,
        tenant: str | None,
        customer_id: str | None,
        *,
        outcome: str,
        at: datetime,
        remote: str | None = None,
        repeats: int = 1,
    ) -> None:
        """Hand one event to the worker (never blocks the caller)."""
        self._start()
        values = event_values(who, action, tenant, customer_id, outcome, at, remote=remote, repeats=repeats)
        try:
            self._queue.put_nowait((engine, values))
        except queue.Full:
            self.dropped += 1
            log.warning("audit event %s (tenant %s) dropped: %d events already waiting", action, tenant,
                        self._queue.maxsize)  # fmt: skip

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every event submitted so far is written (or given up on)."""
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put(done)
        done.wait(timeout)

    close = flush  # the worker is a daemon: once flushed, nothing is left to lose

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._write(batch)

    @staticmethod
    def _write(batch: list[_Event | threading.Event]) -> None:
        events: dict[Engine, list[dict[str, object]]] = {}
        flushes: list[threading.Event] = []
        for item in batch:
            if isinstance(item, threading.Event):
                flushes.append(item)
            else:
                events.setdefault(item[0], []).append(item[1])
        for engine, rows in events.items():
            try:
                with engine.begin() as conn:
                    conn.execute(audit_t.insert(), rows)
            except Exception as exc:  # best-effort, like every access event: the log says what was lost
                log.warning("%d audit events not recorded: %s", len(rows), type(exc).__name__)
        for done in flushes:
            done.set()
