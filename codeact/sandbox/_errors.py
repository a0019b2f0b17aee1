"""What ends a script run early, as exceptions the script itself cannot catch.

Both derive from ``BaseException`` and neither is bound in a script's builtins, so
``except Exception`` (and a bare ``except``, rewritten to it) never catches them, and a
handler that names ``BaseException`` re-raises them before its first statement.
"""

from __future__ import annotations

import opcode
import threading
import weakref
from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _RunStops(threading.local):
    """The first stop raised in this thread's run: once there is one, the run is doomed;
    and the run's monitor, whose ``tripped`` names a limit the watchdog found passed."""

    watching: bool = False
    first: SandboxStop | None = None
    monitor: Any = None


_STOPS = _RunStops()


# Host functions a RecursionError leaves as it found them: each changes nothing, or only
# after its last call (the error is raised at a call one frame too deep), or only objects
# it made in this call and the script's own values (a copy built halfway is dropped with
# the error). Stopped in one of these, it is the script's own call that failed, which the
# script may catch.
_RECURSION_SAFE: set[CodeType] = set()


def recursion_safe(function: F) -> F:
    """Mark ``function`` as one a RecursionError cannot stop halfway (see above), with the
    comprehensions, lambdas and functions written inside it: its review read them too."""
    _mark_code(function.__code__)
    return function


def recursion_safe_while(owner: object, function: Callable[..., Any]) -> None:
    """``recursion_safe`` for code made at run time (the methods ``dataclass`` writes for
    a script's class): the mark goes when ``owner`` does, so no session's code is kept."""
    codes: list[CodeType] = []
    _mark_code(function.__code__, codes)
    weakref.finalize(owner, _RECURSION_SAFE.difference_update, codes)


def _mark_code(code: CodeType, marked: list[CodeType] | None = None) -> None:
    _RECURSION_SAFE.add(code)
    if marked is not None:
        marked.append(code)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            _mark_code(constant, marked)


@recursion_safe  # reads only
def failed_in_script(error: BaseException, script_files: frozenset[str]) -> bool:
    """Was ``error`` raised where the script's own code was running: in its frame (a call
    it made never began, C code it called failed, its own raise), or in host frames marked
    ``recursion_safe`` under it? From any other host frame, host code stopped halfway."""
    in_script = False
    frames = error.__traceback__
    while frames is not None:
        code = frames.tb_frame.f_code
        if code.co_filename in script_files:
            in_script = True
        elif code not in _RECURSION_SAFE:
            in_script = False
        frames = frames.tb_next
    return in_script


# How many errors back ``recursion_in_script`` follows an error's context.
MAX_CONTEXT_LINKS = 100


@recursion_safe  # reads only
def recursion_in_script(error: BaseException, script_files: frozenset[str]) -> bool:
    """Is ``error``, and every RecursionError it was raised in handling, the script's own
    (``failed_in_script``)? A handler at the deepest frame cannot finish judging the error
    it caught (its own calls are one frame too deep): the RecursionError that raises
    instead carries the first as its context, and the next handler up judges both."""
    links = 0
    link: BaseException | None = error
    while link is not None and links < MAX_CONTEXT_LINKS:
        if isinstance(link, RecursionError) and not failed_in_script(link, script_files):
            return False
        link = link.__context__
        links += 1
    return True


_RAISE = opcode.opmap["RAISE_VARARGS"]


@recursion_safe  # reads only
def raised_by_script(error: BaseException, script_files: frozenset[str]) -> bool:
    """Was ``error`` raised by a ``raise`` statement of the script's own code? A MemoryError
    so raised is the script's to catch (``raise MemoryError('cache full')``); one raised by
    an allocation, in C code or host code, is the memory limit, whatever its message."""
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is None:
        return False
    code = last.tb_frame.f_code
    return code.co_filename in script_files and code.co_code[last.tb_lasti] == _RAISE


RECURSION_WORDS = "maximum recursion depth exceeded"


@recursion_safe  # reads only
def recursion_words(error: BaseException) -> str:
    """A RecursionError the script may not catch, told in CPython's words: its own text when
    CPython made it (a script's error class never runs here), else the plain words."""
    text = error.args[0] if type(error) is RecursionError and len(error.args) == 1 else None
    return f"RecursionError: {text if type(text) is str else RECURSION_WORDS}"


class SandboxStop(BaseException):
    """Base of the signals that end a run; carries the message the model reads.

    Made in a run's thread (raised by a guard, or delivered by the watchdog), a stop
    dooms the run: whatever a ``finally`` or ``__exit__`` raises in front of it later,
    every handler raises it again (see :func:`stop_in_flight`).
    """

    @recursion_safe  # its one call comes first
    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message
        if _STOPS.watching and _STOPS.first is None:
            _STOPS.first = self


def watch_stops(monitor: Any = None) -> None:
    """From now on, remember the first stop made in this thread: its run is doomed.
    ``monitor``: the run's, whose ``tripped`` the watchdog sets before it interrupts."""
    _STOPS.watching, _STOPS.first, _STOPS.monitor = True, None, monitor


def unwatch_stops() -> None:
    """The run in this thread has ended."""
    _STOPS.watching, _STOPS.first, _STOPS.monitor = False, None, None


@recursion_safe  # reads only
def tripped_limit() -> str | None:
    """The limit the watchdog found this thread's run past, if it did: its interrupt may
    not have been made (at the deepest frame, making it is one call too deep)."""
    monitor = _STOPS.monitor
    return None if monitor is None else monitor.tripped


@recursion_safe  # reads only
def stop_in_flight() -> SandboxStop | None:
    """The stop that dooms this thread's run, if one was made: a later exception raised in
    a ``finally`` replaces it as the one propagating, never as the run's fate."""
    return _STOPS.first if _STOPS.watching else None


class LimitExceeded(SandboxStop):
    """A resource limit was hit; ``limit`` names which one."""

    @recursion_safe  # its one call comes first
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
    "RECURSION_WORDS",
    "LimitExceeded",
    "LimitInterrupt",
    "SandboxStop",
    "SecurityViolation",
    "failed_in_script",
    "may_suppress",
    "raised_by_script",
    "recursion_in_script",
    "recursion_safe",
    "recursion_safe_while",
    "recursion_words",
    "stop_in_flight",
    "tripped_limit",
    "unwatch_stops",
    "watch_stops",
]
