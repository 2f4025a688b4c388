"""``harvester mcp``: the bank as an MCP server (see :mod:`harvester.mcp.server`)."""

from harvester.mcp.server import build_server, serve

__all__ = ["build_server", "serve"]
