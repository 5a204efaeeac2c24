"""A fake SAP S/4HANA that answers OData v2 or v4 like the real services, quirks and faults included.

``FakeSAP.handle(request) -> httpx.Response`` is the whole server: use it as a respx side effect,
through ``httpx.MockTransport(fake.handle)``, or over real HTTP with ``connector.testing.server``.
It serves ``API_BUSINESS_PARTNER`` (``A_BusinessPartner`` and its addresses, customer and supplier
roles with company-code and sales-area data), ``API_SALES_ORDER_SRV``, ``API_BILLING_DOCUMENT_SRV``
and ``API_OPLACCTGDOCITEMCUBE_SRV`` (open customer and supplier items, see ``sap_items``)
with ``$filter``, ``$select``, ``$expand``, ``$orderby``, ``$top``/``$skip``, server-side paging
(``__next`` / ``@odata.nextLink`` with ``$skiptoken``), ``$inlinecount``/``$count``, ``/$count``,
single entities by key, ``sap-client``, basic / OAuth client-credentials / API-key auth, and SAP's
error bodies. Faults are queued with :meth:`FakeSAP.inject` and fire on the next matching requests.

Construct::

    fake = FakeSAP(seed=1, customers=50, suppliers=20, sales_orders=100, odata_version="v2")
    adapter = SAPAdapter(fake.tenant_settings(), sync=SyncSettings(), clock=FrozenClock(),
                         transport=fake.transport())
"""

from __future__ import annotations

import functools
import gc
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, TypeVar, cast

import httpx
from pydantic import SecretStr

from connector.clock import Clock, FrozenClock
from connector.settings import TenantSettings
from connector.testing.sap_auth import TOKEN_PATH, AuthMode, Gate
from connector.testing.sap_contract import entity_contract
from connector.testing.sap_data import DataSpec, Row, generate, stamp
from connector.testing.sap_faults import Fault, FaultKind, FaultQueue
from connector.testing.sap_filter import FilterError
from connector.testing.sap_items import ItemPoster, post_all
from connector.testing.sap_metadata import metadata_document
from connector.testing.sap_model import ENTITY_SETS, SERVICE_PATHS, EntitySet, RowIndex
from connector.testing.sap_query import (
    SELECTED,
    ExpandTree,
    QueryError,
    add_nested_select,
    parse_expand_v2,
    parse_expand_v4,
    parse_int,
    parse_resource,
    parse_select,
)
from connector.testing.sap_render import Version, dumps, error_body, v2_value, v4_encoder

_FREEZE_ABOVE = 20_000


F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """One request or data change at a time: the served fake answers from several threads."""

    @functools.wraps(method)
    def wrapper(self: FakeSAP, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(F, wrapper)


class FakeSAP:
    """An in-memory SAP S/4HANA OData server; see the module docstring."""

    def __init__(
        self,
        seed: int = 0,
        customers: int = 50,
        suppliers: int = 20,
        sales_orders: int = 100,
        *,
        both: int | None = None,
        billing_documents: int | None = None,
        roleless: int | None = None,
        odata_version: Version = "v2",
        base_url: str = "https://s4.fake.example",
        sap_client: str | None = "100",
        auth: AuthMode = "basic",
        username: str = "COMM_USER",
        password: str = "fake-password",
        client_id: str = "fake-client",
        client_secret: str = "fake-client-secret",
        api_key: str = "fake-api-key",
        token_ttl_s: int = 3600,
        server_page_size: int | None = None,
        ignore_skip: bool = False,
        now: datetime | None = None,
        time_zone: str = "UTC",
        clock: Clock | None = None,
    ) -> None:
        self.spec = DataSpec(
            customers=customers,
            suppliers=suppliers,
            both=both,
            sales_orders=sales_orders,
            billing_documents=billing_documents,
            roleless=roleless,
            now=now or datetime(2026, 1, 15, 12, 0, tzinfo=UTC),
            seed=seed,
            time_zone=time_zone,
        )
        self.data, self._generator = generate(self.spec)
        self._items = ItemPoster(self.data, seed, self._generator.zone, self.spec.now)
        post_all(self.data, self._items)
        if len(self.data.partners) + len(self.data.sales_orders) > _FREEZE_ABOVE:
            gc.freeze()  # keep the big, acyclic data out of every later GC pass (pages stay fast)
        self.index = RowIndex(self.data)
        self.odata_version: Version = odata_version
        self.base_url = base_url.rstrip("/")
        self.server_page_size = server_page_size
        self.ignore_skip = ignore_skip
        self.clock: Clock = clock or FrozenClock(self.spec.now)
        self.gate = Gate(
            self.clock,
            mode=auth,
            sap_client=sap_client,
            username=username,
            password=password,
            client_id=client_id,
            client_secret=client_secret,
            api_key=api_key,
            token_ttl_s=token_ttl_s,
        )
        self.fault_queue = FaultQueue()
        self.requests_by_path: Counter[str] = Counter()
        self.last_request: httpx.Request | None = None
        self._lock = threading.RLock()

    # Public helpers --------------------------------------------------------------------------
    @property
    def token_url(self) -> str:
        return self.base_url + TOKEN_PATH

    def service_path(self, service: str) -> str:
        """The path of ``service`` in the fake's version, or in v2 where SAP publishes no v4 one."""
        return SERVICE_PATHS[self.odata_version].get(service) or SERVICE_PATHS["v2"][service]

    def url(self, entity_set: str) -> str:
        """The URL of an entity set (each set belongs to one version: ``A_SalesOrder`` is v2,
        ``SalesOrder`` v4)."""
        return f"{self.base_url}{ENTITY_SETS[entity_set].path}/{entity_set}"

    @property
    def request_count(self) -> int:
        return sum(self.requests_by_path.values())

    def requests_to(self, entity_set: str) -> int:
        """Requests made to an entity set's collection (all pages)."""
        return self.requests_by_path[urllib.parse.urlparse(self.url(entity_set)).path]

    def transport(self) -> httpx.MockTransport:
        """An in-process transport for an httpx client or an adapter (no sockets)."""
        return httpx.MockTransport(self.handle)

    @property
    def faults(self) -> list[Fault]:
        """Faults still queued."""
        return self.fault_queue.faults

    def tenant_settings(self, name: str = "s4-fake", **overrides: Any) -> TenantSettings:
        """Settings of an SAP tenant that can talk to this fake (its URL, client, version, auth)."""
        gate = self.gate
        auth: dict[str, Any] = {
            "basic": {"auth": "basic", "username": gate.username, "password": SecretStr(gate.password)},
            "oauth": {
                "auth": "oauth_client_credentials",
                "token_url": self.token_url,
                "client_id": gate.client_id,
                "client_secret": SecretStr(gate.client_secret),
            },
            "apikey": {"auth": "apikey", "api_key": SecretStr(gate.api_key)},
            "none": {"auth": "apikey", "api_key": SecretStr("unused")},
        }[gate.mode]
        values: dict[str, Any] = {
            "name": name,
            "kind": "sap",
            "base_url": self.base_url,
            "sap_client": gate.sap_client,
            "odata_version": self.odata_version,
            "sap_time_zone": self.spec.time_zone,
            **auth,
            **overrides,
        }
        return TenantSettings(**values)

    @_locked
    def inject(self, kind: FaultKind, **options: Any) -> Fault:
        """Queue a fault: e.g. ``inject("rate_limit", times=2, retry_after="7")``."""
        return self.fault_queue.add(Fault(kind, **options))

    @_locked
    def expire_tokens(self) -> None:
        """Every OAuth token issued so far stops working (the next call gets 401)."""
        self.gate.expire_tokens()

    # Data-changing helpers -------------------------------------------------------------------
    @_locked
    def modify(
        self,
        entity_set: str,
        key: str | tuple[str, ...],
        *,
        at: datetime,
        touch_partner: bool = True,
        **changes: Any,
    ) -> None:
        """Change a row and stamp its change time with ``at``.

        Customer/supplier sub-entities have no change stamp of their own; ``touch_partner`` says
        whether the change moves the business partner's LastChangeDate (unverified in real SAP).
        """
        row = self._row(entity_set, key)
        unknown = set(changes) - set(row)
        if unknown:
            raise ValueError(f"{entity_set} has no field(s) {', '.join(sorted(unknown))}")
        row.update(changes)
        self._stamp(entity_set, row, at, touch_partner)
        self.index.changed()

    @_locked
    def bulk_stamp(self, entity_set: str, at: datetime, keys: list[str] | None = None) -> int:
        """Stamp many rows with one change time (a mass update); returns how many."""
        table = self._table(entity_set)
        chosen = list(table) if keys is None else keys
        for key in chosen:
            self._stamp(entity_set, table[key], at, True)
        self.index.changed()
        return len(chosen)

    @_locked
    def delete(self, entity_set: str, key: str) -> None:
        """Remove a partner (with its roles), a sales order or a billing document."""
        table = self._table(entity_set)
        if key not in table:
            raise KeyError(f"{entity_set}({key!r}) does not exist")
        del table[key]
        if entity_set == "A_BusinessPartner":
            for address in self.data.addresses.pop(key, []):
                self.data.emails.pop(address["AddressID"], None)
                self.data.phones.pop(address["AddressID"], None)
                self.data.mobiles.pop(address["AddressID"], None)
            for name in (
                "customers",
                "customer_companies",
                "customer_sales_areas",
                "suppliers",
                "supplier_companies",
            ):
                getattr(self.data, name).pop(key, None)
        self.index.changed()

    @_locked
    def add_partner(
        self,
        *,
        customer: bool = True,
        supplier: bool = False,
        created: datetime | None = None,
        changed: datetime | None = None,
        **fields: Any,
    ) -> str:
        """A new business partner (number returned); ``changed=None`` leaves LastChangeDate null."""
        number = self._generator.partner(
            customer=customer,
            supplier=supplier,
            created=created or self.clock.now(),
            changed=changed,
            overrides=fields,
        )
        self.index.changed()
        return number

    @_locked
    def add_sales_order(self, sold_to: str, *, created: datetime | None = None, **fields: Any) -> str:
        number = self._generator.sales_order(sold_to, created=created or self.clock.now(), overrides=fields)
        self.data.sales_orders[number]["LastChangeDateTime"] = created or self.clock.now()
        self.index.changed()
        return number

    @_locked
    def add_billing_document(
        self, sales_order: str, *, created: datetime | None = None, **fields: Any
    ) -> str:
        order = self.data.sales_orders[sales_order]
        number = self._generator.billing_document(
            order, created=created or self.clock.now(), overrides=fields
        )
        self._items.for_billing_document(self.data.billing_documents[number])
        self.index.changed()
        return number

    @_locked
    def add_open_item(
        self,
        party: str,
        amount: Decimal,
        *,
        currency: str = "EUR",
        posted: date | None = None,
        due: date | None = None,
        supplier: bool = False,
        billing_document: str = "",
        doc_type: str | None = None,
    ) -> str:
        """Post an item on a customer's (or supplier's) account; ``amount`` is SAP-signed (a
        customer invoice positive, a payment or a vendor invoice negative). Returns its key."""
        key = self._items.post(
            kind="K" if supplier else "D",
            party=party,
            amount=amount,
            currency=currency,
            posted=posted or self.clock.now().astimezone(self._generator.zone).date(),
            due=due,
            doc_type=doc_type or ("KR" if supplier else "RV" if amount >= 0 else "DZ"),
            billing_document=billing_document,
            reference=billing_document,
        )
        self.index.changed()
        return key

    @_locked
    def clear_item(self, key: str, *, at: datetime) -> None:
        """Clear an item (a payment arrived): ``IsCleared``, ``ClearingDate`` (SAP's local day of
        ``at``) and a clearing document are set; ``LastChangeDate`` is left as it was."""
        self._items.clear(key, at.astimezone(self._generator.zone).date())
        self.index.changed()

    def open_items_of(self, party: str, *, supplier: bool = False) -> list[Row]:
        """The party's items that are not cleared (for expectations in tests)."""
        field = "Supplier" if supplier else "Customer"
        return [r for r in self.data.open_items.values() if r[field] == party and not r["IsCleared"]]

    def _table(self, entity_set: str) -> dict[str, Row]:
        tables = {
            "A_BusinessPartner": self.data.partners,
            "A_Customer": self.data.customers,
            "A_Supplier": self.data.suppliers,
            "A_SalesOrder": self.data.sales_orders,
            "A_BillingDocument": self.data.billing_documents,
            "A_OperationalAcctgDocItemCube": self.data.open_items,
        }
        if entity_set not in tables:
            raise ValueError(f"no helper for {entity_set}; use one of {', '.join(tables)}")
        return tables[entity_set]

    def _row(self, entity_set: str, key: str | tuple[str, ...]) -> Row:
        if isinstance(key, str):
            return self._table(entity_set)[key]
        children = {
            "A_CustomerCompany": self.data.customer_companies,
            "A_CustomerSalesArea": self.data.customer_sales_areas,
            "A_SupplierCompany": self.data.supplier_companies,
        }[entity_set]
        keys = ENTITY_SETS[entity_set].keys
        for row in children.get(key[0], []):
            if all(str(row[k]) == v for k, v in zip(keys, key, strict=False)):
                return row
        raise KeyError(f"{entity_set}{key} does not exist")

    def _stamp(self, entity_set: str, row: Row, at: datetime, touch_partner: bool) -> None:
        if entity_set == "A_BusinessPartner":
            row["LastChangeDate"], row["LastChangeTime"] = stamp(at, self._generator.zone)
        elif entity_set == "A_OperationalAcctgDocItemCube":
            row["LastChangeDate"] = at.astimezone(self._generator.zone).date()
        elif entity_set in ("A_SalesOrder", "A_BillingDocument"):
            row["LastChangeDateTime"] = at.astimezone(UTC)
            row["LastChangeDate"] = at.astimezone(self._generator.zone).date()
        elif touch_partner:
            owner = row.get("Customer") or row.get("Supplier")
            partner = self.data.partners.get(owner) if owner else None
            if partner is not None:
                partner["LastChangeDate"], partner["LastChangeTime"] = stamp(at, self._generator.zone)

    # The server ------------------------------------------------------------------------------
    @_locked
    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one HTTP request as SAP would."""
        self.last_request = request
        path = request.url.path
        self.requests_by_path[path] += 1
        if path == TOKEN_PATH:
            return self.gate.token(request)
        found = _service(path)
        version: Version = found[2] if found is not None else self.odata_version
        refusal = self.fault_queue.before(request, version) or self.gate.check(request)
        if refusal is not None:
            return refusal
        try:
            response = self._route(request, found)
        except QueryError as exc:
            return self._error(400, "/IWBEP/CM_MGW_RT/004", str(exc), version=version)
        except FilterError as exc:
            return self._error(
                400, "/IWBEP/CM_MGW_RT/022", f"Invalid filter expression: {exc}", version=version
            )
        except NotServed as exc:
            return self._error(501, "/IWBEP/CM_MGW_RT/017", str(exc), version=version)
        return self.fault_queue.after(request, response, version)

    def _route(self, request: httpx.Request, found: tuple[str, str, Version] | None) -> httpx.Response:
        if found is None:
            message = f"No service found for namespace, name, version {request.url.path}"
            return self._error(404, "/IWFND/MED/170", message, version=self.odata_version)
        service, remainder, version = found
        if request.method != "GET":
            message = f"method {request.method} is not supported"
            return self._error(405, "/IWBEP/CM_MGW_RT/001", message, version=version)
        if remainder in ("", "$metadata"):
            return httpx.Response(
                200, content=metadata_document(service, version), headers={"content-type": "application/xml"}
            )
        resource = parse_resource(urllib.parse.unquote(remainder))
        entity_set = ENTITY_SETS.get(resource.entity_set)
        if entity_set is None or entity_set.service != service or entity_set.version != version:
            if entity_contract(service, version, resource.entity_set) is not None:
                raise NotServed(f"the fake SAP does not serve {resource.entity_set} (SAP's service has it)")
            return self._error(
                404,
                "/IWBEP/CM_MGW_RT/021",
                f"Resource not found for segment '{resource.entity_set}'",
                version=version,
            )
        params = request.url.params
        if version == "v2" and not _wants_json(request):
            return httpx.Response(
                200,
                text="<feed xmlns='http://www.w3.org/2005/Atom'/>",
                headers={"content-type": "application/atom+xml"},
            )
        if resource.key is not None:
            return self._single(request, entity_set, resource.key, params)
        rows = self.index.query(
            entity_set, params.get("$filter", ""), params.get("$orderby", ""), entity_set.version
        )
        if resource.count:
            return httpx.Response(200, text=str(len(rows)), headers={"content-type": "text/plain"})
        return self._collection(request, entity_set, rows, params)

    def _single(
        self,
        request: httpx.Request,
        entity_set: EntitySet,
        key: dict[str, str] | list[str],
        params: httpx.QueryParams,
    ) -> httpx.Response:
        wanted = tuple(key[k] for k in entity_set.keys if k in key) if isinstance(key, dict) else tuple(key)
        if len(wanted) != len(entity_set.keys):
            raise QueryError(f"{entity_set.name} needs the key {', '.join(entity_set.keys)}")
        row = self.index.by_key(entity_set).get(wanted)
        if row is None:
            return self._error(
                404,
                "/IWBEP/CM_MGW_RT/020",
                f"Resource not found for segment '{entity_set.name}'",
                version=entity_set.version,
            )
        renderer = _Renderer(self, request, params, entity_set.version)
        body = renderer.entity(row, entity_set, renderer.expand(entity_set), renderer.select(entity_set))
        payload = {"d": body} if entity_set.version == "v2" else body
        return _json(payload, renderer.encode)

    def _collection(
        self, request: httpx.Request, entity_set: EntitySet, rows: list[Row], params: httpx.QueryParams
    ) -> httpx.Response:
        skiptoken = parse_int("$skiptoken", params.get("$skiptoken"))
        skip = parse_int("$skip", params.get("$skip")) or 0
        top = parse_int("$top", params.get("$top"))
        start = skiptoken if skiptoken is not None else (0 if self.ignore_skip else skip)
        window_end = len(rows) if top is None else min(len(rows), start + top)
        page_end = window_end
        if self.server_page_size is not None:
            page_end = min(window_end, start + self.server_page_size)
        renderer = _Renderer(self, request, params, entity_set.version)
        expand, select = renderer.expand(entity_set), renderer.select(entity_set)
        results = [renderer.entity(row, entity_set, expand, select) for row in rows[start:page_end]]
        next_link = None
        if page_end < window_end:
            next_link = _next_link(request, page_end, None if top is None else window_end - page_end)
        counted = (
            params.get("$inlinecount") == "allpages"
            if entity_set.version == "v2"
            else params.get("$count") == "true"
        )
        if entity_set.version == "v2":
            container: dict[str, Any] = {"results": results}
            if counted:
                container["__count"] = str(len(rows))
            if next_link:
                container["__next"] = next_link
            payload: dict[str, Any] = {"d": container}
        else:
            payload = {"@odata.context": f"$metadata#{entity_set.name}"}
            if counted:
                payload["@odata.count"] = len(rows)
            payload["value"] = results
            if next_link:
                payload["@odata.nextLink"] = next_link
        response = _json(payload, renderer.encode)
        response.extensions["collection"] = True
        return response

    def _error(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        version: Version,
    ) -> httpx.Response:
        return httpx.Response(
            status,
            content=error_body(version, code, message),
            headers={"content-type": "application/json", **(headers or {})},
        )


@dataclass(frozen=True, slots=True)
class _Shape:
    """What one entity set sends, from its contract: the properties, the constant fill-ins among
    them and (v2) the navigation properties, which appear as ``__deferred`` unless expanded."""

    allowed: frozenset[str]
    defaults: dict[str, Any]
    navigation: tuple[str, ...]


_SHAPES: dict[str, _Shape] = {}


def _shape(entity_set: EntitySet) -> _Shape:
    shape = _SHAPES.get(entity_set.name)
    if shape is None:
        contract = entity_set.contract
        allowed = frozenset(contract.properties)
        shape = _SHAPES[entity_set.name] = _Shape(
            allowed,
            {k: v for k, v in entity_set.defaults.items() if k in allowed},
            tuple(contract.navigation),
        )
    return shape


class _Renderer:
    """Encodes rows for one request (version, decimals, expansions, selection)."""

    def __init__(
        self, fake: FakeSAP, request: httpx.Request, params: httpx.QueryParams, version: Version
    ) -> None:
        self.fake = fake
        self.version = version
        self.params = params
        accept = request.headers.get("accept", "")
        self.encode = v2_value if self.version == "v2" else v4_encoder("IEEE754Compatible=true" in accept)
        self.root = f"{request.url.scheme}://{request.url.netloc.decode()}"
        self._metas: dict[str, tuple[str, str]] = {}

    def expand(self, entity_set: EntitySet) -> ExpandTree:
        text = self.params.get("$expand", "")
        tree = parse_expand_v2(text) if self.version == "v2" else parse_expand_v4(text)
        if self.version == "v2":
            nested = [n for n in parse_select(self.params.get("$select", "")) or () if "/" in n]
            add_nested_select(tree, nested)
        _check_tree(entity_set, tree)
        return tree

    def select(self, entity_set: EntitySet) -> list[str] | None:
        names = parse_select(self.params.get("$select", ""))
        if names is None:
            return None
        fields = self.fake.index.fields(entity_set)
        navigation = entity_set.contract.navigation
        for name in names:
            if name not in fields and name not in navigation and "/" not in name:
                raise QueryError(f"Property {name} not found in type {entity_set.contract.type_name}")
        return names

    def entity(
        self, row: Row, entity_set: EntitySet, expand: ExpandTree, select: list[str] | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        uri = ""
        v2 = self.version == "v2"
        if v2:
            prefix, type_name = self._meta(entity_set)
            uri = prefix + _key_text(entity_set, row)
            out["__metadata"] = {"id": uri, "uri": uri, "type": type_name}
            stamp = row.get("LastChangeDateTime")
            if isinstance(stamp, datetime):  # real S/4 sends the change stamp as the entity's etag
                out["__metadata"]["etag"] = etag(stamp)
        shape = _shape(entity_set)
        defaults = shape.defaults
        if select is None:
            if defaults:
                out.update(defaults)
            if row.keys() <= shape.allowed:
                out.update(row)  # dates, times and decimals are encoded by dumps(..., self.encode)
            else:  # the row holds the other version's names too: send this version's only
                allowed = shape.allowed
                out.update({k: v for k, v in row.items() if k in allowed})
        else:
            for name in select:
                if name in row:
                    out[name] = row[name]
                elif name in defaults:
                    out[name] = defaults[name]
        navigation = entity_set.navigation
        for nav_name in shape.navigation:
            if nav_name in expand:
                nav = navigation[nav_name]
                target_set = ENTITY_SETS[nav.target]
                found = nav.resolve(self.fake.data, row)
                sub = expand[nav_name]
                chosen = list(sub[SELECTED]) if SELECTED in sub else None
                if nav.many:
                    items = [self.entity(child, target_set, sub, chosen) for child in found]
                    out[nav_name] = {"results": items} if v2 else items
                else:
                    out[nav_name] = None if found is None else self.entity(found, target_set, sub, chosen)
            elif v2 and (select is None or nav_name in select):
                out[nav_name] = {"__deferred": {"uri": f"{uri}/{nav_name}"}}
        return out

    def _meta(self, entity_set: EntitySet) -> tuple[str, str]:
        """The URI prefix and type name of an entity set, computed once per request."""
        meta = self._metas.get(entity_set.name)
        if meta is None:
            prefix = f"{self.root}{entity_set.path}/{entity_set.name}"
            meta = self._metas[entity_set.name] = (
                prefix,
                f"{entity_set.service}.{entity_set.contract.type_name}",
            )
        return meta


def etag(stamp: datetime) -> str:
    """``W/"datetimeoffset'2005-10-24T15%3A36%3A52.0000000Z'"``: LastChangeDateTime, URL-encoded."""
    text = stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{stamp.microsecond:06d}0Z"
    return "W/\"datetimeoffset'" + text.replace(":", "%3A") + "'\""


def _check_tree(entity_set: EntitySet, tree: ExpandTree) -> None:
    contract = entity_set.contract
    for name, children in tree.items():
        if name == SELECTED:
            for field in children:
                if field not in contract.properties and field not in contract.navigation:
                    raise QueryError(f"Property {field} not found in type {contract.type_name}")
            continue
        nav = entity_set.navigation.get(name)
        if nav is None:
            if name in entity_set.contract.navigation:
                raise NotServed(f"the fake SAP does not expand {entity_set.name}/{name} (SAP's service does)")
            raise QueryError(f"Property {name} not found in type {entity_set.contract.type_name}")
        _check_tree(ENTITY_SETS[nav.target], children)


class NotServed(Exception):
    """Something SAP's contract defines but the fake does not serve: 501, never a made-up answer."""


def _service(path: str) -> tuple[str, str, Version] | None:
    """The service, the rest of the path and the OData version a request path addresses."""
    for version, paths in SERVICE_PATHS.items():
        for service, root in paths.items():
            if path.startswith(root + "/") or path == root:
                return service, path[len(root) + 1 :], version
    return None


def _quoted(value: Any) -> str:
    text = str(value)
    return "'" + (text.replace("'", "''") if "'" in text else text) + "'"


def _key_text(entity_set: EntitySet, row: Row) -> str:
    keys = entity_set.keys
    if len(keys) == 1:
        return "(" + _quoted(row[keys[0]]) + ")"
    return "(" + ",".join([k + "=" + _quoted(row[k]) for k in keys]) + ")"


def _wants_json(request: httpx.Request) -> bool:
    return "json" in request.headers.get("accept", "") or request.url.params.get("$format") == "json"


def _json(payload: Any, encode: Callable[[Any], Any] = str) -> httpx.Response:
    return httpx.Response(200, content=dumps(payload, encode), headers={"content-type": "application/json"})


def _next_link(request: httpx.Request, offset: int, remaining: int | None) -> str:
    kept = [
        (k, v)
        for k, v in request.url.params.multi_items()
        if k not in ("$skip", "$top", "$skiptoken", "$inlinecount", "$count")
    ]
    if remaining is not None:
        kept.append(("$top", str(remaining)))
    kept.append(("$skiptoken", str(offset)))
    query = urllib.parse.urlencode(kept, safe="$',()/:")
    return f"{request.url.scheme}://{request.url.netloc.decode()}{request.url.path}?{query}"
