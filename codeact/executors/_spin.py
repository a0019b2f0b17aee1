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
is that sign, but not proof: a machine at rest loses a window too, once in a while, to a
daemon's turn or the hypervisor's. So a lost window turns polling off only if the kernel's
pressure record (PSI, ``/proc/pressure/cpu``) shows tasks kept waiting for a processor for
at least a quarter of the time since it was last read; without that record, every lost
window counts. Polling then stays off for a while, however short the waits prove; when that is
over, the record is read again first (a few microseconds, where a poll would lose a window
to learn the same), and a machine still busy keeps it off for another while.
"""

from __future__ import annotations

import os
import time

SPIN_SECONDS = 300e-6  # longer than the host's own turn between two runs of a session
# How long polling stays off on a busy machine before the pressure record is read again.
CONTENDED_SECONDS = 0.05
# The same where there is no record: polling itself is then the test, and costs a window.
BLIND_SECONDS = 0.25
# The share of time tasks waited for a processor that makes a lost window a busy machine's.
CONTENDED_SHARE = 0.25
PRESSURE = "/proc/pressure/cpu"
READ_CHUNK = 1 << 16


def open_pressure() -> int | None:
    """A descriptor on the kernel's processor pressure record, for a process about to be
    confined (it can read the record no more by name); None where there is none."""
    try:
        return os.open(PRESSURE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def stalled_seconds(fd: int | None = None) -> float | None:
    """The time, since boot, in which some task waited for a processor (the record's
    ``some ... total=`` in microseconds); None where the kernel keeps no such record.
    ``fd``: from ``open_pressure``; without it the record is opened by name."""
    try:
        if fd is None:
            with open(PRESSURE, "rb") as record:
                data = record.read(128)
        else:
            data = os.pread(fd, 128, 0)
        first = data[: data.index(b"\n")]
        return int(first[first.rindex(b"=") + 1 :]) * 1e-6
    except (OSError, ValueError):
        return None


class Spinner:
    """Polls one non-blocking descriptor for a short window, while that keeps paying."""

    __slots__ = ("_on", "_pressure", "_read_at", "_resume_at", "_stalled", "backoff", "window")

    def __init__(
        self,
        window: float = SPIN_SECONDS,
        backoff: float = CONTENDED_SECONDS,
        *,
        pressure: int | None = None,
    ) -> None:
        """``pressure``: a descriptor from ``open_pressure``, in a process that cannot open
        the record once confined."""
        self.window = window
        self.backoff = backoff
        self._on = True
        self._resume_at = 0.0  # a time.perf_counter() before which polling stays off
        self._pressure = pressure
        # the pressure record's last reading (when a window was lost, a back-off ended, or
        # this was made), and when it was taken
        self._read_at = time.perf_counter()
        self._stalled = stalled_seconds(pressure)

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
            # read past the window (the processor was taken), on a busy machine or, without
            # a record to tell a busy machine from a daemon's turn, on any machine
            if now > end and self._busy(now, unknown=True):
                self._back_off(now)
            return chunk

    def _busy(self, now: float, *, unknown: bool) -> bool:
        """Whether tasks waited for a processor at least ``CONTENDED_SHARE`` of the time
        since the record was last read; ``unknown`` where there is no record."""
        stalled = stalled_seconds(self._pressure)
        stalled_before, read_before = self._stalled, self._read_at
        self._stalled, self._read_at = stalled, now
        if stalled is None or stalled_before is None:
            return unknown
        return stalled - stalled_before >= CONTENDED_SHARE * (now - read_before)

    def _back_off(self, now: float) -> None:
        self._on = False
        self._resume_at = now + (self.backoff if self._stalled is not None else BLIND_SECONDS)

    def window_end(self) -> float:
        """The ``time.perf_counter()`` at which a window starting now ends (for a wait made
        of several reads)."""
        return time.perf_counter() + self.window

    def slept(self, seconds: float) -> None:
        """A wait the caller slept through: poll next time only if it would have fitted, and
        not while backing off from a machine too busy for polling (nor after, while the
        pressure record says it still is)."""
        now = time.perf_counter()
        if seconds > self.window or now < self._resume_at:
            self._on = False
        elif self._resume_at and self._busy(now, unknown=False):
            self._back_off(now)
        else:
            self._on, self._resume_at = True, 0.0


__all__ = [
    "BLIND_SECONDS",
    "CONTENDED_SECONDS",
    "CONTENDED_SHARE",
    "READ_CHUNK",
    "SPIN_SECONDS",
    "Spinner",
    "open_pressure",
    "stalled_seconds",
]
