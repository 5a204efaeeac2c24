"""The context builder: what the agent actually receives (see :mod:`connector.context.builder`)."""

from __future__ import annotations

from connector.context.builder import ContextBuilder
from connector.context.lookup import DocumentDetail, DocumentLine, UnknownDocumentError
from connector.context.models import SECTION_ORDER, ContextItem, ContextResult, ContextSection
from connector.context.query import ContextInputError

__all__ = [
    "SECTION_ORDER",
    "ContextBuilder",
    "ContextInputError",
    "ContextItem",
    "ContextResult",
    "ContextSection",
    "DocumentDetail",
    "DocumentLine",
    "UnknownDocumentError",
]
