"""``asyncio`` for scripts: the forms models write, on the run's own event loop only.

A script's coroutines run on the loop its run made (``codeact.sandbox._async``),
never on a host's: every member that schedules work checks that the loop running
in this thread is that loop. Absent on purpose: the loop itself
(``get_event_loop``, ``get_running_loop``, ``new_event_loop``), ``all_tasks``,
threads and processes (``to_thread``, ``run_in_executor``, subprocesses), streams
and sockets. Tasks read only their public, non-relaying methods: no ``get_coro``
(a coroutine's frame), ``get_loop`` or ``get_stack``.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Callable
from typing import Any

from ..sandbox._async import NOT_AWAITABLE, ScriptTask, running_script_loop
from ..sandbox._guards import Guards
from ..sandbox._ownership import register_base, register_readable
from ._facade import Facade, pick


def _on_script_loop(name: str, *handed: Any) -> None:
    if running_script_loop() is None:  # a host's loop, or none: nothing is scheduled on it
        for value in handed:  # closed here, not warned about wherever they are collected
            if inspect.iscoroutine(value):
                value.close()
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
    up front, so no coroutine handed along with it is left half-started."""
    _on_script_loop("gather", *awaitables)
    for value in awaitables:
        if not _is_awaitable(value):
            raise TypeError(NOT_AWAITABLE)
    return asyncio.gather(*awaitables, return_exceptions=return_exceptions)


class TaskGroup(asyncio.TaskGroup):
    """``asyncio.TaskGroup`` on the script's loop only."""

    async def __aenter__(self) -> TaskGroup:
        _on_script_loop("TaskGroup")
        await super().__aenter__()
        return self


def asyncio_members(guards: Guards) -> dict[str, Any]:
    """The members of a session's ``asyncio`` facade."""

    def run(main: Any, *, debug: bool | None = None) -> Any:
        if not inspect.iscoroutine(main):
            raise ValueError(f"a coroutine was expected, got {main!r}")
        return guards.run_coroutine(main)

    members = pick(
        asyncio,
        "sleep Semaphore BoundedSemaphore Lock Event Condition Queue PriorityQueue LifoQueue "
        "QueueEmpty QueueFull TimeoutError CancelledError InvalidStateError FIRST_COMPLETED "
        "FIRST_EXCEPTION ALL_COMPLETED iscoroutinefunction iscoroutine timeout",
    )
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
    members.update(run=run, gather=gather, TaskGroup=TaskGroup)
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

register_readable(asyncio.Task, ScriptTask, names=_TASK_NAMES)
register_readable(asyncio.Future, names=_TASK_NAMES[:7])
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


__all__ = ["TaskGroup", "asyncio_facade", "gather"]
