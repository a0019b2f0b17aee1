"""The session: an append-only log of typed events, from which the model's history is derived.

Nothing the model sees is stored anywhere else: ``history()`` rebuilds the messages
from the events each time, so a UI, a transcript and a request cannot disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..contract._exceptions import UsageError
from ._events import (
    AbortRecorded,
    AssistantMessage,
    CorruptLog,
    ErrorRecorded,
    Event,
    ModelExchange,
    ToolCallRecorded,
    ToolResultRecorded,
    UserMessage,
    event_from_json,
    event_to_json,
)
from ._stores import EventStore, JsonlStore

INTERRUPTED = (
    "the session was interrupted while this call was open: it may or may not have taken "
    "effect; check before repeating it"
)


@dataclass
class Session:
    """The append-only event log of one conversation, optionally persisted."""

    store: EventStore | None = None
    events: list[Event] = field(default_factory=list)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    # names the conversation in traces (gen_ai.conversation.id): the store's file name, or
    # a fresh one
    id: str = ""

    def __post_init__(self) -> None:
        """A store that already holds events is continued, never appended over: its events
        are loaded (sequence numbers go on from the last), or, if different events were
        given as well, refused."""
        if not self.id:
            self.id = self.store.name if self.store is not None else uuid.uuid4().hex
        if self.store is None:
            return
        stored = self.store.load()
        if not stored:
            return
        if not self.events:
            self.events = stored
        elif self.events != stored:
            raise UsageError(
                f"the store of session {self.store.name!r} already holds {len(stored)} events "
                "that differ from the events given; resume it with Session.resume(store), "
                "or use another store"
            )

    @classmethod
    def resume(cls, store: EventStore) -> Session:
        """A session continued from its store."""
        return cls(store=store)

    def append(self, event: Event) -> Event:
        """Record ``event`` with the next sequence number; returns the recorded event."""
        numbered = type(event)(**{**asdict(event), "seq": len(self.events) + 1})
        if self.store is not None:  # first: an event the store refused is not history
            self.store.append(numbered)
        self.events.append(numbered)
        for listener in self.listeners:
            listener(numbered)
        return numbered

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.append(event)

    # Derived views --------------------------------------------------------------------

    def open_calls(self, *, nested: bool = False) -> list[ToolCallRecorded]:
        """Calls that have no result yet: top-level ones, and with ``nested`` the calls
        scripts made too."""
        answered = {e.call_seq for e in self.events if isinstance(e, ToolResultRecorded)}
        return [
            e
            for e in self.events
            if isinstance(e, ToolCallRecorded)
            and (nested or e.parent is None)
            and e.seq not in answered
        ]

    def repair(self, reason: str = INTERRUPTED) -> int:
        """Give every open call, nested ones included, a synthetic ABORTED result, so every
        call has exactly one and the transcript is valid again; returns how many.

        The log cannot tell whether an open call ran: the text says so, so that a model
        checks before repeating a side effect. An interrupted script's result lists which
        of its calls finished and which were in flight when it stopped.
        """
        results = {e.call_seq: e for e in self.events if isinstance(e, ToolResultRecorded)}
        open_calls = self.open_calls(nested=True)
        for call in open_calls:  # nested ones first: they come before their run_code's end
            if call.parent is not None:
                self._close(call, f"Error [ABORTED]: {reason}")
        for call in open_calls:
            if call.parent is None:
                self._close(call, f"Error [ABORTED]: {reason}{self._script_calls(call, results)}")
        return len(open_calls)

    def _close(self, call: ToolCallRecorded, content: str) -> None:
        self.append(
            ToolResultRecorded(
                call_seq=call.seq,
                call_id=call.call_id,
                name=call.name,
                is_error=True,
                code="ABORTED",
                content=content,
                parent=call.parent,
                synthetic=True,
            )
        )

    def _script_calls(self, call: ToolCallRecorded, results: dict[int, ToolResultRecorded]) -> str:
        """What an interrupted script's calls had done, as the log has it."""
        inner = [
            e for e in self.events if isinstance(e, ToolCallRecorded) and e.parent == call.call_id
        ]
        if not inner:
            return ""
        finished = [
            f"{c.call_id} {c.name} ({_how(results[c.seq])})" for c in inner if c.seq in results
        ]
        in_flight = [f"{c.call_id} {c.name}" for c in inner if c.seq not in results]
        lines = ["", f"Calls its script made that finished: {', '.join(finished) or 'none'}."]
        if in_flight:
            lines.append(
                "In flight when it stopped (each may or may not have taken effect): "
                f"{', '.join(in_flight)}."
            )
        return "\n".join(lines)

    def history(self) -> list[dict[str, Any]]:
        """Provider-neutral messages, derived from the log (nested script calls excluded)."""
        messages: list[dict[str, Any]] = []
        for event in self.events:
            if isinstance(event, UserMessage):
                messages.append({"role": "user", "content": event.text})
            elif isinstance(event, AssistantMessage):
                messages.append({"role": "assistant", "content": event.text, "tool_calls": []})
            elif isinstance(event, ToolCallRecorded) and event.parent is None:
                if not messages or messages[-1]["role"] != "assistant":
                    messages.append({"role": "assistant", "content": "", "tool_calls": []})
                messages[-1]["tool_calls"].append(
                    {"id": event.call_id, "name": event.name, "arguments": event.arguments}
                )
            elif isinstance(event, ToolResultRecorded) and event.parent is None:
                message = {
                    "role": "tool",
                    "call_id": event.call_id,
                    "content": event.content,
                    "is_error": event.is_error,
                }
                if event.images:
                    message["images"] = [dict(image) for image in event.images]
                messages.append(message)
        return messages


def _how(result: ToolResultRecorded) -> str:
    return f"error {result.code}" if result.is_error else "ok"


__all__ = [
    "AbortRecorded",
    "AssistantMessage",
    "CorruptLog",
    "ErrorRecorded",
    "Event",
    "JsonlStore",
    "ModelExchange",
    "Session",
    "ToolCallRecorded",
    "ToolResultRecorded",
    "UserMessage",
    "event_from_json",
    "event_to_json",
]
