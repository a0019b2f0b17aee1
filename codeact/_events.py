"""Dispatch events: frozen records with a ``kind``, handed to listeners as they happen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias


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
    kind: Literal["tool_call_finished"] = "tool_call_finished"


DispatchEvent: TypeAlias = ToolCallStarted | ToolCallFinished
EventListener: TypeAlias = Callable[[DispatchEvent], None]

__all__ = ["DispatchEvent", "EventListener", "ToolCallFinished", "ToolCallStarted"]
