"""What a database failure means, in one line an operator can act on.

A driver's exception type alone (``OperationalError``) says nothing: SQLite raises it for a full
disk, a locked file and a read-only directory alike. This module names the cause where the driver
tells it (SQLite's result code, PostgreSQL's SQLSTATE, the OS error number) and gives the hint
that fits the backend: a full disk is named as such on both, and PostgreSQL errors never carry the
SQLite hint about the file's directory.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path
from typing import Literal

from sqlalchemy.exc import DBAPIError

from connector.db.deadline import is_deadline

Backend = Literal["sqlite", "postgresql", "other"]

_SQLITE_FULL = 13  # SQLITE_FULL: "database or disk is full"
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10  # "disk I/O error": what SQLite says when a full disk stops its WAL or shared memory
_NEARLY_FULL_BYTES = 1 << 20  # an I/O error with less free than this on the file's disk is a full disk
_PG_DISK_FULL = "53100"  # disk_full
_PG_OUT_OF_MEMORY = "53200"
_PG_SCHEMA_BEHIND = ("42P01", "42703")  # undefined_table, undefined_column: migrations not applied
_PG_CANNOT_CONNECT = ("08000", "08001", "08003", "08004", "08006", "57P01", "57P02", "57P03")


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception under SQLAlchemy's wrapper (or ``exc`` itself)."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return exc.orig
    return exc


def backend_of(url: str | None) -> Backend:
    """Which kind of database a URL names (for the hint)."""
    text = (url or "").lower()
    if text.startswith("sqlite"):
        return "sqlite"
    if text.startswith("postgres"):
        return "postgresql"
    return "other"


def _sqlite_disk_left(url: str | None) -> int | None:
    """Free bytes on the disk of an SQLite URL's file (None: not SQLite, or unknown)."""
    if backend_of(url) != "sqlite" or url is None or ":///" not in url:
        return None
    directory = Path(url.split(":///", 1)[1].split("?", 1)[0]).parent
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def is_disk_full(exc: BaseException, url: str | None = None) -> bool:
    """Whether the failure is a full disk (SQLite SQLITE_FULL, PostgreSQL 53100, ENOSPC; and, with
    the ``url`` of an SQLite file, SQLite's "disk I/O error" on a disk with almost nothing free: a
    disk filled to the last byte fails SQLite's write-ahead log that way, not with SQLITE_FULL)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        orig = driver_error(current)
        if isinstance(orig, sqlite3.Error) and getattr(orig, "sqlite_errorcode", None) == _SQLITE_FULL:
            return True
        if getattr(orig, "sqlstate", None) == _PG_DISK_FULL:
            return True
        if isinstance(orig, OSError) and orig.errno == errno.ENOSPC:
            return True
        text = str(orig).lower()
        if "database or disk is full" in text or "no space left on device" in text:
            return True
        if isinstance(orig, sqlite3.Error) and (
            (getattr(orig, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_IOERR or "disk i/o error" in text
        ):
            left = _sqlite_disk_left(url)
            if left is not None and left < _NEARLY_FULL_BYTES:
                return True
        current = current.__cause__ or current.__context__
    return False


def is_schema_behind(exc: BaseException) -> bool:
    """Whether a table or column this code uses is missing (PostgreSQL is upgraded on purpose, with
    ``connector db upgrade``; a new database or a skipped upgrade fails this way)."""
    orig = driver_error(exc)
    if getattr(orig, "sqlstate", None) in _PG_SCHEMA_BEHIND:
        return True
    text = str(orig).lower()
    return isinstance(orig, sqlite3.Error) and ("no such table" in text or "no such column" in text)


def cause(exc: BaseException, url: str | None = None) -> str | None:
    """A short name of the failure's cause when the driver (or, for SQLite, the file's disk) tells
    it, else None."""
    if is_disk_full(exc, url):
        return "the disk is full"
    orig = driver_error(exc)
    code = getattr(orig, "sqlite_errorcode", None)
    if code == _SQLITE_READONLY:
        return "the database file is read-only"
    if is_deadline(orig) or type(orig).__name__ == "ConnectionTimeout":  # psycopg's, within a deadline
        return "the server is not answering (hung, or the call waits on a lock another session holds)"
    if is_schema_behind(exc):
        return "the database schema is missing or older than this connector: run `connector db upgrade`"
    state = getattr(orig, "sqlstate", None)
    if state == _PG_OUT_OF_MEMORY:
        return "the database server is out of memory"
    if state in _PG_CANNOT_CONNECT:
        return "the database server refused or dropped the connection"
    return None


def hint(backend: Backend, exc: BaseException, url: str | None = None) -> str:
    """What to check, for this backend and failure."""
    if is_disk_full(exc, url):
        if backend == "postgresql":
            return "free space on the PostgreSQL server's data disk, then retry"
        return "free space on the disk that holds the database file, then retry"
    if is_schema_behind(exc):
        return "PostgreSQL's schema is upgraded on purpose, never by the other commands"
    if backend == "postgresql":
        return "check database.url and that the PostgreSQL server is running and accepts connections"
    if backend == "sqlite":
        return "check database.url and that the file's directory is writable"
    return "check database.url and that the database is running"
