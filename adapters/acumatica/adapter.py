"""The Acumatica adapter: streams of canonical records for the sync job.

Open it as a context manager: it logs in on enter and always logs out on exit, also when the
body raised. ``read`` pages through a stream with a closed-start delta filter on the stream's
change field; ``scan_keys`` lists every key for deletion reconciliation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from connector.adapters.acumatica import odata
from connector.adapters.acumatica import values as v
from connector.adapters.acumatica.client import AcumaticaClient
from connector.adapters.acumatica.paging import pages
from connector.adapters.acumatica.streams import STREAMS, AcumaticaStream
from connector.clock import Clock
from connector.erp.protocol import RecordProblem, StreamSpec
from connector.erp.records import DocumentRecord, Page, Record
from connector.errors import ConfigError, ERPNotFound, ERPProtocolError, ERPRequestError
from connector.settings import SyncSettings, TenantSettings

log = logging.getLogger(__name__)

# Where the mapper reads a field from when the endpoint lacks it (said with the run's note). A gap
# with a fallback is logged at INFO, one without at WARNING.
_FALLBACKS: dict[str, tuple[tuple[str, str], ...]] = {
    "Customer": (
        ("CreditLimit", "the credit limit comes from CreditVerificationRules"),
        ("Email", "the e-mail from MainContact"),
    ),
    "Vendor": (("LegalName", "the name comes from VendorName"),),
    "Case": (("ClosureNotes", "the resolution from the description's 'Resolution:' paragraph"),),
}


class AcumaticaAdapter:
    """Reads Customer, Vendor, Invoice, SalesOrder, Bill and Case into canonical records."""

    # Pages overlap and are anchored on the previous page's last records (see
    # connector.adapters.acumatica.paging): a change during a read cannot make it skip a record.
    stable_paging = True

    def __init__(
        self,
        tenant: TenantSettings,
        *,
        sync: SyncSettings,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if tenant.kind != "acumatica":
            raise ConfigError(f"tenant {tenant.name!r} is a {tenant.kind} tenant, not acumatica")
        self.tenant = tenant.name
        self.settings = tenant
        self.sync = sync
        self._streams = self._configured_streams(tenant)
        self._custom = self._custom_fields(tenant)
        self._clock = clock
        self._transport = transport
        self._client: AcumaticaClient | None = None
        # An earlier run's session to log out before logging in (see connector.sync.erp_sessions).
        self.prior_session: str | None = None
        self._requests_before = 0
        self._retries_before = 0
        self._currencies: dict[str, str | None] = {}  # customer -> currency, for invoices lacking theirs

    @staticmethod
    def _configured_streams(tenant: TenantSettings) -> list[AcumaticaStream]:
        names = tenant.streams if tenant.streams is not None else list(STREAMS)
        unknown = [name for name in names if name not in STREAMS]
        if unknown:
            raise ConfigError(
                f"tenant {tenant.name!r}: unknown Acumatica stream(s) {', '.join(unknown)}; "
                f"known: {', '.join(STREAMS)}"
            )
        return [STREAMS[name] for name in names]

    @staticmethod
    def _custom_fields(tenant: TenantSettings) -> dict[str, str]:
        custom: dict[str, str] = {}
        for stream, fields in tenant.custom_fields.items():
            if stream not in STREAMS:
                raise ConfigError(f"tenant {tenant.name!r}: custom_fields names unknown stream {stream!r}")
            custom[stream] = ",".join(odata.custom_field(field) for field in fields)
        return custom

    # Context manager ----------------------------------------------------------------------------
    def __enter__(self) -> AcumaticaAdapter:
        if self._client is not None:
            raise RuntimeError("this Acumatica adapter is already open")
        client = AcumaticaClient(self.settings, clock=self._clock, transport=self._transport)
        try:
            client.open(self.prior_session)
        except BaseException:
            self._absorb_counts(client)
            client.http.close()
            raise
        self._client = client
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.close()
        finally:
            self._absorb_counts(client)

    def _absorb_counts(self, client: AcumaticaClient) -> None:
        self._requests_before += client.http.request_count
        self._retries_before += client.http.retry_count

    @property
    def client(self) -> AcumaticaClient:
        if self._client is None:
            raise RuntimeError("open the Acumatica adapter first: `with open_adapter(...) as adapter:`")
        return self._client

    def session_state(self) -> str | None:
        """The open session as text a later run can log out, or None (see SessionHandoff)."""
        return self._client.session_state() if self._client is not None else None

    @property
    def version(self) -> str | None:
        return self._client.version if self._client is not None else self.settings.version

    @property
    def request_count(self) -> int:
        live = self._client.http.request_count if self._client is not None else 0
        return self._requests_before + live

    @property
    def retry_count(self) -> int:
        live = self._client.http.retry_count if self._client is not None else 0
        return self._retries_before + live

    # Streams ------------------------------------------------------------------------------------
    def streams(self) -> list[StreamSpec]:
        return [stream.spec for stream in self._streams]

    def stream(self, name: str) -> AcumaticaStream:
        for stream in self._streams:
            if stream.name == name:
                return stream
        raise ConfigError(
            f"tenant {self.tenant!r} has no Acumatica stream {name!r}; "
            f"configured: {', '.join(s.name for s in self._streams)}"
        )

    def lacking(self, stream: str) -> tuple[str, ...]:
        """The stream's fields that the tenant's endpoint version does not define (see the catalog)."""
        return self.stream(stream).absent_at(self.version)

    def _lacking_note(self, stream: AcumaticaStream) -> str | None:
        absent = stream.absent_at(self.version)
        if not absent:
            return None
        note = (
            f"the endpoint Default/{self.version} has no {stream.entity} field(s) {', '.join(absent)}: "
            "read as empty"
        )
        fallbacks = [text for name, text in _FALLBACKS.get(stream.name, ()) if name in absent]
        return note + (f" ({'; '.join(fallbacks)})" if fallbacks else "")

    def _params(self, stream: AcumaticaStream, *, filter_text: str | None = None) -> dict[str, str]:
        params = {"$select": ",".join(stream.select_at(self.version))}
        expand = stream.expand_at(self.version)
        if expand:
            params["$expand"] = ",".join(expand)
        custom = ",".join(part for part in (",".join(stream.custom), self._custom.get(stream.name)) if part)
        if custom:
            params["$custom"] = custom
        if filter_text:
            params["$filter"] = filter_text
        return params

    def read(self, stream: str, since: datetime | None, until: datetime | None = None) -> Iterator[Page]:
        """Pages of records with ``since <= change field <= until`` (either bound optional)."""
        spec = self.stream(stream)
        changed = spec.change_field_at(self.version)
        params = self._params(spec, filter_text=odata.window(changed, since, until))
        client = self.client
        page_size = self.settings.page_size

        def fetch(skip: int, top: int) -> list[Any]:
            nonlocal params
            try:
                return client.list(spec.entity, {**params, "$top": str(top), "$skip": str(skip)})
            except ERPRequestError:
                if skip or not self._drop_undefined_custom(spec):
                    raise
            params = self._params(spec, filter_text=params.get("$filter"))  # the rest of the fields
            return client.list(spec.entity, {**params, "$top": str(top), "$skip": str(skip)})

        note = self._lacking_note(spec)
        if note is not None:
            covered = {name for name, _ in _FALLBACKS.get(spec.name, ())}
            level = logging.INFO if set(spec.absent_at(self.version)) <= covered else logging.WARNING
            log.log(level, "Acumatica tenant %s, %s: %s", self.tenant, spec.name, note)
        before = self.request_count
        for number, rows in pages(fetch, page_size, what=f"{spec.entity} read"):
            page = self._map_page(spec, number, rows, changed)
            page.requests = self.request_count - before
            before = self.request_count
            if note is not None:  # said once per read, in the run's problems
                page.notes.append(note)
                note = None
            yield page

    def _map_page(self, stream: AcumaticaStream, number: int, rows: list[Any], changed: str) -> Page:
        records: list[Record] = []
        problems: list[RecordProblem] = []
        latest: datetime | None = None
        for row in rows:
            if not isinstance(row, Mapping):
                problems.append(
                    RecordProblem(stream.name, None, f"expected a JSON object, got {type(row).__name__}")
                )
                continue
            try:
                modified = v.timestamp(row, changed)
            except v.FieldError:
                modified = None
            if modified is not None and (latest is None or modified > latest):
                latest = modified
            try:
                records.append(stream.mapper(row, self.tenant))
            except (v.FieldError, ValueError) as exc:
                problems.append(RecordProblem(stream.name, stream.key_text(row), str(exc)))
        if stream.name == "Invoice":
            records = self._with_currency(records)
        if problems and self.sync.on_malformed_record == "fail":
            first = problems[0]
            raise ERPProtocolError(
                f"Acumatica {stream.name} page {number}: record {first.key or '(no key)'} is malformed "
                f"({first.reason}); {len(problems)} malformed on this page. Fix the record in Acumatica or "
                "set sync.on_malformed_record = 'skip'",
                tenant=self.tenant,
            )
        for problem in problems:
            log.warning(
                "skipped malformed Acumatica %s record %s: %s",
                problem.stream,
                problem.key or "(no key)",
                problem.reason,
            )
        return Page(
            stream=stream.name, number=number, records=records, max_modified=latest, problems=problems
        )

    # Custom fields ------------------------------------------------------------------------------
    def undefined_custom_fields(self) -> list[tuple[str, str, str]]:
        """(stream, View.Field, why) for each configured custom field the server does not serve at
        this endpoint version: each is asked for alone on one record (``connector doctor`` says so)."""
        found = []
        for stream in self._streams:
            for field in self.settings.custom_fields.get(stream.name, []):
                why = self._probe_custom(stream, field)
                if why is not None:
                    found.append((stream.name, field, why))
        return found

    def _probe_custom(self, stream: AcumaticaStream, field: str) -> str | None:
        params = {"$select": ",".join(stream.key_fields), "$custom": field, "$top": "1"}
        try:
            rows = self.client.list(stream.entity, params)
        except ERPRequestError as exc:
            return f"the endpoint Default/{self.version} refused it ({exc})"
        row = rows[0] if rows and isinstance(rows[0], Mapping) else None
        if row is None:
            return None  # no record to tell by
        view, _, name = field.partition(".")
        custom = row.get("custom")
        fields = custom.get(view) if isinstance(custom, Mapping) else None
        if not isinstance(fields, Mapping) or name not in fields:
            return f"the endpoint Default/{self.version} did not return it"
        return None

    def _drop_undefined_custom(self, stream: AcumaticaStream) -> bool:
        """After a refused read: leave out the tenant's custom fields the server does not serve, so the
        sync reads the rest (each said once, as a warning). False when none was left out."""
        fields = self.settings.custom_fields.get(stream.name, [])
        bad = {field for field in fields if self._probe_custom(stream, field) is not None}
        if not bad:
            return False
        kept = [field for field in fields if field not in bad]
        self._custom[stream.name] = ",".join(kept)
        log.warning(
            "Acumatica tenant %s, %s: custom field(s) %s are not served by the endpoint Default/%s; "
            "reading the stream without them",
            self.tenant,
            stream.name,
            ", ".join(sorted(bad)),
            self.version,
        )
        return True

    def _with_currency(self, records: list[Record]) -> list[Record]:
        """Invoices whose response lacks the document's currency take their customer's, labelled
        ``extra["currency_source"] = "customer"`` (read once per customer and run)."""
        result: list[Record] = []
        for record in records:
            if isinstance(record, DocumentRecord) and record.currency is None and record.party_external_id:
                currency = self._customer_currency(record.party_external_id)
                if currency is not None:
                    record = replace(
                        record, currency=currency, extra={**record.extra, "currency_source": "customer"}
                    )
            result.append(record)
        return result

    def _customer_currency(self, customer: str) -> str | None:
        if customer not in self._currencies:
            try:
                row = self.client.get("Customer", (customer,), {"$select": "CustomerID,CurrencyID"})
            except ERPNotFound:
                row = {}
            self._currencies[customer] = v.text(row, "CurrencyID")
        return self._currencies[customer]

    def scan_keys(self, stream: str) -> Iterator[str]:
        """Every external id of the stream, reading only the key fields."""
        spec = self.stream(stream)
        client = self.client
        params = {"$select": ",".join(spec.key_fields)}

        def fetch(skip: int, top: int) -> list[Any]:
            return client.list(spec.entity, {**params, "$top": str(top), "$skip": str(skip)})

        for _, rows in pages(fetch, self.settings.page_size, what=f"{spec.entity} key scan"):
            for row in rows:
                key = spec.key_text(row) if isinstance(row, Mapping) else None
                if key is None:
                    log.warning(
                        "Acumatica %s key scan: a record without its key fields was ignored", spec.name
                    )
                    continue
                yield key

    # Single records -----------------------------------------------------------------------------
    def get(self, stream: str, external_id: str) -> Record:
        """One record by external id through the by-key URL; ERPNotFound when it does not exist."""
        spec = self.stream(stream)
        try:
            keys = spec.split_external_id(external_id)
        except ValueError as exc:
            raise ERPNotFound(str(exc), tenant=self.tenant) from None
        if spec.select_keys_at(self.version):
            # the id holds a select value's description; the by-key URL takes its ID
            found = self.find(stream, external_id)
            if found is None:
                raise ERPNotFound(f"Acumatica {spec.name} {external_id!r} does not exist", tenant=self.tenant)
            return found
        row = self.client.get(spec.entity, keys, self._params(spec))
        return self._complete(spec, self._map_one(spec, row))

    def find(self, stream: str, external_id: str) -> Record | None:
        """One record by external id through a ``$filter`` on its key fields; None when absent."""
        spec = self.stream(stream)
        try:
            keys = spec.split_external_id(external_id)
        except ValueError:
            return None
        selects = spec.select_keys_at(self.version)
        # a select key's part is its description, which $filter does not take: filter on the other
        # keys and match the description below (a number shared by two types reads both)
        condition = odata.all_of(
            odata.compare(f, "eq", k) for f, k in zip(spec.key_fields, keys, strict=True) if f not in selects
        )
        top = "50" if selects else "2"
        rows = self.client.list(spec.entity, {**self._params(spec, filter_text=condition), "$top": top})
        matches = [row for row in rows if isinstance(row, Mapping) and spec.key_text(row) == external_id]
        return self._complete(spec, self._map_one(spec, matches[0])) if matches else None

    def _complete(self, spec: AcumaticaStream, record: Record) -> Record:
        return self._with_currency([record])[0] if spec.name == "Invoice" else record

    def _map_one(self, spec: AcumaticaStream, row: Mapping[str, Any]) -> Record:
        try:
            return spec.mapper(row, self.tenant)
        except (v.FieldError, ValueError) as exc:
            raise ERPProtocolError(
                f"Acumatica {spec.name} record {spec.key_text(row) or '(no key)'} is malformed: {exc}",
                tenant=self.tenant,
            ) from None
