"""Client-side deadlines for PostgreSQL calls: a frozen server cannot hang the caller.

The server's ``statement_timeout`` bounds a slow statement and the TCP keepalives and user timeout
(:func:`connector.db.engine.postgres_deadlines`) a dead peer, but neither bounds a *frozen* one: a
stopped server process (or a black-holed port) whose kernel still acknowledges every packet answers
nothing and breaks nothing, so a call would wait forever. Every wait of a connection for the server
therefore has a deadline of its own, kept by the client:

- inside :func:`within` (the agent's reads, the CLI's read commands, ``doctor``): the scope's
  absolute deadline, ``database.read_timeout_s`` after it began, for every wait and connect in it
  (a pooled connection's ping, a reconnect and the statements alike);
- elsewhere (the sync's and the writers' statements): ``database.statement_timeout_s`` plus
  ``database.dead_server_s`` per wait, so a live server's own timeout answers first; none when the
  statement timeout is 0 (no limit).

The connections that keep them are :mod:`connector.db.pg_deadline`'s. Past the deadline the
connection is closed on the spot (its socket with it, nothing waits for the peer), the call raises
a psycopg ``OperationalError`` (which SQLAlchemy takes for a disconnect, so the
pool drops the connection and reconnects once the server answers), and a cancel request goes to
the server from a daemon thread, so a live but slow server stops the statement instead of running
it for nobody. A new connection waits at most the time left (psycopg and libpq wait at least 2 s
for one). SQLite needs none of this: its only wait, another writer's lock, has ``busy_timeout_s``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

READ_SETTING = "database.read_timeout_s"


@dataclass(frozen=True, slots=True)
class Deadline:
    """An absolute deadline (``time.monotonic()``), its length and the setting that gave it."""

    at: float
    seconds: float
    setting: str

    def left(self) -> float:
        return self.at - time.monotonic()

    def message(self) -> str:
        """The driver error's text (:func:`is_deadline` knows it by its start)."""
        return (
            f"{_START}{self.seconds:g} s ({self.setting}); the server looks hung, the connection was dropped"
        )


_START = "no answer within "


def is_deadline(driver_error: BaseException) -> bool:
    """Whether a driver error is a call past its client-side deadline."""
    return str(driver_error).startswith(_START)


_SCOPE: ContextVar[Deadline | None] = ContextVar("database_deadline", default=None)


@contextmanager
def within(seconds: float, setting: str = READ_SETTING) -> Iterator[None]:
    """Every PostgreSQL wait inside ends by ``seconds`` from now (or an enclosing scope's earlier
    deadline). Contexts copied into pool threads carry it."""
    outer = _SCOPE.get()
    mine = Deadline(time.monotonic() + seconds, seconds, setting)
    if outer is not None and outer.at <= mine.at:
        yield
        return
    token = _SCOPE.set(mine)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def bounded_read(method: Callable[P, T]) -> Callable[P, T]:
    """For a method of an object with ``settings.database``: its database work ends within
    ``database.read_timeout_s``."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        seconds = args[0].settings.database.read_timeout_s  # type: ignore[attr-defined]
        with within(seconds):
            return method(*args, **kwargs)

    return wrapper


def bounded_read_async(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """:func:`bounded_read` for a coroutine method."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        seconds = args[0].settings.database.read_timeout_s  # type: ignore[attr-defined]
        with within(seconds):
            return await method(*args, **kwargs)

    return wrapper


def current(per_wait: Deadline | None) -> Deadline | None:
    """The deadline of a wait starting now: the scope's, else ``per_wait``'s length from now."""
    scoped = _SCOPE.get()
    if scoped is not None:
        return scoped
    if per_wait is None:
        return None
    return Deadline(time.monotonic() + per_wait.seconds, per_wait.seconds, per_wait.setting)


def scoped() -> Deadline | None:
    """The enclosing scope's deadline, if any."""
    return _SCOPE.get()


def unscoped_limit(statement_timeout_s: float, dead_server_s: int) -> Deadline | None:
    """The per-wait limit outside any scope: the server's statement timeout answers first."""
    if not statement_timeout_s:
        return None
    return Deadline(0.0, statement_timeout_s + dead_server_s, "database.statement_timeout_s + dead_server_s")
