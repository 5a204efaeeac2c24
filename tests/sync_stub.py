"""An in-memory adapter that follows :class:`connector.erp.protocol.Adapter`, for tests of sync logic.

It pages like the ERPs do (``$skip``/``$top`` over a filter evaluated at every page request, so
records changed mid-run shift later pages exactly as on a real server) and exposes hooks to change
data or fail between pages. The fault tests against the real fake ERPs over HTTP live next to it
in the test suite; this stub keeps the runner's unit tests fast and explicit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

from connector.erp.protocol import StreamSpec
from connector.erp.records import Page, PartyRecord, Record
from connector.errors import ERPProtocolError

PageHook = Callable[[str, int], None]


@dataclass
class StubStream:
    spec: StreamSpec
    records: dict[str, Record] = field(default_factory=dict)


class StubAdapter:
    """Holds records per stream; ``read`` filters ``since <= modified <= until`` and orders by key."""

    def __init__(self, tenant: str, *, page_size: int = 3) -> None:
        self.tenant = tenant
        self.page_size = page_size
        self.streams_by_name: dict[str, StubStream] = {}
        self.before_page: PageHook | None = None  # called with (stream, page number) before serving it
        self.malformed_pages: set[tuple[str, int]] = set()
        self.logins = 0
        self.logouts = 0
        self.reads: list[tuple[str, datetime | None, datetime | None]] = []
        self._requests = 0

    # Set-up ----------------------------------------------------------------------------------
    def add_stream(
        self,
        name: str,
        record_type: Literal["party", "document", "case"],
        *,
        granularity: timedelta = timedelta(microseconds=1),
    ) -> StubStream:
        stream = StubStream(StreamSpec(name, record_type, "LastModifiedDateTime", granularity))
        self.streams_by_name[name] = stream
        return stream

    def put(self, stream: str, *records: Record) -> None:
        for record in records:
            self.streams_by_name[stream].records[record.external_id] = record

    def delete(self, stream: str, external_id: str) -> None:
        del self.streams_by_name[stream].records[external_id]

    # Adapter protocol ------------------------------------------------------------------------
    def __enter__(self) -> StubAdapter:
        self.logins += 1
        self._requests += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.logouts += 1
        self._requests += 1

    def streams(self) -> list[StreamSpec]:
        return [s.spec for s in self.streams_by_name.values()]

    def read(self, stream: str, since: datetime | None, until: datetime | None = None) -> Iterator[Page]:
        self.reads.append((stream, since, until))
        number = 0
        while True:
            number += 1
            if self.before_page is not None:
                self.before_page(stream, number)
            self._requests += 1
            if (stream, number) in self.malformed_pages:
                raise ERPProtocolError(f"{stream} page {number}: expected a JSON array, got an HTML page")
            selected = self._select(stream, since, until)
            chunk = selected[(number - 1) * self.page_size : number * self.page_size]
            modified = [r.source_modified_at for r in chunk if r.source_modified_at is not None]
            yield Page(stream, number, list(chunk), max(modified, default=None))
            if len(chunk) < self.page_size:
                return

    def _select(self, stream: str, since: datetime | None, until: datetime | None) -> list[Record]:
        """``since <= modified <= until`` in key order, like the Acumatica adapter's filter."""
        records = self.streams_by_name[stream].records
        selected = []
        for key in sorted(records):
            modified = records[key].source_modified_at
            if since is not None and (modified is None or modified < since):
                continue
            if until is not None and modified is not None and modified > until:
                continue
            selected.append(records[key])
        return selected

    def scan_keys(self, stream: str) -> Iterator[str]:
        self._requests += 1
        yield from sorted(self.streams_by_name[stream].records)

    @property
    def request_count(self) -> int:
        return self._requests

    @property
    def retry_count(self) -> int:
        return 0


def customer(ext: str, modified: datetime, **values: object) -> PartyRecord:
    """An active USD customer of tenant ``acme`` last modified at ``modified``; ``values`` override fields."""
    base = PartyRecord(
        tenant="acme",
        kind="customer",
        external_id=ext,
        name=f"Customer {ext}",
        status="Active",
        currency="USD",
        credit_limit=Decimal("50000.00"),
        terms="30D",
        source_modified_at=modified,
    )
    return replace(base, **values)  # type: ignore[arg-type]
