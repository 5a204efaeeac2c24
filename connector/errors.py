"""One exception tree for the whole connector.

Callers catch :class:`ConnectorError` for anything this library raises on purpose::

    ConnectorError
    ├── ConfigError                 a setting is missing or malformed (names the setting)
    ├── StoreError                  the relational store or Chroma failed or is unreachable
    │   ├── EmbeddingModelMismatch  an index was built with another embedding model / dimension
    │   ├── StoreTimeout            a store did not answer within its deadline (connector.vectors)
    │   │   └── StoreBusy           the embedded vector store stayed held by another process past it
    │   └── ErasureIncomplete       forget erased the relational side (tombstone, rows) but could
    │                               not reach Chroma; carries what was removed and what was not
    ├── ScopeError                  a blank/missing customer id or a scope that cannot be honoured
    │   └── NotServedError          a tenant or tool this MCP server does not serve (mcp_server.guard)
    ├── UnknownCustomerError        the customer is not in semantic memory (carries close matches)
    ├── ErasedCustomerError         a write for a customer erased by ``forget`` (until the erasure is lifted)
    ├── InvalidTurnError            a turn or pin that cannot be stored (connector.working.models)
    ├── UnknownSessionError         no such working-memory session (connector.working.models)
    ├── FactError                   a learned fact that cannot be stored (connector.facts.models)
    ├── InvalidCaseError            a case or recall argument that cannot be used (connector.episodic.models)
    ├── InvalidRecallError          a past-conversation recall argument that cannot be used
    │                               (connector.conversations.models)
    ├── InvalidImportError          lines of a conversation import that cannot be used; nothing was
    │                               imported (connector.conversations.import_lines)
    ├── ContextInputError           a build_context argument that cannot be used (connector.context.query)
    ├── UnknownDocumentError        lookup_document found no single document (connector.context.lookup)
    ├── PageError                   a console request refused: its HTTP status and one line
    │                               (connector.console.web)
    ├── ERPError                    anything an ERP adapter raises
    │   ├── ERPTransportError       network failure or timeout (retriable)
    │   ├── ERPRateLimited          429 or "API Login Limit" (retriable later; carries retry_after)
    │   ├── ERPServerError          5xx that is not a business error (retriable)
    │   ├── ERPAuthError            bad credentials or no rights (fatal, never retried)
    │   │   └── SessionExpired      401: the session or token expired; logged in again once
    │   │                           (connector.adapters.http)
    │   ├── ERPNotFound             the record does not exist
    │   ├── ERPRequestError         any other 4xx / business error (fatal)
    │   ├── ERPProtocolError        a response that breaks the API contract (malformed page,
    │   │   │                       repeated page, foreign next link)
    │   │   └── MalformedResponse   a 2xx body that is not the JSON it should be (retried;
    │   │                           connector.adapters.http)
    │   └── ERPRecordError          one ERP record that cannot become a canonical record: the sync
    │       │                       skips it and reports it
    │       ├── FieldError          an Acumatica field of the wrong type (connector.adapters.acumatica.values)
    │       ├── MalformedValue      an SAP value that breaks its OData type (connector.adapters.sap.values)
    │       └── MappingError        an SAP entity without its key or party (connector.adapters.sap.mapping)
    ├── SyncError                   a sync run failed (names tenant, stream and page)
    │   ├── AlreadyRunning          another run holds the (tenant, stream) lock
    │   └── LockLost                the run's lock was lost mid-run (its connection ended); it stopped
    └── LLMError                    the LLM endpoint failed or returned unusable output

Every exception class the package defines is in this tree (a test reads it from here), except the
fake ERPs' own in ``connector.testing``: those are servers, and their errors become HTTP responses.
Messages say what was expected, what came and what to do. No message ever contains a password,
token, cookie or API key: secrets live in ``SecretStr`` and are never formatted.
"""

from __future__ import annotations

from datetime import datetime


class ConnectorError(Exception):
    """Base of every error this library raises on purpose."""


class ConfigError(ConnectorError):
    """A setting is missing or malformed."""


class StoreError(ConnectorError):
    """The relational store or Chroma failed or is unreachable."""


class StoreTimeout(StoreError, TimeoutError):
    """A store call did not answer within its deadline (``chroma.read_timeout_s``, ``chroma.timeout_s``,
    the database's timeouts); while an earlier call is still hung, later ones fail at once."""


class StoreBusy(StoreTimeout):
    """The embedded vector store stayed locked by another process past the deadline."""


class EmbeddingModelMismatch(StoreError):
    """An index was built with a different embedding model or dimension."""


class ErasureIncomplete(StoreError):
    """``forget`` erased the relational side and left its tombstone, but a store (Chroma) failed.

    ``removed`` counts what was erased, ``unreached`` says what was not, one line per store. Running
    ``forget`` again, or ``connector episodic reindex --rebuild``, completes the erasure.
    """

    def __init__(self, customer_id: str, removed: dict[str, int], unreached: list[str]) -> None:
        self.customer_id = customer_id
        self.removed = dict(removed)
        self.unreached = list(unreached)
        super().__init__(
            f"erasure of customer {customer_id!r} is incomplete: its tombstone and relational rows are "
            f"gone, but {'; '.join(self.unreached)}; run `connector forget` again once Chroma is back, "
            "or `connector episodic reindex --rebuild` to recreate Chroma without it"
        )


class ScopeError(ConnectorError, ValueError):
    """A memory read or write without a valid scope (blank customer id, etc.)."""


class UnknownCustomerError(ConnectorError, LookupError):
    """The customer id is not in semantic memory; ``suggestions`` holds close matches."""

    def __init__(self, customer_id: str, suggestions: list[str] | None = None, *, advice: str = "") -> None:
        self.customer_id = customer_id
        self.suggestions = list(suggestions or [])
        self.advice = advice
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        more = f" {advice}." if advice else ""
        super().__init__(
            f"unknown customer {customer_id!r}: not in semantic memory (run `connector sync` first?)."
            f"{more}{hint}"
        )


class ErasedCustomerError(ConnectorError):
    """A write for a customer whose memories were erased; refused until an operator lifts the erasure."""

    def __init__(self, customer_id: str, tenant: str) -> None:
        self.customer_id = customer_id
        self.tenant = tenant
        super().__init__(
            f"customer {customer_id!r} of tenant {tenant!r} was erased (`connector forget`): its cases, "
            "turns and learned facts are not stored again; an operator can lift the erasure with "
            f"`connector forget {customer_id} --tenant {tenant} --lift`"
        )


class ERPError(ConnectorError):
    """Anything an ERP adapter raises. Carries the ERP's own error fields when it sent them."""

    retriable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        exception_type: str | None = None,
        exception_message: str | None = None,
        code: str | None = None,
        tenant: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.exception_type = exception_type
        self.exception_message = exception_message
        self.code = code
        self.tenant = tenant
        super().__init__(message)


class ERPTransportError(ERPError):
    """Connection failure or timeout talking to the ERP."""

    retriable = True


class ERPRateLimited(ERPError):
    """The ERP (or its API gateway) asked us to slow down; ``retry_after`` is in seconds if known."""

    retriable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)  # type: ignore[arg-type]


class ERPServerError(ERPError):
    """A 5xx that is not a business error."""

    retriable = True


class ERPAuthError(ERPError):
    """Invalid credentials or missing rights; retrying will not help."""


class ERPNotFound(ERPError, LookupError):
    """The requested ERP record does not exist."""


class ERPRequestError(ERPError):
    """A request the ERP refused (4xx or a business error); retrying will not help."""


class ERPProtocolError(ERPError):
    """A response that breaks the API contract: malformed JSON, a repeated page, a foreign link."""


class ERPRecordError(ERPError, ValueError):
    """One ERP record that cannot become a canonical record; the sync skips it and reports why."""


class SyncError(ConnectorError):
    """A sync run failed; the message names tenant, stream and page."""


class AlreadyRunning(SyncError):
    """Another run holds the lock for this (tenant, stream)."""

    def __init__(self, tenant: str, stream: str, since: datetime | None = None) -> None:
        self.tenant = tenant
        self.stream = stream
        super().__init__(f"sync of {tenant}/{stream} is already running; not starting a second one")


class LockLost(SyncError):
    """The run's (tenant, stream) lock is gone: another run may hold it now, so this one stops."""

    def __init__(self, tenant: str, stream: str) -> None:
        self.tenant = tenant
        self.stream = stream
        super().__init__(
            f"sync of {tenant}/{stream} lost its lock (the database ended the lock's connection); stopped "
            "before writing the next page so two runs never write the stream at once; run the sync again"
        )


class LLMError(ConnectorError):
    """The LLM endpoint failed or returned output that does not validate."""
