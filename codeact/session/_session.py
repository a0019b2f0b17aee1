"""The session: an append-only log of typed events, from which the model's history is derived.

Nothing the model sees is stored anywhere else: ``history()`` rebuilds the messages
from the events each time, so a UI, a transcript and a request cannot disagree.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ..contract._exceptions import UsageError
from ._run_events import RUN_EVENT_TYPES, RunEvent
from ._stores import EventStore


@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage:
    seq: int = 0
    text: str
    kind: Literal["user_message"] = "user_message"


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantMessage:
    seq: int = 0
    text: str = ""
    kind: Literal["assistant_message"] = "assistant_message"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecorded:
    """A call the model asked for (``parent`` is None) or a script made (its run_code call)."""

    seq: int = 0
    call_id: str
    name: str
    arguments: str
    parent: str | None = None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultRecorded:
    """The one result of a call, citing the sequence number of its call event."""

    seq: int = 0
    call_seq: int
    call_id: str
    name: str
    is_error: bool
    code: str | None
    content: str
    parent: str | None = None
    synthetic: bool = False
    # the result's images ({"mime_type", "data"}), for providers that take them on replay
    images: tuple[dict[str, str], ...] = ()
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelExchange:
    """A request to the model and what it cost."""

    seq: int = 0
    model: str
    mode: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    attempts: int = 1
    kind: Literal["model_exchange"] = "model_exchange"


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorRecorded:
    seq: int = 0
    message: str
    retryable: bool = False
    kind: Literal["error"] = "error"


@dataclass(frozen=True, kw_only=True, slots=True)
class AbortRecorded:
    seq: int = 0
    reason: str
    kind: Literal["abort"] = "abort"


Event: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ToolCallRecorded
    | ToolResultRecorded
    | ModelExchange
    | ErrorRecorded
    | AbortRecorded
    | RunEvent
)
EVENT_TYPES: dict[str, type[Any]] = {
    "user_message": UserMessage,
    "assistant_message": AssistantMessage,
    "tool_call": ToolCallRecorded,
    "tool_result": ToolResultRecorded,
    "model_exchange": ModelExchange,
    "error": ErrorRecorded,
    "abort": AbortRecorded,
    **RUN_EVENT_TYPES,
}


def event_to_json(event: Event) -> str:
    return json.dumps(asdict(event), ensure_ascii=False, sort_keys=True)


def event_from_json(line: str) -> Event:
    data = json.loads(line)
    cls = EVENT_TYPES[data["kind"]]
    names = {f.name for f in fields(cls)}
    # JSON has lists where events hold tuples (a result's images): read back as they were
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    event: Event = cls(**given)
    return event


INTERRUPTED = (
    "the session was interrupted while this call was open: it may or may not have taken "
    "effect; check before repeating it"
)


class CorruptLog(ValueError):
    """A store's record could not be read (a line other than a torn last one, a damaged
    row, a file that is not a store): history cannot be trusted, so nothing runs. The
    message names the store, the session and the event."""


class JsonlStore:
    """Events as JSON lines, appended and flushed one by one.

    A torn last line (a crash in the middle of a write) is detected and dropped on
    load; a bad line anywhere else is an error, never silently skipped.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.dropped_torn_line = False
        self._offset: int | None = None  # where this store last read or wrote to

    @property
    def name(self) -> str:
        """The session's name: the file's, without its suffix."""
        return self.path.stem

    def load(self) -> list[Event]:
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        self._offset = len(raw)
        lines = raw.split(b"\n")
        events: list[Event] = []
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            last = index >= len(lines) - 1 or not any(rest.strip() for rest in lines[index + 1 :])
            try:
                event = event_from_json(line.decode("utf-8"))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                if last and not raw.endswith(b"\n"):
                    self.dropped_torn_line = True
                    self._truncate_to(len(raw) - len(line))
                    break
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, line {index + 1} is unreadable "
                    f"({type(error).__name__}: {error})"[:600]
                ) from None
            if event.seq != len(events) + 1:  # events are numbered as they were appended
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, line {index + 1} holds event "
                    f"{event.seq} where event {len(events) + 1} belongs"
                )
            events.append(event)
        return events

    def load_after(self, seq: int) -> list[Event]:
        """The events after ``seq``: read from where this store last read or wrote."""
        offset = self._offset
        if offset is None or not self.path.exists() or self.path.stat().st_size < offset:
            return [event for event in self.load() if event.seq > seq]
        with self.path.open("rb") as handle:
            handle.seek(offset)
            raw = handle.read()
        if not raw.endswith(b"\n"):  # a line being written: read it when it is whole
            raw = raw[: raw.rfind(b"\n") + 1]
        events = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                events.append(event_from_json(line.decode("utf-8")))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, an event after event {seq} is "
                    f"unreadable ({type(error).__name__}: {error})"[:600]
                ) from None
        self._offset = offset + len(raw)
        return [event for event in events if event.seq > seq]

    def append(self, event: Event) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(event_to_json(event) + "\n")
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
            if self._offset is not None:
                self._offset = os.fstat(handle.fileno()).st_size

    def _truncate_to(self, size: int) -> None:
        with self.path.open("r+b") as handle:
            handle.truncate(size)


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
