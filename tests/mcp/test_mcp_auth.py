"""The HTTP transport's guard: a configured token's secret unless bound to loopback with --no-auth."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from connector.access import Keyring
from connector.errors import ConfigError
from connector.mcp_server.server import PRINCIPAL_KEY, BearerAuth, bearer_tokens, is_loopback
from connector.memory import Memory
from connector.settings import Settings

TOKEN = "s3cret-token-0123456789"


def guarded(monkeypatch: pytest.MonkeyPatch) -> TestClient:
    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"served {request.scope[PRINCIPAL_KEY].name}")

    monkeypatch.setenv("CONNECTOR_MCP_TOKEN", TOKEN)
    keyring = Keyring.from_settings(Settings())
    return TestClient(BearerAuth(Starlette(routes=[Route("/mcp", ok, methods=["POST"])]), keyring))


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"bearer{TOKEN}", TOKEN])
def test_a_request_without_the_exact_token_gets_401(
    header: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Authorization": header} if header is not None else {}
    response = guarded(monkeypatch).post("/mcp", headers=headers)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in response.text and response.text.count("\n") == 1


def test_the_exact_token_is_served_as_the_old_single_token_named_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    served = guarded(monkeypatch).post("/mcp", headers={"Authorization": f"Bearer {TOKEN}"})
    assert served.text == "served mcp"


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("::1", True), ("localhost", True),
                                                ("127.0.0.2", True), ("0.0.0.0", False), ("10.1.2.3", False),
                                                ("example.com", False)])  # fmt: skip
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_no_auth_only_on_loopback_and_the_token_comes_from_the_named_variable(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONNECTOR_MCP_TOKEN", raising=False)
    memory = Memory(settings, llm=None)
    assert bearer_tokens(memory, host="127.0.0.1", no_auth=True) is None
    with pytest.raises(ConfigError, match="loopback"):
        bearer_tokens(memory, host="0.0.0.0", no_auth=True)
    with pytest.raises(ConfigError, match="CONNECTOR_MCP_TOKEN"):
        bearer_tokens(memory, host="0.0.0.0", no_auth=False)
    monkeypatch.setenv("AGENT_GATEWAY_TOKEN", TOKEN)
    named = Memory(
        settings.model_copy(
            update={"mcp": settings.mcp.model_copy(update={"token_env": "AGENT_GATEWAY_TOKEN"})}
        )
    )
    keyring = bearer_tokens(named, host="0.0.0.0", no_auth=False)
    assert keyring is not None and keyring.authenticate(TOKEN) is not None
