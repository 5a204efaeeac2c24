"""Health checks behind ``connector doctor``: one verdict per item, never a secret in the output.

Each check returns a :class:`CheckResult`; a failing check does not stop the others, so one run
shows everything that is wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from connector.errors import ConnectorError
from connector.settings import Settings, TenantSettings

Verdict = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    item: str
    verdict: Verdict
    detail: str


def _describe(exc: BaseException) -> str:
    """A secret-free one-liner: our own errors are written to be safe; others show only their type."""
    if isinstance(exc, ConnectorError):
        return str(exc)
    return f"{type(exc).__name__}"


def check_database(settings: Settings) -> CheckResult:
    from connector.db.engine import check_connection, create_db_engine, safe_url
    from connector.db.migrate import current_revisions, head_revisions, upgrade_to_head

    url = settings.database_url
    engine = create_db_engine(url)
    try:
        check_connection(engine)
        if engine.dialect.name == "sqlite":
            upgrade_to_head(engine)  # the embedded default upgrades itself
        current, heads = current_revisions(engine), head_revisions(engine)
    finally:
        engine.dispose()
    if current != heads:
        return CheckResult(
            "database",
            "fail",
            f"{safe_url(url)}: schema {current or 'empty'}, latest {heads}; run `connector db upgrade`",
        )
    return CheckResult("database", "ok", f"{safe_url(url)} (schema {', '.join(current)})")


def check_chroma(settings: Settings) -> CheckResult:
    import chromadb

    if settings.chroma.host:
        client = chromadb.HttpClient(
            host=settings.chroma.host, port=settings.chroma.port, ssl=settings.chroma.ssl
        )
        client.heartbeat()
        where = f"server {settings.chroma.host}:{settings.chroma.port}"
    else:
        path = settings.chroma_path
        path.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(path=str(path))
        client.heartbeat()
        where = f"embedded at {path}"
    count = len(client.list_collections())
    return CheckResult("chroma", "ok", f"{where}, {count} collection(s)")


def check_embeddings(settings: Settings) -> CheckResult:
    from connector.embeddings import embedder_for

    embedder = embedder_for(settings)
    start = time.perf_counter()
    vectors = embedder.embed(["doctor check: invoice INV-000001 disputed"])
    elapsed_ms = (time.perf_counter() - start) * 1000
    name = embedder.model_id
    return CheckResult(
        "embeddings", "ok", f"{name}: dimension {len(vectors[0])}, {elapsed_ms:.0f} ms for one text"
    )


def check_llm(settings: Settings) -> CheckResult:
    if not settings.llm.enabled:
        return CheckResult(
            "llm", "warn", "no LLM configured: summaries and consolidation run in non-LLM mode"
        )
    return CheckResult(
        "llm", "ok", f"model {settings.llm.model} at {settings.llm.base_url or 'api.openai.com'}"
    )


def check_tenant(settings: Settings, tenant: TenantSettings) -> CheckResult:
    from connector.adapters.factory import open_adapter  # only when a tenant is configured

    start = time.perf_counter()
    with open_adapter(tenant, sync=settings.sync) as adapter:
        streams = [s.name for s in adapter.streams()]
    elapsed_ms = (time.perf_counter() - start) * 1000
    return CheckResult(
        f"erp:{tenant.name}",
        "ok",
        f"{tenant.kind} at {tenant.base_url}: logged in and out in {elapsed_ms:.0f} ms;"
        f" streams {', '.join(streams)}",
    )


def run_checks(settings: Settings) -> Iterator[CheckResult]:
    """Every check in order; an exception in one becomes its ``fail`` verdict."""
    checks: list[tuple[str, Callable[[], CheckResult]]] = [
        ("database", lambda: check_database(settings)),
        ("chroma", lambda: check_chroma(settings)),
        ("embeddings", lambda: check_embeddings(settings)),
        ("llm", lambda: check_llm(settings)),
    ]
    for tenant in settings.tenants:
        checks.append((f"erp:{tenant.name}", lambda t=tenant: check_tenant(settings, t)))  # type: ignore[misc]
    if not settings.tenants:
        yield CheckResult(
            "erp", "warn", "no ERP tenant configured (add [[tenants]] to config/connector.toml)"
        )
    for item, check in checks:
        try:
            yield check()
        except Exception as exc:
            yield CheckResult(item, "fail", _describe(exc))
