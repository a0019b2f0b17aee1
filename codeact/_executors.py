"""Executors: where a session's scripts run. One protocol, an in-process and a process one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.to_thread

from ._exceptions import ToolError
from ._json import JsonValue, thaw
from ._results import ToolExecutionResult
from ._sandbox import Limits, Sandbox, ScriptOutcome

ABORT_GRACE_SECONDS = 2.0
SCRIPT_THREADS = 256

AsyncToolCaller = Callable[[str, dict[str, JsonValue]], Awaitable[ToolExecutionResult]]


class Executor(Protocol):
    """Runs scripts for sessions; a session's names persist until it is reset or closed."""

    async def run(
        self,
        source: str,
        *,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
    ) -> ScriptOutcome: ...

    async def reset(self, session: str) -> None: ...

    async def close_session(self, session: str) -> None: ...

    async def aclose(self) -> None: ...


class InProcessExecutor:
    """Scripts run in a worker thread of this process, under the in-process guards and limits.

    Fast, and the guards hold against the known escapes; for a hard boundary that
    the host can kill, use the process executor.
    """

    def __init__(
        self, *, limits: Limits | None = None, modules: frozenset[str] | None = None
    ) -> None:
        self.limits = limits or Limits()
        self.modules = modules
        self._sandboxes: dict[str, Sandbox] = {}
        # Scripts wait in their threads for tools that need a thread of their own: one
        # shared limiter would deadlock once every token is held by a waiting script.
        self._threads = anyio.CapacityLimiter(SCRIPT_THREADS)

    def sandbox(self, session: str) -> Sandbox:
        found = self._sandboxes.get(session)
        if found is None:
            found = self._sandboxes[session] = Sandbox(limits=self.limits, modules=self.modules)
        return found

    async def run(
        self,
        source: str,
        *,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
    ) -> ScriptOutcome:
        sandbox = self.sandbox(session)

        def call_from_script(name: str, arguments: dict[str, JsonValue]) -> JsonValue:
            result: ToolExecutionResult = anyio.from_thread.run(call_tool, name, arguments)  # type: ignore[arg-type]
            if result.is_error:
                raise ToolError(result.error.message, result.error.code)
            return thaw(result.value)

        def run_script() -> ScriptOutcome:
            return sandbox.run(source, tools=tools, call_tool=call_from_script)

        try:
            return await anyio.to_thread.run_sync(
                run_script, abandon_on_cancel=True, limiter=self._threads
            )
        except anyio.get_cancelled_exc_class():
            sandbox.abort()
            with anyio.CancelScope(shield=True):  # let the script unwind before we go on
                await anyio.to_thread.run_sync(sandbox.wait_idle, ABORT_GRACE_SECONDS)
            raise

    async def reset(self, session: str) -> None:
        if session in self._sandboxes:  # teardown runs script finalizers: off the event loop
            await anyio.to_thread.run_sync(self._sandboxes[session].reset, limiter=self._threads)

    async def close_session(self, session: str) -> None:
        sandbox = self._sandboxes.pop(session, None)
        if sandbox is not None:
            sandbox.abort()
            await anyio.to_thread.run_sync(sandbox.close, limiter=self._threads)

    async def aclose(self) -> None:
        for session in list(self._sandboxes):
            await self.close_session(session)


__all__ = ["AsyncToolCaller", "Executor", "InProcessExecutor"]
