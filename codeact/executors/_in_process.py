"""Executors: where a session's scripts run. One protocol, an in-process and a process one."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from ..contract._dispatch import owned_value
from ..contract._exceptions import ErrorCode, ToolError
from ..contract._json import JsonValue
from ..contract._results import ToolExecutionResult, failure
from ..sandbox import Limits, ScriptError, ScriptOutcome
from ..sandbox._limits import StopFlag
from ..stdlib import standard_sandbox
from ._threads import SessionThread

if TYPE_CHECKING:
    from ..sandbox import Sandbox

ABORT_GRACE_SECONDS = 2.0
SCRIPT_THREADS = 256
MAX_QUEUED_RUNS = 256
IDLE_SECONDS = 300.0

AsyncToolCaller = Callable[[str, dict[str, JsonValue]], Awaitable[ToolExecutionResult]]
# A call answered in the calling thread, or None when it needs the event loop.
SyncToolCaller = Callable[[str, dict[str, JsonValue]], ToolExecutionResult | None]
# What a script prints, as it prints it (any thread; the text of one print call)
OutputListener = Callable[[str], None]
# The calls a script's async code made together, answered together, in order.
AsyncBatchCaller = Callable[
    [list[tuple[str, dict[str, JsonValue]]]], Awaitable[list[ToolExecutionResult]]
]


class RunTape(Protocol):
    """A durable run's clock and entropy readings: the recorded ones its worker serves
    first (``replay``), and the fresh ones it reports (``received``, with the script lines
    of the calls the message asks for) before each call's answer and with its outcome.
    ``fresh``: the run starts from a clean session."""

    replay: list[list[JsonValue]]
    fresh: bool

    def received(
        self, reads: list[list[JsonValue]], diverged: str | None, lines: list[int | None]
    ) -> None: ...


class Executor(Protocol):
    """Runs scripts for sessions; a session's names persist until it is reset or closed."""

    async def run(
        self,
        source: str,
        *,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None = None,
        call_tool_now: SyncToolCaller | None = None,
        on_output: OutputListener | None = None,
    ) -> ScriptOutcome: ...

    async def reset(self, session: str) -> None: ...

    async def close_session(self, session: str) -> None: ...

    async def aclose(self) -> None: ...


class QueueFull(Exception):
    """A session already has as many runs waiting as it may."""


@dataclass(kw_only=True)
class _Gate:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    users: int = 0


MAX_SPARE_GATES = 64


class SessionGates:
    """One run of a session at a time, in arrival order, with a bound on those waiting.

    Runs of different sessions never wait on each other. A session's gate lives while
    it has runs; a gate left free is kept for the next session (making a lock costs more
    than a short run's whole turn).
    """

    def __init__(self, limit: int = MAX_QUEUED_RUNS) -> None:
        self.limit = limit
        self._gates: dict[str, _Gate] = {}
        self._spare: list[_Gate] = []

    @contextlib.asynccontextmanager
    async def hold(self, session: str) -> AsyncIterator[None]:
        gate = self._enter(session)
        try:
            async with taken(gate.lock):  # FIFO: a released lock goes to the first waiter
                yield
        finally:
            self._leave(session, gate)

    def _enter(self, session: str) -> _Gate:
        gate = self._gates.get(session)
        if gate is None:
            gate = self._gates[session] = self._spare.pop() if self._spare else _Gate()
        if gate.users > self.limit:
            raise QueueFull(session)
        gate.users += 1
        return gate

    def _leave(self, session: str, gate: _Gate) -> None:
        gate.users -= 1
        if gate.users == 0:  # nobody holds it or waits: free for another session
            self._gates.pop(session, None)
            if len(self._spare) < MAX_SPARE_GATES:
                self._spare.append(gate)

    def active(self, session: str) -> bool:
        """Is a run of ``session`` running or waiting its turn?"""
        return session in self._gates

    def alone(self) -> bool:
        """Is at most one session running or waiting (any thread may ask)?"""
        return len(self._gates) <= 1

    async def run(
        self, session: str, work: Callable[[], Awaitable[ScriptOutcome]]
    ) -> ScriptOutcome:
        """``work`` in its turn; a clear error when the session's queue is full."""
        try:
            gate = self._enter(session)
        except QueueFull:
            return queue_full(session, self.limit)
        try:
            async with taken(gate.lock):
                return await work()
        finally:
            self._leave(session, gate)


class taken:
    """Hold ``lock``, taken at once when it is free (no trip through the event loop, which
    anyio's ``acquire`` always makes), else waited for in turn. A class, not a generator:
    every run passes through it."""

    __slots__ = ("_lock",)

    def __init__(self, lock: anyio.Lock | anyio.CapacityLimiter) -> None:
        self._lock = lock

    async def __aenter__(self) -> None:
        try:
            self._lock.acquire_nowait()  # fails while others wait: their turn comes first
        except anyio.WouldBlock:
            await self._lock.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()


def queue_full(session: str, limit: int) -> ScriptOutcome:
    message = (
        f"session {session!r} already has {limit} runs waiting; "
        "send the next one when an earlier one has finished"
    )
    return ScriptOutcome(error=ScriptError(code=ErrorCode.CODE_RUNTIME_ERROR, message=message))


def bounded_tool_caller(call_tool: AsyncToolCaller, limits: Limits) -> AsyncToolCaller:
    """A tool call from a script waits on the host at most ``limits.tool_wait_seconds``."""

    async def call(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
        with anyio.move_on_after(limits.tool_wait_seconds):
            return await call_tool(name, arguments)
        return failure(
            "script",
            name,
            ErrorCode.TIMEOUT,
            f"the script waited {limits.tool_wait_seconds:g} s for {name!r} (its tool-wait limit)",
        )

    return call


def bounded_batch_caller(
    call_tool: AsyncToolCaller, call_tools: AsyncBatchCaller | None, limits: Limits
) -> AsyncBatchCaller:
    """A batch of calls from async code: ``call_tools`` when the caller has one (it applies
    the registry's concurrency rules), else each call through ``call_tool``, at most
    ``limits.max_concurrent_tool_calls`` at a time; every call waits at most the tool-wait limit.
    """
    bounded = bounded_tool_caller(call_tool, limits)

    async def batch(calls: list[tuple[str, dict[str, JsonValue]]]) -> list[ToolExecutionResult]:
        if call_tools is not None:
            return list(await call_tools(calls))
        results: dict[int, ToolExecutionResult] = {}
        slots = anyio.CapacityLimiter(max(limits.max_concurrent_tool_calls, 1))

        async def one(index: int, name: str, arguments: dict[str, JsonValue]) -> None:
            async with slots:
                results[index] = await bounded(name, arguments)

        async with anyio.create_task_group() as tasks:
            for index, (name, arguments) in enumerate(calls):
                tasks.start_soon(one, index, name, arguments)
        return [results[index] for index in range(len(calls))]

    return batch


def answer_of(result: ToolExecutionResult) -> JsonValue | ToolError:
    """What a script receives for one call: the value, or the error it raises."""
    if result.is_error:
        return ToolError(result.error.message, result.error.code)
    return owned_value(result)


MIN_SCRIPT_STACK = 64 * 1024 * 1024
MAX_SCRIPT_STACK = 1024 * 1024 * 1024


def script_stack_bytes(limits: Limits) -> int:
    """The C stack of a host thread that runs scripts: as large as the memory limit.

    Some objects free the chain they head recursively in C (300,000 nested generators,
    dropped after a RecursionError, take about 300 bytes of C stack each and about 370
    of memory each): an 8 MiB stack overflows there, and in a host process that is the
    host gone. Any chain the memory limit lets a script build fits a stack that size.
    The stack is reserved address space; only the pages a run touches are memory.
    """
    return max(MIN_SCRIPT_STACK, min(MAX_SCRIPT_STACK, limits.memory_bytes))


class InProcessExecutor:
    """Scripts run in a worker thread of this process, under the in-process guards and limits.

    Fast, and the guards hold against the known escapes; for a hard boundary that
    the host can kill, use the process executor. A brief script (straight-line, calling
    no tool: see ``codeact.sandbox._brief``) runs in the calling thread instead, and is
    handed to its session's thread if it outlasts a moment; ``brief_runs = False`` hands
    every run over.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        modules: frozenset[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.modules = modules
        self.environ = dict(environ or {})  # what os.environ shows scripts
        self._sandboxes: dict[str, Sandbox] = {}
        self._last_used: dict[str, float] = {}
        self.idle_seconds = IDLE_SECONDS
        # Scripts wait in their threads for tools that need a thread of their own: one
        # shared limiter would deadlock once every token is held by a waiting script.
        self._threads = anyio.CapacityLimiter(SCRIPT_THREADS)
        self._script_threads: dict[str, SessionThread] = {}
        self._gates = SessionGates()
        # a brief script runs where its caller is, saving the two thread wake-ups of a handoff
        self.brief_runs = True

    def sandbox(self, session: str) -> Sandbox:
        self._last_used[session] = time.monotonic()
        found = self._sandboxes.get(session)
        if found is None:
            found = self._sandboxes[session] = standard_sandbox(
                limits=self.limits, modules=self.modules, environ=self.environ
            )
        return found

    async def run(
        self,
        source: str,
        *,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None = None,
        call_tool_now: SyncToolCaller | None = None,
        on_output: OutputListener | None = None,
    ) -> ScriptOutcome:
        return await self._gates.run(
            session,
            lambda: self._run(
                source, session, tools, call_tool, call_tools, call_tool_now, on_output
            ),
        )

    async def _run(
        self,
        source: str,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None,
        call_tool_now: SyncToolCaller | None = None,
        on_output: OutputListener | None = None,
    ) -> ScriptOutcome:
        sandbox = self.sandbox(session)
        if self.brief_runs:  # a brief script runs here, in a copy of the caller's context
            brief = contextvars.copy_context().run(
                sandbox.run_brief, source, tools=tools, on_output=on_output
            )
            if brief is not None:
                return brief
        thread = self._script_threads.get(session)
        if thread is None:
            thread = self._script_threads[session] = SessionThread(
                f"codeact-script-{session}", stack_bytes=script_stack_bytes(self.limits)
            )
        token = anyio.lowlevel.current_token()  # the script's thread reaches the loop by it
        bounded = bounded_tool_caller(call_tool, self.limits)
        batch = bounded_batch_caller(call_tool, call_tools, self.limits)
        # The host's side of the calls in flight: they run as tasks of their own (the
        # script waits in its thread), so a cancelled run cancels them by name.
        in_flight: set[anyio.CancelScope] = set()

        async def cancellable(work: Callable[[], Awaitable[Any]], names: list[str]) -> Any:
            with anyio.CancelScope() as scope:
                in_flight.add(scope)
                try:
                    return await work()
                finally:
                    in_flight.discard(scope)
            return [failure("script", n, ErrorCode.ABORTED, "the run was cancelled") for n in names]

        def batch_from_script(calls: list[tuple[str, dict[str, JsonValue]]]) -> list[object]:
            names = [name for name, _ in calls]
            thread.release_caller()  # the loop answers: a caller lingering on the run goes back
            results: list[ToolExecutionResult] = anyio.from_thread.run(
                cancellable, lambda: batch(calls), names, token=token
            )
            return [answer_of(result) for result in results]

        # The host's context, as this run began: a tool answered in the script's thread
        # runs in a copy of it, never in the script's (whose decimal context the script set).
        host_context = contextvars.copy_context()

        def call_from_script(name: str, arguments: dict[str, JsonValue]) -> JsonValue:
            now = None
            if call_tool_now is not None:
                now = host_context.copy().run(call_tool_now, name, arguments)
            if now is not None:  # answered here, in the script's thread: no handoff
                results = [now]
            else:

                async def one() -> list[ToolExecutionResult]:
                    return [await bounded(name, arguments)]

                thread.release_caller()
                results = anyio.from_thread.run(cancellable, one, [name], token=token)
            answer = answer_of(results[0])
            if isinstance(answer, ToolError):
                raise answer
            return answer

        stop = StopFlag()  # set when this run is cancelled, whether or not it began

        def run_script() -> ScriptOutcome:
            return sandbox.run(
                source,
                tools=tools,
                call_tool=call_from_script,
                call_tools=batch_from_script,
                on_output=on_output,
                stop=stop,
            )

        try:
            async with taken(self._threads):  # at most SCRIPT_THREADS scripts at once
                return await thread.run(run_script, linger=self._gates.alone())
        except anyio.get_cancelled_exc_class():
            stop.set()  # a run still queued in the session's thread stops as soon as it starts
            for scope in list(in_flight):  # each call in flight ends as ABORTED
                scope.cancel()
            with anyio.CancelScope(shield=True):  # let the script unwind before we go on
                await anyio.to_thread.run_sync(sandbox.wait_idle, ABORT_GRACE_SECONDS)
            raise

    async def reset(self, session: str) -> None:
        async with self._gates.hold(session):  # after the runs queued before it
            if session in self._sandboxes:  # teardown runs script finalizers: off the loop
                sandbox = self._sandboxes[session]
                await anyio.to_thread.run_sync(sandbox.reset, limiter=self._threads)

    async def reap_idle(self) -> None:
        """Close the sessions idle for longer than ``idle_seconds``."""
        now = time.monotonic()
        for session, used in list(self._last_used.items()):
            if now - used > self.idle_seconds:
                await self.close_session(session)

    async def close_session(self, session: str) -> None:
        self._last_used.pop(session, None)
        thread = self._script_threads.pop(session, None)
        if thread is not None:
            thread.close()
        sandbox = self._sandboxes.pop(session, None)
        if sandbox is not None:
            sandbox.abort()
            await anyio.to_thread.run_sync(sandbox.close, limiter=self._threads)

    async def aclose(self) -> None:
        for session in list(self._sandboxes):
            await self.close_session(session)


__all__ = [
    "AsyncBatchCaller",
    "AsyncToolCaller",
    "Executor",
    "InProcessExecutor",
    "OutputListener",
    "QueueFull",
    "SessionGates",
    "SyncToolCaller",
    "answer_of",
    "bounded_batch_caller",
    "bounded_tool_caller",
    "queue_full",
    "taken",
]
