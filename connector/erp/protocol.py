"""The contract between adapters and the sync job.

An adapter is opened as a context manager (it logs in, and always logs out), then lists its
streams and reads them page by page. It knows nothing about storage or watermarks: the sync job
passes the window (``since`` inclusive, ``until`` pinned at run start) and persists what comes back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Literal, Protocol, runtime_checkable

from connector.erp.records import Page
from connector.settings import TenantSettings


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """What the sync job needs to know about a stream."""

    name: str
    record_type: Literal["party", "document", "case"]
    cursor_field: str
    cursor_granularity: timedelta = timedelta(microseconds=1)  # SAP dates: timedelta(days=1)


@dataclass(frozen=True, slots=True)
class RecordProblem:
    """A record that could not be mapped: reported with its key, never stored half-empty."""

    stream: str
    key: str | None
    reason: str


@runtime_checkable
class SessionHandoff(Protocol):
    """An adapter whose ERP session a later run can close if this run is killed before logging out.

    The sync records :meth:`session_state` after login (sealed, see ``connector.sync.erp_sessions``)
    and sets ``prior_session`` from an earlier run's record before entering the adapter.
    """

    prior_session: str | None

    def session_state(self) -> str | None: ...


@runtime_checkable
class Adapter(Protocol):
    tenant: str

    def __enter__(self) -> Adapter: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def streams(self) -> list[StreamSpec]:
        """The streams this tenant is configured to read."""
        ...

    def read(self, stream: str, since: datetime | None, until: datetime | None = None) -> Iterator[Page]:
        """Pages of records modified at or after ``since`` (all when None), up to ``until``."""
        ...

    def scan_keys(self, stream: str) -> Iterator[str]:
        """Every external id that currently exists in the stream (for deletion reconciliation)."""
        ...

    @property
    def request_count(self) -> int:
        """HTTP requests made so far (for the runs table)."""
        ...

    @property
    def retry_count(self) -> int:
        """Retries made so far."""
        ...


@runtime_checkable
class KeyReader(Protocol):
    """An adapter that can read records by key: the key scan then also reads what the store lacks
    (records no delta filter selects, such as an SAP partner with null change and creation dates)."""

    def read_keys(self, stream: str, keys: Collection[str]) -> Iterator[Page]:
        """Pages of the records of ``stream`` with these external ids (unknown ids are left out)."""
        ...


#: Opens the adapter for a tenant (not yet entered). The composition root binds it to settings and a
#: clock; the sync job only calls it, so it never imports an ERP's code.
AdapterFactory = Callable[[TenantSettings], AbstractContextManager[Adapter]]
