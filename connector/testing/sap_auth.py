"""The fake SAP's front door: ``sap-client``, basic / OAuth client-credentials / API-key auth.

Refusals look like the real ones: a wrong client or user gets SAP's HTML logon page with 401,
an unknown or expired bearer token a 401 with ``WWW-Authenticate: Bearer error="invalid_token"``,
a bad API key the API-management fault body. The token endpoint (``POST /oauth/token``,
``grant_type=client_credentials``, client credentials in a basic header or the form) issues
tokens that expire by the injected clock.
"""

from __future__ import annotations

import base64
import secrets
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import httpx

from connector.clock import Clock
from connector.testing.sap_render import dumps

AuthMode = Literal["basic", "oauth", "apikey", "none"]
TOKEN_PATH = "/oauth/token"


@dataclass(slots=True)
class Gate:
    """Credentials the fake accepts, the tokens it issued and what it counted at the door."""

    clock: Clock
    mode: AuthMode = "basic"
    sap_client: str | None = "100"
    username: str = "COMM_USER"
    password: str = "fake-password"
    client_id: str = "fake-client"
    client_secret: str = "fake-client-secret"
    api_key: str = "fake-api-key"
    token_ttl_s: int = 3600
    tokens_issued: int = 0
    requests_without_client: int = 0
    _tokens: dict[str, datetime] = field(default_factory=dict)

    def expire_tokens(self) -> None:
        """Every token issued so far stops working."""
        past = self.clock.now() - timedelta(seconds=1)
        self._tokens = dict.fromkeys(self._tokens, past)

    def check(self, request: httpx.Request) -> httpx.Response | None:
        """None when the request may pass, else the refusal SAP would send."""
        client = request.url.params.get("sap-client")
        if client is None:
            self.requests_without_client += 1
        if self.sap_client is not None and client != self.sap_client:
            return _logon_failed(f"Logon failed: client {client or '000 (default)'} does not know this user")
        header = request.headers.get("authorization", "")
        if self.mode == "basic":
            expected = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            if header != f"Basic {expected}":
                return _logon_failed("Logon failed")
        elif self.mode == "oauth":
            token = header[7:] if header.lower().startswith("bearer ") else ""
            expires = self._tokens.get(token)
            if expires is None or expires <= self.clock.now():
                return _logon_failed("invalid_token", bearer=True)
        elif self.mode == "apikey" and request.headers.get("APIKey") != self.api_key:
            fault = {
                "fault": {"faultstring": "Invalid ApiKey", "detail": {"errorcode": "oauth.v2.InvalidApiKey"}}
            }
            return httpx.Response(401, content=dumps(fault), headers={"content-type": "application/json"})
        return None

    def token(self, request: httpx.Request) -> httpx.Response:
        """Answer the token endpoint."""
        form = urllib.parse.parse_qs(request.content.decode())
        client_id = (form.get("client_id") or [""])[0]
        client_secret = (form.get("client_secret") or [""])[0]
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            client_id, _, client_secret = base64.b64decode(header[6:]).decode().partition(":")
        if request.method != "POST" or (form.get("grant_type") or [""])[0] != "client_credentials":
            return httpx.Response(400, json={"error": "unsupported_grant_type"})
        if client_id != self.client_id or client_secret != self.client_secret:
            return httpx.Response(
                401, json={"error": "invalid_client", "error_description": "Bad credentials"}
            )
        token = secrets.token_urlsafe(24)
        self._tokens[token] = self.clock.now() + timedelta(seconds=self.token_ttl_s)
        self.tokens_issued += 1
        body = {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self.token_ttl_s,
            "scope": "uaa.resource",
        }
        return httpx.Response(200, json=body)


def _logon_failed(reason: str, *, bearer: bool = False) -> httpx.Response:
    challenge = f'Bearer error="{reason}"' if bearer else 'Basic realm="SAP NetWeaver Application Server"'
    html = f"<html><head><title>Logon Error Message</title></head><body>{reason}</body></html>"
    return httpx.Response(
        401, text=html, headers={"content-type": "text/html", "www-authenticate": challenge}
    )
