"""An MCP server (stdio) whose tools are as third parties write them: a dotted name beside
the same name with an underscore, a tool named like codeact's own, an invalid schema."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from codeact.mcp import serve_stdio

QUERY = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
TOOLS = {
    "db.query": QUERY,
    "db_query": QUERY,
    "run_code": QUERY,
    "fine": {"type": "object", "properties": {}},
    "bad-schema": {"type": "object", "properties": {"x": {"type": "strnig"}}},
}


async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"The {name} tool.", input_schema=schema)
            for name, schema in TOOLS.items()
        ]
    )


async def call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    answer = {"tool": params.name, **(params.arguments or {})}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))])


if __name__ == "__main__":
    anyio.run(serve_stdio, Server("broken", on_list_tools=list_tools, on_call_tool=call_tool))
