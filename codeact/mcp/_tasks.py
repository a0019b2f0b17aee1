"""Long runs as tasks: the MCP tasks extension (``io.modelcontextprotocol/tasks``), both ways.

The server side: a call from a client that declares the extension runs in the server's own
task group. If it ends within ``after_seconds`` its result is the answer, as without the
extension; otherwise the client gets a task handle (``resultType: "task"``) and polls
``tasks/get`` until the task ends. A run that waits for approval turns the task
``input_required`` with its questions, answered by ``tasks/update``. ``tasks/cancel``
cancels the run (the script stops). Task ids are 128 random bits; tasks are bounded in
number and kept for ``ttl_seconds`` after they end.

The client side: ``TaskClient`` claims the task result for the SDK's ``Client`` and awaits
it, answering its questions through the client's own callbacks, and cancels the task if
the caller stops waiting.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field, TypeAdapter

from ._http import TASK_AFTER_SECONDS

TASKS = "io.modelcontextprotocol/tasks"
AFTER_SECONDS = TASK_AFTER_SECONDS
POLL_MS = 200
TTL_SECONDS = 3600.0
MAX_TASKS = 256
TERMINAL = frozenset({"completed", "failed", "cancelled"})

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]


class TaskParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


class TaskControl:
    """What a task's work may do besides running: ask its client, and see it cancelled."""

    def __init__(self, task: _Task) -> None:
        self._task = task

    async def ask(self, requests: Mapping[str, types.InputRequest]) -> dict[str, Any]:
        """Put ``requests`` to the client (status ``input_required``) and wait for all their
        answers, given by ``tasks/update``; the task works on after that."""
        task = self._task
        task.asked = {key: _wire(request) for key, request in requests.items()}
        task.answers = {}
        task.answered = anyio.Event()
        task.set("input_required", "waiting for the client's answers")
        await task.answered.wait()
        answers, task.asked = task.answers, None
        task.set("working", "working")
        return answers


Work = Callable[[TaskControl | None], Awaitable[types.CallToolResult]]


@dataclass(kw_only=True, eq=False)
class _Task:
    id: str
    created: str = field(default_factory=lambda: _now())
    updated: str = field(default_factory=lambda: _now())
    status: Status = "working"
    message: str = "working"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: dict[str, Any] | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    answered: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)  # set on every change
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ended: float | None = None

    def set(self, status: Status, message: str) -> None:
        self.status, self.message, self.updated = status, message, _now()
        if status in TERMINAL:
            self.ended = time.monotonic()
        self.changed.set()
        self.changed = anyio.Event()

    def wire(self, *, ttl_seconds: float, poll_ms: int) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "statusMessage": self.message,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": int(ttl_seconds * 1000),
            "pollIntervalMs": poll_ms,
        }
        if self.status == "completed":
            shown["result"] = self.result
        elif self.status == "failed":
            shown["error"] = self.error
        elif self.status == "input_required":
            shown["inputRequests"] = self.asked
        return shown


class TaskBoard:
    """One server's tasks, run in the task group its lifespan opens."""

    def __init__(
        self,
        *,
        after_seconds: float = AFTER_SECONDS,
        poll_ms: int = POLL_MS,
        ttl_seconds: float = TTL_SECONDS,
        max_tasks: int = MAX_TASKS,
    ) -> None:
        self.after_seconds = after_seconds
        self.poll_ms = poll_ms
        self.ttl_seconds = ttl_seconds
        self.max_tasks = max_tasks
        self._tasks: dict[str, _Task] = {}
        self._group: anyio.abc.TaskGroup | None = None

    @asynccontextmanager
    async def lifespan(self, server: Any) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: tasks run for as long as it serves, and stop with it."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield {}
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def wanted(self, context: Any) -> bool:
        """Whether this request's client takes task handles (it declared the extension)."""
        if self._group is None or context.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        capabilities = getattr(context.session, "client_capabilities", None)
        extensions = getattr(capabilities, "extensions", None) or {}
        return TASKS in extensions

    async def start(self, work: Work) -> types.CallToolResult | dict[str, Any]:
        """Run ``work`` as a task: its result if it ends soon, else the task's handle."""
        assert self._group is not None
        self._forget_ended()
        if len(self._tasks) >= self.max_tasks:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"the server already runs {self.max_tasks} tasks, the most it may",
            )
        task = _Task(id=f"task_{secrets.token_urlsafe(16)}")
        self._tasks[task.id] = task
        changed = task.changed
        self._group.start_soon(self._run, task, work)
        with anyio.move_on_after(self.after_seconds):
            while task.status == "working":
                await changed.wait()
                changed = task.changed
        if task.status == "completed" and task.result is not None:
            del self._tasks[task.id]  # answered directly: no one will poll it
            return types.CallToolResult.model_validate(task.result)
        handle = task.wire(ttl_seconds=self.ttl_seconds, poll_ms=self.poll_ms)
        return {"resultType": "task", **handle}

    async def _run(self, task: _Task, work: Work) -> None:
        with task.scope:
            try:
                result = await work(TaskControl(task))
            except MCPError as error:
                task.error = error.error.model_dump(mode="json", by_alias=True, exclude_none=True)
                task.set("failed", error.error.message)
                return
            except Exception as error:  # a task's failure is its own, never the server's
                message = f"the task failed: {type(error).__name__}: {error}"
                task.error = {"code": types.INTERNAL_ERROR, "message": message}
                task.set("failed", message)
                return
            task.result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            task.set("completed", "failed" if result.is_error else "completed")
        if task.scope.cancelled_caught:
            task.set("cancelled", "cancelled by the client")

    def methods(self) -> list[tuple[str, type[types.RequestParams], Any]]:
        """The extension's request methods, for ``Server.add_request_handler``."""
        return [
            ("tasks/get", TaskParams, self._get),
            ("tasks/update", UpdateTaskParams, self._update),
            ("tasks/cancel", TaskParams, self._cancel),
        ]

    async def _get(self, context: Any, params: TaskParams) -> dict[str, Any]:
        return self._find(params.task_id).wire(ttl_seconds=self.ttl_seconds, poll_ms=self.poll_ms)

    async def _update(self, context: Any, params: UpdateTaskParams) -> dict[str, Any]:
        task = self._find(params.task_id)
        if task.asked is not None:  # answers to keys not asked now are ignored, as specified
            task.answers.update(
                {key: value for key, value in params.input_responses.items() if key in task.asked}
            )
            if set(task.answers) >= set(task.asked):
                task.answered.set()
        return {}

    async def _cancel(self, context: Any, params: TaskParams) -> dict[str, Any]:
        task = self._find(params.task_id)
        if task.status not in TERMINAL:
            task.scope.cancel()
        return {}

    def _find(self, task_id: str) -> _Task:
        self._forget_ended()
        task = self._tasks.get(task_id)
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no task {task_id!r} on this server")
        return task

    def _forget_ended(self) -> None:
        now = time.monotonic()
        for task_id, task in list(self._tasks.items()):
            if task.ended is not None and now - task.ended > self.ttl_seconds:
                del self._tasks[task_id]


# The client side ------------------------------------------------------------------------


class CreatedTask(types.Result):
    """A task handle in place of a tool's result."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskState(types.Result):
    """What ``tasks/get`` says of a task."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class _TaskRequest(types.Request[TaskParams, str]):
    name_param: ClassVar[str | None] = "taskId"


class _UpdateRequest(types.Request[UpdateTaskParams, str]):
    name_param: ClassVar[str | None] = "taskId"


class TaskClient(ClientExtension):
    """Take task handles from servers and await them: a tool that runs as a task is, to its
    caller, a call that returns its result. Its questions go through the client's own
    elicitation (or sampling, roots) callbacks; a caller that stops waiting cancels it."""

    identifier = TASKS

    def __init__(self, *, poll_ms: int = POLL_MS) -> None:
        self.poll_ms = poll_ms

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._awaited)]

    async def _awaited(self, created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
        session, task_id = context.session, created.task_id
        answered: set[str] = set()
        try:
            while True:
                state = await session.send_request(
                    _TaskRequest(method="tasks/get", params=TaskParams(task_id=task_id)),
                    TaskState,
                )
                if state.status == "completed" and state.result is not None:
                    return types.CallToolResult.model_validate(state.result)
                if state.status == "failed":
                    raise MCPError.from_error_data(types.ErrorData.model_validate(state.error))
                if state.status == "cancelled":
                    text = f"the task {task_id} was cancelled on the server"
                    return types.CallToolResult(
                        content=[types.TextContent(type="text", text=text)], is_error=True
                    )
                if state.status == "input_required" and state.input_requests:
                    await self._answer(session, task_id, state.input_requests, answered)
                    continue
                interval = state.poll_interval_ms or created.poll_interval_ms or self.poll_ms
                await anyio.sleep(min(interval, 5_000) / 1000)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await session.send_request(
                    _TaskRequest(method="tasks/cancel", params=TaskParams(task_id=task_id)),
                    types.EmptyResult,
                )
            raise

    async def _answer(
        self, session: Any, task_id: str, requests: dict[str, Any], answered: set[str]
    ) -> None:
        """Answer each question not answered before, through the client's callbacks."""
        responses: dict[str, Any] = {}
        for key, raw in requests.items():
            if key in answered:
                continue
            request = _INPUT_REQUEST.validate_python(raw)
            answer = await session.dispatch_input_request(
                ClientRequestContext(session=session, request_id=key), request
            )
            if isinstance(answer, types.ErrorData):
                raise MCPError.from_error_data(answer)
            responses[key] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            answered.add(key)
        if responses:
            await session.send_request(
                _UpdateRequest(
                    method="tasks/update",
                    params=UpdateTaskParams(task_id=task_id, input_responses=responses),
                ),
                types.EmptyResult,
            )
        else:
            await anyio.sleep(self.poll_ms / 1000)


def _wire(request: types.InputRequest) -> dict[str, Any]:
    return request.model_dump(mode="json", by_alias=True, exclude_none=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)

__all__ = ["TASKS", "TaskBoard", "TaskClient", "TaskControl"]
