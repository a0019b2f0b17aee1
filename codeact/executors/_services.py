"""Background work of an object used as ``async with``, whichever task enters and leaves.

An executor keeps its pool warm and reaps idle sessions in the background while it is
entered. Holding a task group from ``__aenter__`` to ``__aexit__`` ties both to one task,
and pytest fixtures (and any code that enters and leaves through separate
``run_until_complete`` calls) leave from another: the task group's cancel scope refuses.
On asyncio the background work lives in a task of its own instead, stopped from whatever
task (or even event loop) leaves; other backends keep the task group.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.abc


class Services:
    """Tasks that run while their owner is entered; ``start_soon`` adds one."""

    def __init__(self) -> None:
        self._group: anyio.abc.TaskGroup | None = None
        self._holder: asyncio.Task[None] | None = None  # asyncio: the task holding the group
        self._entered = False  # other backends: the group was entered by __aenter__

    @property
    def running(self) -> bool:
        return self._group is not None

    async def start(self) -> None:
        if self._group is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another event loop library: held from enter to exit
            self._group = await anyio.create_task_group().__aenter__()
            self._entered = True
            return
        ready = anyio.Event()

        async def hold() -> None:
            async with anyio.create_task_group() as group:
                self._group = group
                ready.set()
                await anyio.sleep_forever()

        self._holder = loop.create_task(hold(), name="codeact-services")
        await ready.wait()

    def start_soon(self, function: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run ``function(*args)`` in the background; False when not running."""
        group = self._group
        if group is None:
            return False
        group.start_soon(function, *args)
        return True

    async def stop(self) -> None:
        """Cancel every background task and wait for them, from any task; from another
        event loop, cancel them there (that loop runs their cleanup)."""
        group, holder = self._group, self._holder
        self._group, self._holder = None, None
        if group is not None and self._entered:
            self._entered = False
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
            return
        if holder is None or holder.done():
            return
        holder_loop = holder.get_loop()
        if holder_loop is not asyncio.get_running_loop():
            with contextlib.suppress(RuntimeError):  # that loop is closed: nothing runs there
                holder_loop.call_soon_threadsafe(holder.cancel)
            return
        holder.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({holder})  # waits, and never raises the holder's cancellation


__all__ = ["Services"]
