"""What ends a script run early, as exceptions the script itself cannot catch.

Both derive from ``BaseException`` and neither is bound in a script's builtins, so
``except Exception`` (and a bare ``except``, rewritten to it) never catches them.
"""

from __future__ import annotations

import threading


class _RunStops(threading.local):
    """The first stop raised in this thread's run: once there is one, the run is doomed."""

    watching: bool = False
    first: SandboxStop | None = None


_STOPS = _RunStops()


class SandboxStop(BaseException):
    """Base of the signals that end a run; carries the message the model reads.

    Made in a run's thread (raised by a guard, or delivered by the watchdog), a stop
    dooms the run: whatever a ``finally`` or ``__exit__`` raises in front of it later,
    every handler raises it again (see :func:`stop_in_flight`).
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message
        if _STOPS.watching and _STOPS.first is None:
            _STOPS.first = self


def watch_stops() -> None:
    """From now on, remember the first stop made in this thread: its run is doomed."""
    _STOPS.watching, _STOPS.first = True, None


def unwatch_stops() -> None:
    """The run in this thread has ended."""
    _STOPS.watching, _STOPS.first = False, None


def stop_in_flight() -> SandboxStop | None:
    """The stop that dooms this thread's run, if one was made: a later exception raised in
    a ``finally`` replaces it as the one propagating, never as the run's fate."""
    return _STOPS.first if _STOPS.watching else None


class LimitExceeded(SandboxStop):
    """A resource limit was hit; ``limit`` names which one."""

    def __init__(self, limit: str = "", message: str = "") -> None:
        super().__init__(message or f"the {limit} limit was exceeded")
        self.limit = limit


class LimitInterrupt(LimitExceeded):
    """Raised asynchronously by the watchdog; the run records which limit tripped."""


class SecurityViolation(SandboxStop):
    """The script tried to reach something outside the sandbox."""


def may_suppress(error: BaseException | None) -> bool:
    """May an ``__exit__`` swallow ``error``? Never a stop, nor anything in front of one."""
    return not isinstance(error, SandboxStop) and stop_in_flight() is None


__all__ = [
    "LimitExceeded",
    "LimitInterrupt",
    "SandboxStop",
    "SecurityViolation",
    "may_suppress",
    "stop_in_flight",
    "unwatch_stops",
    "watch_stops",
]
