"""Dispatch events: frozen records with a ``kind``, handed to listeners as they happen."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from ._results import ToolExecutionResult


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStarted:
    """Dispatch of a resolved call began."""

    call_id: str
    name: str
    arguments: str
    parent: str | None
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallFinished:
    """A call got its one result (``code`` is None on success)."""

    call_id: str
    name: str
    parent: str | None
    is_error: bool
    code: str | None
    seconds: float
    # the result itself, as the caller got it (None for a call that never ran)
    result: ToolExecutionResult | None = field(default=None, repr=False, compare=False)
    kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolProgress:
    """A running call reported progress (``report_progress``; MCP progress notifications)."""

    call_id: str
    name: str
    parent: str | None
    progress: float
    total: float | None = None
    message: str | None = None
    kind: Literal["tool_progress"] = "tool_progress"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptOutput:
    """A line a running script printed (the last one of a run may lack its newline),
    delivered while the script still runs; ``call_id`` is its run_code call."""

    call_id: str
    text: str
    name: str = "run_code"
    parent: str | None = None
    kind: Literal["script_output"] = "script_output"


DispatchEvent: TypeAlias = ToolCallStarted | ToolCallFinished | ToolProgress | ScriptOutput
EventListener: TypeAlias = Callable[[DispatchEvent], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRetry:
    """A model request failed and will be tried again after ``delay`` seconds."""

    attempt: int
    message: str
    delay: float
    kind: Literal["model_retry"] = "model_retry"


@dataclass(frozen=True, kw_only=True, slots=True)
class FinalAnswer:
    """The turn ended with the model's text answer."""

    text: str
    kind: Literal["final_answer"] = "final_answer"


class PrintedLines:
    """Printed text, in whatever pieces a script prints it, passed on as whole lines."""

    def __init__(self, call_id: str, emit: EventListener) -> None:
        self._call_id = call_id
        self._emit = emit
        self._partial = ""
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self._emit(ScriptOutput(call_id=self._call_id, text=line + "\n"))

    def flush(self) -> None:
        """The last line, printed without a newline, once the run has ended."""
        with self._lock:
            rest, self._partial = self._partial, ""
        if rest:
            self._emit(ScriptOutput(call_id=self._call_id, text=rest))


class EventRelay:
    """Events emitted in another thread (a script's), delivered on ``loop`` in emission order.

    A burst of events costs the loop one wake-up, not one per event: a script calling a
    tool in a tight loop would otherwise wake the loop, and contend for the GIL, twice a
    call. Everything emitted before the emitting thread hands anything else to the loop
    is delivered before it, since a scheduled delivery drains what arrives meanwhile.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: EventListener) -> None:
        self._loop = loop
        self._deliver = deliver
        self._pending: list[DispatchEvent] = []
        self._lock = threading.Lock()
        self._scheduled = False

    def __call__(self, event: DispatchEvent) -> None:
        with self._lock:
            self._pending.append(event)
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._drain)

    def flush(self) -> None:
        """Deliver what is pending now (on the loop): the emitting thread's work ended and
        its result reached the loop without a turn of it (a caller that lingered on it)."""
        self._drain()

    def _drain(self) -> None:
        while True:
            with self._lock:
                events, self._pending = self._pending, []
                if not events:
                    self._scheduled = False
                    return
            for event in events:
                self._deliver(event)


__all__ = [
    "DispatchEvent",
    "EventListener",
    "EventRelay",
    "FinalAnswer",
    "ModelRetry",
    "PrintedLines",
    "ScriptOutput",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolProgress",
]
