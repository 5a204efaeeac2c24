"""``connector console``: a web console over the memories for the operations team.

Server-rendered pages (Jinja2 with autoescape, plain CSS, inline SVG charts, no JavaScript the
pages depend on) on the Starlette/uvicorn stack the MCP server already brings: sync health, one
customer's memory, the context an agent gets for a query, and erasure. Every request acts as a
principal of :mod:`connector.console.principals` and sees only its scope; see docs/guides/console.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
    from connector.console.app import build_app
    from connector.console.server import serve

__all__ = ["build_app", "serve"]

__getattr__ = lazy_attributes(
    __name__, {"build_app": "connector.console.app", "serve": "connector.console.server"}
)
