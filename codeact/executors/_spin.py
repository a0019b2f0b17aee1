"""Waiting on a pipe for an answer that is usually already on its way: poll, then sleep.

A reader asleep in ``read`` or ``select`` is woken by the kernel, and on a virtual
machine that wake-up is an interrupt between processors: a round trip between two
Python processes over two pipes costs about 50 us on a 2-core VM, and 2.5 us when
each side polls its pipe instead (``python -m benchmarks.channel``). A script's call
to a quick tool is such a round trip, so each side polls for a short window before it
sleeps. A window that passes with nothing is not tried again until a wait proves
short again, so a busy host, or a tool that takes its time, costs no polling.

Polling yields the processor between reads, and when other processes want it (a loaded
machine) the poller gets it back only after their turn: the answer is there by then, but
a reader asleep on the pipe would have been woken at once. An answer read past its window
is that sign, and polling then stays off for a while, however short the waits prove.
"""

from __future__ import annotations

import os
import time

SPIN_SECONDS = 300e-6  # longer than the host's own turn between two runs of a session
# How long polling stays off after it lost the processor (then it is tried once again).
CONTENDED_SECONDS = 0.25
READ_CHUNK = 1 << 16


class Spinner:
    """Polls one non-blocking descriptor for a short window, while that keeps paying."""

    __slots__ = ("_on", "_resume_at", "backoff", "window")

    def __init__(self, window: float = SPIN_SECONDS, backoff: float = CONTENDED_SECONDS) -> None:
        self.window = window
        self.backoff = backoff
        self._on = True
        self._resume_at = 0.0  # a time.perf_counter() before which polling stays off

    def read(self, fd: int, end: float | None = None) -> bytes | None:
        """What ``fd`` holds within the window (``b""``: its writer closed it), or None:
        then the caller sleeps until it is readable and reports the wait to ``slept``.
        ``end``: a ``time.perf_counter()`` by which to give up, for a wait made of reads."""
        if not self._on:
            return None
        if end is None:
            end = time.perf_counter() + self.window
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                if time.perf_counter() >= end:
                    self._on = False
                    return None
                os.sched_yield()  # the writer may be waiting for this very processor
                continue
            now = time.perf_counter()
            if now > end:  # read past the window: the processor was taken
                self._on = False
                self._resume_at = now + self.backoff
            return chunk

    def window_end(self) -> float:
        """The ``time.perf_counter()`` at which a window starting now ends (for a wait made
        of several reads)."""
        return time.perf_counter() + self.window

    def slept(self, seconds: float) -> None:
        """A wait the caller slept through: poll next time only if it would have fitted, and
        not while backing off from a machine too busy for polling."""
        self._on = seconds <= self.window and time.perf_counter() >= self._resume_at


__all__ = ["CONTENDED_SECONDS", "READ_CHUNK", "SPIN_SECONDS", "Spinner"]
