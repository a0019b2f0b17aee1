"""``asyncio`` for scripts: the forms models write, on the run's own event loop only.

A script's coroutines run on the loop its run made (``codeact.sandbox._async``),
never on a host's: every member that schedules work checks that the loop running
in this thread is that loop. ``get_event_loop``, ``get_running_loop`` and
``new_event_loop`` give an ``EventLoop`` written for scripts (``run_until_complete``
is ``asyncio.run``; scheduling goes to the running loop of the run), never the real
loop. Absent on purpose: ``all_tasks``, threads and processes (``to_thread``,
subprocesses; ``run_in_executor`` calls its function in place), streams and sockets.
Tasks read only their public, non-relaying methods: no ``get_coro`` (a coroutine's
frame), ``get_loop`` or ``get_stack``.
"""

from __future__ import annotations

import asyncio
import collections.abc
import functools
import inspect
import time
import types
from collections.abc import Callable
from typing import Any

from ..sandbox._async import NOT_AWAITABLE, ScriptEventLoop, ScriptTask, running_script_loop
from ..sandbox._guards import Guards, OpaqueType
from ..sandbox._ownership import SHOWN, register_base, register_readable
from ._facade import Facade, checked_class, pick, plain_functions
from ._recorded import clock

# A loop's clock is the monotonic one, read through a recorded run's tape.
_MONOTONIC = clock("monotonic", time.monotonic)


def _on_script_loop(name: str, *handed: Any) -> None:
    if running_script_loop() is None:  # a host's loop, or none: nothing is scheduled on it
        _close_coroutines(handed)
        raise RuntimeError(f"asyncio.{name}() needs the script's running event loop")


def _scheduling(function: Callable[..., Any]) -> Callable[..., Any]:
    name = function.__name__

    def scheduled(*args: Any, **kwargs: Any) -> Any:
        _on_script_loop(name, *args)
        return function(*args, **kwargs)

    scheduled.__name__ = name
    return scheduled


def _is_awaitable(value: Any) -> bool:
    return inspect.isawaitable(value)


def gather(*awaitables: Any, return_exceptions: bool = False) -> Any:
    """``asyncio.gather``, checked before anything is scheduled: a plain value is refused
    up front, so no coroutine handed along with it is left half-started. Made before a loop
    runs (``loop.run_until_complete(asyncio.gather(...))``), it gathers once one does."""
    for value in awaitables:
        if not _is_awaitable(value):
            _close_coroutines(awaitables)
            raise TypeError(NOT_AWAITABLE)
    if running_script_loop() is None:
        return _gathered_later(awaitables, return_exceptions)
    return asyncio.gather(*awaitables, return_exceptions=return_exceptions)


async def _gathered_later(awaitables: tuple[Any, ...], return_exceptions: bool) -> Any:
    # driven by hand (send) outside a run's loop, asyncio's gather would ask the thread's
    # policy for a loop: a host's, whose tasks would run the script's coroutines unwatched
    _on_script_loop("gather", *awaitables)
    return await asyncio.gather(*awaitables, return_exceptions=return_exceptions)


def _close_coroutines(values: Any) -> None:
    for value in values:  # closed here, not warned about wherever they are collected
        if inspect.iscoroutine(value):
            value.close()


class EventLoop:
    """An event loop as scripts hold one. It runs a coroutine as ``asyncio.run`` does (on
    a loop of the run's own, watched) and schedules on its running loop only: the real loop
    (its selector, executor and handlers) is never reachable through it."""

    __slots__ = ("__weakref__", "_closed", "_run")

    def __init__(self, run: Callable[[Any], Any]) -> None:
        self._run = run  # the session's asyncio.run
        self._closed = False

    def run_until_complete(self, future: Any) -> Any:
        if running_script_loop() is not None:
            _close_coroutines((future,))
            raise RuntimeError("This event loop is already running")
        if self._closed:
            _close_coroutines((future,))
            raise RuntimeError("Event loop is closed")
        if not inspect.iscoroutine(future):
            raise TypeError(NOT_AWAITABLE)
        return self._run(_running_as(self, future))

    def is_running(self) -> bool:
        loop = running_script_loop()
        return loop is not None and loop.script_view is self

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        self._closed = True

    def time(self) -> float:
        return float(_MONOTONIC())

    def create_future(self) -> asyncio.Future[Any]:
        return self._running("create_future").create_future()

    def create_task(self, coro: Any, *, name: str | None = None) -> asyncio.Task[Any]:
        return self._running("create_task", coro).create_task(coro, name=name)

    def call_soon(self, callback: Any, *args: Any) -> Handle:
        return Handle(self._running("call_soon").call_soon(callback, *args))

    def call_later(self, delay: float, callback: Any, *args: Any) -> TimerHandle:
        return TimerHandle(self._running("call_later").call_later(delay, callback, *args))

    def call_at(self, when: float, callback: Any, *args: Any) -> TimerHandle:
        return TimerHandle(self._running("call_at").call_at(when, callback, *args))

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> asyncio.Future[Any]:
        """Scripts have no threads: ``func`` is called in place, and the future holds what
        it returned or raised."""
        future = self._running("run_in_executor").create_future()
        if executor is not None:
            raise TypeError("scripts have no executors: pass None to run_in_executor")
        try:
            future.set_result(func(*args))
        except Exception as error:  # the script's, raised where it awaits the future
            future.set_exception(error)
        return future

    def _running(self, name: str, *handed: Any) -> ScriptEventLoop:
        loop = running_script_loop()
        if loop is None or loop.script_view is not self:
            _close_coroutines(handed)
            raise RuntimeError(f"loop.{name}() needs this loop to be running")
        return loop

    def __repr__(self) -> str:
        running, closed = self.is_running(), self._closed
        return f"<_UnixSelectorEventLoop running={running} closed={closed} debug=False>"


class Handle:
    """A scheduled callback as scripts hold it: ``cancel`` and ``cancelled``. The loop's own
    handle stays here (its repr would name the file of a host function it calls)."""

    __slots__ = ("_handle",)

    def __init__(self, handle: asyncio.Handle) -> None:
        self._handle = handle

    def cancel(self) -> None:
        self._handle.cancel()

    def cancelled(self) -> bool:
        return self._handle.cancelled()

    def __repr__(self) -> str:
        return "<Handle cancelled>" if self.cancelled() else "<Handle>"


class TimerHandle(Handle):
    """A callback scheduled for a time, which ``when`` gives."""

    __slots__ = ()

    def when(self) -> float:
        handle = self._handle
        assert isinstance(handle, asyncio.TimerHandle)  # only ever made from one
        return handle.when()

    def __repr__(self) -> str:
        state = " cancelled" if self.cancelled() else ""
        return f"<TimerHandle{state} when={self.when()}>"


# What type() shows for them: asyncio's own classes' names.
EventLoop.__module__, EventLoop.__qualname__ = "asyncio.unix_events", "_UnixSelectorEventLoop"
EventLoop.__name__ = "_UnixSelectorEventLoop"
Handle.__module__ = TimerHandle.__module__ = "asyncio.events"


async def _running_as(view: EventLoop, coro: Any) -> Any:
    """``coro`` on a fresh loop of the run's, which ``view`` stands for while it runs."""
    loop = running_script_loop()
    assert loop is not None  # awaited by the run's own loop, nowhere else
    loop.script_view = view
    return await coro


def _loop_members(run: Callable[[Any], Any]) -> dict[str, Any]:
    """``get_event_loop``, ``get_running_loop``, ``new_event_loop`` and ``set_event_loop``
    for one session: the loop a script sets is kept for the session, as a thread keeps it."""
    current: list[EventLoop | None] = [EventLoop(run)]

    def running() -> EventLoop | None:
        loop = running_script_loop()
        if loop is None:
            return None
        if loop.script_view is None:  # asyncio.run's loop, asked for the first time
            loop.script_view = EventLoop(run)
        view: EventLoop = loop.script_view
        return view

    def get_running_loop() -> EventLoop:
        view = running()
        if view is None:
            raise RuntimeError("no running event loop")
        return view

    def get_event_loop() -> EventLoop:
        view = running() or current[0]
        if view is None:
            raise RuntimeError("There is no current event loop in thread 'MainThread'.")
        return view

    def new_event_loop() -> EventLoop:
        return EventLoop(run)

    def set_event_loop(loop: Any) -> None:
        if loop is not None and type(loop) is not EventLoop:
            kind = type(loop).__name__
            raise TypeError(f"loop must be an instance of AbstractEventLoop or None, not '{kind}'")
        current[0] = loop

    return {
        "get_running_loop": get_running_loop,
        "get_event_loop": get_event_loop,
        "new_event_loop": new_event_loop,
        "set_event_loop": set_event_loop,
    }


class TaskGroup(asyncio.TaskGroup):
    """``asyncio.TaskGroup`` on the script's loop only."""

    async def __aenter__(self) -> TaskGroup:
        _on_script_loop("TaskGroup")
        await super().__aenter__()
        return self


SLEEP_AND_TIMEOUT = plain_functions(asyncio, "sleep timeout", passed=("result",))
SEMAPHORE = checked_class(asyncio.Semaphore)
BOUNDED_SEMAPHORE = checked_class(asyncio.BoundedSemaphore)


def iscoroutine(obj: Any) -> bool:
    """``asyncio.iscoroutine`` without its host cache of types (which would keep a script's
    class alive past its session): the ABC's own check, whose caches hold types weakly."""
    return isinstance(obj, collections.abc.Coroutine)


def iscoroutinefunction(func: Any) -> bool:
    """``asyncio.iscoroutinefunction`` reading only functions, methods and partials: the
    host's reads other attributes of any object (a script's ``__getattr__`` would run)."""
    while isinstance(func, types.MethodType | functools.partial):
        func = func.__func__ if isinstance(func, types.MethodType) else func.func
    return isinstance(func, types.FunctionType) and bool(
        func.__code__.co_flags & inspect.CO_COROUTINE
    )


def asyncio_members(guards: Guards) -> dict[str, Any]:
    """The members of a session's ``asyncio`` facade."""

    def run(main: Any, *, debug: bool | None = None) -> Any:
        if not inspect.iscoroutine(main):
            raise ValueError(f"a coroutine was expected, got {main!r}")
        return guards.run_coroutine(main)

    members = pick(
        asyncio,
        "Lock Event Condition Queue PriorityQueue LifoQueue "
        "QueueEmpty QueueFull TimeoutError CancelledError InvalidStateError FIRST_COMPLETED "
        "FIRST_EXCEPTION ALL_COMPLETED",
    )
    members.update(SLEEP_AND_TIMEOUT)
    members.update(Semaphore=SEMAPHORE, BoundedSemaphore=BOUNDED_SEMAPHORE)  # compare their value
    members.update(iscoroutine=iscoroutine, iscoroutinefunction=iscoroutinefunction)
    members.update(
        {
            name: _scheduling(getattr(asyncio, name))
            for name in (
                "create_task",
                "ensure_future",
                "wait_for",
                "wait",
                "as_completed",
                "shield",
                "current_task",
            )
        }
    )
    members.update(run=run, gather=gather, TaskGroup=TaskGroup, Task=TASK_TYPE, Future=FUTURE_TYPE)
    members.update(_loop_members(run))
    return members


_TASK_NAMES = (
    "done",
    "result",
    "exception",
    "cancel",
    "cancelled",
    "add_done_callback",
    "remove_done_callback",
    "get_name",
    "set_name",
    "cancelling",
)

# What asyncio.Task and asyncio.Future are to scripts, and what type() shows for one:
# isinstance answers and annotations, nothing to build with (tasks come from create_task,
# futures from the loop's create_future)
TASK_TYPE = OpaqueType(asyncio.Task, "Task", "_asyncio")
FUTURE_TYPE = OpaqueType(asyncio.Future, "Future", "_asyncio")
SHOWN[ScriptTask] = SHOWN[asyncio.Task] = TASK_TYPE
SHOWN[asyncio.Future] = FUTURE_TYPE

register_readable(asyncio.Task, ScriptTask, names=_TASK_NAMES)
# a future the script made (loop.create_future()) is the script's to settle
register_readable(asyncio.Future, names=(*_TASK_NAMES[:7], "set_result", "set_exception"))
register_readable(
    EventLoop,
    names=(
        "run_until_complete",
        "is_running",
        "is_closed",
        "close",
        "time",
        "create_future",
        "create_task",
        "call_soon",
        "call_later",
        "call_at",
        "run_in_executor",
    ),
)
register_readable(Handle, TimerHandle, names=("cancel", "cancelled", "when"))
register_readable(TaskGroup, names=("create_task",))
register_readable(
    asyncio.Semaphore,
    asyncio.BoundedSemaphore,
    asyncio.Lock,
    names=("acquire", "release", "locked"),
)
register_readable(asyncio.Event, names=("set", "clear", "is_set", "wait"))
register_readable(
    asyncio.Condition,
    names=("acquire", "release", "locked", "wait", "wait_for", "notify", "notify_all"),
)
register_readable(
    asyncio.Queue,
    asyncio.PriorityQueue,
    asyncio.LifoQueue,
    names=(
        "put",
        "get",
        "put_nowait",
        "get_nowait",
        "qsize",
        "empty",
        "full",
        "task_done",
        "join",
        "maxsize",
    ),
)
register_readable(asyncio.Timeout, names=("reschedule", "when", "expired"))
# A script's own coroutines and async generators: driven, never inspected (no frames).
register_readable(
    types.CoroutineType, names=("send", "throw", "close", "cr_running", "cr_suspended")
)
register_readable(types.AsyncGeneratorType, names=("asend", "athrow", "aclose", "ag_running"))
register_base(asyncio.QueueEmpty, asyncio.QueueFull, asyncio.InvalidStateError)


def asyncio_facade(guards: Guards) -> Facade:
    return Facade("asyncio", asyncio_members(guards))


__all__ = ["EventLoop", "Handle", "TaskGroup", "TimerHandle", "asyncio_facade", "gather"]
