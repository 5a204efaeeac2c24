"""The Acumatica REST client: login lifecycle, endpoint version, list and by-key reads.

Knows URLs, authentication and response shapes; nothing about streams or canonical records.
Every request goes through :class:`connector.adapters.http.HttpClient` (retries, limits, error table); a
401 logs in again once through the tenant's :class:`~connector.adapters.auth.LoginFlow`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from connector.adapters.acumatica.auth import login_flow_for
from connector.adapters.acumatica.errors import ERP_NAME, decoder
from connector.adapters.auth import LoginFlow
from connector.adapters.http import SYSTEM_CLOCK, HttpClient, TrafficLimits, TrafficPolicy
from connector.clock import Clock
from connector.errors import ERPProtocolError
from connector.settings import TenantSettings

log = logging.getLogger(__name__)

ENDPOINT = "Default"
#: Contract versions this adapter is built for, oldest first.
SUPPORTED_VERSIONS = ("20.200.001", "22.200.001", "23.200.001", "24.200.001", "25.200.001", "26.200.001")
_VERSION = re.compile(r"^\d+(\.\d+)*$")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def choose_version(index: Any) -> str:
    """The newest ``Default`` endpoint version that both sides support (``GET /entity``).

    Only versions with a published contract the adapter reads every stream of are supported; a
    server offering none of them is refused before any data is read, naming both lists."""
    endpoints = index.get("endpoints") if isinstance(index, dict) else None
    if not isinstance(endpoints, list):
        raise ERPProtocolError("Acumatica GET /entity: expected an object with an 'endpoints' list")
    offered = sorted(
        {
            str(item["version"])
            for item in endpoints
            if isinstance(item, dict)
            and item.get("name") == ENDPOINT
            and isinstance(item.get("version"), str)
            and _VERSION.match(item["version"])
        },
        key=_version_key,
    )
    if not offered:
        raise ERPProtocolError(
            f"Acumatica offers no '{ENDPOINT}' endpoint; set the tenant's version to one it has"
        )
    known = [version for version in offered if version in SUPPORTED_VERSIONS]
    if known:
        return known[-1]
    raise ERPProtocolError(
        f"Acumatica offers the {ENDPOINT} endpoint in version(s) {', '.join(offered)}; this project supports "
        f"{', '.join(SUPPORTED_VERSIONS)}: add one of those to the server or set the tenant's version"
    )


class AcumaticaClient:
    """One authenticated connection to an Acumatica tenant. Use :meth:`open` and :meth:`close`."""

    def __init__(
        self,
        tenant: TenantSettings,
        *,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
        traffic: TrafficPolicy | None = None,
    ) -> None:
        self.tenant = tenant
        self._clock: Clock = clock or SYSTEM_CLOCK
        self._auth: LoginFlow = login_flow_for(tenant, self._clock)
        policy = traffic or TrafficPolicy.from_tenant(tenant)
        self.http = HttpClient(
            tenant.base_url,
            erp=ERP_NAME,
            decode_error=decoder(tenant.name),
            traffic=policy,
            clock=self._clock,
            transport=transport,
            auth=self._auth,
            limits=TrafficLimits.shared(
                f"acumatica|{tenant.base_url}|{tenant.company or ''}",
                policy.requests_per_minute,
                policy.max_concurrency,
                self._clock,
            ),
        )
        self.version: str | None = tenant.version

    # Lifecycle -------------------------------------------------------------------------------
    def open(self, prior_session: str | None = None) -> None:
        """Log in and settle the endpoint version. On failure, nothing stays logged in.

        ``prior_session`` (an earlier run's :meth:`session_state`) is logged out first: a killed
        run's session would otherwise hold one of the licence's API logins until its idle timeout.
        """
        if prior_session:
            self._auth.close_session(self.http, prior_session)
        self._auth.login(self.http)
        try:
            if self.version is None:
                self.version = self.discover_version()
        except BaseException:
            self._auth.logout(self.http)
            raise

    def session_state(self) -> str | None:
        """The live session as text a later run can log out (never logged or shown)."""
        return self._auth.session_state(self.http)

    def close(self) -> None:
        """Log out (never raises) and release the connection pool."""
        try:
            self._auth.logout(self.http)
        finally:
            self.http.close()

    # Requests --------------------------------------------------------------------------------
    def discover_version(self) -> str:
        index = self.http.request_json("GET", "/entity")
        version = choose_version(index)
        log.info(
            "Acumatica tenant %s: using endpoint %s/%s, the newest the server offers that this project "
            "supports",
            self.tenant.name,
            ENDPOINT,
            version,
        )
        return version

    def entity_path(self, entity: str, keys: tuple[str, ...] = ()) -> str:
        if self.version is None:
            raise RuntimeError("the Acumatica client is not open: no endpoint version yet")
        path = f"/entity/{ENDPOINT}/{self.version}/{entity}"
        return path + "".join("/" + quote(key, safe="") for key in keys)

    def list(self, entity: str, params: Mapping[str, str]) -> list[Any]:
        """One ``GET`` of an entity list; the body must be a bare JSON array."""
        body = self.http.request_json("GET", self.entity_path(entity), params=params)
        if not isinstance(body, list):
            raise ERPProtocolError(
                f"Acumatica GET {entity}: expected a JSON array of records, got {type(body).__name__}"
            )
        return body

    def get(self, entity: str, keys: tuple[str, ...], params: Mapping[str, str]) -> dict[str, Any]:
        """One record by its key values; a missing record raises ERPNotFound."""
        body = self.http.request_json("GET", self.entity_path(entity, keys), params=params)
        if not isinstance(body, dict):
            raise ERPProtocolError(
                f"Acumatica GET {entity} by key: expected a JSON object, got {type(body).__name__}"
            )
        return body
