"""A fake Acumatica that behaves like the contract-based REST API, quirks included.

Plain class with ``handle(request) -> response``, so it runs in-process under respx or
``httpx.MockTransport`` and as a real loopback server (:func:`connector.testing.server.serve`)::

    fake = FakeAcumatica(seed=0, customers=200)
    transport = httpx.MockTransport(fake.handle)                 # or, with respx:
    respx_mock.route(host=fake.host).mock(side_effect=fake.handle)
    tenant = fake.tenant_settings()                              # TenantSettings pointing at the fake

It implements cookie login/logout with idle expiry and an API login limit, the OAuth token
endpoint (password and refresh-token grants; no client credentials), ``GET /entity``, lists with
``$filter`` ``$top`` ``$skip`` ``$select`` ``$expand`` ``$custom``, by-key reads, the real error
bodies and status codes, and injectable faults. It counts the requests it served per path.

Each endpoint version is served as Acumatica's published contract defines it
(:mod:`connector.testing.acumatica_schema`). A ``$select``, ``$filter``, ``$expand`` or ``$custom``
naming something the version does not define is answered with a 400: Acumatica's documentation does
not say how a real server answers it, and a fake must never be more forgiving than the ERP.
"""

from __future__ import annotations

import gc
import json
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal
from urllib.parse import parse_qs, unquote

import httpx
from pydantic import SecretStr

from connector.clock import Clock, SystemClock
from connector.settings import TenantSettings
from connector.testing import acumatica_data as data
from connector.testing.acumatica_faults import Fault, FaultPlan
from connector.testing.acumatica_filter import FilterError, field_paths
from connector.testing.acumatica_render import QueryError, Renderer, parse_shape
from connector.testing.acumatica_schema import ENTITIES, EntityView
from connector.testing.acumatica_sessions import LoginLimitReached, SessionBook
from connector.testing.acumatica_store import MISSING, EntityTable, Row
from connector.testing.datagen import DataGen

DEFAULT_BASE_URL = "https://acumatica.test/AcumaticaERP"
# Offered by default: 20.200.001 to 25.200.001. 26.200.001 (select values, date-only values, new key
# shapes) is served when asked for: FakeAcumatica(versions=ALL_VERSIONS)
DEFAULT_VERSIONS = ("20.200.001", "22.200.001", "23.200.001", "24.200.001", "25.200.001")
ALL_VERSIONS = (*DEFAULT_VERSIONS, "26.200.001")
ALLOWED_PARAMS = frozenset({"$select", "$filter", "$expand", "$custom", "$skip", "$top"})
NOT_FOUND_TYPE = "PX.Api.ContractBased.NoEntitySatisfiesTheConditionException"
_JSON = "application/json; charset=utf-8"
_AUTH_COOKIE = ".ASPXAUTH"
_FREEZE_ABOVE = 50_000
LOGIN_LIMIT_MESSAGE = "API Login Limit: the maximum number of concurrent API sessions is reached."


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the fake answered (for assertions)."""

    method: str
    path: str  # without the instance prefix and query, e.g. /entity/Default/24.200.001/Customer
    target: str  # an entity name, or login / logout / token / index / unknown
    kind: Literal["list", "record", "service"]
    params: dict[str, str]
    status: int


def _error(
    status: int, exception_message: str, exception_type: str = "PX.Data.PXException"
) -> httpx.Response:
    body = {
        "message": "An error has occurred.",
        "exceptionMessage": exception_message,
        "exceptionType": exception_type,
        "stackTrace": "   at PX.Api.ContractBased.EntityService.Process(...)",
    }
    return httpx.Response(status, content=json.dumps(body).encode(), headers={"Content-Type": _JSON})


def _json(status: int, payload: Any) -> httpx.Response:
    return httpx.Response(status, content=json.dumps(payload).encode(), headers={"Content-Type": _JSON})


def _check_filter(wire: EntityView, filter_text: str | None, version: str) -> None:
    """A ``$filter`` naming a field the endpoint version does not define is refused, like ``$select``."""
    for path in field_paths(filter_text or ""):
        if wire.resolve(path) is None:
            raise QueryError(
                f"$filter: the entity {wire.definition.name} has no field {path!r} in the endpoint "
                f"Default/{version}"
            )


def _stored_keys(wire: EntityView, keys: list[str]) -> list[str]:
    """By-key URL values as the rows hold them: a select key's ID (``INV`` on 26) -> its description."""
    fields = wire.definition.key_fields
    if len(keys) != len(fields) or not wire.selects:
        return keys
    result = []
    for name, key in zip(fields, keys, strict=True):
        codes = wire.selects.get(name) or {}
        found = next((text for text, code in codes.items() if code.casefold() == key.casefold()), None)
        result.append(key if found is None else found)
    return result


def _cookies(request: httpx.Request) -> dict[str, str]:
    jar: dict[str, str] = {}
    for header in request.headers.get_list("cookie"):
        for part in header.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep:
                jar[name] = value
    return jar


class FakeAcumatica:
    """In-memory Acumatica tenant. See the module docstring; all public methods are thread-safe."""

    kind = "acumatica"

    def __init__(
        self,
        seed: int = 0,
        customers: int = 200,
        vendors: int = 50,
        invoices: int = 600,
        sales_orders: int = 300,
        bills: int = 150,
        cases: int = 200,
        *,
        clock: Clock | None = None,
        as_of: datetime | None = None,
        history_days: int = 730,
        base_url: str = DEFAULT_BASE_URL,
        versions: Iterable[str] = DEFAULT_VERSIONS,
        username: str = "admin",
        password: str = "fake-Passw0rd!",
        company: str = "Company",
        branch: str = "HQ",
        client_id: str = "5D9E7C1A-0B4F-4E0C-9D61-3C1F2A7B8E90@Company",
        client_secret: str = "fake-client-secret",
        utc_offset: timedelta = timedelta(0),
        session_timeout: timedelta = timedelta(minutes=10),
        max_sessions: int = 10,
        token_lifetime: timedelta = timedelta(hours=1),
        placeholder_customer: int | None = 100,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.base_url = base_url.rstrip("/")
        self.versions = tuple(versions)
        self.username = username
        self.password = password
        self.company = company
        self.branch = branch
        self.client_id = client_id
        self.client_secret = client_secret
        self.tz = timezone(utc_offset)
        self.token_lifetime = token_lifetime
        self.sessions = SessionBook(self.clock, idle_timeout=session_timeout, max_sessions=max_sessions)
        self.faults = FaultPlan()
        self.request_counts: Counter[str] = Counter()
        self.requests: list[ServedRequest] = []
        self.tables = {name: EntityTable(definition, self.tz) for name, definition in ENTITIES.items()}
        self._renderers: dict[tuple[str, str], Renderer] = {}
        self._last_list: dict[str, bytes] = {}
        self._lock = threading.RLock()
        self._gen = DataGen(seed)
        # the position of the customer whose id is "<NEW>", as in real tenants (None: no such customer)
        self.placeholder_customer = placeholder_customer
        end = as_of or self.clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
        self.as_of = end.astimezone(UTC)
        collecting = gc.isenabled()
        gc.disable()  # bulk creation of acyclic data: cyclic GC passes would only slow it down
        try:
            self._generate(customers, vendors, invoices, sales_orders, bills, cases, history_days)
        finally:
            if collecting:
                gc.enable()
        if customers + vendors + invoices + sales_orders + bills + cases > _FREEZE_ABOVE:
            gc.freeze()  # keep the big, long-lived data out of later GC passes: pages stay fast

    # Data generation ----------------------------------------------------------------------------
    def _generate(
        self,
        customers: int,
        vendors: int,
        invoices: int,
        orders: int,
        bills: int,
        cases: int,
        history_days: int,
    ) -> None:
        gen = self._gen
        start = self.as_of - timedelta(days=history_days)

        def stamps() -> data.Stamper:
            return data.Stamper(gen, start, self.as_of)

        customer_refs: list[data.PartyRef] = []
        vendor_refs: list[data.PartyRef] = []
        invoice_numbers: list[tuple[str, str]] = []
        self.tables["Customer"].load(
            data.customers(gen, customers, stamps(), customer_refs, self.placeholder_customer)
        )
        self.tables["Vendor"].load(data.vendors(gen, vendors, stamps(), vendor_refs))
        self.tables["Invoice"].load(data.invoices(gen, invoices, stamps(), customer_refs, invoice_numbers))
        self.tables["SalesOrder"].load(data.sales_orders(gen, orders, stamps(), customer_refs))
        self.tables["Bill"].load(data.bills(gen, bills, stamps(), vendor_refs))
        self.tables["Case"].load(data.cases(gen, cases, stamps(), customer_refs, invoice_numbers))

    # Connection details -------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return httpx.URL(self.base_url).host

    def credentials(self) -> dict[str, str]:
        """What a client needs to log in (printed by ``connector fake-erp serve``)."""
        return {
            "username": self.username,
            "password": self.password,
            "company": self.company,
            "branch": self.branch,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
        }

    def tenant_settings(
        self,
        name: str = "acumatica-fake",
        *,
        base_url: str | None = None,
        auth: Literal["session", "oauth"] = "session",
        **overrides: Any,
    ) -> TenantSettings:
        """``TenantSettings`` that log in to this fake (``base_url`` for a served copy)."""
        values: dict[str, Any] = {
            "name": name,
            "kind": "acumatica",
            "base_url": base_url or self.base_url,
            "username": self.username,
            "password": SecretStr(self.password),
            "company": self.company,
            "branch": self.branch,
            "auth": auth,
        }
        if auth == "oauth":
            values["client_id"] = self.client_id
            values["client_secret"] = SecretStr(self.client_secret)
        values.update(overrides)
        return TenantSettings(**values)

    @property
    def active_sessions(self) -> int:
        with self._lock:
            return self.sessions.active

    # Data helpers for tests ---------------------------------------------------------------------
    def _table(self, entity: str) -> EntityTable:
        try:
            return self.tables[entity]
        except KeyError:
            raise KeyError(
                f"the fake Acumatica has no entity {entity!r}; known: {', '.join(self.tables)}"
            ) from None

    def _key(self, table: EntityTable, key: str | tuple[str, ...]) -> tuple[str, ...]:
        if isinstance(key, tuple):
            return key
        return tuple(key.split("/", len(table.definition.key_fields) - 1))

    def _row(self, entity: str, key: str | tuple[str, ...]) -> tuple[EntityTable, Row]:
        table = self._table(entity)
        row = table.get(self._key(table, key))
        if row is None:
            raise KeyError(f"{entity} {key!r} does not exist in the fake")
        return table, row

    def add(
        self,
        entity: str,
        values: Mapping[str, Any],
        *,
        modified_at: datetime | None = None,
        custom: Mapping[str, Any] | None = None,
    ) -> str:
        """Insert a record from plain values (key fields required); returns its "/"-joined key."""
        with self._lock:
            table = self._table(entity)
            row_values = dict(values)
            row_values[table.definition.change_field] = modified_at or self.clock.now()
            row = table.insert(row_values, guid=self._gen.guid(), custom=dict(custom) if custom else None)
            return "/".join(table.display_key(row))

    def modify(
        self,
        entity: str,
        key: str | tuple[str, ...],
        changes: Mapping[str, Any] | None = None,
        *,
        modified_at: datetime | None = None,
        custom: Mapping[str, Any] | None = None,
    ) -> None:
        """Change fields of a record and stamp it (``modified_at`` or the clock's now)."""
        with self._lock:
            table, row = self._row(entity, key)
            changes = dict(changes or {})
            keys = set(table.definition.key_fields) & set(changes)
            if keys:
                raise ValueError(f"key fields cannot change: {', '.join(sorted(keys))}")
            row.values = {
                **row.values,
                **changes,
                table.definition.change_field: modified_at or self.clock.now(),
            }
            if custom:
                row.custom = {**(row.custom or {}), **custom}
            table.touch()

    def stamp(
        self, entity: str, records: int | Iterable[str | tuple[str, ...]], modified_at: datetime
    ) -> list[str]:
        """Give many records one modification time, as a bulk update does. ``records``: a count
        (the first N in server order) or keys. Returns the stamped keys."""
        with self._lock:
            table = self._table(entity)
            field = table.definition.change_field
            if isinstance(records, int):
                rows = table.ordered()[:records]
            else:
                rows = [self._row(entity, key)[1] for key in records]
            for row in rows:
                row.values = {**row.values, field: modified_at}
            table.touch()
            return ["/".join(table.display_key(row)) for row in rows]

    def delete(self, entity: str, key: str | tuple[str, ...]) -> None:
        """Remove a record; it will not show up in a delta read, only missing from a key scan."""
        with self._lock:
            table = self._table(entity)
            table.delete(self._key(table, key))

    def corrupt(self, entity: str, key: str | tuple[str, ...], field: str, wire: Any = MISSING) -> None:
        """Send ``wire`` as the raw JSON of ``field`` (or drop the field) for a malformed record."""
        with self._lock:
            table, row = self._row(entity, key)
            row.overrides = {**(row.overrides or {}), field: wire}
            table.touch()

    def record(self, entity: str, key: str | tuple[str, ...]) -> dict[str, Any]:
        """A copy of a record's plain values."""
        with self._lock:
            return dict(self._row(entity, key)[1].values)

    def keys(self, entity: str) -> list[str]:
        with self._lock:
            table = self._table(entity)
            return ["/".join(table.display_key(row)) for row in table.ordered()]

    def count(self, entity: str) -> int:
        with self._lock:
            return len(self._table(entity))

    # Faults -------------------------------------------------------------------------------------
    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            return self.faults.add(fault)

    def rate_limit(
        self,
        times: int = 1,
        *,
        retry_after: float | str | None = None,
        target: str | None = None,
        after: int = 0,
    ) -> Fault:
        """429 Too Many Requests, with ``Retry-After`` (seconds or an HTTP date) or without."""
        header = None if retry_after is None else str(retry_after)
        return self.inject(Fault("status", target, times, after, status=429, retry_after=header))

    def fail(self, status: int = 503, times: int = 1, *, target: str | None = None, after: int = 0) -> Fault:
        """A server failure (500 with a System.* exception, or 502/503/504)."""
        return self.inject(Fault("status", target, times, after, status=status))

    def business_error(
        self,
        message: str = "Inserting 'Customer' record raised at least one error.",
        *,
        exception_type: str = "PX.Data.PXException",
        target: str | None = None,
        after: int = 0,
    ) -> Fault:
        """A 500 that is a business error: the client must not retry it."""
        return self.inject(
            Fault(
                "status",
                target,
                1,
                after,
                status=500,
                exception_type=exception_type,
                exception_message=message,
            )
        )

    def login_limit(self, times: int = 1) -> Fault:
        """Refuse the next login(s) with the licence's "API Login Limit"."""
        return self.inject(
            Fault(
                "status",
                "login",
                times,
                0,
                status=500,
                exception_message=LOGIN_LIMIT_MESSAGE,
            )
        )

    def time_out(self, times: int = 1, *, target: str | None = None, after: int = 0) -> Fault:
        return self.inject(Fault("timeout", target, times, after))

    def malformed_json(self, times: int = 1, *, target: str | None = None, after: int = 0) -> Fault:
        return self.inject(Fault("malformed_json", target, times, after))

    def expire_sessions(self, *, target: str | None = None, after: int = 0) -> Fault:
        """End every session just before a later request (session expiry mid-run)."""
        return self.inject(Fault("expire_sessions", target, 1, after))

    def repeat_page(self, *, target: str | None = None, after: int = 0) -> Fault:
        """Answer a list request with the previous list response (a server ignoring $skip)."""
        return self.inject(Fault("repeat_page", target, 1, after))

    # Request log --------------------------------------------------------------------------------
    def list_requests(self, entity: str) -> list[ServedRequest]:
        with self._lock:
            return [r for r in self.requests if r.target == entity and r.kind == "list"]

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.request_counts.clear()

    # HTTP ---------------------------------------------------------------------------------------
    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one request as Acumatica would."""
        with self._lock:
            path, segments = self._service_path(request)
            target, kind = self._target(segments)
            params = dict(request.url.params.multi_items())
            self.request_counts[path] += 1
            try:
                response = self._answer(request, segments, target, params)
            except httpx.TimeoutException:
                self.requests.append(ServedRequest(request.method, path, target, kind, params, 0))
                raise
            self.requests.append(
                ServedRequest(request.method, path, target, kind, params, response.status_code)
            )
            return response

    @staticmethod
    def _service_path(request: httpx.Request) -> tuple[str, list[str]]:
        raw = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
        parts = [unquote(part) for part in raw.split("/")]
        for index, part in enumerate(parts):
            if part in ("entity", "identity"):
                segments = [p for p in parts[index:] if p != ""]
                return "/" + "/".join(segments), segments
        return raw, []

    @staticmethod
    def _target(segments: list[str]) -> tuple[str, Literal["list", "record", "service"]]:
        if segments == ["entity"]:
            return "index", "service"
        if segments[:2] == ["entity", "auth"] and len(segments) == 3 and segments[2] in ("login", "logout"):
            return segments[2], "service"
        if segments == ["identity", "connect", "token"]:
            return "token", "service"
        if len(segments) >= 4 and segments[0] == "entity":
            return segments[3], ("list" if len(segments) == 4 else "record")
        return "unknown", "service"

    def _answer(
        self, request: httpx.Request, segments: list[str], target: str, params: dict[str, str]
    ) -> httpx.Response:
        fault = self.faults.take(target)
        repeat = False
        if fault is not None:
            if fault.kind == "status":
                return self._fault_status(fault)
            if fault.kind == "timeout":
                raise httpx.ReadTimeout("the fake Acumatica timed out (injected fault)", request=request)
            if fault.kind == "expire_sessions":
                self.sessions.expire_all()
            repeat = fault.kind == "repeat_page"
        response = self._route(request, segments, target, params, repeat=repeat)
        if fault is not None and fault.kind == "malformed_json":
            body = response.content
            truncated = body[: max(1, len(body) // 2)] if len(body) > 2 else b'[{"id": "'
            return httpx.Response(200, content=truncated, headers={"Content-Type": _JSON})
        return response

    @staticmethod
    def _fault_status(fault: Fault) -> httpx.Response:
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
        if fault.status == 429:
            return httpx.Response(
                429,
                content=json.dumps({"message": "API request limit exceeded. Try again later."}).encode(),
                headers={"Content-Type": _JSON, **(headers or {})},
            )
        if fault.exception_message is not None:
            return _error(
                fault.status, fault.exception_message, fault.exception_type or "PX.Data.PXException"
            )
        if fault.status == 500:
            return _error(
                500, "Timeout expired. The timeout period elapsed.", "System.Data.SqlClient.SqlException"
            )
        return httpx.Response(fault.status, content=b"Service Unavailable", headers=headers)

    def _route(
        self,
        request: httpx.Request,
        segments: list[str],
        target: str,
        params: dict[str, str],
        *,
        repeat: bool,
    ) -> httpx.Response:
        method = request.method
        if target == "login" and method == "POST":
            return self._login(request)
        if target == "logout" and method == "POST":
            return self._logout(request)
        if target == "token" and method == "POST":
            return self._token(request)
        if target == "index" and method == "GET":
            return self._index()
        if len(segments) >= 4 and segments[0] == "entity":
            return self._entity(request, segments, params, repeat=repeat)
        return _error(404, f"No HTTP resource was found that matches the request URI '{request.url.path}'.")

    # Auth ---------------------------------------------------------------------------------------
    def _login(self, request: httpx.Request) -> httpx.Response:
        if not request.read().strip():  # Acumatica's 400: the detail is only in modelState
            return _json(
                400,
                {
                    "message": "The request is invalid.",
                    "modelState": {"": ["The request body should not be empty."]},
                },
            )
        try:
            body = json.loads(request.read() or b"{}")
        except ValueError:
            return _error(400, "The request body is not valid JSON.")
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        tenant = body.get("tenant", body.get("company"))
        if (
            body.get("name") != self.username
            or body.get("password") != self.password
            or (tenant is not None and tenant != self.company)
        ):
            return _error(500, "Error: Invalid credentials. Please try again.")
        try:
            session = self.sessions.open(self.username, "cookie")
        except LoginLimitReached:
            return _error(500, LOGIN_LIMIT_MESSAGE)
        cookies = [
            f"ASP.NET_SessionId={session.token[:24]}; path=/; HttpOnly; SameSite=Lax",
            f"{_AUTH_COOKIE}={session.token}; path=/; HttpOnly",
            f"CompanyID={self.company}; path=/",
            f"UserBranch={body.get('branch') or self.branch}; path=/",
            "Locale=Culture=en-US&TimeZone=GMTE0000U; path=/",
        ]
        return httpx.Response(204, headers=[("Set-Cookie", cookie) for cookie in cookies])

    def _session_token(self, request: httpx.Request) -> str | None:
        authorization: str = request.headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            return authorization[7:].strip()
        return _cookies(request).get(_AUTH_COOKIE)

    def _logout(self, request: httpx.Request) -> httpx.Response:
        self.sessions.close(self._session_token(request))
        expired = "expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/"
        return httpx.Response(204, headers=[("Set-Cookie", f"{_AUTH_COOKIE}=; {expired}")])

    def _token(self, request: httpx.Request) -> httpx.Response:
        form = {key: values[0] for key, values in parse_qs(request.read().decode()).items()}
        grant = form.get("grant_type")
        if form.get("client_id") != self.client_id or form.get("client_secret", self.client_secret) != (
            self.client_secret
        ):
            return _json(400, {"error": "invalid_client"})
        if grant == "password":
            if form.get("username") != self.username or form.get("password") != self.password:
                return _json(
                    400, {"error": "invalid_grant", "error_description": "invalid_username_or_password"}
                )
            scopes = set(form.get("scope", "api").split())
        elif grant == "refresh_token":
            if self.sessions.redeem_refresh(form.get("refresh_token", "")) is None:
                return _json(400, {"error": "invalid_grant"})
            scopes = {"api", "offline_access"}
        else:
            return _json(400, {"error": "unsupported_grant_type"})
        try:
            session = self.sessions.open(self.username, "bearer", self.token_lifetime)
        except LoginLimitReached:
            return _error(500, LOGIN_LIMIT_MESSAGE)
        payload: dict[str, Any] = {
            "access_token": session.token,
            "expires_in": int(self.token_lifetime.total_seconds()),
            "token_type": "Bearer",
            "scope": " ".join(sorted(scopes)),
        }
        if "offline_access" in scopes:
            payload["refresh_token"] = self.sessions.issue_refresh(self.username)
        return _json(200, payload)

    def _index(self) -> httpx.Response:
        endpoints = [
            {"name": "Default", "version": version, "href": f"/entity/Default/{version}/"}
            for version in self.versions
        ]
        return _json(200, {"version": {"acumaticaBuildVersion": "24.210.0012"}, "endpoints": endpoints})

    # Entities -----------------------------------------------------------------------------------
    def _renderer(self, entity: str, version: str) -> Renderer:
        renderer = self._renderers.get((entity, version))
        if renderer is None:
            renderer = Renderer(ENTITIES[entity], self.tz, version, instance=httpx.URL(self.base_url).path)
            self._renderers[(entity, version)] = renderer
        return renderer

    def _entity(
        self, request: httpx.Request, segments: list[str], params: dict[str, str], *, repeat: bool
    ) -> httpx.Response:
        endpoint, version, entity, keys = segments[1], segments[2], segments[3], segments[4:]
        if endpoint != "Default" or version not in self.versions:
            return _error(404, f"The endpoint {endpoint}/{version} is not found on this server.")
        if self.sessions.find(self._session_token(request)) is None:
            return _json(401, {"message": "You are not logged in."})
        if entity not in self.tables:
            return _error(404, f"The entity {entity} is not found in the endpoint {endpoint}/{version}.")
        if request.method != "GET":
            return _error(405, f"The fake Acumatica serves reads only, not {request.method}.")
        unknown = sorted(set(params) - ALLOWED_PARAMS)
        if unknown:
            return _error(400, f"The query parameter(s) {', '.join(unknown)} are not supported.")
        table = self.tables[entity]
        renderer = self._renderer(entity, version)
        wire = renderer.view
        try:
            _check_filter(wire, params.get("$filter"), version)
            shape = parse_shape(
                table.definition,
                params.get("$select"),
                params.get("$expand"),
                params.get("$custom"),
                version=version,
            )
            if keys:
                return self._by_key(table, renderer, shape, _stored_keys(wire, keys))
            skip = int(params.get("$skip", "0"))
            top = int(params["$top"]) if "$top" in params else None
            if skip < 0 or (top is not None and top < 0):
                raise ValueError
            rows = table.select(params.get("$filter"), wire)
        except (QueryError, FilterError) as exc:
            return _error(400, str(exc))
        except ValueError:
            return _error(400, "$top and $skip must be non-negative integers.")
        if repeat and entity in self._last_list:
            body = self._last_list[entity]
        else:
            page = rows[skip:] if top is None else rows[skip : skip + top]
            body = renderer.page(page, shape)  # rowNumber restarts at 1 on every page, as in Acumatica
        self._last_list[entity] = body
        return httpx.Response(200, content=body, headers={"Content-Type": _JSON})

    def _by_key(self, table: EntityTable, renderer: Renderer, shape: Any, keys: list[str]) -> httpx.Response:
        row = table.get(keys) if len(keys) == len(table.definition.key_fields) else None
        if row is None:
            return _error(500, "No entity satisfies the condition.", NOT_FOUND_TYPE)
        return httpx.Response(200, content=renderer.record(row, shape, 1), headers={"Content-Type": _JSON})
