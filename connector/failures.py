"""Driver failures of the relational store as one-line :class:`StoreError` messages.

A dead database (refused connection, unknown host, an SQLite file that cannot be opened or is not
a database) surfaces from SQLAlchemy, psycopg or sqlite3 with a multi-line message that may quote
the statement and its parameters (customer text). :func:`store_error` keeps only what an operator
needs: which database (password hidden), the driver's error type and the first line of its reason,
redacted. :func:`database_errors` applies it at the library's edges (``Memory`` and the CLI), so a
caller catches ``ConnectorError`` and never a raw driver error.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from connector.errors import StoreError
from connector.redact import redact

P = ParamSpec("P")
T = TypeVar("T")

DRIVER_ERRORS: tuple[type[BaseException], ...] = (SQLAlchemyError, sqlite3.Error)


def _reason(exc: BaseException) -> str:
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = [line.strip() for line in str(orig).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if isinstance(exc, SQLAlchemyError) and orig is exc:
        first = first.split("[SQL:")[0].strip()  # SQLAlchemy's own text quotes the statement
    text = f"{type(orig).__name__}: {first[:200]}" if first else type(orig).__name__
    return redact(text)


def store_error(exc: BaseException, url: str | None) -> StoreError:
    """A one-line StoreError for a driver failure, naming the database without its password, the
    cause when the driver tells it (a full disk) and the hint for its backend
    (:mod:`connector.db.diagnosis`)."""
    from connector.db.diagnosis import backend_of, cause, hint
    from connector.db.engine import safe_url

    where = f"database {safe_url(url)}" if url else "the database"
    named = cause(exc, url)
    what = f"failed: {named}" if named else "is unreachable or failed"
    return StoreError(f"{where} {what}: {_reason(exc)} ({hint(backend_of(url), exc, url)})")


@contextmanager
def database_errors(url: str | None) -> Iterator[None]:
    """Turn a raw driver error raised inside into :func:`store_error`'s StoreError."""
    try:
        yield
    except DRIVER_ERRORS as exc:
        raise store_error(exc, url) from None


def translated(method: Callable[P, T]) -> Callable[P, T]:
    """For a method of an object with ``settings.database_url``: driver errors become StoreError."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with database_errors(_url_of(args)):
            return method(*args, **kwargs)

    return wrapper


def translated_async(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """:func:`translated` for a coroutine method."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with database_errors(_url_of(args)):
            return await method(*args, **kwargs)

    return wrapper


def _url_of(args: tuple[Any, ...]) -> str | None:
    """The database of ``self``: its engine's (built or handed in), else its settings'."""
    if not args:
        return None
    own = vars(args[0]) if hasattr(args[0], "__dict__") else {}
    engine = own.get("engine") or own.get("_engine")
    if engine is not None:
        return str(engine.url.render_as_string(hide_password=False))
    try:
        return str(args[0].settings.database_url)
    except Exception:
        return None
