"""A session's own thread: blocking work handed over with one wake-up each way.

A script run, or the serving of a worker's run, blocks a thread for its whole length.
Handing each one to anyio's worker pool costs about twice a plain handoff (its capacity
limiter, cancel-scope checkpoints and thread bookkeeping), and a trivial run pays that
on every call. A session keeps one thread instead: a job is put on its queue, and its
result is set on the loop's future with ``call_soon_threadsafe``.

A short job is over before the loop could have gone round once, and that round is most
of its cost (the loop's own wake-up through its self-pipe, a callback, a task step):
a caller served alone may ``linger``, blocked on the job for a moment (``LINGER_SECONDS``,
the GIL let go), and take a result that is ready without giving the loop back. A job
that needs the loop meanwhile (a tool call it hands to the loop) releases its caller
first; one that forgets only costs the moment. A job that outlasts the moment turns
lingering off until a wait proves short again.

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
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from ._placement import Placement

T = TypeVar("T")
IDLE_SECONDS = 30.0
# Longer than a short script's whole run in its thread; the most a caller blocks its loop.
LINGER_SECONDS = 300e-6
_STOP = object()


class _Job:
    """One job, and how its caller waits: blocked on ``ready`` for a moment, then on
    ``future``, which the loop settles with the outcome."""

    __slots__ = ("context", "function", "future", "guard", "outcome", "ready", "released")

    def __init__(self, function: Callable[[], Any], context: contextvars.Context) -> None:
        self.function = function
        self.context = context
        self.outcome: tuple[bool, Any] | None = None
        self.future: asyncio.Future[tuple[bool, Any]] | None = None  # once the caller awaits
        self.guard = threading.Lock()  # outcome against future: one side sees both
        self.ready = threading.Lock()  # released when the job ends or needs the loop
        self.ready.acquire()
        self.released = False  # touched only in the session's thread

    def release_caller(self) -> None:
        """Let a lingering caller go back to its loop (called in the session's thread)."""
        if not self.released:
            self.released = True
            self.ready.release()

    def finish(self, outcome: tuple[bool, Any]) -> None:
        with self.guard:
            self.outcome = outcome
            future = self.future
        if future is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                future.get_loop().call_soon_threadsafe(_settle, future, outcome)
        self.release_caller()

    def outcome_or_future(
        self, loop: asyncio.AbstractEventLoop
    ) -> tuple[bool, Any] | asyncio.Future[tuple[bool, Any]]:
        """The outcome if the job has one, else the future that will carry it."""
        with self.guard:
            if self.outcome is not None:
                return self.outcome
            self.future = loop.create_future()
            return self.future


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
        self.linger_seconds = LINGER_SECONDS
        self._lingering = True  # while waits prove shorter than linger_seconds
        self._running: _Job | None = None  # the job in hand (read in this session's thread)
        self._placement = Placement()  # asleep on a lingering caller's processor

    async def run(self, function: Callable[[], T], *, linger: bool = False) -> T:
        """``function()`` in this session's thread, in a copy of the caller's context.
        ``linger``: the caller may block its loop for a moment (it is served alone)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another event loop library: anyio's pool does the job
            return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)
        job = _Job(function, contextvars.copy_context())
        asked = time.perf_counter()
        lingered = linger and self._lingering  # blocked, the GIL let go: the job runs
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                _start_with_stack(self._thread, self.stack_bytes)
            # a lingering handoff stays on one processor (see _placement)
            held = self._placement.hold_together(self._thread.native_id) if lingered else None
            self._jobs.put(job)
        if lingered:
            try:
                if not job.ready.acquire(timeout=self.linger_seconds) and not job.outcome:
                    self._lingering = False  # outlasted the moment: the loop waits from now on
            finally:
                self._placement.let_go(held)  # before anything else runs in this thread
        outcome = job.outcome_or_future(loop)
        if isinstance(outcome, asyncio.Future):
            outcome = await outcome  # cancelled: the job is abandoned, it runs on
            self._lingering = time.perf_counter() - asked <= self.linger_seconds
        succeeded, value = outcome
        if succeeded:
            return value  # type: ignore[no-any-return]
        raise value

    @property
    def lingering(self) -> bool:
        """Does a caller that may linger do so now (its waits have proved short)?"""
        return self._lingering

    def release_caller(self) -> None:
        """The running job needs the loop: a caller lingering on it goes back to the loop
        (call it in this session's thread, before handing work to the loop)."""
        job = self._running
        if job is not None:
            job.release_caller()

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
            if self._placement.held:  # the job runs, and starts threads, unheld
                self._placement.session_lets_go()
            self._running = job
            try:
                outcome: tuple[bool, Any] = (True, job.context.run(job.function))
            except BaseException as error:  # handed to the waiting task, whatever it is
                outcome = (False, error)
            self._running = None
            job.finish(outcome)
            # An idle thread holds nothing of the last job: its context copy can reach the
            # caller's agent and runtime, which would then outlive the caller's last reference.
            del job, outcome


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


def _settle(future: asyncio.Future[tuple[bool, Any]], outcome: tuple[bool, Any]) -> None:
    if not future.done():  # done: the waiting task was cancelled, the job abandoned
        future.set_result(outcome)


__all__ = ["SessionThread"]
