"""The psycopg connection that keeps :mod:`connector.db.deadline`'s deadlines (PostgreSQL only,
so the embedded default never imports the driver)."""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, TypeVar

import psycopg
from psycopg import capabilities, generators, waiting
from psycopg import errors as pg_errors
from psycopg.abc import PQGen
from psycopg.pq.abc import PGcancelConn

from connector.db.deadline import Deadline, current, scoped

RV = TypeVar("RV")
_WAIT_INTERVAL = 0.1  # psycopg's own: how often a wait wakes up (Ctrl-C)
_CANCEL_S = 30.0  # psycopg's own default for a cancel request


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server has a deadline (module docstring)."""

    per_wait: Deadline | None = None  # the unscoped limit: only ``seconds`` and ``setting`` count

    def wait(self, gen: PQGen[RV], interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> RV:
        deadline = current(self.per_wait)
        if deadline is None:
            return super().wait(gen, interval, timeout)
        left = deadline.left()
        if left <= 0:
            self._drop()
            raise psycopg.OperationalError(deadline.message())
        bounded = left if timeout is None else min(timeout, left)
        try:
            return super().wait(gen, interval, bounded)
        except pg_errors._WaitTimeout:
            if timeout is not None and timeout <= left:
                raise  # the caller's own, shorter timeout (waiting for notifications)
            self._drop()
            raise psycopg.OperationalError(deadline.message()) from None

    def _drop(self) -> None:
        """Close the connection now (a frozen peer is not waited for) and cancel its statement from
        a daemon thread (a slow server stops it; a frozen one gets it when it wakes up)."""
        cancel = None
        if capabilities.has_cancel_safe():  # libpq 17+; the older, blocking cancel holds the GIL
            with contextlib.suppress(Exception):
                cancel = self.pgconn.cancel_conn()
                cancel.start()
        self.pgconn.finish()
        if cancel is not None:
            threading.Thread(target=_cancel_quietly, args=(cancel,), name="pg-cancel", daemon=True).start()


def _cancel_quietly(cancel: PGcancelConn) -> None:
    """Deliver the cancel request, waiting at most ``_CANCEL_S`` for the server to take it."""
    try:
        with contextlib.suppress(Exception):
            waiting.wait_conn(generators.cancel(cancel), interval=_WAIT_INTERVAL, timeout=_CANCEL_S)
    finally:
        cancel.finish()


def connect(per_wait: Deadline | None, connect_timeout: int, cargs: Any, cparams: dict[str, Any]) -> Any:
    """A :class:`DeadlineConnection` (SQLAlchemy's ``do_connect``); inside a scope it waits at most
    the time left (psycopg's minimum is 2 s), and none at all once the deadline has passed."""
    scope = scoped()
    if scope is not None:
        left = scope.left()
        if left <= 0:
            raise psycopg.OperationalError(scope.message())
        cparams = {**cparams, "connect_timeout": max(1, min(connect_timeout, math.ceil(left)))}
    conn = DeadlineConnection.connect(*cargs, **cparams)
    conn.per_wait = per_wait
    return conn
