"""MCP: take in MCP servers' tools as registry tools, and serve a runtime over MCP.

Needs the optional extra ``codeact[mcp]`` (the official ``mcp`` SDK). An
:class:`MCPConnection` keeps one session per server open in a background task and
reconnects after a failure; while the server is down its tools answer with a clear
error. :func:`mcp_server` serves a runtime in any mode: in code mode, MCP clients get
the one ``run_code`` tool over every registered tool (MCP-bound ones included).
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import uuid
from collections.abc import Mapping
from typing import Any, NoReturn, TextIO

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ..code_mode._script_names import native_names
from ..contract import _results as blocks
from ..contract._call import ToolCall
from ..contract._dispatch import progress_reporter
from ..contract._exceptions import ToolDefinitionError, ToolError
from ..contract._json import dumps, thaw
from ..contract._policy import Approver, RulePolicy, ask
from ..contract._registry import Owner, ToolRegistry
from ..contract._tool import Tool
from ..runtime._modes import Mode, Runtime
from ._http import HTTP_SESSION

RETRY_SECONDS = 1.0
REQUEST_SESSION = "mcp-request-"
LOG = logging.getLogger("codeact.mcp")
# codeact's own tool names: a server tool so named is renamed, never hidden
RESERVED = frozenset({"run_code", "search_tools", "describe"})

ServerSpec = StdioServerParameters | str


class MCPConnection:
    """One MCP server (a command over stdio, or a streamable HTTP URL), kept connected."""

    def __init__(
        self,
        server: ServerSpec,
        *,
        prefix: str = "",
        retry_seconds: float = RETRY_SECONDS,
        strict: bool = False,
        mode: str = "auto",
    ) -> None:
        self.server = server
        self.mode = mode  # the MCP client's: "auto", "legacy" (initialize handshake), a version
        self.prefix = prefix
        self.retry_seconds = retry_seconds
        self.strict = strict
        self.last_error: str | None = None
        # what the last tools() could not bind (name: why), and what it renamed
        self.refused: dict[str, str] = {}
        self.renamed: dict[str, str] = {}
        # each bound tool's annotations (read-only, destructive, ...), by its bound name
        self.annotations: dict[str, types.ToolAnnotations] = {}
        # registrations kept in step with the server, each with the names it must avoid
        self._bound: list[tuple[Owner, frozenset[str]]] = []
        self._bound_names: list[str] = []
        self._client: Client | None = None
        self._lost = anyio.Event()
        self._closing = False
        self._tasks: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> MCPConnection:
        self._tasks = await anyio.create_task_group().__aenter__()
        await self._tasks.start(self._hold)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing = True
        assert self._tasks is not None
        self._tasks.cancel_scope.cancel()
        await self._tasks.__aexit__(None, None, None)

    @property
    def connected(self) -> bool:
        return self._client is not None

    async def _hold(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep a session open; when it is lost, open another after a pause."""
        started = False
        while not self._closing:
            try:
                async with Client(
                    _transport(self.server), message_handler=self._notified, mode=self.mode
                ) as client:
                    self._client, self.last_error = client, None
                    if not started:
                        started = True
                        task_status.started()
                    elif self._bound:  # a new session: its tools may not be the old ones
                        await self._refresh()
                    async with anyio.create_task_group() as watching:
                        watching.start_soon(self._listen, client)
                        await self._lost.wait()
                        watching.cancel_scope.cancel()
            except Exception as error:  # any failure to connect: reported, then retried
                self.last_error = f"{type(error).__name__}: {error}"
                if not started:
                    raise
            finally:
                self._client = None
                self._lost = anyio.Event()
            await anyio.sleep(self.retry_seconds)

    async def register(self, registry: ToolRegistry) -> Owner:
        """Register the server's tools in ``registry`` and keep them in step with it: after
        a reconnect and on ``notifications/tools/list_changed`` they are listed again and
        registered anew. Dispose the returned owner to take them out."""
        owner = registry.owner()
        taken = frozenset(registry.names())  # another server's tools keep their names
        for made in await self.tools(avoid=taken):
            owner.register(made)
        self._bound.append((owner, taken))
        return owner

    async def _listen(self, client: Client) -> None:
        """Changes to the tool list, as servers of the 2026-07-28 protocol stream them."""
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _change in changes:
                    await self._refresh()
        except Exception:  # an older server (it notifies instead: _notified) or a lost stream
            return

    async def _notified(self, message: Any) -> None:
        """Notifications of servers of earlier protocols (``tools/list_changed``)."""
        if isinstance(message, types.ToolListChangedNotification) and self._tasks is not None:
            self._tasks.start_soon(self._refresh)

    async def _refresh(self) -> None:
        """List the tools again and swap every kept registration for the new set."""
        for owner, taken in self._bound:
            try:
                fresh = await self.tools(avoid=taken)
            except Exception as error:  # the server went away again: the next session retries
                self.last_error = f"{type(error).__name__}: {error}"
                return
            owner.dispose()
            for made in fresh:
                owner.register(made)

    async def tools(self, *, avoid: frozenset[str] = frozenset()) -> list[Tool]:
        """The server's tools as registry tools: every one that can be bound.

        Names become ones every provider accepts, collision-proof (``prefix`` first, if
        given; a tool named like codeact's own, ``run_code``, is renamed): see
        ``renamed``. A tool whose definition codeact refuses (an invalid schema) is left
        out and reported in ``refused`` with the reason, and logged; with ``strict``
        it raises instead. ``avoid``: names already taken (another server's tools), which
        a tool of this server's is renamed away from. Read-only or idempotent tools (by
        their annotations) may run concurrently with their neighbours.
        """
        client = self._require()
        listed = (await client.list_tools()).tools
        wanted = {f"{self.prefix}{remote.name}": remote for remote in listed}
        names = native_names(wanted, reserved=RESERVED | avoid)
        bound: list[Tool] = []
        self.refused, self.renamed, self.annotations = {}, {}, {}
        self._bound_names = []
        for wanted_name, remote in wanted.items():
            name = names[wanted_name]
            try:
                bound.append(self._bind(remote, name))
            except ToolDefinitionError as error:
                if self.strict:
                    raise
                self.refused[remote.name] = str(error)
                LOG.warning("MCP tool %r not bound: %s", remote.name, error)
                continue
            self._bound_names.append(name)
            if remote.annotations is not None:
                self.annotations[name] = remote.annotations
            if name != wanted_name:  # the prefix asked for is no rename: only a change is
                self.renamed[remote.name] = name
                LOG.warning("MCP tool %r is bound as %r", remote.name, name)
        return bound

    def _bind(self, remote: types.Tool, name: str) -> Tool:
        schema = dict(remote.input_schema or {"type": "object"})
        schema.setdefault("type", "object")
        output = dict(remote.output_schema) if remote.output_schema else None
        hints = remote.annotations

        async def call(**arguments: Any) -> Any:
            return await self.call(remote.name, arguments, structured=output is not None)

        return Tool.from_schema(
            name=name,
            description=remote.description or remote.title or remote.name,
            parameters=schema,
            function=call,
            output_schema=output,
            render=render_content,
            concurrency_safe=hints is not None
            and bool(hints.read_only_hint or hints.idempotent_hint),
            annotations=_annotations_of(remote),
        )

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, structured: bool = False
    ) -> Any:
        """Call a tool on the server; its ``isError`` becomes a ToolError."""
        client = self._require()
        try:
            report = progress_reporter()  # this call's, for the client's notification task

            async def progress(progress: float, total: float | None, message: str | None) -> None:
                report(progress, total, message)

            result = await client.call_tool(name, dict(arguments), progress_callback=progress)
        except MCPError as error:
            if "closed" not in str(error).lower():
                raise ToolError(f"the MCP server refused the call: {error}") from None
            self._went_away(error)
        except (
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            anyio.EndOfStream,
            OSError,
        ) as error:
            self._went_away(error)
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        if result.is_error:
            raise ToolError(text or f"{name} failed on the MCP server")
        if structured and result.structured_content is not None:
            return result.structured_content
        if all(isinstance(block, types.TextContent) for block in result.content):
            return text
        # media and resources stay in the value, as plain data a script can read
        return {"text": text, "content": [_plain_block(block) for block in result.content]}

    def destructive(self) -> list[str]:
        """The bound tools that may destroy something, by the MCP spec's defaults: not
        read-only, and not marked ``destructiveHint: false`` (no annotations: destructive)."""
        names = []
        for name in self._bound_names:
            hints = self.annotations.get(name)
            if hints is None or (not hints.read_only_hint and hints.destructive_hint is not False):
                names.append(name)
        return names

    def ask_before_destructive(self, approver: Approver | None = None) -> RulePolicy:
        """A policy that asks ``approver`` before every destructive tool of this server
        (denied without one) and allows the rest: ``registry.set_policy(...)``."""
        return RulePolicy([ask(name) for name in self.destructive()], approver=approver)

    def _went_away(self, error: BaseException) -> NoReturn:
        self.last_error = f"{type(error).__name__}: {error}"
        self._lost.set()
        raise ToolError(f"the MCP server went away ({self.last_error}); reconnecting") from None

    def _require(self) -> Client:
        if self._client is None:
            raise ToolError(
                f"the MCP server is down ({self.last_error or 'not connected'}); reconnecting"
            )
        return self._client


def _transport(server: Any) -> Any:
    """A stdio server with a stderr it can write to: where ``sys.stderr`` is no file (a
    notebook, a captured test), the SDK's default would fail to start the process."""
    if isinstance(server, StdioServerParameters):
        return stdio_client(server, errlog=_errlog())
    return server


def _errlog() -> TextIO:
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # the server's stderr for its whole life


def _annotations_of(remote: types.Tool) -> dict[str, Any] | None:
    """A server tool's annotations (and title) in MCP's own keys, to serve them on."""
    found: dict[str, Any] = {}
    if remote.annotations is not None:
        found.update(remote.annotations.model_dump(mode="json", by_alias=True, exclude_none=True))
    if remote.title:
        found["title"] = remote.title
    return found or None


def _plain_block(block: Any) -> dict[str, Any]:
    """An MCP content block as JSON, with its wire names (``mimeType``, ``data``)."""
    plain: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return plain


def render_content(arguments: Mapping[str, Any], value: Any) -> str | list[blocks.ContentBlock]:
    """What a model reads of an MCP result: its text, and each block that is not text as a
    content block (an image reaches providers that take images in tool results; the rest
    read its one line). Media are in the value too, for programs and scripts."""
    listed = value.get("content") if isinstance(value, Mapping) else None
    if not _is_blocks(listed):  # plain text, or structured content of another shape
        return value if isinstance(value, str) else dumps(value)
    return [_content_block(block) for block in listed]  # type: ignore[union-attr]


def _is_blocks(listed: Any) -> bool:
    """A list of MCP content blocks (server-filesystem's read_media_file returns one as its
    structured content, as our own unstructured results hold them)."""
    return (
        isinstance(listed, list | tuple)
        and bool(listed)
        and all(
            isinstance(block, Mapping) and isinstance(block.get("type"), str) for block in listed
        )
    )


def _content_block(block: Mapping[str, Any]) -> blocks.ContentBlock:
    kind = block.get("type")
    if kind == "text":
        return blocks.TextBlock(text=str(block.get("text", "")))
    if kind == "image":
        return blocks.ImageBlock(
            data=str(block.get("data", "")), mime_type=str(block.get("mimeType", ""))
        )
    if kind == "audio":
        return blocks.AudioBlock(
            data=str(block.get("data", "")), mime_type=str(block.get("mimeType", ""))
        )
    if kind == "resource":
        resource = block.get("resource") or {}
        return blocks.ResourceBlock(
            uri=str(resource.get("uri", "")),
            mime_type=resource.get("mimeType"),
            body=resource.get("text"),
            blob=resource.get("blob"),
        )
    if kind == "resource_link":
        return blocks.ResourceLinkBlock(
            uri=str(block.get("uri", "")),
            name=str(block.get("name", "")),
            mime_type=block.get("mimeType"),
        )
    return blocks.TextBlock(text=f"[{kind} content]")


def mcp_server(
    runtime: Runtime,
    *,
    mode: Mode | str | None = None,
    name: str = "codeact",
    json_text: bool = False,
) -> Server[Any]:
    """An MCP server offering ``runtime``'s tools as advertised in ``mode``.

    A result's model-readable blocks are its content, and its structured form goes in
    ``structuredContent`` only, so a model reads each result once. ``json_text=True``
    also appends the structured form as a JSON text block, for clients that read
    structured results from the text alone (what the spec suggests for older clients).
    """
    numbers = itertools.count(1)

    async def list_tools(
        context: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[_served_tool(s, runtime.tool(str(s["name"]))) for s in runtime.schemas(mode)]
        )

    async def call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        call = ToolCall(f"mcp-{next(numbers)}", params.name, dict(params.arguments or {}))
        if params.name not in runtime.advertised(mode):  # the spec's protocol error
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        session = client_session(context)
        try:
            result = await runtime.execute(call, mode=mode, session=session)
        finally:
            if session.startswith(REQUEST_SESSION):  # stateless: its session ends with it
                await runtime.close_session(session)
        value = None if result.is_error else thaw(result.value)
        structured = value if isinstance(value, dict) else None
        content = [_mcp_block(block) for block in result.content]
        serialized = None if structured is None or not json_text else dumps(structured)
        if serialized is not None and serialized != result.text:
            content.append(types.TextContent(type="text", text=serialized))
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=result.is_error
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def _mcp_block(block: blocks.ContentBlock) -> types.ContentBlock:
    """A result's block as MCP content (media and resources as themselves)."""
    if isinstance(block, blocks.ImageBlock):
        return types.ImageContent(type="image", data=block.data, mime_type=block.mime_type)
    if isinstance(block, blocks.AudioBlock):
        return types.AudioContent(type="audio", data=block.data, mime_type=block.mime_type)
    if isinstance(block, blocks.ResourceBlock) and (
        block.body is not None or block.blob is not None
    ):
        contents: types.TextResourceContents | types.BlobResourceContents = (
            types.TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.body)
            if block.body is not None
            else types.BlobResourceContents(
                uri=block.uri, mime_type=block.mime_type, blob=block.blob or ""
            )
        )
        return types.EmbeddedResource(type="resource", resource=contents)
    if isinstance(block, blocks.ResourceLinkBlock):
        return types.ResourceLink(
            type="resource_link",
            uri=block.uri,
            name=block.name or block.uri,
            mime_type=block.mime_type,
        )
    return types.TextContent(type="text", text=block.text)


def _served_tool(schema: Mapping[str, Any], tool: Tool | None) -> types.Tool:
    """A tool as ``tools/list`` shows it: its advertisement, output schema, annotations."""
    hints = dict(tool.annotations or {}) if tool is not None else {}
    title = hints.pop("title", None)
    return types.Tool(
        name=str(schema["name"]),
        title=str(title) if title else None,
        description=str(schema["description"]),
        input_schema=dict(schema["parameters"]),
        output_schema=_object_schema(tool),
        annotations=types.ToolAnnotations.model_validate({"title": title, **hints})
        if hints or title
        else None,
    )


def _object_schema(tool: Tool | None) -> dict[str, Any] | None:
    """A tool's output schema, when MCP can carry it (an object: structured content is one)."""
    schema = None if tool is None else tool.output_schema
    if isinstance(schema, dict) and schema.get("type") == "object":
        return dict(schema)
    return None


def client_session(context: Any) -> str:
    """The script session of the MCP client behind a request: one per client, never shared.

    Over streamable HTTP a client of the handshake era is its ``Mcp-Session-Id``; a
    request without one (the stateless 2026-07-28 era has none) gets a session of its
    own, closed when it ends. Over stdio the connection is the client.
    """
    request = getattr(context, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        session_id = headers.get("mcp-session-id")
        if session_id:
            return f"{HTTP_SESSION}{session_id}"
        return f"{REQUEST_SESSION}{uuid.uuid4().hex}"
    connection = getattr(getattr(context, "session", None), "_connection", None)
    return f"mcp-connection-{id(connection)}"


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one MCP connection over this process's stdin and stdout."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


__all__ = ["MCPConnection", "mcp_server", "serve_stdio"]
