"""A lingering handoff kept on one processor.

Handing a job to the session's thread and taking its result back is a wake-up each way,
and with the GIL each is a handoff of the GIL as well. When the thread woken sleeps on
another processor, its wake-up is an interrupt between processors, and on a virtual
machine often the exit of a halted one: most of an in-process trivial run's time
(``python -m benchmarks.peers``). Between two threads of one processor it is a context
switch. Placing the session's thread alone does not keep the pair together: the kernel
wakes the caller on whichever processor is idle, which is then the other one.

So a caller that lingers (blocked on its job for at most a moment, see ``_threads``)
holds itself and the sleeping session thread to the processor it runs on, and hands the
job over. The session's thread lets go as it takes the job (it runs the job, and starts
any thread or process, with the processors it had); it keeps running where it woke
unless the kernel has reason to move it. The caller is given back the processors it had
once its moment ends, before it returns to its loop. So nothing is held to a processor
while it runs, only while it sleeps through a handoff.

Where the platform cannot say which processor a thread runs on, or refuses a placement,
nothing is placed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from collections.abc import Callable


def _processor_reader() -> Callable[[], int] | None:
    """glibc's ``sched_getcpu`` (the calling thread's processor, read without a system
    call on most kernels), or None where there is none."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        reader = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    reader.restype = ctypes.c_int
    reader.argtypes = ()
    return reader


_CURRENT_PROCESSOR = _processor_reader()


def _allow(native_id: int, processors: set[int]) -> None:
    """Let thread ``native_id`` (0: this one) run on ``processors`` again; if none of them
    is allowed any more (a changed cpuset), on any processor there is."""
    try:
        os.sched_setaffinity(native_id, processors)
    except OSError:
        with contextlib.suppress(OSError):  # an ended thread holds nothing
            os.sched_setaffinity(native_id, range(os.cpu_count() or 1))


class Placement:
    """Puts one session thread, asleep, on its lingering caller's processor."""

    __slots__ = ("_native_id", "_session_allowed", "enabled", "held")

    def __init__(self) -> None:
        self.enabled = _CURRENT_PROCESSOR is not None
        self._native_id: int | None = None  # the session thread, once placed
        self._session_allowed: set[int] | None = None  # its processors, as it started
        self.held = False  # set by the caller as it hands a job over, cleared as it is taken

    def hold_together(self, native_id: int | None) -> set[int] | None:
        """Hold the calling thread and the (sleeping) thread ``native_id`` to the
        processor the caller runs on now. The caller's processors before, to give back
        with ``let_go``; None when nothing was held."""
        if not self.enabled or native_id is None or _CURRENT_PROCESSOR is None:
            return None
        if native_id != self._native_id:  # a new session thread: its processors as it is
            self._native_id, self._session_allowed = native_id, None
        here = _CURRENT_PROCESSOR()
        try:
            if self._session_allowed is None:
                self._session_allowed = os.sched_getaffinity(native_id)
            if len(self._session_allowed) == 1 or here not in self._session_allowed:
                return None  # one processor: nothing to gather; or none the two share
            caller_allowed = os.sched_getaffinity(0)
            os.sched_setaffinity(native_id, {here})
            self.held = True
            os.sched_setaffinity(0, {here})
        except OSError as error:
            self.session_lets_go()
            if error.errno != errno.ESRCH:  # refused (a confined host): not tried again
                self.enabled = False
            return None
        return caller_allowed

    @staticmethod
    def let_go(caller_allowed: set[int] | None) -> None:
        """Give the calling thread back the processors it had before ``hold_together``."""
        if caller_allowed is not None:
            _allow(0, caller_allowed)

    def session_lets_go(self) -> None:
        """Let the session's thread run where it could before it was held (it calls this
        as it takes its job; the caller, if the thread may have ended)."""
        if self.held:
            self.held = False
            if self._native_id is not None and self._session_allowed is not None:
                _allow(self._native_id, self._session_allowed)


__all__ = ["Placement"]
