"""async code in scripts: one event loop per run, in the script's own thread, watched.

The loop has no sockets, threads or file descriptors. Where a selector would wait
for I/O, it does the three things a script's loop can wait on: tool calls (sent to
the host together, as one batch, the first time the loop polls after they were
made), timers (a short sleep, so the watchdog's interrupt lands within
milliseconds) and the run's limits (a tripped limit or a stop ends the loop there,
even when a task swallowed the exception that announced it).
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import time
from collections.abc import Callable, Coroutine
from typing import Any

from ._errors import LimitExceeded, SandboxStop

POLL_SECONDS = 0.005
BatchCaller = Callable[[list[tuple[str, dict[str, Any]]]], list[Any]]

# CPython's words for a plain value handed to asyncio.gather; uncaught, the run's hint says
# how tool calls run concurrently (a script that catches the error sees CPython's text alone)
NOT_AWAITABLE = "An asyncio.Future, a coroutine or an awaitable is required"


class _ToolFailure:
    """A failed call in a batch's answers: the exception its awaiting task receives."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def tool_failure(error: BaseException) -> _ToolFailure:
    return _ToolFailure(error)


class _Waiter:
    """The loop's selector: tool batches, timers and limits, no file descriptors."""

    def __init__(self, loop: ScriptEventLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        loop = self._loop
        loop.check_stopped()
        if loop.pending_calls:
            loop.flush_calls()
            return []
        if timeout is None or timeout > POLL_SECONDS:
            timeout = POLL_SECONDS  # nothing can wake this loop but a timer: poll the limits
        if timeout > 0:
            time.sleep(timeout)
        loop.check_stopped()
        return []

    def close(self) -> None:
        pass


class ScriptEventLoop(asyncio.base_events.BaseEventLoop):
    """An event loop for one run: no I/O, tool calls batched, limits checked every turn."""

    def __init__(self, tripped: Callable[[], str | None], call_tools: BatchCaller) -> None:
        super().__init__()
        self._selector = _Waiter(self)
        self._tripped = tripped
        self._call_tools = call_tools
        self.pending_calls: list[tuple[str, dict[str, Any], asyncio.Future[Any]]] = []
        self.stop_error: BaseException | None = None
        self.script_view: Any = None  # the loop object scripts hold for this one, once asked
        self.set_task_factory(_watched_task)

    # What BaseEventLoop leaves to its subclasses; nothing of it does I/O here.
    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # A callback that raises is described by asyncio's handle before the loop's handler is
    # asked: reprlib on its arguments and attribute reads on the callable, host code on
    # the script's objects. Every callback is scheduled inside a _Scheduled of the loop's
    # own, which is all that description ever reads.
    def call_soon(  # type: ignore[override]
        self, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.Handle:
        return super().call_soon(_Scheduled(callback, args), context=context)

    def call_at(  # type: ignore[override]
        self, when: float, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        return super().call_at(when, _Scheduled(callback, args), context=context)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, SandboxStop) and self.stop_error is None:
            self.stop_error = error  # a limit raised inside a callback still ends the run
        # Anything else (a task destroyed while pending) is the script's business, and
        # no host log should carry it.

    def record_stop(self, error: BaseException) -> None:
        if self.stop_error is None:
            self.stop_error = error

    def check_stopped(self) -> None:
        if self.stop_error is not None:
            raise self.stop_error
        limit = self._tripped()
        if limit is not None:
            raise LimitExceeded(limit, f"the script exceeded its {limit} limit")

    # Tool calls ---------------------------------------------------------------------

    def submit_call(self, name: str, arguments: dict[str, Any]) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self.create_future()
        self.pending_calls.append((name, arguments, future))
        return future

    def flush_calls(self) -> None:
        batch = [call for call in self.pending_calls if not call[2].cancelled()]
        self.pending_calls = []
        if not batch:
            return
        answers = self._call_tools([(name, arguments) for name, arguments, _ in batch])
        for (_, _, future), answer in zip(batch, answers, strict=True):
            if future.cancelled():
                continue
            if isinstance(answer, _ToolFailure):
                future.set_exception(answer.error)
            else:
                future.set_result(answer)


class _Scheduled:
    """A callback and its arguments, called as asyncio would call them."""

    __slots__ = ("_args", "_callback")

    def __init__(self, callback: Any, args: tuple[Any, ...]) -> None:
        if not callable(callback):  # asyncio's check, before it is wrapped
            raise TypeError(f"a callable object was expected, got {type(callback).__name__}")
        self._callback = callback
        self._args = args

    def __call__(self) -> Any:
        return self._callback(*self._args)

    def __repr__(self) -> str:
        return "<a script's callback>"


def _watched_task(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    """Every task's coroutine reports a stop to the loop, which a task would otherwise keep."""
    assert isinstance(loop, ScriptEventLoop)
    return ScriptTask(_reporting(loop, coro), loop=loop, **kwargs)


class ScriptTask(asyncio.Task):  # type: ignore[type-arg]
    """A script's task, whose repr names no host coroutine or file (asyncio's shows both)."""

    def __repr__(self) -> str:
        if not self.done():
            state = "pending"
        elif self.cancelled():
            state = "cancelled"
        else:
            state = "finished"
        return f"<Task {state} name={self.get_name()!r}>"


# named as CPython's task class is (its type's repr, its name in a script's f-strings)
ScriptTask.__module__ = "_asyncio"
ScriptTask.__name__ = ScriptTask.__qualname__ = "Task"


async def _reporting(loop: ScriptEventLoop, coro: Any) -> Any:
    try:
        return await coro
    except SandboxStop as stop:  # gather(return_exceptions=True) would hand it back as a value
        loop.record_stop(stop)
        raise


def run_coroutine(
    coro: Coroutine[Any, Any, Any], tripped: Callable[[], str | None], call_tools: BatchCaller
) -> Any:
    """Run ``coro`` to its end on a fresh loop, then cancel what it left running."""
    loop = ScriptEventLoop(tripped, call_tools)
    try:
        main = loop.create_task(coro)
        try:
            value = loop.run_until_complete(main)
        except BaseException:
            if loop.stop_error is not None:
                raise loop.stop_error from None
            raise
        if loop.stop_error is not None:
            raise loop.stop_error
        _cancel_leftovers(loop)
        return value
    finally:
        loop.pending_calls = []
        loop.close()


def _cancel_leftovers(loop: ScriptEventLoop) -> None:
    """Tasks the script started and never awaited are cancelled, as ``asyncio.run`` does."""
    leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in leftovers:
        task.cancel()
    if leftovers:
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    if loop.stop_error is not None:
        raise loop.stop_error


def running_script_loop() -> ScriptEventLoop | None:
    """The loop of the run in this thread, when the script is inside async code."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if isinstance(loop, ScriptEventLoop) else None


__all__ = [
    "NOT_AWAITABLE",
    "BatchCaller",
    "ScriptEventLoop",
    "run_coroutine",
    "running_script_loop",
    "tool_failure",
]
