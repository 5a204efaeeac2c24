"""SAP authentication: basic (communication user), OAuth 2.0 client credentials, or the API hub key.

One :class:`~connector.adapters.auth.LoginFlow`, the shape the Acumatica logins have too. Basic and
API-key credentials are static headers (nothing to log in to, and a 401 means they are wrong).
OAuth tokens are fetched from ``token_url`` at login, renewed shortly before they expire, and
fetched again when SAP answers 401 (the flow's ``refresh``; the request is retried once). Secrets
stay in ``SecretStr`` until they are put into a header; no message or log line ever contains one.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import SecretStr

from connector.adapters.auth import LoginFlow
from connector.adapters.http import HttpClient, SessionExpired, safe_url
from connector.clock import Clock
from connector.errors import ConfigError, ERPAuthError, ERPProtocolError
from connector.settings import TenantSettings

log = logging.getLogger(__name__)

AuthKind = Literal["basic", "oauth", "apikey"]
#: Refresh this long before the token's stated expiry (capped at a tenth of its lifetime).
EXPIRY_MARGIN = timedelta(seconds=60)


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def basic_header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass(slots=True)
class _Token:
    value: str
    refresh_at: datetime


class SAPLogin(LoginFlow):
    """The tenant's SAP credentials, validated at construction (a missing one is a ConfigError)."""

    def __init__(self, tenant: TenantSettings, clock: Clock) -> None:
        self._tenant = tenant
        self._clock = clock
        self._token: _Token | None = None
        self.kind: AuthKind = self._kind(tenant)
        self.refreshes = self.kind == "oauth"  # a 401 with static credentials means they are wrong
        self.token_fetches = 0
        self._require()

    @staticmethod
    def _kind(tenant: TenantSettings) -> AuthKind:
        if tenant.auth in ("basic", "session"):  # "session" is the tenant default; SAP has no login call
            return "basic"
        if tenant.auth == "oauth_client_credentials":
            return "oauth"
        if tenant.auth == "apikey":
            return "apikey"
        raise ConfigError(
            f"tenant {tenant.name!r}: auth = {tenant.auth!r} is not available for SAP; "
            "use 'basic', 'oauth_client_credentials' or 'apikey'"
        )

    def _require(self) -> None:
        t = self._tenant
        needed: dict[AuthKind, dict[str, object]] = {
            "basic": {"username": t.username, "password": t.password},
            "oauth": {"token_url": t.token_url, "client_id": t.client_id, "client_secret": t.client_secret},
            "apikey": {"api_key": t.api_key},
        }
        missing = [name for name, value in needed[self.kind].items() if not value]
        if missing:
            raise ConfigError(
                f"tenant {t.name!r}: SAP auth {t.auth!r} needs {', '.join(missing)}; set them in the "
                "tenant's settings (secrets through the environment)"
            )

    def static_headers(self) -> dict[str, str]:
        """Headers every request carries (the bearer token is added once fetched)."""
        t = self._tenant
        if self.kind == "basic":
            return {"Authorization": basic_header(t.username or "", _secret(t.password) or "")}
        if self.kind == "apikey":
            return {"APIKey": _secret(t.api_key) or ""}
        return {}

    @property
    def uses_tokens(self) -> bool:
        return self.kind == "oauth"

    def login(self, http: HttpClient) -> None:
        """Fetch the OAuth token up front, so a bad credential fails before any read."""
        self.before_request(http)

    def before_request(self, http: HttpClient) -> None:
        """Fetch a token when there is none or it is about to expire (OAuth only)."""
        if self.kind == "oauth" and (self._token is None or self._clock.now() >= self._token.refresh_at):
            self.refresh(http)

    def refresh(self, http: HttpClient) -> None:
        """Fetch a new token from the token endpoint and put it on the client."""
        t = self._tenant
        assert t.token_url is not None
        credentials = basic_header(t.client_id or "", _secret(t.client_secret) or "")
        try:
            body = http.request_json(
                "POST",
                t.token_url,
                data={"grant_type": "client_credentials"},
                headers={"Authorization": credentials, "Accept": "application/json"},
                reauth=False,
            )
        except SessionExpired:
            raise ERPAuthError(
                f"SAP token endpoint {safe_url(t.token_url)} refused the client credentials (HTTP 401); "
                f"check client_id and client_secret of tenant {t.name!r}",
                status_code=401,
                tenant=t.name,
            ) from None
        token, lifetime = self._parse(body)
        margin = min(EXPIRY_MARGIN, timedelta(seconds=lifetime / 10))
        self._token = _Token(token, self._clock.now() + timedelta(seconds=lifetime) - margin)
        self.token_fetches += 1
        http.headers["Authorization"] = f"Bearer {token}"
        log.info("SAP tenant %s: fetched an OAuth token valid for %ds", t.name, lifetime)

    def _parse(self, body: Any) -> tuple[str, float]:
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ERPProtocolError(
                f"SAP token endpoint of tenant {self._tenant.name!r} answered without an access_token",
                tenant=self._tenant.name,
            )
        lifetime = body.get("expires_in", 3600)
        try:
            seconds = float(lifetime)
        except (TypeError, ValueError):
            seconds = 3600.0
        return token, max(seconds, 1.0)
