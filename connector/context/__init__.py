"""The context builder: what the agent actually receives (see :mod:`connector.context.builder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
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

# Each name's module, imported on first access: importing the package (or one light submodule of it,
# such as its models) stays cheap, so type hints can name its types at run time.
_HOMES = {
    "ContextBuilder": "connector.context.builder",
    "DocumentDetail": "connector.context.lookup",
    "DocumentLine": "connector.context.lookup",
    "UnknownDocumentError": "connector.context.lookup",
    "SECTION_ORDER": "connector.context.models",
    "ContextItem": "connector.context.models",
    "ContextResult": "connector.context.models",
    "ContextSection": "connector.context.models",
    "ContextInputError": "connector.context.query",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
