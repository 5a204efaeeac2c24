"""The vector store of one deployment: its client, its deadlines and, embedded, its lock.

Every call to Chroma goes through :meth:`ChromaStore.run`, which

- bounds it by its deadline (:mod:`connector.vectors.deadline`): reads by ``chroma.read_timeout_s``,
  writes, opening the store and loading a collection by ``chroma.timeout_s``. A server's call runs
  on a worker thread the caller stops waiting for; an embedded call runs on the caller's thread
  (no hand-off on the agent's path): what can make it wait is the directory's lock, held by another
  process, and that wait ends before the deadline (:class:`StoreBusy`);
- turns any Chroma or transport failure into a one-line :class:`StoreError`;
- embedded, orders it with every other process's calls (:mod:`connector.vectors.lock`): writes one
  at a time, each followed by zeroing what Chroma's index files hold past their last element
  (:mod:`connector.vectors.slack`); a process that finds another one wrote opens its client anew
  first, so it never reads through a stale copy of the index.

The first read of a collection on a client loads it, and Chroma then writes its index files
(uninitialised memory included): it runs as a write does, without telling other processes the
store changed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from connector.errors import ConnectorError, StoreError
from connector.settings import ChromaSettings, Settings
from connector.vectors.deadline import Deadlines, Kind
from connector.vectors.lock import DirectoryLock, lock_of
from connector.vectors.slack import scrub_segment_slack

log = logging.getLogger(__name__)
T = TypeVar("T")
_LOCK_SHARE = 0.8  # of a call's deadline, at most spent waiting for the embedded store's lock


def _where(conf: ChromaSettings, path: Path | None) -> str:
    return f"the embedded Chroma at {path}" if path else f"the Chroma server at {conf.host}:{conf.port}"


class ChromaStore:
    """One Chroma (server or embedded directory) and how every call to it is made."""

    def __init__(self, conf: ChromaSettings, embedded_path: Path | None, *, client: Any = None) -> None:
        """``embedded_path``: the embedded store's directory (None: the server ``conf`` names).
        ``client``: a client opened elsewhere (tests); it is used as it is, never reopened."""
        self.conf = conf
        self.embedded_path = embedded_path.resolve() if embedded_path is not None else None
        self.deadlines = Deadlines(
            _where(conf, self.embedded_path), read_s=conf.read_timeout_s, write_s=conf.timeout_s
        )
        self.lock: DirectoryLock | None = lock_of(self.embedded_path) if self.embedded_path else None
        self._client = client
        self._given = client is not None
        self._seen = ""  # the lock token this process's client has seen
        self._loaded: set[str] = set()  # collections loaded on the current client
        self._version = 0
        self._opening = threading.Lock()

    @classmethod
    def for_settings(cls, settings: Settings) -> ChromaStore:
        conf = settings.chroma
        return cls(conf, None if conf.host else settings.chroma_path)

    @classmethod
    def wrapping(cls, client: Any, embedded_path: Path | None = None) -> ChromaStore:
        """A store around a client opened elsewhere (default deadlines)."""
        if isinstance(client, ChromaStore):
            return client
        return cls(ChromaSettings(), embedded_path, client=client)

    @property
    def where(self) -> str:
        return self.deadlines.where

    @property
    def version(self) -> int:
        """Changes whenever the client is opened anew (collection handles must be fetched again)."""
        return self._version

    def client(self, kind: Kind = "read") -> Any:
        """The current client, opened on first use: a server's within the deadline of ``kind`` (a
        recall's within ``chroma.read_timeout_s``), an embedded one within ``chroma.timeout_s``."""
        if self._client is None:
            self.run("write" if self.lock is not None else kind, "opening", lambda client: None)
        return self._client

    def run(self, kind: Kind, what: str, op: Callable[[Any], T], *, collection: str | None = None) -> T:
        """``op(client)`` as one call of ``kind`` (see the module docstring); ``collection``: the
        collection it reads (its first read on a client loads it)."""
        load = (
            kind == "read"
            and self.lock is not None
            and (collection not in self._loaded or self._client is None or self.lock.peek() != self._seen)
        )
        deadline_kind: Kind = "write" if load else kind
        if self.lock is not None:  # embedded: what can wait is the lock, and its wait is bounded
            return self._run(kind, what, op, collection)
        return self.deadlines.call(deadline_kind, what, lambda: self._run(kind, what, op, collection))

    def _run(self, kind: Kind, what: str, op: Callable[[Any], T], collection: str | None) -> T:
        try:
            if self.lock is None:
                return op(self._server_client())
            return self._embedded(kind, op, collection)
        except ConnectorError:
            raise
        except Exception as exc:
            reason = f"{type(exc).__name__}: {_first_line(exc)}"
            raise StoreError(f"{self.where}: {what} failed: {reason}") from None

    def _embedded(self, kind: Kind, op: Callable[[Any], T], collection: str | None) -> T:
        assert self.lock is not None and self.embedded_path is not None
        # waiting for the lock ends before the call's deadline: a held store is named as such
        seconds = self.deadlines.seconds(kind) * _LOCK_SHARE
        if kind == "read":
            with self.lock.shared(seconds) as token:
                if token == self._seen and self._client is not None and collection in self._loaded:
                    return op(self._client)
            seconds = self.deadlines.write_s * _LOCK_SHARE
        with self.lock.exclusive(seconds, changes=kind == "write") as token:
            if token != self._seen or self._client is None:
                self._reopen()
                self._seen = token
            try:
                result = op(self._client)
                if collection is not None:
                    self._loaded.add(collection)
            finally:
                scrub_segment_slack(self.embedded_path)
        if kind == "write":
            self._seen = self.lock.last_stamp
        return result

    def _server_client(self) -> Any:
        if self._client is None:
            with self._opening:
                if self._client is None:
                    self._client = open_server(self.conf)
                    self._version += 1
        return self._client

    def _reopen(self) -> None:
        """(Re)open the embedded client (under the exclusive lock): a fresh copy of the store."""
        if self._given and self._client is not None:
            return
        assert self.embedded_path is not None
        old, self._client = self._client, None
        if old is not None:
            _drop(old)
        self._client = open_embedded(self.embedded_path)
        self._loaded.clear()
        self._version += 1

    def release(self) -> None:
        """Close the client (its files may then be replaced); the next call opens a new one.

        An embedded client's SQLite connections can sit in reference cycles that only the garbage
        collector frees: until it runs, the files stay open (seen on a loaded machine, 1-3 handles
        after a close). Releasing is rare (closing a Memory, erasure's file rewrite, ``doctor``),
        so it collects at once: closed means the directory is no longer held."""
        client, self._client = self._client, None
        self._loaded.clear()
        self._seen = ""
        self._version += 1
        if client is not None and not self._given:
            _drop(client)
            if self.lock is not None:
                del client
                gc.collect()

    close = release


def open_embedded(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaClientSettings

    try:
        path.mkdir(parents=True, exist_ok=True)
        settings = ChromaClientSettings(anonymized_telemetry=False)
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:
        raise StoreError(
            f"the embedded Chroma at {path} is unavailable: {type(exc).__name__}: {_first_line(exc)} "
            "(`connector episodic reindex --rebuild` recreates it from the rows)"
        ) from None


def open_server(conf: ChromaSettings) -> Any:
    """A client of the Chroma server; its HTTP calls time out too (a hung call's thread ends)."""
    import chromadb
    import httpx
    from chromadb.config import Settings as ChromaClientSettings

    try:
        client = chromadb.HttpClient(
            host=conf.host or "", port=conf.port, ssl=conf.ssl,
            settings=ChromaClientSettings(anonymized_telemetry=False),
        )  # fmt: skip
    except Exception as exc:
        raise StoreError(
            f"the Chroma server at {conf.host}:{conf.port} is unavailable: "
            f"{type(exc).__name__}: {_first_line(exc)}"
        ) from None
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(max(conf.timeout_s, conf.read_timeout_s), connect=conf.timeout_s)
    return client


def open_client(settings: Settings) -> Any:
    """A raw Chroma client for the settings (tests and tools; the connector goes through ChromaStore)."""
    conf = settings.chroma
    return open_server(conf) if conf.host else open_embedded(settings.chroma_path)


def _drop(client: Any) -> None:
    """Close a client: Chroma stops its system once no client uses it, so the next client of the
    directory reads the files afresh."""
    with contextlib.suppress(Exception):  # a client of unreadable files may fail to close
        client.close()


_SHARED: dict[str, tuple[ChromaStore, int]] = {}
_SHARED_GUARD = threading.Lock()


def _key(settings: Settings) -> str:
    conf = settings.chroma
    return f"http://{conf.host}:{conf.port}" if conf.host else str(settings.chroma_path)


def acquire_store(settings: Settings) -> ChromaStore:
    """The process's one store for these settings' Chroma (shared: one embedded directory has one
    client per process, whose state every user must see); :func:`release_store` when done."""
    key = _key(settings)
    with _SHARED_GUARD:
        store, users = _SHARED.get(key, (None, 0))
        if store is None:
            store = ChromaStore.for_settings(settings)
        _SHARED[key] = (store, users + 1)
        return store


def release_store(store: ChromaStore) -> None:
    """One user is done with ``store``; the last one closes its client."""
    with _SHARED_GUARD:
        for key, (shared, users) in list(_SHARED.items()):
            if shared is store:
                if users > 1:
                    _SHARED[key] = (shared, users - 1)
                    return
                del _SHARED[key]
    store.release()


def clear_client_cache() -> None:
    """Forget every cached Chroma system of this process (after files were replaced)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")[:300]
