"""MCP both ways: servers' tools taken into a registry, and a runtime served over stdio or
HTTP. May import: contract to agent.

The names load the ``mcp`` SDK (the ``codeact[mcp]`` extra) on first use, as ``codeact``'s
own do: the command line reads ``_http``'s limits without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._bridge import MCPConnection, mcp_server, serve_stdio


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import _bridge

        return getattr(_bridge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MCPConnection", "mcp_server", "serve_stdio"]
