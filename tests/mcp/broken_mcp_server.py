"""An MCP server (stdio) whose tools are as third parties write them: a dotted name beside
the same name with an underscore, a tool named like codeact's own, an invalid schema;
``grow`` adds a tool and says so (``notifications/tools/list_changed``)."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

QUERY = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
TOOLS = {
    "db.query": QUERY,
    "db_query": QUERY,
    "run_code": QUERY,
    "fine": {"type": "object", "properties": {}},
    "bad-schema": {"type": "object", "properties": {"x": {"type": "strnig"}}},
    "grow": {"type": "object", "properties": {}},
}


async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"The {name} tool.", input_schema=schema)
            for name, schema in TOOLS.items()
        ]
    )


async def call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "grow":
        TOOLS[f"grown-{len(TOOLS)}"] = {"type": "object", "properties": {}}
        await context.session.send_tool_list_changed()
    answer = {"tool": params.name, **(params.arguments or {})}
    if os.environ.get("SERVER_TAG"):  # which of two such servers answered
        answer["server"] = os.environ["SERVER_TAG"]
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))])


async def main() -> None:
    server = Server("broken", on_list_tools=list_tools, on_call_tool=call_tool)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
