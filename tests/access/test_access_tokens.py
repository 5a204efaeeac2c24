"""Named access tokens: roles, scopes, secrets from the environment, revocation, constant-time checks."""

from __future__ import annotations

import hmac

import pytest

from connector.access import CLI, LOOPBACK, Keyring, Principal, authenticate, bearer_secret
from connector.errors import ConfigError
from connector.settings import Settings, TenantSettings, TokenSettings, load_settings

READER = "reader-secret-0123456789"
WRITER = "writer-secret-0123456789"
OLD = "revoked-secret-0123456789"
LEGACY = "legacy-mcp-token-0123456789"


def with_tokens(settings: Settings, *tokens: TokenSettings) -> Settings:
    tenants = [
        TenantSettings(name=n, kind="acumatica", base_url="http://127.0.0.1:9") for n in ("north", "south")
    ]
    return settings.model_copy(
        update={"tenants": tenants, "access": settings.access.model_copy(update={"tokens": list(tokens)})}
    )


@pytest.fixture
def keyed(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("READER_SECRET", READER)
    monkeypatch.setenv("WRITER_SECRET", WRITER)
    monkeypatch.setenv("OLD_SECRET", OLD)
    monkeypatch.delenv("CONNECTOR_MCP_TOKEN", raising=False)
    return with_tokens(
        settings,
        TokenSettings(name="dashboard", secret_env="READER_SECRET", role="read", tenants=["north"]),
        TokenSettings(name="agent", secret_env="WRITER_SECRET", role="write", customers=[" C001 "]),
        TokenSettings(name="old-agent", secret_env="OLD_SECRET", role="erase", revoked=True),
    )


def test_each_secret_stands_for_its_token_with_role_and_scope(keyed: Settings) -> None:
    reader = authenticate(keyed, READER)
    writer = authenticate(keyed, WRITER)
    assert reader is not None and reader.name == "dashboard" and reader.role == "read"
    assert reader.allows("north", "ANY") and not reader.allows("south", "ANY")
    assert reader.can("read") and not reader.can("write")
    assert writer is not None and writer.name == "agent"
    assert writer.allows("south", "C001") and writer.allows("north", " C001")
    assert not writer.allows("north", "C002")
    assert writer.can("write") and not writer.can("erase")


@pytest.mark.parametrize("presented", [None, "", OLD, READER + "x", READER[:-1], "Bearer " + READER])
def test_unknown_revoked_or_missing_secrets_are_refused(keyed: Settings, presented: str | None) -> None:
    assert authenticate(keyed, presented) is None


def test_every_secret_is_compared_even_after_a_match(
    keyed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("connector.access.keyring.hmac.compare_digest", spy)
    keyring = Keyring.from_settings(keyed)
    assert keyring.authenticate(READER) is not None  # the first token matches
    assert len(calls) == 3 and all(len(a) == len(b) == 32 for a, b in calls)  # digests: equal lengths
    calls.clear()
    assert keyring.authenticate("nobody-0123456789") is None
    assert len(calls) == 3


def test_the_old_single_mcp_token_is_a_token_named_mcp_with_every_right(
    keyed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECTOR_MCP_TOKEN", LEGACY)
    legacy = authenticate(keyed, LEGACY)
    assert legacy == Principal(name="mcp", role="erase", tenants=None, customers=None)
    assert authenticate(keyed, READER) is not None  # the named tokens still work beside it


def test_a_token_without_its_secret_is_a_config_error_naming_the_variable_not_a_value(
    keyed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRITER_SECRET", "short")
    keyring = Keyring.from_settings(keyed)
    with pytest.raises(ConfigError, match=r"'agent'.*\$WRITER_SECRET") as raised:
        keyring.require_usable()
    assert "short" not in str(raised.value)
    assert keyring.authenticate("short") is None and keyring.authenticate(READER) is not None


def test_no_token_at_all_cannot_serve_over_http(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONNECTOR_MCP_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="CONNECTOR_MCP_TOKEN"):
        Keyring.from_settings(settings).require_usable()


@pytest.mark.parametrize(
    ("tokens", "problem"),
    [
        ([{"name": "cli", "secret_env": "X"}], "reserved"),
        ([{"name": "a", "secret_env": "X"}, {"name": "a", "secret_env": "Y"}], "unique"),
        ([{"name": "a", "secret_env": "X", "role": "admin"}], "access.tokens"),
        ([{"name": "a", "secret_env": "X", "secret": "inline"}], "secret"),
        ([{"name": "<b>x</b>", "secret_env": "X"}], "name"),
        ([{"name": "a", "secret_env": "X", "tenants": ["nowhere"]}], "nowhere"),
    ],
)
def test_bad_token_settings_are_one_line_errors(tokens: list[dict[str, object]], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as raised:
        load_settings(access={"tokens": tokens})
    assert "\n" not in str(raised.value).strip()


def test_bearer_header_parsing() -> None:
    assert bearer_secret(b"Bearer abc") == "abc" and bearer_secret("bearer  abc ") == "abc"
    assert bearer_secret(None) is None and bearer_secret("Basic abc") is None
    assert bearer_secret("Bearer ") is None


def test_the_local_callers_have_every_right() -> None:
    assert LOOPBACK.name == "loopback" and CLI.name == "cli"
    assert LOOPBACK.can("erase") and CLI.allows("any", "customer")
