"""MCP both ways: servers' tools taken into a registry, and a runtime served over stdio or
HTTP. May import: contract to agent."""

from ._bridge import MCPConnection, mcp_server, serve_stdio

__all__ = ["MCPConnection", "mcp_server", "serve_stdio"]
