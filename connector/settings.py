"""Settings: environment (prefix ``CONNECTOR_``, nested with ``__``), a ``.env`` file and a TOML file.

Precedence, highest first: explicit arguments, environment, ``.env``, the TOML file named by
``CONNECTOR_CONFIG_FILE`` (else ``./config/connector.toml`` when present), then defaults.
One pydantic model per concern. Secrets are ``SecretStr``; :func:`load_settings` turns any
validation failure into one :class:`~connector.errors.ConfigError` that names the setting and
what was expected, never the offending value (it might be a password).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from connector.errors import ConfigError

ENV_PREFIX = "CONNECTOR_"
DEFAULT_CONFIG_FILE = Path("config/connector.toml")


def environment_value(name: str) -> str | None:
    """A variable from the process environment, else from ./.env (never logged)."""
    if name in os.environ:
        return os.environ[name]
    env_file = Path(".env")
    if env_file.is_file():
        from dotenv import dotenv_values

        value = dotenv_values(env_file).get(name)
        return value if value is not None else None
    return None


MAX_TENANT_NAME = 64  # the width of every table's tenant column


class Section(BaseModel):
    """A settings table: a key it does not know (``pasword_env``) is an error naming it, not ignored."""

    model_config = ConfigDict(extra="forbid")


class TenantSettings(Section):
    """One ERP connection: an Acumatica tenant+branch or an SAP system+client."""

    # at most the store's tenant column (64): a longer name failed later as a raw driver error
    name: str = Field(min_length=1, max_length=MAX_TENANT_NAME, pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["acumatica", "sap"]
    base_url: str = Field(min_length=1)
    version: str | None = None  # Acumatica endpoint version; None = discover via GET /entity
    username: str | None = None
    password: SecretStr | None = None
    # Acumatica: company/tenant and branch for login; OAuth client for the password flow.
    company: str | None = None
    branch: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    auth: Literal["session", "oauth", "basic", "oauth_client_credentials", "apikey"] = "session"
    token_url: str | None = None
    # SAP
    sap_client: str | None = Field(default=None, pattern=r"^\d{3}$")
    api_key: SecretStr | None = None
    odata_version: Literal["v2", "v4"] = "v2"
    terms_source: Literal["company", "sales_area"] = "company"
    company_code: str | None = None
    sales_organization: str | None = None
    # Zone of SAP's local date/time fields (LastChangeDate + LastChangeTime): the system's time zone
    # on premise, usually UTC in S/4HANA Cloud. An IANA name such as "Europe/Berlin".
    sap_time_zone: str = "UTC"
    # Traffic shaping
    requests_per_minute: int = Field(default=600, ge=1)
    max_concurrency: int = Field(default=2, ge=1, le=64)
    page_size: int = Field(default=1000, ge=1, le=100_000)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    read_timeout_s: float = Field(default=300.0, gt=0)  # the ERP queues requests: allow slow answers
    max_retries: int = Field(default=6, ge=0, le=50)
    max_retry_wait_s: float = Field(default=120.0, gt=0)
    # Sync
    sync_interval_minutes: int = Field(default=15, ge=1)
    streams: list[str] | None = None  # None = every stream of the adapter
    custom_fields: dict[str, list[str]] = Field(default_factory=dict)  # stream -> ["View.Field", ...]

    # Secrets can stay out of the settings file: name an environment variable (also read from .env).
    password_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    client_secret_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @model_validator(mode="after")
    def _secrets_from_environment(self) -> TenantSettings:
        for field in ("password", "client_secret", "api_key"):
            variable = getattr(self, f"{field}_env")
            if variable is None or getattr(self, field) is not None:
                continue
            value = environment_value(variable)
            if value is None:
                raise ValueError(f"{field}_env names {variable}, which is not set in the environment or .env")
            setattr(self, field, SecretStr(value))
        return self

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("sap_time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            if value.upper() != "UTC":  # UTC needs no time zone database
                ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("must be an IANA time zone name such as 'UTC' or 'Europe/Berlin'") from None
        return value


class DatabaseSettings(Section):
    """Relational store. ``url`` None means an SQLite file in the data directory."""

    url: SecretStr | None = None
    echo: bool = False
    batch_size: int = Field(default=1000, ge=1, le=50_000)
    # Deadlines (connector.db.deadline): how long SQLite waits for another writer's lock; how long
    # PostgreSQL may take to connect and to run one statement (0: no limit), and how soon a
    # silent server's connection is declared dead (TCP keepalives and user timeout).
    busy_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    connect_timeout_s: int = Field(default=5, ge=1, le=600)
    statement_timeout_s: float = Field(default=60.0, ge=0, le=86_400)
    dead_server_s: int = Field(default=10, ge=1, le=3600)
    # PostgreSQL, kept by the client (a frozen server answers nothing): all the database work of
    # one agent read (build_context, lookup_document, recall, history), of a CLI read command's
    # calls and of ``doctor``'s check ends within this many seconds.
    read_timeout_s: float = Field(default=5.0, gt=0, le=600)

    @field_validator("url")
    @classmethod
    def _supported(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value()
        if not raw.startswith(("sqlite", "postgresql")):
            raise ValueError("must be an sqlite:/// or postgresql+psycopg:// URL")
        return value


class ChromaSettings(Section):
    """Episodic store: embedded (``path``) unless ``host`` is set, then a Chroma server."""

    path: Path | None = None
    host: str | None = None
    port: int = Field(default=8000, ge=1, le=65535)
    ssl: bool = False
    collection_prefix: str = Field(default="episodic", pattern=r"^[A-Za-z0-9_-]{3,40}$")
    # Deadlines (connector.vectors.deadline): a read on the agent's path (recall) gives up after
    # ``read_timeout_s`` and the context is built without it; writes, opening the store and the
    # first read of a collection (which loads it) after ``timeout_s``.
    read_timeout_s: float = Field(default=1.0, gt=0, le=600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    # In-process cache of entry vectors read from Chroma (connector.recall.vector_cache); 0 = off.
    # 64 MB holds ~40,000 vectors of 384 dimensions.
    vector_cache_mb: int = Field(default=64, ge=0, le=65536)


class LLMSettings(Section):
    """Any OpenAI-compatible endpoint. Without key and base URL the library runs in non-LLM mode."""

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)

    @property
    def enabled(self) -> bool:
        return self.api_key is not None or self.base_url is not None


class EmbeddingSettings(Section):
    provider: Literal["minilm", "openai"] = "minilm"
    # Which offline build (see connector.embeddings.minilm); an index remembers the one it was built with.
    minilm_model: Literal["minilm-l6-v2-qint8-mha", "minilm-l6-v2-qint8", "minilm-l6-v2-int8"] = (
        "minilm-l6-v2-qint8-mha"
    )
    openai_model: str = "text-embedding-3-small"
    # Texts per model run; unset = the embedder's own default (MiniLM 1: its int8 build quantises a
    # run's inputs together, so batch-mates would change a text's vector; OpenAI 256 per request).
    batch_size: int | None = Field(default=None, ge=1, le=2048)


class SyncSettings(Section):
    lookback_seconds: int = Field(default=300, ge=0)
    key_scan_interval_hours: float = Field(default=24.0, gt=0)
    # "clean": skip records that cannot be mapped, store text no store can hold (NUL, lone
    # surrogates) cleaned; "skip": skip both; "fail": fail the page. The run's problems name each.
    on_malformed_record: Literal["clean", "skip", "fail"] = "clean"
    on_locked: Literal["wait", "exit"] = "exit"
    lock_wait_s: float = Field(default=600.0, ge=0)
    expected_lag_minutes: int = Field(default=60, ge=1)
    # How far ahead of the connector's clock an ERP stamp may be before the run and `sync status`
    # warn of clock skew. Such records are stored at once; the watermark never passes the run's start.
    clock_skew_tolerance_s: int = Field(default=300, ge=0)


class RetentionSettings(Section):
    episodic_days: int = Field(default=180, ge=1)
    pii_days: int = Field(default=30, ge=1)
    retention_interval_hours: float = Field(default=24.0, gt=0)


#: Fields of each entity the ERP change history can track (``history.fields``).
HISTORY_TRACKABLE: dict[str, tuple[str, ...]] = {
    "party": (
        "status",
        "credit_limit",
        "currency",
        "terms",
        "tax_zone",
        "tax_id",
        "party_class",
        "name",
        "email",
        "phone",
    ),
    "document": (
        "status",
        "amount",
        "balance",
        "due_date",
        "is_open",
        "currency",
        "doc_date",
        "description",
        "customer_ref",
    ),
}


class HistorySettings(Section):
    """The ERP facts' change history, recorded by the sync (see ``connector.semantic``)."""

    enabled: bool = True
    retention_days: int = Field(default=730, ge=1)
    # Tracked fields per entity; unset = the fields the context shows. Contact fields (name, email,
    # phone) are personal data: tracked only when listed here, and then kept for retention.pii_days.
    fields: dict[Literal["party", "document"], list[str]] = Field(default_factory=dict)
    window_days: int = Field(default=90, ge=1)  # how far back the context's "Recent ERP changes" looks
    max_context_changes: int = Field(default=8, ge=0)

    @field_validator("fields")
    @classmethod
    def _fields(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for entity, names in value.items():
            unknown = [n for n in names if n not in HISTORY_TRACKABLE[entity]]
            if unknown:
                raise ValueError(
                    f"cannot track {', '.join(unknown)} of a {entity} "
                    f"(trackable: {', '.join(HISTORY_TRACKABLE[entity])})"
                )
        return value


class EpisodicSettings(Section):
    # record_case refuses a customer id that semantic memory does not hold (a typo, a case-variant
    # like `silverinst` for `SILVERINST`): true records it anyway. ERP case ingest is never checked.
    allow_unknown_customers: bool = False


class WorkingMemorySettings(Section):
    verbatim_turns: int = Field(default=20, ge=1)
    fold_batch: int = Field(default=10, ge=1)  # fold once this many turns wait beyond the verbatim ones
    max_pins_per_result: int = Field(default=24, ge=0, le=500)
    # Values extracted from tool results that a session keeps pinned (explicit pins are not counted
    # and never evicted). Every pinned value is shown in every context, so this bounds their tokens;
    # beyond it the values of the least recent tool results are unpinned (their turns keep them).
    max_extracted_pins: int = Field(default=64, ge=0, le=2000)
    # With an LLM, folds run on Memory's background worker so record_turn never waits on the LLM;
    # false folds inside record_turn (a script that needs each summary at once).
    fold_in_background: bool = True


class ConversationSettings(Section):
    """Recall of the customer's earlier conversations (turns of past sessions, with neighbours)."""

    enabled: bool = True  # index turns off the agent's path and show hits in build_context
    before: int = Field(default=2, ge=0, le=20)  # neighbouring turns shown before a hit
    after: int = Field(default=2, ge=0, le=20)  # and after it
    context_hits: int = Field(default=2, ge=0, le=20)  # hits build_context shows
    # Indexed turns fall under the PII window (retention.pii_days) instead of the episodic one.
    pii: bool = False
    max_pending: int = Field(default=1000, ge=1)  # sessions waiting to be indexed (beyond: caught up later)
    # Turns each signal (dense, lexical) brings to a recall's fusion, whatever the customer's history.
    candidates_per_signal: int = Field(default=200, ge=10, le=5000)
    # The most candidates per signal a recall asking many hits (k times its window) may use.
    max_candidates: int = Field(default=2000, ge=1)


MIN_TOKEN_BUDGET = 100  # the smallest budget a context is built in (setting and per call alike)


class ContextSettings(Section):
    token_budget: int = Field(default=3000, ge=MIN_TOKEN_BUDGET)
    shares: dict[str, float] = Field(
        default_factory=lambda: {
            "erp_facts": 0.15,
            "open_documents": 0.13,
            "erp_changes": 0.05,
            "pinned": 0.10,
            "learned_facts": 0.10,
            "past_cases": 0.12,
            "earlier_conversations": 0.08,
            "summary": 0.10,
            "recent_turns": 0.17,
        }
    )
    max_cases: int = Field(default=3, ge=0)
    max_open_documents: int = Field(default=15, ge=0)
    max_learned_facts: int = Field(default=8, ge=0)
    tokenizer: Literal["cl100k_base", "estimate"] = "cl100k_base"
    max_query_chars: int = Field(default=2000, ge=50)  # longer queries are trimmed for case recall

    @field_validator("shares")
    @classmethod
    def _shares(cls, value: dict[str, float]) -> dict[str, float]:
        if any(v < 0 for v in value.values()) or sum(value.values()) > 1.0001:
            raise ValueError("shares must be non-negative and sum to at most 1.0")
        return value


class FactSettings(Section):
    decay_factor: float = Field(default=0.95, gt=0, le=1)
    decay_threshold: float = Field(default=0.05, ge=0, lt=1)
    consolidate_interval_hours: float = Field(default=6.0, gt=0)


class McpSettings(Section):
    """What ``connector mcp`` serves and how it guards the HTTP transport."""

    # Tenants the server may touch (None = every configured tenant).
    tenants: list[str] | None = None
    # Customer ids the server may touch (None = any customer of a served tenant).
    customers: list[str] | None = None
    # The bearer token an HTTP client must send is read from this environment variable (or .env).
    token_env: str = Field(default="CONNECTOR_MCP_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    max_request_bytes: int = Field(default=1_000_000, ge=1_000, le=100_000_000)
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)


#: What a token may do: ``read`` < ``write`` (record turns, cases, pins, learned facts) < ``erase`` (forget).
Role = Literal["read", "write", "erase"]
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: Names the connector gives callers itself: a configured token cannot take them.
RESERVED_TOKEN_NAMES = frozenset({"cli", "loopback"})


class TokenSettings(Section):
    """One named access token (``[[access.tokens]]``); its secret is read from the environment
    variable ``secret_env`` names (or .env), never from the settings file."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    secret_env: str = Field(pattern=ENV_NAME)
    role: Role = "read"
    tenants: list[str] | None = None  # None = every configured tenant
    customers: list[str] | None = None  # None = any customer of its tenants
    revoked: bool = False  # refused (401) like an unknown token; kept so the audit trail names it

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_TOKEN_NAMES:
            raise ValueError(f"{value!r} is reserved for the connector's own callers")
        return value


class AccessSettings(Section):
    """Who may call the MCP server over HTTP and the web console (see connector.access)."""

    tokens: list[TokenSettings] = Field(default_factory=list)

    @field_validator("tokens")
    @classmethod
    def _unique(cls, value: list[TokenSettings]) -> list[TokenSettings]:
        names = [t.name for t in value]
        if len(names) != len(set(names)):
            raise ValueError("token names must be unique")
        return value


class AuditSettings(Section):
    """The audit trail (connector.audit): who wrote, erased or read what, never the content."""

    enabled: bool = True
    retention_days: int = Field(default=365, ge=1)  # older events are removed by the retention job


class TelemetrySettings(Section):
    """OpenTelemetry output (see connector.telemetry); off by default: the API is a no-op."""

    console: bool = False  # print spans and metrics to stderr (also: connector --otel-console)
    otlp: bool = False  # export over OTLP to the collector in OTEL_EXPORTER_OTLP_ENDPOINT
    service_name: str = "erp-memory-connector"
    # each export (retries included) gives up after this long: a dead collector costs seconds at exit
    export_timeout_s: float = Field(default=2.0, gt=0, le=60)


class Settings(BaseSettings):
    """All connector settings. Build with :func:`load_settings` to get readable errors."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Path(".data")
    tenants: list[TenantSettings] = Field(default_factory=list)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)
    episodic: EpisodicSettings = Field(default_factory=EpisodicSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    sync: SyncSettings = Field(default_factory=SyncSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    working: WorkingMemorySettings = Field(default_factory=WorkingMemorySettings)
    conversations: ConversationSettings = Field(default_factory=ConversationSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    facts: FactSettings = Field(default_factory=FactSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    otel: TelemetrySettings = Field(default_factory=TelemetrySettings)
    default_tenant: str | None = None
    log_format: Literal["auto", "json", "text"] = "auto"
    # With -v, also log what carries customer text (LLM prompts and replies). Off: never logged.
    log_customer_text: bool = False

    @model_validator(mode="after")
    def _unique_tenants(self) -> Settings:
        names = [t.name for t in self.tenants]
        if len(names) != len(set(names)):
            raise ValueError("tenant names must be unique")
        if self.default_tenant and self.default_tenant not in names:
            raise ValueError(f"default_tenant must name a configured tenant ({', '.join(names) or 'none'})")
        unknown = sorted(set(self.mcp.tenants or ()) - set(names))
        if unknown:
            raise ValueError(f"mcp.tenants names unconfigured tenants: {', '.join(unknown)}")
        for token in self.access.tokens:
            unknown = sorted(set(token.tenants or ()) - set(names))
            if unknown:
                listed = ", ".join(unknown)
                raise ValueError(f"access token {token.name!r} names unconfigured tenants: {listed}")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [
            init_settings,
            env_settings,
            _OwnKeysDotEnv(settings_cls),
        ]
        toml_file = config_file_path()
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    # Derived locations -------------------------------------------------------------------------
    @property
    def database_url(self) -> str:
        if self.database.url is not None:
            return self.database.url.get_secret_value()
        return f"sqlite:///{(self.data_dir / 'connector.sqlite3').resolve()}"

    @property
    def chroma_path(self) -> Path:
        return (self.chroma.path or (self.data_dir / "chroma")).resolve()

    def tenant(self, name: str | None) -> TenantSettings:
        """The named tenant, or the default / only one when ``name`` is None."""
        if name is None:
            name = self.default_tenant or (self.tenants[0].name if len(self.tenants) == 1 else None)
            if name is None:
                raise ConfigError(
                    "several tenants are configured: pass a tenant name or set CONNECTOR_DEFAULT_TENANT"
                    if self.tenants
                    else "no ERP tenant is configured: add [[tenants]] to config/connector.toml"
                )
        for tenant in self.tenants:
            if tenant.name == name:
                return tenant
        known = ", ".join(t.name for t in self.tenants) or "none"
        raise ConfigError(f"unknown tenant {name!r}; configured tenants: {known}")

    def default_tenant_name(self) -> str:
        """Tenant used by the memory API when the caller names none ('default' with no tenants)."""
        if self.default_tenant:
            return self.default_tenant
        if len(self.tenants) >= 1:
            return self.tenants[0].name
        return "default"


class _OwnKeysDotEnv(DotEnvSettingsSource):
    """The ``.env`` source, ignoring variables without our prefix (secrets named by ``*_env`` live there)."""

    def __call__(self) -> dict[str, Any]:
        fields = self.settings_cls.model_fields
        return {key: value for key, value in super().__call__().items() if key in fields}


def config_file_path() -> Path | None:
    """The TOML settings file in effect, or None. A named file that does not exist is an error."""
    named = os.environ.get(f"{ENV_PREFIX}CONFIG_FILE")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"{ENV_PREFIX}CONFIG_FILE: expected an existing TOML file, got a missing path")
        return path
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def describe_validation_error(error: ValidationError) -> str:
    """One message naming each bad setting and what was expected, without the offending values."""
    parts = []
    for item in error.errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in item["loc"]) or "settings"
        parts.append(f"{loc}: {item['msg']}")
    return "invalid settings: " + "; ".join(parts)


def load_settings(**overrides: Any) -> Settings:
    """Build :class:`Settings` from every source; raise one ConfigError naming what is wrong."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None
    except tomllib.TOMLDecodeError as exc:  # its message gives the line and column, never a value
        where = config_file_path()
        raise ConfigError(
            f"invalid settings file {where.name if where else 'TOML'}: {exc}; fix the TOML syntax there"
        ) from None
    except ValueError as exc:  # malformed dotenv
        raise ConfigError(f"invalid settings file: {type(exc).__name__}") from None
