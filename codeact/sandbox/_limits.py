"""Limits that hold in-process, enforced at almost no cost per operation.

Time, CPU and memory are watched from outside the script: one watchdog thread
checks every running script every few milliseconds and, when one is past a limit,
raises an exception inside that script's thread (``PyThreadState_SetAsyncExc``).
The interpreter delivers it at the next bytecode boundary, so loops pay nothing
per iteration. C-level loops that never return to bytecode are made to: the
facades wrap infinite and combinatorial iterators in Python generators.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from ._errors import LimitInterrupt

ABORTED = "aborted"  # the stop a run is asked for, as a tripped limit names it
# A brief run where its caller is outlasted its moment: stopped, to run again in its thread.
HANDED_BACK = "handed back"
POLL_SECONDS = 0.005
REINJECT_SECONDS = 0.05
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """What one run may use; each breach ends it with CODE_RESOURCE_LIMIT."""

    wall_seconds: float = 10.0
    cpu_seconds: float = 10.0
    memory_bytes: int = 512 * 1024 * 1024
    # Printed output the model reads: beyond it, the start and the end are kept, the
    # middle is cut (and counted); only printing past max_printed_chars ends a run.
    max_output_chars: int = 20_000
    max_printed_chars: int = 2_000_000
    max_tool_calls: int = 1_000
    max_source_chars: int = 100_000
    max_sequence_items: int = 10_000_000
    max_int_bits: int = 4_000_000
    # a width or precision pads or prints as many characters: bounded as a sequence is
    max_format_width: int = 10_000_000
    max_eager_range: int = 10_000_000
    # Time one tool call from a script may wait on the host (an approval, a slow tool);
    # it does not count against wall_seconds, which is the script's own time.
    tool_wait_seconds: float = 60.0
    # Tool calls async code runs at once (asyncio.gather); more wait for a free slot.
    max_concurrent_tool_calls: int = 16


class StopFlag:
    """A stop asked for from another thread, read by the watchdog: a bool under the GIL.
    ``threading.Event``'s condition, lock and waiters are for those who wait on it, and
    nobody does; making one was a tenth of a brief run."""

    __slots__ = ("_asked",)

    def __init__(self) -> None:
        self._asked = False

    def set(self) -> None:
        self._asked = True

    def is_set(self) -> bool:
        return self._asked


class RunMonitor:
    """One running script as the watchdog sees it."""

    def __init__(
        self,
        limits: Limits,
        memory_baseline: int | None = None,
        stop: StopFlag | threading.Event | None = None,
        moment: float | None = None,
    ) -> None:
        self.limits = limits
        self.thread_id = threading.get_ident()
        self.started = time.monotonic()
        self.deadline = self.started + limits.wall_seconds
        # a brief run where its caller is: past this, it is stopped and handed back
        self.hand_back_at = math.inf if moment is None else self.started + moment
        self.cpu_clock = _cpu_clock(self.thread_id)
        self.cpu_start = _read_clock(self.cpu_clock)
        # Memory is counted from the baseline when there is one (a worker: the session's
        # whole memory, across runs), else from the run's start (process-wide, in-process).
        # A brief run's start is read at the watchdog's first look, in its thread (a read
        # of the process's memory is a twentieth of a trivial run): such a run ends within
        # its moment, or is handed back and run again, counted from its own start.
        self.memory_start: int | None = (
            memory_baseline
            if memory_baseline is not None
            else (None if moment is not None else resident_bytes())
        )
        self.tripped: str | None = None
        self.tripped_at = 0.0
        # an abort, delivered by the watchdog; set before the run began, it stops it at once
        self.stop = stop if stop is not None else StopFlag()
        self.finished = False
        self.paused_since: float | None = None
        self.paused_cpu = 0.0
        self.waited = 0.0
        self._gate = threading.Lock()

    def pause(self) -> None:
        """The script waits on the host (a tool call): its clocks stop, and no interrupt is
        delivered until it resumes (host code, perhaps the tool itself in this thread,
        runs meanwhile: an exception raised into it could leave its state half-changed)."""
        with self._gate:
            self.paused_cpu = _read_clock(self.cpu_clock)
            self.paused_since = time.monotonic()

    def resume(self) -> None:
        with self._gate:
            since = self.paused_since
            if since is not None:
                waited = time.monotonic() - since
                self.waited += waited
                self.deadline += waited
                self.cpu_start += _read_clock(self.cpu_clock) - self.paused_cpu
                self.paused_since = None
            tripped = self.tripped
        if tripped is not None:  # tripped while paused: raised here, in our own code (an
            # interrupt would land at the next bytecode, which may be a finalizer's)
            self.tripped_at = time.monotonic()
            raise LimitInterrupt(tripped, f"the script exceeded its {tripped} limit")

    def request_stop(self) -> None:
        """Stop the run at the watchdog's next look (within a poll). Only the watchdog
        interrupts a run: raised from anywhere else (a signal handler, another thread) an
        interrupt could land before the run is watched or after it ended, in the host's
        own code, and kill the worker or the host's thread with it."""
        self.stop.set()

    def check(self, now: float) -> str | None:
        """The name of the first limit this run is past, if any (none while it is paused),
        or the stop asked for."""
        limits = self.limits
        if self.stop.is_set():  # even while paused: a trip then is only noted, and resume
            return ABORTED  # raises it in the run's own code
        if self.paused_since is not None:
            return None
        if now >= self.hand_back_at:
            return HANDED_BACK
        if now >= self.deadline:
            return f"wall-clock time ({limits.wall_seconds:g} s)"
        used = _read_clock(self.cpu_clock) - self.cpu_start
        if used >= limits.cpu_seconds:
            return f"CPU time ({limits.cpu_seconds:g} s)"
        start = self.memory_start
        if start is None:  # a brief run's first look: counted from here
            self.memory_start = start = resident_bytes()
        if resident_bytes() - start >= limits.memory_bytes:
            return f"memory ({limits.memory_bytes // (1024 * 1024)} MiB)"
        return None

    def trip(self, limit: str) -> None:
        """Record the limit and interrupt the script's thread (on resume, if it is paused)."""
        with self._gate:
            if self.tripped is None:
                self.tripped = limit
            self.tripped_at = time.monotonic()
            if self.paused_since is None:
                interrupt(self.thread_id)


class Watchdog:
    """A single daemon thread that watches every running script.

    The script's thread never takes a lock here: an exception delivered while it
    held one would leave the lock held. Instead ``unwatch`` marks the run finished,
    waits out an inspection in progress, and clears any interrupt still pending.
    """

    def __init__(self) -> None:
        self._runs: set[RunMonitor] = set()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._inspecting: RunMonitor | None = None
        self._idle = False  # waiting for a run to watch, not polling

    def watch(self, run: RunMonitor) -> None:
        with self._wake:
            self._runs.add(run)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="codeact-watchdog", daemon=True
                )
                self._thread.start()
            if self._idle:  # polling, it sees the run within a poll: no thread is woken
                self._wake.notify()

    def unwatch(self, run: RunMonitor) -> None:
        run.finished = True
        while True:
            try:
                while self._inspecting is run:
                    time.sleep(0)
                if run.tripped is not None:
                    drain_interrupt(run.thread_id)
                return
            except LimitInterrupt:  # delivered late; no lock is held, so try again
                continue

    def _loop(self) -> None:
        while True:
            with self._wake:
                self._runs = {run for run in self._runs if not run.finished}
                while not self._runs:
                    self._idle = True
                    self._wake.wait()
                self._idle = False
                runs = tuple(self._runs)
            now = time.monotonic()
            for run in runs:
                self._inspecting = run
                if not run.finished:
                    self._inspect(run, now)
                self._inspecting = None
            time.sleep(POLL_SECONDS)

    def _inspect(self, run: RunMonitor, now: float) -> None:
        if run.tripped is not None:
            if run.paused_since is None and now - run.tripped_at >= REINJECT_SECONDS:
                run.trip(run.tripped)  # the script swallowed it
            return
        limit = run.check(now)
        if limit is not None:
            run.trip(limit)


WATCHDOG = Watchdog()


def interrupt(thread_id: int, signal: type[BaseException] = LimitInterrupt) -> None:
    """Raise ``signal`` in ``thread_id`` at its next bytecode boundary."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(signal))


class _Drained(BaseException):
    """Raised at ourselves to consume an interrupt that may still be pending."""


def quiet_late_interrupts() -> None:
    """Keep the watchdog's own interrupts out of the host's unraisable hook.

    An interrupt is delivered at the next bytecode, and in a host (the in-process
    executor) that may be a library finalizer the collector runs in the script's thread
    (a regex module's ``__del__``). CPython drops an exception raised there and reports
    it to ``sys.unraisablehook``; the watchdog delivers it again, so the report is not a
    fault anyone can act on. Every other report reaches the hook that was there before.
    """
    current = sys.unraisablehook
    if getattr(current, "_codeact_quiet", False):
        return

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, LimitInterrupt | _Drained):
            return  # ours, landed in a finalizer: delivered again by the watchdog
        current(unraisable)

    hook._codeact_quiet = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def drain_interrupt(thread_id: int) -> None:
    """Consume any interrupt still pending for the calling thread.

    Clearing one with ``PyThreadState_SetAsyncExc(id, NULL)`` would leave
    CPython 3.11's eval-breaker flag set for good, slowing every later bytecode;
    delivering one clears it. So replace whatever is pending with ``_Drained``
    and let the loop below receive it.
    """
    try:
        interrupt(thread_id, _Drained)
        for _ in range(10_000):  # each backward jump checks for pending exceptions
            pass
    except (_Drained, LimitInterrupt):
        return


class _ResidentMemory:
    """Reads this process's resident size from /proc without letting go of the GIL.

    Ordinary file reads release the GIL; a script thread doing one huge operation
    after another would then take it back each time and starve the watchdog. A
    ``pread`` through ``ctypes.PyDLL`` keeps the GIL for the few microseconds it takes.

    The file is opened per process: ``/proc/self`` names the process that opened it, so a
    worker forked from a template would otherwise read the template's memory, and no
    memory limit would hold in it.
    """

    def __init__(self) -> None:
        self._buffer = ctypes.create_string_buffer(128)
        self._fd = -1
        self.reopen()

    def reopen(self) -> None:
        """Read this process's own file (called in every child right after a fork)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        try:
            self._fd = os.open("/proc/self/statm", os.O_RDONLY)
            self._pread = ctypes.PyDLL(None).pread
            self._pread.restype = ctypes.c_ssize_t
            self._pread.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_long)
        except (OSError, AttributeError):
            self._fd = -1

    def __call__(self) -> int:
        if self._fd < 0:
            return 0
        count = self._pread(self._fd, self._buffer, 127, 0)
        if count <= 0:
            return 0
        fields = self._buffer.raw[:count].split()
        return int(fields[1]) * _PAGE_SIZE if len(fields) > 1 else 0


def release_free_memory() -> None:
    """Collect, then hand the allocator's free pages back to the system (glibc keeps
    them otherwise, and a host's resident memory stays at its high-water mark)."""
    gc.collect()
    with contextlib.suppress(AttributeError, OSError):  # not glibc: freed stays with the allocator
        ctypes.CDLL(None).malloc_trim(0)


resident_bytes = _ResidentMemory()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=resident_bytes.reopen)


def _cpu_clock(thread_id: int) -> int | None:
    try:
        return time.pthread_getcpuclockid(thread_id)
    except (AttributeError, OSError):
        return None


def _read_clock(clock: int | None) -> float:
    if clock is None:
        return time.process_time()
    try:
        return time.clock_gettime(clock)
    except OSError:
        return 0.0


__all__ = [
    "ABORTED",
    "HANDED_BACK",
    "WATCHDOG",
    "Limits",
    "RunMonitor",
    "StopFlag",
    "Watchdog",
    "interrupt",
    "release_free_memory",
    "resident_bytes",
]
