"""Logging in to Acumatica: a cookie session or an OAuth 2.0 resource-owner password token.

Each is a :class:`~connector.adapters.auth.LoginFlow` (the shape the SAP login has too): ``login``,
``refresh`` after a 401, ``before_request`` (proactive token refresh) and ``logout``, which never
raises. There is no client-credentials flow in Acumatica, by design. Secrets are read from
``SecretStr`` only at the moment they are sent.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from connector.adapters.auth import LoginFlow
from connector.adapters.http import HttpClient
from connector.clock import Clock
from connector.errors import ConfigError, ERPAuthError, ERPError, ERPProtocolError
from connector.settings import TenantSettings

log = logging.getLogger(__name__)

LOGIN_PATH = "/entity/auth/login"
LOGOUT_PATH = "/entity/auth/logout"
TOKEN_PATH = "/identity/connect/token"
OAUTH_SCOPE = "api offline_access"
_REFRESH_MARGIN = timedelta(seconds=60)


def _required(tenant: TenantSettings, *names: str) -> None:
    missing = [name for name in names if getattr(tenant, name) in (None, "")]
    if missing:
        raise ConfigError(
            f"tenant {tenant.name!r} (acumatica, auth={tenant.auth}) needs {', '.join(missing)}; "
            "set them in the tenant's settings"
        )


def _logout_quietly(http: HttpClient, tenant: str) -> None:
    try:
        http.request("POST", LOGOUT_PATH, reauth=False, retry=False)
    except ERPError as exc:
        log.warning(
            "Acumatica logout for tenant %s failed (%s); the session ends at its idle timeout",
            tenant,
            type(exc).__name__,
        )


class SessionLogin(LoginFlow):
    """Cookie session: ``POST /entity/auth/login`` (204 + cookies), ``POST /entity/auth/logout``."""

    def __init__(self, tenant: TenantSettings) -> None:
        _required(tenant, "username", "password")
        self._tenant = tenant
        self.logged_in = False

    def _body(self) -> dict[str, Any]:
        tenant = self._tenant
        assert tenant.password is not None
        body: dict[str, Any] = {"name": tenant.username, "password": tenant.password.get_secret_value()}
        if tenant.company:
            # Versions before 2020 R1 call the tenant "company".
            old = (
                tenant.version is not None
                and tenant.version.split(".", 1)[0].isdigit()
                and int(tenant.version.split(".", 1)[0]) < 20
            )
            body["company" if old else "tenant"] = tenant.company
        if tenant.branch:
            body["branch"] = tenant.branch
        return body

    def login(self, http: HttpClient) -> None:
        http.request("POST", LOGIN_PATH, json=self._body(), reauth=False)
        self.logged_in = True
        log.info("logged in to Acumatica tenant %s as %s", self._tenant.name, self._tenant.username)

    def refresh(self, http: HttpClient) -> None:
        http.cookies.clear()
        self.logged_in = False
        self.login(http)

    def logout(self, http: HttpClient) -> None:
        if not self.logged_in:
            return
        try:
            _logout_quietly(http, self._tenant.name)
        finally:
            self.logged_in = False
            http.cookies.clear()

    def session_state(self, http: HttpClient) -> str | None:
        """The session cookies (JSON): what a later run needs to log this session out."""
        if not self.logged_in:
            return None
        return json.dumps({cookie.name: cookie.value for cookie in http.cookies.jar})

    def close_session(self, http: HttpClient, state: str) -> None:
        """Log out the session an earlier, killed run left open, so it frees its licence slot now."""
        try:
            cookies = json.loads(state)
        except ValueError:
            return
        if not isinstance(cookies, dict) or self.logged_in:
            return
        for name, value in cookies.items():
            http.cookies.set(str(name), str(value))
        try:
            _logout_quietly(http, self._tenant.name)
            log.info("closed the Acumatica session an earlier run of tenant %s left open", self._tenant.name)
        finally:
            http.cookies.clear()


class OAuthPasswordLogin(LoginFlow):
    """OAuth 2.0 resource-owner password flow with refresh tokens (scope ``offline_access``)."""

    def __init__(self, tenant: TenantSettings, clock: Clock) -> None:
        _required(tenant, "username", "password", "client_id")
        self._tenant = tenant
        self._clock = clock
        self._token_url = tenant.token_url or TOKEN_PATH
        self._refresh_token: str | None = None
        self.expires_at: datetime | None = None

    @property
    def logged_in(self) -> bool:
        return self.expires_at is not None

    def _client_fields(self) -> dict[str, str]:
        fields = {"client_id": str(self._tenant.client_id)}
        if self._tenant.client_secret is not None:
            fields["client_secret"] = self._tenant.client_secret.get_secret_value()
        return fields

    def _grant(self, http: HttpClient, form: dict[str, str]) -> None:
        payload = http.request_json(
            "POST", self._token_url, data={**form, **self._client_fields()}, reauth=False
        )
        token = payload.get("access_token") if isinstance(payload, dict) else None
        if not isinstance(token, str) or not token:
            raise ERPProtocolError("Acumatica token endpoint answered without an access_token")
        expires_in = payload.get("expires_in", 3600)
        if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)):
            expires_in = 3600
        refresh = payload.get("refresh_token")
        self._refresh_token = refresh if isinstance(refresh, str) and refresh else None
        self.expires_at = self._clock.now() + timedelta(seconds=float(expires_in))
        http.headers["Authorization"] = f"Bearer {token}"

    def login(self, http: HttpClient) -> None:
        assert self._tenant.password is not None
        self._grant(
            http,
            {
                "grant_type": "password",
                "username": str(self._tenant.username),
                "password": self._tenant.password.get_secret_value(),
                "scope": OAUTH_SCOPE,
            },
        )
        log.info("obtained an Acumatica OAuth token for tenant %s", self._tenant.name)

    def refresh(self, http: HttpClient) -> None:
        """Refresh with the refresh token; fall back to the password grant if it is refused."""
        if self._refresh_token is not None:
            try:
                self._grant(http, {"grant_type": "refresh_token", "refresh_token": self._refresh_token})
                log.debug("refreshed the Acumatica OAuth token for tenant %s", self._tenant.name)
                return
            except ERPAuthError:
                log.info("Acumatica refresh token refused for tenant %s; logging in again", self._tenant.name)
        self.login(http)

    def before_request(self, http: HttpClient) -> None:
        if self.expires_at is not None and self._clock.now() >= self.expires_at - _REFRESH_MARGIN:
            self.refresh(http)

    def logout(self, http: HttpClient) -> None:
        """End the server session that belongs to the token, then forget the token."""
        if not self.logged_in:
            return
        try:
            _logout_quietly(http, self._tenant.name)
        finally:
            http.headers.pop("Authorization", None)
            self._refresh_token = None
            self.expires_at = None


def login_flow_for(tenant: TenantSettings, clock: Clock) -> LoginFlow:
    if tenant.auth == "session":
        return SessionLogin(tenant)
    if tenant.auth == "oauth":
        return OAuthPasswordLogin(tenant, clock)
    raise ConfigError(
        f"tenant {tenant.name!r}: Acumatica supports auth = 'session' or 'oauth' (resource-owner password "
        f"flow; it has no client-credentials flow), got {tenant.auth!r}"
    )
