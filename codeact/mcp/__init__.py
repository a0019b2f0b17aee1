"""MCP both ways: servers' tools taken into a registry, and a runtime served over stdio or
HTTP. May import: contract to agent.

The names load the ``mcp`` SDK (the ``codeact[mcp]`` extra) on first use, as ``codeact``'s
own do: the command line reads ``_http``'s limits without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._bridge import MCPConnection
    from ._server import mcp_server, serve_stdio
    from ._stopping import Stopping
    from ._tasks import TaskClient

_WHERE = {
    "MCPConnection": "._bridge",
    "Stopping": "._stopping",
    "TaskClient": "._tasks",
    "mcp_server": "._server",
    "serve_stdio": "._server",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MCPConnection", "Stopping", "TaskClient", "mcp_server", "serve_stdio"]
