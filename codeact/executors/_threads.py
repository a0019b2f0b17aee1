"""A session's own thread: blocking work handed over with one wake-up each way.

A script run, or the serving of a worker's run, blocks a thread for its whole length.
Handing each one to anyio's worker pool costs about twice a plain handoff (its capacity
limiter, cancel-scope checkpoints and thread bookkeeping), and a trivial run pays that
on every call. A session keeps one thread instead: a job is put on its queue, and its
result is set on the loop's future with ``call_soon_threadsafe``.

Cancelling the waiting task abandons the job, as ``abandon_on_cancel=True`` does: the
function runs on, its result is dropped. The thread ends after ``idle_seconds`` without
work (and a later job starts a new one), or at ``close``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")
IDLE_SECONDS = 30.0
_STOP = object()


class SessionThread:
    """Runs one session's blocking jobs, one at a time, in a thread of its own."""

    def __init__(
        self, name: str, *, idle_seconds: float = IDLE_SECONDS, stack_bytes: int = 0
    ) -> None:
        self.name = name
        self.idle_seconds = idle_seconds
        self.stack_bytes = stack_bytes  # 0: the platform's default
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    async def run(self, function: Callable[[], T]) -> T:
        """``function()`` in this session's thread, in a copy of the caller's context."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another event loop library: anyio's pool does the job
            return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            self._jobs.put((function, context, loop, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                _start_with_stack(self._thread, self.stack_bytes)
        return await future

    def close(self) -> None:
        """Let the thread end once the job it may be running returns."""
        with self._lock:
            self._closed = True
            if self._thread is not None:
                self._jobs.put(_STOP)

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:  # nothing can be queued while we decide to go
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            if job is _STOP:
                return
            function, context, loop, future = job
            try:
                outcome: tuple[bool, Any] = (True, context.run(function))
            except BaseException as error:  # handed to the waiting task, whatever it is
                outcome = (False, error)
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, future, outcome)
            # An idle thread holds nothing of the last job: its context copy can reach the
            # caller's agent and runtime, which would then outlive the caller's last reference.
            del job, function, context, loop, future, outcome


_STACK_SIZE_LOCK = threading.Lock()


def _start_with_stack(thread: threading.Thread, stack_bytes: int) -> None:
    """Start ``thread`` with a C stack of ``stack_bytes`` (the setting is process-wide:
    set, start, restore, under a lock of this module's)."""
    if not stack_bytes:
        thread.start()
        return
    with _STACK_SIZE_LOCK:
        previous = threading.stack_size(stack_bytes)
        try:
            thread.start()
        finally:
            threading.stack_size(previous)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # the waiting task was cancelled: the job was abandoned
        return
    succeeded, value = outcome
    if succeeded:
        future.set_result(value)
    else:
        future.set_exception(value)


__all__ = ["SessionThread"]
