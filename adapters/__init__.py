"""ERP adapters: one package per ERP, plus the shared protocol and canonical records.

Adapters know HTTP and the ERP's dialect and nothing about storage. They yield
:class:`~adapters.records.Page` objects of canonical records that the sync job stores.
"""

from adapters.protocol import Adapter, RecordProblem, StreamSpec
from adapters.records import (
    Address,
    CaseRecord,
    Contact,
    DocumentRecord,
    Page,
    PartyRecord,
    Record,
    content_hash,
)

__all__ = [
    "Adapter",
    "Address",
    "CaseRecord",
    "Contact",
    "DocumentRecord",
    "Page",
    "PartyRecord",
    "Record",
    "RecordProblem",
    "StreamSpec",
    "content_hash",
]
