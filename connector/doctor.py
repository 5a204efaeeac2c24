"""Health checks behind ``connector doctor``: one verdict per item, never a secret in the output.

Each check returns a :class:`CheckResult`; a failing check does not stop the others, so one run
shows everything that is wrong. The ERP and LLM checks authenticate for real: a reachable server
that refuses the credentials is a ``fail`` with the reason, never an ``ok``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from connector.errors import ConnectorError, ERPAuthError, LLMError
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
    from connector.db.deadline import within
    from connector.db.engine import check_connection, create_db_engine, safe_url
    from connector.db.migrate import current_revisions, head_revisions, upgrade_to_head

    url = settings.database_url
    engine = create_db_engine(url, database=settings.database)
    try:
        with within(settings.database.read_timeout_s):  # a hung server is a fail, not a hang
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
    from connector.vectors.health import describe

    return CheckResult("chroma", "ok", describe(settings))


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
    """One authenticated 1-token completion: a refused key (401) is a ``fail``."""
    from connector.llm import LLMClient

    if not settings.llm.enabled:
        return CheckResult(
            "llm", "warn", "no LLM configured: summaries and consolidation run in non-LLM mode"
        )
    where = settings.llm.base_url or "api.openai.com"
    client = LLMClient(settings.llm)
    try:
        start = time.perf_counter()
        model = client.check()
        elapsed_ms = (time.perf_counter() - start) * 1000
    except LLMError as exc:
        return CheckResult("llm", "fail", str(exc))
    finally:
        client.close()
    return CheckResult(
        "llm", "ok", f"model {model} at {where}: answered an authenticated request in {elapsed_ms:.0f} ms"
    )


class _Warnings(logging.Handler):
    """Collects the adapters' warnings during a check (a retry, a failed logout): they make it ``warn``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _adapter_warnings() -> Iterator[_Warnings]:
    handler = _Warnings()
    logger = logging.getLogger("connector.adapters")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def check_tenant(settings: Settings, tenant: TenantSettings) -> CheckResult:
    """Log in, read one page of the first stream (an authenticated request), log out.

    SAP has no login call (basic auth and API keys are sent with each request), so only the read
    shows whether SAP accepts the credentials; Acumatica's login does, and the read shows the
    session works. Wrong credentials are a ``fail`` naming the cause."""
    from connector.adapters.factory import open_adapter  # only when a tenant is configured

    item = f"erp:{tenant.name}"
    start = time.perf_counter()
    try:
        with _adapter_warnings() as warned, open_adapter(tenant, sync=settings.sync) as adapter:
            streams = [s.name for s in adapter.streams()]
            if streams:
                pages = adapter.read(streams[0], since=datetime.now(UTC))
                try:
                    next(pages, None)
                finally:
                    close = getattr(pages, "close", None)  # a generator: end it, its session is ours
                    if callable(close):
                        close()
            version = getattr(adapter, "version", None)
            probe = getattr(adapter, "undefined_custom_fields", None)
            undefined: list[tuple[str, str, str]] = probe() if callable(probe) else []
            requests = adapter.request_count
            notes = list(getattr(adapter, "doctor_notes", list)())  # e.g. SAP's OData version per stream
    except ERPAuthError as exc:
        return CheckResult(item, "fail", f"{tenant.kind} at {tenant.base_url} refused the credentials: {exc}")
    elapsed_ms = (time.perf_counter() - start) * 1000
    session = "logged in, " if tenant.kind == "acumatica" else ""
    read = f"read {streams[0]} authenticated" if streams else "no stream configured to read"
    logout = ", logged out" if tenant.kind == "acumatica" else ""
    why = "configured" if tenant.version else "the newest the server offers that this project supports"
    endpoint = f"endpoint Default/{version} ({why}), " if tenant.kind == "acumatica" and version else ""
    detail = (
        f"{tenant.kind} at {tenant.base_url}: {endpoint}{session}{read}{logout} in {elapsed_ms:.0f} ms"
        f" ({requests} request(s)); streams {', '.join(streams) or 'none'}"
    ) + "".join(f"; {note}" for note in notes)
    if undefined:  # one line per field: the sync reads the rest of the stream without it
        lines = [f"custom field {field} of {stream}: {why}" for stream, field, why in undefined]
        return CheckResult(item, "warn", f"{detail}; but: " + "; ".join(lines))
    if warned.messages:
        return CheckResult(item, "warn", f"{detail}; but: {warned.messages[0]}")
    return CheckResult(item, "ok" if streams else "warn", detail)


def check_sync(settings: Settings) -> CheckResult:
    """The worst stream of ``sync status`` (a frozen or lagging watermark is a warning, never ok)."""
    from connector.clock import SystemClock
    from connector.db.deadline import within
    from connector.db.engine import create_db_engine
    from connector.sync.health import sync_verdict

    engine = create_db_engine(settings.database_url, database=settings.database)
    try:
        with within(settings.database.read_timeout_s):
            verdict, detail = sync_verdict(engine, settings, SystemClock().now())
    finally:
        engine.dispose()
    return CheckResult("sync", verdict, detail)


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
    if settings.tenants:
        checks.append(("sync", lambda: check_sync(settings)))
    if not settings.tenants:
        yield CheckResult(
            "erp", "warn", "no ERP tenant configured (add [[tenants]] to config/connector.toml)"
        )
    database_failed = False
    for item, check in checks:
        if item == "sync" and database_failed:  # the same database: no second wait for a hung one
            yield CheckResult(item, "fail", "not checked: the database check failed")
            continue
        try:
            result = check()
        except Exception as exc:
            result = CheckResult(item, "fail", _describe(exc))
        database_failed = database_failed or (item == "database" and result.verdict == "fail")
        yield result
