"""What every bridge shares: a runtime from what the user has, a session per conversation,
and calls that run on the runtime's own event loop whichever loop (or none) the
framework calls from."""

from __future__ import annotations

import contextlib
import functools
import itertools
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from ..contract._call import ToolCall
from ..contract._registry import ToolRegistry
from ..contract._results import ImageBlock, ToolExecutionResult
from ..contract._tool import Tool
from ..runtime._modes import Mode, Runtime

ToolSource = Runtime | ToolRegistry | Iterable[Tool | Callable[..., Any]]


def as_runtime(source: ToolSource) -> Runtime:
    """A runtime for what the user has: itself, a registry, or a list of tools or functions."""
    return source if isinstance(source, Runtime) else Runtime(source)


def offered_mode(runtime: Runtime, mode: Mode | str | None) -> Mode:
    """The mode a bridge offers: the one it is given, else the runtime's own if it was
    chosen (``Runtime(tools, mode="native")``), else code mode."""
    if mode is not None:
        return Mode(mode)
    return runtime.mode if runtime.mode_chosen else Mode.CODE


class Dispatcher:
    """One runtime's advertisement in one mode, each call dispatched through
    ``Runtime.execute`` on the runtime's background loop, so sync and async callers (and
    a framework that starts a new loop per run) share one executor safely."""

    def __init__(self, source: ToolSource, *, mode: Mode | str | None = None) -> None:
        self.runtime = as_runtime(source)
        self.mode = offered_mode(self.runtime, mode)
        self._numbers = itertools.count(1)

    def schemas(self) -> list[dict[str, Any]]:
        return self.runtime.schemas(self.mode)

    def call_id(self, given: str | None) -> str:
        """The framework's call id, or one of ours when it has none."""
        return given or f"codeact-{next(self._numbers)}"

    def call(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None, session: str
    ) -> ToolExecutionResult:
        """Run one call from synchronous code (a framework's ``invoke`` or ``forward``)."""
        call = ToolCall(self.call_id(call_id), name, _arguments(arguments))
        return self.runtime.execute_sync(call, mode=self.mode, session=session)

    async def acall(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None, session: str
    ) -> ToolExecutionResult:
        """Run one call from async code; cancelling the caller cancels the call."""
        call = ToolCall(self.call_id(call_id), name, _arguments(arguments))
        portal = self.runtime._blocking().portal
        run = functools.partial(self.runtime.execute, call, mode=self.mode, session=session)
        future = portal.start_task_soon(run)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        finally:
            future.cancel()  # nothing when it finished; the call is cancelled when it did not

    def call_alone(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None, prefix: str
    ) -> ToolExecutionResult:
        """A call with no conversation to belong to: a session of its own, closed after it
        (sharing one would hand one caller's names to the next)."""
        session = f"{prefix}-alone-{uuid.uuid4().hex[:12]}"
        try:
            return self.call(name, arguments, call_id=call_id, session=session)
        finally:
            self.runtime._blocking().call(lambda: self.runtime.close_session(session))

    async def acall_alone(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None, prefix: str
    ) -> ToolExecutionResult:
        """``call_alone`` from async code."""
        session = f"{prefix}-alone-{uuid.uuid4().hex[:12]}"
        try:
            return await self.acall(name, arguments, call_id=call_id, session=session)
        finally:
            portal = self.runtime._blocking().portal
            closing = portal.start_task_soon(self.runtime.close_session, session)
            await anyio.to_thread.run_sync(closing.result)


def _arguments(arguments: Mapping[str, Any] | str) -> dict[str, Any] | str:
    return arguments if isinstance(arguments, str) else dict(arguments)


class Sessions:
    """Script sessions named after what a framework calls a conversation.

    Names carry a prefix of their own per bridge, so two bridges on one runtime never
    share one; an object that stands for a conversation (a run, an agent) gets a name
    for as long as it lives, and its session is closed when it is collected.
    """

    def __init__(self, runtime: Runtime, framework: str) -> None:
        self._runtime = runtime
        self._prefix = f"{framework}-{uuid.uuid4().hex[:12]}"
        self._by_object: dict[int, str] = {}

    @property
    def prefix(self) -> str:
        return self._prefix

    def named(self, conversation: str) -> str:
        """The session of a conversation the framework names (a thread or conversation id)."""
        return f"{self._prefix}-{conversation}"

    def of(self, owner: object) -> str:
        """The session of a conversation an object stands for, while the object lives."""
        key = id(owner)
        found = self._by_object.get(key)
        if found is None:
            found = self._by_object[key] = f"{self._prefix}-{uuid.uuid4().hex[:12]}"
            weakref.finalize(owner, self._forget, key, found)
        return found

    def _forget(self, key: int, session: str) -> None:
        self._by_object.pop(key, None)
        loop = self._runtime._loop
        if loop is None or not loop.running:
            return
        # Its worker goes with it, not at idle time (unless this runs on the loop's own
        # thread, or as it stops: then the idle reaper takes it).
        with contextlib.suppress(RuntimeError):
            loop.portal.start_task_soon(self._runtime.close_session, session)


def images(result: ToolExecutionResult) -> list[ImageBlock]:
    """The images a result carries, for frameworks that take images in tool results."""
    return [block for block in result.content if isinstance(block, ImageBlock)]


def text_of(result: ToolExecutionResult) -> str:
    """The result's text beside its images (each image also named in one line in it)."""
    return "\n".join(block.text for block in result.content if not isinstance(block, ImageBlock))


def data_url(image: ImageBlock) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


__all__ = ["Dispatcher", "Sessions", "ToolSource", "as_runtime", "data_url", "images", "text_of"]
