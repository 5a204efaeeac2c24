"""The SAP OData client: the shared :class:`~connector.adapters.http.HttpClient` with SAP's dialect added.

What is SAP-specific lives here: ``sap-client`` on every OData call, the auth headers and token
refresh, the ``Accept`` header (v4 asks for ``IEEE754Compatible=true`` so decimals arrive as exact
strings), error bodies decoded into the error tree with the OData code and message, and
``sap-message`` warning headers logged. Retries, ``Retry-After``, rate and concurrency limits are
the shared client's.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from connector.adapters.http import (
    Action,
    ErrorDecoder,
    HttpClient,
    SessionExpired,
    TrafficLimits,
    TrafficPolicy,
    action_for_status,
    body_excerpt,
    error_for_action,
    safe_url,
)
from connector.adapters.sap.auth import SAPLogin
from connector.adapters.sap.catalog import ODataVersion
from connector.adapters.sap.odata import parse_error
from connector.clock import Clock, SystemClock
from connector.errors import ERPAuthError, ERPError
from connector.settings import TenantSettings

log = logging.getLogger(__name__)

ACCEPT: dict[ODataVersion, str] = {
    "v2": "application/json",
    "v4": "application/json;IEEE754Compatible=true",
}


def sap_error_decoder(tenant: str, *, token_auth: bool) -> ErrorDecoder:
    """Decode SAP's error answers: the OData error's code and message go onto the raised error.

    401 means "fetch a new token and retry once" under OAuth; with basic auth or an API key it means
    the credentials are wrong, which no retry fixes.
    """

    def decode(response: httpx.Response, retry_after: float | None) -> ERPError:
        action = action_for_status(response.status_code)
        if action is Action.REAUTHENTICATE and not token_auth:
            action = Action.AUTH_FAILED
        info = parse_error(response.content)
        if info is not None:
            detail = ": ".join(p for p in (info.code, info.message) if p) or None
        elif "html" in response.headers.get("content-type", ""):
            detail = None  # a logon page says nothing the status does not
        else:
            detail = body_excerpt(response, 200) or None
        return error_for_action(
            action,
            erp="SAP",
            request=response.request,
            status_code=response.status_code,
            detail=detail,
            retry_after=retry_after,
            code=info.code if info else None,
            exception_message=info.message if info else None,
            tenant=tenant,
        )

    return decode


class SapMessageLog(httpx.BaseTransport):
    """Wraps the real transport to log the ``sap-message`` header SAP puts warnings in."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        header = response.headers.get("sap-message")
        if header:
            log_sap_message(header, request)
        return response

    def close(self) -> None:
        self._inner.close()


def log_sap_message(header: str, request: httpx.Request) -> None:
    """One log line per message in the header (JSON with code, message, severity, details)."""
    try:
        message = json.loads(header)
    except ValueError:
        log.warning("SAP message on %s: %s", safe_url(request.url), header[:300])
        return
    messages = [message] if isinstance(message, dict) else []
    if isinstance(message, dict) and isinstance(message.get("details"), list):
        messages += [d for d in message["details"] if isinstance(d, dict)]
    for item in messages:
        severity = str(item.get("severity", "warning")).lower()
        level = logging.INFO if severity in ("info", "success") else logging.WARNING
        log.log(
            level,
            "SAP %s %s on %s: %s",
            severity,
            item.get("code", ""),
            safe_url(request.url),
            str(item.get("message", ""))[:300],
        )


class SAPClient:
    """GETs OData JSON for one tenant; counts requests and retries for the runs table."""

    def __init__(
        self,
        tenant: TenantSettings,
        *,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.tenant = tenant
        self.version: ODataVersion = tenant.odata_version
        clock = clock or SystemClock()
        self.auth = SAPLogin(tenant, clock)
        traffic = TrafficPolicy.from_tenant(tenant)
        self.http = HttpClient(
            tenant.base_url,
            erp="SAP",
            decode_error=sap_error_decoder(tenant.name, token_auth=self.auth.uses_tokens),
            traffic=traffic,
            clock=clock,
            transport=SapMessageLog(transport or httpx.HTTPTransport()),
            auth=self.auth,
            headers={"Accept": ACCEPT[self.version], **self.auth.static_headers()},
            limits=TrafficLimits.shared(
                f"sap:{tenant.name}", tenant.requests_per_minute, tenant.max_concurrency, clock
            ),
        )

    @property
    def base_url(self) -> httpx.URL:
        return httpx.URL(self.tenant.base_url)

    def open(self) -> None:
        """Log in (fetch the OAuth token up front, so a bad credential fails before any read)."""
        self.auth.login(self.http)

    def close(self) -> None:
        try:
            self.auth.logout(self.http)
        finally:
            self.http.close()

    def get_json(
        self, url: str, params: dict[str, str] | None = None, version: ODataVersion | None = None
    ) -> Any:
        """GET ``url`` with ``params`` and ``sap-client``, as an OData ``version`` request (default:
        the tenant's; a v4 tenant still reads the v2-only services over v2).

        ``params=None`` means ``url`` is a link the server sent (``__next``): it is requested as it
        came, with ``sap-client`` appended only when the link lacks it (httpx would otherwise
        replace the link's own query).
        """
        client = self.tenant.sap_client
        merged: dict[str, str] | None = None
        if params is None:
            target = httpx.URL(url)
            if client and "sap-client" not in target.params:
                url += ("&" if target.query else "?") + f"sap-client={client}"
        else:
            merged = {**params, "sap-client": client} if client else dict(params)
        try:
            headers = None if version in (None, self.version) else {"Accept": ACCEPT[version]}
            return self.http.request_json("GET", url, params=merged, headers=headers)
        except SessionExpired as exc:  # a fresh token was refused too
            raise ERPAuthError(
                f"SAP refused a freshly fetched OAuth token for {safe_url(url)} (HTTP 401); check the "
                f"OAuth client's roles and the communication arrangement of tenant {self.tenant.name!r}",
                status_code=401,
                code=exc.code,
                exception_message=exc.exception_message,
                tenant=self.tenant.name,
            ) from None

    @property
    def request_count(self) -> int:
        return self.http.request_count

    @property
    def retry_count(self) -> int:
        return self.http.retry_count
