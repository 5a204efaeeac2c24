"""Settings: sources, named errors, secrets never printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from connector.context.builder import MIN_BUDGET
from connector.errors import ConfigError
from connector.settings import ContextSettings, load_settings

TOML = """
data_dir = "d"
[[tenants]]
name = "acu"
kind = "acumatica"
base_url = "https://erp.example.com/AcumaticaERP/"
username = "admin"
password = "hunter2-secret"

[[tenants]]
name = "s4"
kind = "sap"
base_url = "https://s4.example.com"
sap_client = "100"
auth = "basic"
username = "COMM_USER"
password = "sap-secret-pw"
"""


def write_config(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "connector.toml"
    path.write_text(text)
    monkeypatch.setenv("CONNECTOR_CONFIG_FILE", str(path))


def test_toml_declares_several_tenants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, TOML, monkeypatch)
    settings = load_settings()
    assert [t.kind for t in settings.tenants] == ["acumatica", "sap"]
    assert settings.tenants[0].base_url == "https://erp.example.com/AcumaticaERP"
    assert settings.tenant("s4").sap_client == "100"


def test_secrets_are_masked_in_repr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, TOML, monkeypatch)
    settings = load_settings()
    assert "hunter2-secret" not in repr(settings)
    assert "sap-secret-pw" not in str(settings.model_dump())
    assert settings.tenants[0].password is not None
    assert settings.tenants[0].password.get_secret_value() == "hunter2-secret"


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, TOML, monkeypatch)
    monkeypatch.setenv("CONNECTOR_SYNC__LOOKBACK_SECONDS", "42")
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", "postgresql+psycopg://u:pw@h/db")
    settings = load_settings()
    assert settings.sync.lookback_seconds == 42
    assert settings.database_url == "postgresql+psycopg://u:pw@h/db"


def test_dotenv_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("CONNECTOR_WORKING__VERBATIM_TURNS=7\n")
    assert load_settings().working.verbatim_turns == 7


def test_default_database_is_sqlite_in_data_dir(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "x")
    assert settings.database_url == f"sqlite:///{(tmp_path / 'x' / 'connector.sqlite3').resolve()}"


def test_malformed_value_names_the_setting_and_hides_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECTOR_SYNC__LOOKBACK_SECONDS", "soon")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "sync.lookback_seconds" in str(err.value)
    assert "integer" in str(err.value)
    assert "soon" not in str(err.value)


def test_bad_tenant_secret_never_appears_in_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, TOML.replace('kind = "sap"', 'kind = "oracle"'), monkeypatch)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "tenants.1.kind" in str(err.value)
    assert "sap-secret-pw" not in str(err.value)
    assert "hunter2" not in str(err.value)


def test_missing_required_tenant_field_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, '[[tenants]]\nname = "a"\nkind = "sap"\n', monkeypatch)
    with pytest.raises(ConfigError, match=r"tenants\.0\.base_url: Field required"):
        load_settings()


def test_database_url_password_not_in_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", "mysql://u:topsecret@h/db")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "database.url" in str(err.value)
    assert "topsecret" not in str(err.value)


def test_missing_named_config_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECTOR_CONFIG_FILE", "/nonexistent/connector.toml")
    with pytest.raises(ConfigError, match="CONNECTOR_CONFIG_FILE"):
        load_settings()


def test_unknown_tenant_lists_configured_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, TOML, monkeypatch)
    with pytest.raises(ConfigError, match="configured tenants: acu, s4"):
        load_settings().tenant("nope")


def test_tenant_secret_from_a_named_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        tmp_path, TOML.replace('password = "hunter2-secret"', 'password_env = "ACU_PW"'), monkeypatch
    )
    monkeypatch.setenv("ACU_PW", "from-env-secret")
    tenant = load_settings().tenant("acu")
    assert tenant.password is not None
    assert tenant.password.get_secret_value() == "from-env-secret"
    assert "from-env-secret" not in repr(tenant)


def test_tenant_secret_from_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(
        tmp_path, TOML.replace('password = "hunter2-secret"', 'password_env = "ACU_PW2"'), monkeypatch
    )
    (tmp_path / ".env").write_text("ACU_PW2=dotenv-secret\n")
    tenant = load_settings().tenant("acu")
    assert tenant.password is not None and tenant.password.get_secret_value() == "dotenv-secret"


def test_missing_secret_variable_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(
        tmp_path, TOML.replace('password = "hunter2-secret"', 'password_env = "NOPE_PW"'), monkeypatch
    )
    with pytest.raises(ConfigError, match=r"tenants\.0.*NOPE_PW"):
        load_settings()


def test_example_settings_file_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    from connector.resources import config_dir

    monkeypatch.setenv("CONNECTOR_CONFIG_FILE", str(config_dir() / "connector.example.toml"))
    monkeypatch.setenv("ACUMATICA_PASSWORD", "x")
    monkeypatch.setenv("S4_PASSWORD", "y")
    settings = load_settings()
    assert [t.name for t in settings.tenants] == ["acumatica-prod", "s4-prod"]


def test_the_budget_setting_and_a_call_share_one_minimum() -> None:
    assert ContextSettings(token_budget=MIN_BUDGET).token_budget == MIN_BUDGET
    with pytest.raises(ValidationError):
        ContextSettings(token_budget=MIN_BUDGET - 1)


def test_an_unknown_key_in_a_tenant_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        tmp_path,
        '[[tenants]]\nname = "acme"\nkind = "acumatica"\nbase_url = "https://erp.example"\n'
        'username = "u"\npasword_env = "ACME_PASSWORD"\n',
        monkeypatch,
    )
    with pytest.raises(ConfigError, match=r"tenants\.0\.pasword_env"):
        load_settings()


def test_a_toml_syntax_error_gives_line_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, "[sync]\nlookback_seconds = 60\npage_size 100\n", monkeypatch)
    with pytest.raises(ConfigError, match=r"connector\.toml: .*line 3, column \d+"):
        load_settings()


def test_a_tenant_name_longer_than_the_store_holds_is_refused_at_load() -> None:
    tenant = {"name": "t" * 65, "kind": "sap", "base_url": "https://s4.example", "username": "u"}
    with pytest.raises(ConfigError, match=r"tenants\.0\.name: String should have at most 64 characters"):
        load_settings(tenants=[tenant])
