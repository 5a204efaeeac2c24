"""The memories as a Model Context Protocol server (``connector mcp``); see :mod:`.server`."""

from __future__ import annotations

from connector.mcp_server.guard import NotServedError, ServedScope, agent_message
from connector.mcp_server.server import build_server

__all__ = ["NotServedError", "ServedScope", "agent_message", "build_server"]
