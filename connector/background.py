"""Work that calls the LLM, run off the agent's path on a small worker pool with a bounded backlog.

``record_turn`` and ``record_case`` store what the agent gave them and return; folding turns into
the running summary and rewording a case summary by the LLM happen here afterwards. A job is keyed
(a session id, an entry id): one waiting job per key, and at most ``max_pending`` waiting jobs in
all; a job asked for beyond that is dropped and logged (the next turn asks for its fold again; a
dropped case keeps its labelled non-LLM summary). A failing job is logged, never raised: the stored
state stays correct without it. A store that is away (a :class:`ConnectorError`: hung, unreachable,
full) is one warning line naming it, as every other failure the connector expects; anything else
keeps its traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable

from connector.errors import ConnectorError
from connector.threads import LazyPool

log = logging.getLogger(__name__)


class BackgroundJobs:
    """Keyed jobs on ``workers`` threads named ``name``; :meth:`wait` and :meth:`close` for owners."""

    def __init__(self, name: str, *, workers: int = 1, max_pending: int = 1000) -> None:
        self._name = name
        self._pool = LazyPool(name, workers)
        self._max_pending = max_pending
        self._pending: set[Hashable] = set()
        self._running = 0
        self._idle = threading.Condition()

    def submit(self, key: Hashable, job: Callable[[], object]) -> bool:
        """Queue ``job`` unless one for ``key`` is already waiting or the backlog is full."""
        with self._idle:
            if key in self._pending:
                return True
            if len(self._pending) >= self._max_pending:
                log.warning("%s: %d jobs waiting; %r dropped", self._name, len(self._pending), key)
                return False
            self._pending.add(key)
        self._pool.get().submit(self._run, key, job)
        return True

    def _run(self, key: Hashable, job: Callable[[], object]) -> None:
        with self._idle:
            self._pending.discard(key)  # a job asked for from now on waits behind this one
            self._running += 1
        try:
            job()
        except ConnectorError as exc:
            log.warning("%s: job %r failed: %s: %s", self._name, key, type(exc).__name__, exc)
        except Exception:
            log.exception("%s: job %r failed", self._name, key)
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no job waits or runs (True), or ``timeout`` seconds pass (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending and not self._running, timeout)

    def close(self) -> None:
        """Stop the threads after the jobs in hand; jobs still waiting are dropped (their work only
        improves what is stored: the stores are correct without it). Used again, it restarts."""
        self._pool.shutdown(wait=True, cancel_waiting=True)
        with self._idle:
            self._pending.clear()
            self._idle.notify_all()
