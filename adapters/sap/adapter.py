"""The SAP S/4HANA adapter: the streams of the catalog, read into canonical records.

Streams: ``BusinessPartner`` (parties: one per customer and per supplier role), ``SalesOrder``
(documents of type ``sales_order``), ``BillingDocument`` (``ar_invoice`` / ``credit_memo``, without
a balance) and ``OpenItem`` (``open_item``: the open customer and supplier items that carry it).
A delta read sends ``changed ge since or created ge since`` (whole days for day-granular fields,
so the boundary day is read again); ``until`` is not sent: rows stamped after it come back and the
sync job caps its watermark at ``until`` anyway. Each page reports ``max_modified`` over every row
whose stamp could be read, malformed ones included, and lists the rows it skipped as problems.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from connector.adapters.sap.catalog import Catalog, StreamDef, load_catalog
from connector.adapters.sap.client import SAPClient
from connector.adapters.sap.mapping import (
    MappingRules,
    map_billing_document,
    map_business_partner,
    map_open_item,
    map_sales_order,
    modified_at,
)
from connector.adapters.sap.odata import decode_entity, parse_single
from connector.adapters.sap.paging import PageWalker, Query
from connector.adapters.sap.query import (
    all_of,
    expand_option,
    key_predicate,
    read_filter,
    select_fields,
    string_literal,
)
from connector.adapters.sap.values import DECODERS, MalformedValue, time_zone
from connector.clock import Clock
from connector.erp.protocol import RecordProblem, StreamSpec
from connector.erp.records import Page, Record
from connector.errors import ConfigError, ERPProtocolError
from connector.settings import SyncSettings, TenantSettings

log = logging.getLogger(__name__)

Mapper = Callable[[dict[str, Any], StreamDef, MappingRules], Record | Sequence[Record]]

_MAPPERS: dict[str, Mapper] = {
    "BusinessPartner": map_business_partner,
    "SalesOrder": map_sales_order,
    "BillingDocument": map_billing_document,
    "OpenItem": map_open_item,
}
# Rows a mapper turns into no record on purpose, said in the run's problems (never silently).
_PASSED_OVER = {"BusinessPartner": "business partner(s) with neither a customer nor a supplier role"}
_KEYS_PER_READ = 40  # keys per $filter of read_keys: the URL stays well under 8 KB
# Who owns a scanned key: a partner counts while it has a customer or supplier role.
_SCAN_FILTERS = {"BusinessPartner": "Customer ne '' or Supplier ne ''"}


class SAPAdapter:
    """Reads one SAP tenant. Use as a context manager; see :class:`connector.erp.protocol.Adapter`."""

    # Reads page by key (see connector.adapters.sap.paging): no change during a read can make it
    # skip a record, so the sync need not probe for changes after it.
    stable_paging = True

    def __init__(
        self,
        tenant: TenantSettings,
        *,
        sync: SyncSettings,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
        catalog: Catalog | None = None,
        catalog_path: Path | None = None,
    ) -> None:
        if tenant.kind != "sap":
            raise ConfigError(f"tenant {tenant.name!r} is a {tenant.kind} tenant, not an SAP one")
        self.tenant = tenant.name
        self.settings = tenant
        self.sync = sync
        self.catalog = catalog or load_catalog(catalog_path)
        self.rules = MappingRules(
            tenant=tenant.name,
            terms_source=tenant.terms_source,
            company_code=tenant.company_code,
            sales_organization=tenant.sales_organization,
            time_zone=time_zone(tenant.sap_time_zone),
        )
        self._streams = self._configured_streams()
        self.client = SAPClient(tenant, clock=clock, transport=transport)

    def _configured_streams(self) -> dict[str, StreamDef]:
        version = self.settings.odata_version
        known = {
            name: self.catalog.stream_for(name, version) for name in self.catalog.streams if name in _MAPPERS
        }
        wanted = self.settings.streams
        if wanted is None:
            return known
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise ConfigError(
                f"tenant {self.tenant!r}: unknown SAP stream(s) {', '.join(unknown)}; "
                f"available: {', '.join(known)}"
            )
        return {name: known[name] for name in wanted}

    # Context manager ---------------------------------------------------------------------------
    def __enter__(self) -> SAPAdapter:
        try:
            self.client.open()
        except BaseException:
            self.client.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.client.close()  # OData has no session to log out of

    # Protocol ----------------------------------------------------------------------------------
    def streams(self) -> list[StreamSpec]:
        return [
            StreamSpec(
                name=s.name,
                record_type=s.record_type,
                cursor_field=s.changed.field,
                cursor_granularity=timedelta(days=1) if s.day_granular else timedelta(microseconds=1),
            )
            for s in self._streams.values()
        ]

    def read(self, stream: str, since: datetime | None, until: datetime | None = None) -> Iterator[Page]:
        """Pages of ``stream`` changed or created at or after ``since`` (everything when None)."""
        definition = self._stream(stream)
        params = self._read_params(definition)
        where = read_filter(definition, since, definition.version, self.rules.time_zone)
        if where is not None:
            params["$filter"] = where
        walker = PageWalker(
            self.client,
            Query(
                self._url(definition),
                params,
                definition.keys,
                count=True,
                keyset=True,
                version=definition.version,
            ),
            page_size=self.settings.page_size,
        )
        requests_before = self.client.request_count
        for number, raw in enumerate(walker, start=1):
            if number == 1 and walker.total is not None:
                log.info("SAP %s/%s: %d rows to read", self.tenant, stream, walker.total)
            page = self._map_page(definition, raw.rows, number)
            page.requests = self.client.request_count - requests_before
            requests_before = self.client.request_count
            yield page

    def read_keys(self, stream: str, keys: Collection[str]) -> Iterator[Page]:
        """Pages of the records with these keys, ``_KEYS_PER_READ`` keys per ``$filter``.

        For the key scan: a record no delta filter selects (a partner whose CreationDate and
        LastChangeDate are both null) is found by its key and read this way.
        """
        definition = self._stream(stream)
        wanted = sorted(keys)
        number = 0
        for start in range(0, len(wanted), _KEYS_PER_READ):
            terms = []
            for key in wanted[start : start + _KEYS_PER_READ]:
                try:
                    values = definition.key_values(key)
                except ValueError:
                    continue  # not a key of this stream: nothing to read
                terms.append(" and ".join(f"{k} eq {string_literal(v)}" for k, v in values.items()))
            if not terms:
                continue
            params = self._read_params(definition)
            params["$filter"] = all_of(definition.scope, " or ".join(f"({t})" for t in terms)) or ""
            walker = PageWalker(
                self.client,
                Query(
                    self._url(definition), params, definition.keys, keyset=True, version=definition.version
                ),
                page_size=self.settings.page_size,
            )
            requests_before = self.client.request_count
            for raw in walker:
                number += 1
                page = self._map_page(definition, raw.rows, number)
                page.requests = self.client.request_count - requests_before
                requests_before = self.client.request_count
                yield page

    def fetch(self, stream: str, key: str) -> list[Record]:
        """One entity of ``stream`` by key, mapped (a partner gives one record per role).

        Raises :class:`~connector.errors.ERPNotFound` when SAP does not know the key.
        """
        definition = self._stream(stream)
        try:
            url = self._url(definition) + key_predicate(definition.key_values(key))
        except ValueError as exc:
            raise ConfigError(f"tenant {self.tenant!r}: {exc}") from None
        params = self._read_params(definition)
        del params["$orderby"]  # not allowed on a single entity
        row = parse_single(self.client.get_json(url, params, definition.version), definition.version)
        page = self._map_page(definition, [row], 1)
        if page.problems:
            raise ERPProtocolError(
                f"SAP {stream} {key!r} cannot be mapped: {page.problems[0].reason}", tenant=self.tenant
            )
        return page.records

    def scan_keys(self, stream: str) -> Iterator[str]:
        """Every key the stream currently lists (only the key field is fetched)."""
        definition = self._stream(stream)
        keys = ",".join(definition.keys)
        params = {"$select": keys, "$orderby": keys}
        where = all_of(_SCAN_FILTERS.get(stream), definition.scope, definition.open_filter)
        if where is not None:
            params["$filter"] = where
        walker = PageWalker(
            self.client,
            Query(self._url(definition), params, definition.keys, keyset=True, version=definition.version),
            page_size=self.settings.page_size,
        )
        for page in walker:
            for row in page.rows:
                key = definition.key_of(row)
                if key is not None:
                    yield key

    def doctor_notes(self) -> list[str]:
        """What ``doctor`` says about this tenant: which OData version each stream is read with.

        A v4 tenant reads business partners and open items over v2: SAP publishes no v4 service
        for them (see docs/guides/sap-odata-versions.md)."""
        by_version: dict[str, list[str]] = {}
        for definition in self._streams.values():
            by_version.setdefault(definition.version, []).append(definition.name)
        if self.settings.odata_version == "v2" or "v2" not in by_version:
            return [f"OData {self.settings.odata_version} for every stream"]
        return [
            f"OData v4 for {', '.join(by_version.get('v4', [])) or 'no stream'}; "
            f"v2 for {', '.join(by_version['v2'])} (SAP publishes no v4 service for them)"
        ]

    @property
    def request_count(self) -> int:
        return self.client.request_count

    @property
    def retry_count(self) -> int:
        return self.client.retry_count

    # Internals ---------------------------------------------------------------------------------
    def _stream(self, stream: str) -> StreamDef:
        definition = self._streams.get(stream)
        if definition is None:
            raise ConfigError(
                f"tenant {self.tenant!r} has no SAP stream {stream!r}; streams: {', '.join(self._streams)}"
            )
        return definition

    def _read_params(self, definition: StreamDef) -> dict[str, str]:
        version = definition.version
        params = {"$orderby": ",".join(definition.keys)}
        if definition.select:
            params["$select"] = select_fields(definition, self.catalog, version)
        if definition.expand:
            params["$expand"] = expand_option(definition.expand, version, self.catalog, definition)
        return params

    def _url(self, definition: StreamDef) -> str:
        version = definition.version
        services = self.catalog.services[definition.service]
        if version not in services:
            raise ConfigError(
                f"sap catalog: service {definition.service} has no OData {version} path; "
                f"set services.{definition.service}.{version} or use odata_version = 'v2'"
            )
        return f"{self.settings.base_url}{services[version]}/{definition.entity_set}"

    def _map_page(self, definition: StreamDef, rows: list[Any], number: int) -> Page:
        entity_type = self.catalog.entity(definition.entity_set)
        mapper = _MAPPERS[definition.name]
        records: list[Record] = []
        problems: list[RecordProblem] = []
        passed_over: list[str] = []
        newest: datetime | None = None
        zone = self.rules.time_zone
        for row in rows:
            entity = None
            try:
                if not isinstance(row, dict):
                    raise MalformedValue(f"expected an entity object, got {type(row).__name__}")
                entity = decode_entity(row, entity_type, self.catalog)
                mapped = mapper(entity, definition, self.rules)
            except ValueError as exc:  # MalformedValue, MappingError, a record's own validation
                problems.append(RecordProblem(definition.name, definition.key_of(row), str(exc)))
                mapped = ()
            # The stamp counts for the watermark even when the record itself was skipped.
            stamp = (
                modified_at(entity, definition, zone)
                if entity is not None
                else _stamp_of(row, definition, self.catalog, zone)
            )
            if stamp is not None and (newest is None or stamp > newest):
                newest = stamp
            if isinstance(mapped, Sequence):
                records.extend(mapped)
                if not mapped and entity is not None and definition.name in _PASSED_OVER:
                    passed_over.append(definition.key_of(entity) or "?")
            else:
                records.append(mapped)
        notes = []
        if passed_over:
            shown = ", ".join(passed_over[:5]) + (
                f" and {len(passed_over) - 5} more" if len(passed_over) > 5 else ""
            )
            notes.append(f"passed over {len(passed_over)} {_PASSED_OVER[definition.name]}: {shown}")
        return Page(definition.name, number, records, max_modified=newest, problems=problems, notes=notes)


def _stamp_of(row: Any, definition: StreamDef, catalog: Catalog, zone: tzinfo) -> datetime | None:
    """The row's modification time from its cursor fields alone, so a malformed row still counts."""
    if not isinstance(row, dict):
        return None
    fields = catalog.entity(definition.entity_set).fields
    decoded: dict[str, Any] = {}
    for cursor in definition.cursors:
        for name in (cursor.field, cursor.time_field):
            if name is None or name not in row:
                continue
            try:
                decoded[name] = DECODERS[fields[name]](row[name])
            except MalformedValue:
                decoded[name] = None
    return modified_at(decoded, definition, zone)
