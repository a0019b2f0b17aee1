"""MCP servers' tools taken in as registry tools.

Needs the optional extra ``codeact[mcp]`` (the official ``mcp`` SDK). An
:class:`MCPConnection` keeps one client per server open in a background task and
reconnects after a failure; while the server is down its tools answer with a clear
error. A server's questions (an elicitation inside a tool call) go to the ``elicitation``
handler the embedding code gives; a tool the server runs as a task is awaited to its
result (the tasks extension).
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any, NoReturn, TextIO

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import stdio_client

from ..code_mode._script_names import native_names
from ..contract import _results as blocks
from ..contract._dispatch import current_invocation, progress_reporter
from ..contract._exceptions import ErrorCode, ToolDefinitionError, ToolError
from ..contract._json import dumps
from ..contract._policy import DECIDED, Approver, RulePolicy, ask
from ..contract._registry import Owner, ToolRegistry
from ..contract._tool import Tool
from ._tasks import TaskClient

RETRY_SECONDS = 1.0
# the questions a server asked during this task's call that nothing here could answer
_QUESTIONS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "codeact_mcp_questions", default=None
)
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
        elicitation: ElicitationFnT | None = None,
    ) -> None:
        self.server = server
        # answers the server's questions (the SDK's elicitation callback); without one, a
        # question stops the call with it (SUSPENDED: a durable run waits for a person)
        self.elicitation = elicitation
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
                    _transport(self.server),
                    message_handler=self._notified,
                    mode=self.mode,
                    elicitation_callback=self._asked,
                    extensions=[TaskClient()],
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

            questions: list[str] = []
            token = _QUESTIONS.set(questions)
            try:
                result = await client.call_tool(name, dict(arguments), progress_callback=progress)
            finally:
                _QUESTIONS.reset(token)
        except MCPError as error:
            if questions:  # the server asked, and no one here could answer now
                raise ToolError(
                    f"the MCP server asks: {questions[0]}", ErrorCode.SUSPENDED
                ) from None
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

    async def _asked(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """A server's question during a call: the embedding code's handler answers it. With
        none, a durable run suspends on the call with the question (a person approving it
        on resume accepts the form as it stands); elsewhere the call fails with it."""
        if self.elicitation is not None:
            return await self.elicitation(context, params)
        invocation = current_invocation()
        if invocation is not None and DECIDED.get().get(invocation.call_id) is True:
            return types.ElicitResult(action="accept", content=_defaults(params))
        asked = _QUESTIONS.get()
        if asked is not None:
            asked.append(params.message)
        return types.ErrorData(
            code=types.INVALID_REQUEST, message=f"no one here can answer now: {params.message}"
        )

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


def _defaults(params: types.ElicitRequestParams) -> dict[str, Any]:
    """A form accepted as it stands, as approving it means: each field's default, and yes
    to each yes-or-no question that has none."""
    schema = getattr(params, "requested_schema", None) or {}
    fields = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    accepted: dict[str, Any] = {}
    for name, field in fields.items():
        if not isinstance(field, Mapping):
            continue
        if "default" in field:
            accepted[name] = field["default"]
        elif field.get("type") == "boolean":
            accepted[name] = True
    return accepted


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


__all__ = ["MCPConnection", "render_content"]
