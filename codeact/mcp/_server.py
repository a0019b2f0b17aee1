"""A runtime served over MCP, in either protocol era.

In code mode, MCP clients get the one ``run_code`` tool over every registered tool. Where a
script's names live is ``_sessions``' to decide (per stdio connection, per MCP session of
the handshake era, per state handle under the stateless protocol). On a durable runtime, a
run that waits for approval asks the client (``_approvals``), and a client that declares
the tasks extension gets long runs as tasks (``_tasks``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server

from ..code_mode._run_code import PERSIST_SENTENCE, RUN_CODE
from ..contract import _results as blocks
from ..contract._abort import AbortSignal
from ..contract._call import ToolCall
from ..contract._exceptions import ErrorCode, UsageError
from ..contract._json import dumps, thaw
from ..contract._policy import DECIDED
from ..contract._results import ToolExecutionResult, failure
from ..contract._tool import Tool
from ..durable._record import PendingCall, ReplayDiverged
from ..runtime._modes import Mode, Runtime
from ._approvals import (
    APPROVE_SCHEMA,
    CANNOT_ASK,
    Approvals,
    AskedState,
    decisions,
    elicitations,
    how_to_ask,
    question,
    refused,
)
from ._http import MAX_SESSIONS, MAX_SESSIONS_PER_CLIENT
from ._sessions import (
    IDLE_SECONDS,
    ONE_OFF,
    SESSION_PARAMETER,
    HandleRefused,
    Placement,
    ScriptSessions,
    handle_guide,
)
from ._stopping import SHUTTING_DOWN, Stopping
from ._tasks import AFTER_SECONDS, TASKS, TaskBoard, TaskControl

SESSION_ARGUMENT = "session"
MAX_ASKING_ROUNDS = 10  # questions one call may ask a handshake-era client, one after another
HANDLE_META = "codeact/session"


def mcp_server(
    runtime: Runtime,
    *,
    mode: Mode | str | None = None,
    name: str = "codeact",
    json_text: bool = False,
    idle_seconds: float = IDLE_SECONDS,
    max_handles: int = MAX_SESSIONS,
    handles_per_client: int = MAX_SESSIONS_PER_CLIENT,
    task_after_seconds: float = AFTER_SECONDS,
    request_state: RequestStateSecurity | None = None,
    stopping: Stopping | None = None,
) -> Server[Any]:
    """An MCP server offering ``runtime``'s tools as advertised in ``mode``.

    A result's model-readable blocks are its content, and its structured form goes in
    ``structuredContent`` only, so a model reads each result once. ``json_text=True``
    also appends the structured form as a JSON text block, for clients that read
    structured results from the text alone (what the spec suggests for older clients).

    Over HTTP without an MCP session (protocol 2026-07-28), ``run_code`` takes a
    ``session`` handle: at most ``max_handles`` live at once, ``handles_per_client`` per
    client address (its least recently used goes first), each closed after
    ``idle_seconds`` unused. A call from a client that declares the tasks extension and
    runs longer than ``task_after_seconds`` becomes a task. ``request_state`` protects
    the state of approval questions (default: a key made now, held by this process).
    ``stopping.stop()`` answers every call in flight that the server is shutting down.
    """
    sessions = ScriptSessions(
        runtime.close_session,
        max_handles=max_handles,
        per_client=handles_per_client,
        idle_seconds=idle_seconds,
    )
    board = TaskBoard(after_seconds=task_after_seconds)
    serving = _Serving(
        runtime, mode=mode, sessions=sessions, json_text=json_text, stopping=stopping
    )

    async def list_tools(
        context: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        with_handles = sessions.stateless(context)
        return types.ListToolsResult(
            tools=[
                _served_tool(
                    schema,
                    runtime.tool(str(schema["name"])),
                    handles=with_handles and schema["name"] == RUN_CODE,
                    idle_seconds=idle_seconds,
                )
                for schema in runtime.schemas(mode)
            ]
        )

    async def call_tool(context: Any, params: types.CallToolRequestParams) -> Any:
        if params.name not in runtime.advertised(mode):  # the spec's protocol error
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        if serving.stopping.stopped:
            return _refusal(f"Error [ABORTED]: {SHUTTING_DOWN}; call again once it is back")
        try:
            work = await serving.prepare(context, params)
        except HandleRefused as refusal:
            return _refusal(str(refusal))
        if board.wanted(context):
            return await board.start(work.as_task)
        return await work.directly()

    server: Server[Any] = Server(
        name, lifespan=board.lifespan, on_list_tools=list_tools, on_call_tool=call_tool
    )
    for method, params_type, handler in board.methods():
        server.add_request_handler(method, params_type, handler)
    server.extensions[TASKS] = {}
    security = request_state or RequestStateSecurity.ephemeral()
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    return server


class _Serving:
    """What every call shares: the runtime, where sessions live, the questions asked."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        mode: Mode | str | None,
        sessions: ScriptSessions,
        json_text: bool,
        stopping: Stopping | None = None,
    ) -> None:
        self.runtime = runtime
        self.stopping = stopping or Stopping()
        self.mode = mode
        self.sessions = sessions
        self.json_text = json_text
        self.approvals = Approvals()
        self.numbers = itertools.count(1)

    async def prepare(self, context: Any, params: types.CallToolRequestParams) -> _Call:
        arguments = dict(params.arguments or {})
        handle = None
        if params.name == RUN_CODE and self.sessions.stateless(context):
            handle = arguments.pop(SESSION_ARGUMENT, None)
            if handle is not None and not isinstance(handle, str):
                raise HandleRefused("session takes 'new' or a handle a run_code result gave")
        call = ToolCall(f"mcp-{next(self.numbers)}", params.name, arguments)
        asking = how_to_ask(context) if self.runtime.durable is not None else None
        if params.request_state is None:
            if params.input_responses:
                raise refused("answers came without the requestState they answer")
            placement = await self.sessions.place(context, handle)
            return _Call(self, context, call, placement, asking=asking)
        state = AskedState.parse(params.request_state)
        placement = self._resumed_placement(context, state)
        self.approvals.spend(state)
        return _Call(
            self,
            context,
            call,
            placement,
            asking=asking,
            resuming=state,
            answers=dict(params.input_responses or {}),
        )

    def _resumed_placement(self, context: Any, state: AskedState) -> Placement:
        """The session a retry resumes: the one its sealed state names, if this client may
        resume it (its own connection's, its handle's, or a one-off call's)."""
        if state.handle is not None:
            if not self.sessions.owns(state.handle, state.session):
                raise refused("the session this question belongs to has expired")
            return Placement(session=state.session, handle=state.handle)
        own = self.sessions.session_of(context)
        if own is None and state.session.startswith(ONE_OFF):
            return Placement(session=state.session, one_off=True)
        if own != state.session:
            raise refused("the question was asked in another client's session")
        return Placement(session=state.session)


class _Call:
    """One tools/call: run (or resume) it, ask what its run waits on, and answer in MCP."""

    def __init__(
        self,
        serving: _Serving,
        context: Any,
        call: ToolCall,
        placement: Placement,
        *,
        asking: str | None,
        resuming: AskedState | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> None:
        self.serving = serving
        self.runtime = serving.runtime
        self.context = context
        self.call = call
        self.placement = placement
        self.asking = asking
        self.resuming = resuming
        self.answers = answers or {}
        self.abort: AbortSignal | None = None  # while it runs: how the server stops it

    async def directly(self) -> types.CallToolResult | types.InputRequiredResult:
        """Within the request: a question goes back as the result (2026-07-28) or is put
        to the client mid-call (handshake era)."""
        with self.serving.stopping.call() as self.abort:
            return await self._directly()

    async def _directly(self) -> types.CallToolResult | types.InputRequiredResult:
        try:
            result = await self._first()
            for _ in range(MAX_ASKING_ROUNDS):
                waiting = self._waiting(result)
                if not waiting or self.asking != "request":
                    break
                answers = {
                    call.call_id: await self.context.session.elicit_form(
                        question(call), APPROVE_SCHEMA, related_request_id=self.context.request_id
                    )
                    for call in waiting
                }
                result = await self._resumed([c.call_id for c in waiting], answers)
            waiting = self._waiting(result)
            if waiting and self.asking == "input_required":
                state = self.serving.approvals.state(self.placement, waiting)
                return types.InputRequiredResult(
                    input_requests=elicitations(waiting), request_state=state.text()
                )
            return self._answer(result, cannot_ask=bool(waiting))
        finally:
            await self._done()

    async def as_task(self, control: TaskControl | None) -> types.CallToolResult:
        """In a task: a question turns the task ``input_required`` until tasks/update."""
        with self.serving.stopping.call() as self.abort:
            return await self._as_task(control)

    async def _as_task(self, control: TaskControl | None) -> types.CallToolResult:
        try:
            result = await self._first()
            while (waiting := self._waiting(result)) and self.asking and control is not None:
                answers = await control.ask(elicitations(waiting))
                result = await self._resumed([c.call_id for c in waiting], answers)
            return self._answer(result, cannot_ask=bool(self._waiting(result)))
        finally:
            await self._done()

    async def _first(self) -> ToolExecutionResult:
        if self.resuming is None:
            return await self.runtime.execute(
                self.call, mode=self.serving.mode, session=self.placement.session, abort=self.abort
            )
        if self.call.name == RUN_CODE:
            waiting = {call.call_id for call in self.runtime.pending(self.placement.session)}
            if not set(self.resuming.asked) <= waiting:
                raise refused("the run no longer waits on the calls this question asked about")
        return await self._resumed(list(self.resuming.asked), self.answers)

    async def _resumed(self, asked: list[str], answers: Mapping[str, Any]) -> ToolExecutionResult:
        """The run goes on from its record with these decisions; a native call runs again
        under its first id, which the decision is for (calls not answered stay undecided)."""
        decided = decisions(asked, answers)
        if self.call.name != RUN_CODE:
            token = DECIDED.set({**DECIDED.get(), **decided})
            try:
                again = ToolCall(asked[0], self.call.name, self.call.arguments)
                return await self.runtime.execute(
                    again, mode=self.serving.mode, session=self.placement.session, abort=self.abort
                )
            finally:
                DECIDED.reset(token)
        try:
            return await self.runtime.resume(self.placement.session, decided, abort=self.abort)
        except (ReplayDiverged, UsageError) as error:
            return failure(self.call.id, RUN_CODE, ErrorCode.REPLAY_DIVERGED, str(error))

    def _waiting(self, result: ToolExecutionResult) -> list[PendingCall]:
        """The calls a result waits on: a durable run's pending calls, or a native call the
        policy asks about (its approver deferred it)."""
        if not result.is_error or result.error.code != ErrorCode.SUSPENDED:
            return []
        if self.call.name != RUN_CODE:
            arguments = self.call.parsed_arguments()
            return [
                PendingCall(
                    run="",
                    call_id=result.call_id,
                    position=0,
                    name=self.call.name,
                    arguments=arguments if isinstance(arguments, dict) else {},
                    reason=result.error.message,
                )
            ]
        if self.runtime.durable is None:
            return []
        return self.runtime.pending(self.placement.session)

    def _answer(self, result: ToolExecutionResult, *, cannot_ask: bool) -> types.CallToolResult:
        value = None if result.is_error else thaw(result.value)
        structured = value if isinstance(value, dict) else None
        content = [_mcp_block(block) for block in result.content]
        if cannot_ask:
            content.append(types.TextContent(type="text", text=CANNOT_ASK))
        serialized = None if structured is None or not self.serving.json_text else dumps(structured)
        if serialized is not None and serialized != result.text:
            content.append(types.TextContent(type="text", text=serialized))
        handle = self.placement.handle
        if handle is not None:
            note = (
                f"Session handle: {handle} (pass session={handle!r} to the next run_code "
                "call to keep these names)"
            )
            content.append(types.TextContent(type="text", text=note))
        return types.CallToolResult(
            content=content,
            structured_content=structured,
            is_error=result.is_error,
            _meta={HANDLE_META: handle} if handle is not None else None,
        )

    async def _done(self) -> None:
        self.serving.sessions.seen(self.placement)
        with anyio.CancelScope(shield=True):
            await self.serving.sessions.release(self.placement)


def _refusal(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


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


def _served_tool(
    schema: Mapping[str, Any], tool: Tool | None, *, handles: bool, idle_seconds: float
) -> types.Tool:
    """A tool as ``tools/list`` shows it: its advertisement, output schema, annotations;
    run_code over stateless HTTP also takes and explains its ``session`` handle."""
    hints = dict(tool.annotations or {}) if tool is not None else {}
    title = hints.pop("title", None)
    description = str(schema["description"])
    parameters = dict(schema["parameters"])
    if handles:
        description = description.replace(PERSIST_SENTENCE, handle_guide(idle_seconds) + " ")
        parameters["properties"] = {
            **parameters.get("properties", {}),
            SESSION_ARGUMENT: {"type": "string", "description": SESSION_PARAMETER},
        }
    return types.Tool(
        name=str(schema["name"]),
        title=str(title) if title else None,
        description=description,
        input_schema=parameters,
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


async def serve_stdio(server: Server[Any], stopping: Stopping | None = None) -> None:
    """Serve one MCP connection over this process's stdin and stdout; ``stopping`` (the
    server's) learns when its answers are written."""
    async with stdio_server() as (read_stream, write_stream):
        if stopping is not None:
            stopping.watch(write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())


__all__ = ["mcp_server", "serve_stdio"]
