"""The ERP contract: what every adapter produces and what the sync job and the store consume.

One layer that both sides import, so neither needs the other: the adapters (``connector.adapters``,
from the repository's ``adapters/`` folder) map an ERP's dialect into these shapes; ``connector.sync``
and ``connector.db`` read and store them without knowing which ERP sent them. It stands only on the
foundation modules (``connector.errors``, ``connector.settings``, ``connector.clock``) and never
imports an adapter, the sync job or a store.

- :mod:`connector.erp.records`: canonical records (``PartyRecord``, ``DocumentRecord``,
  ``CaseRecord``), the ``Page`` a read yields, and the content hash that skips unchanged rows.
- :mod:`connector.erp.protocol`: the ``Adapter`` protocol, ``StreamSpec`` and ``RecordProblem``.
- The ERP errors and the tenant settings an adapter is opened with are defined in
  ``connector.errors`` (one exception tree) and ``connector.settings`` (one settings model) and
  re-exported here, so an adapter or a sync step finds the whole contract in one place.
"""

from connector.erp.protocol import Adapter, AdapterFactory, KeyReader, RecordProblem, StreamSpec
from connector.erp.records import (
    Address,
    CaseRecord,
    Contact,
    DocType,
    DocumentRecord,
    Page,
    PartyKind,
    PartyRecord,
    Record,
    content_hash,
)
from connector.errors import (
    ERPAuthError,
    ERPError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    ERPRequestError,
    ERPServerError,
    ERPTransportError,
)
from connector.settings import SyncSettings, TenantSettings

__all__ = [
    "Adapter",
    "AdapterFactory",
    "Address",
    "CaseRecord",
    "Contact",
    "DocType",
    "DocumentRecord",
    "ERPAuthError",
    "ERPError",
    "ERPNotFound",
    "ERPProtocolError",
    "ERPRateLimited",
    "ERPRequestError",
    "ERPServerError",
    "ERPTransportError",
    "KeyReader",
    "Page",
    "PartyKind",
    "PartyRecord",
    "Record",
    "RecordProblem",
    "StreamSpec",
    "SyncSettings",
    "TenantSettings",
    "content_hash",
]
