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


DispatchEvent: TypeAlias = ToolCallStarted | ToolCallFinished | ToolProgress
EventListener: TypeAlias = Callable[[DispatchEvent], None]


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
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolProgress",
]
