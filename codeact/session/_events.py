"""A session's events and their JSON form: what every store writes and reads back.

The types a conversation records (messages, calls, results, model exchanges, errors,
aborts, and the durable runs' events), one line of JSON each, and ``CorruptLog`` for a
record that cannot be read back. Stores and the session both build on this module.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, TypeAlias

from ._run_events import RUN_EVENT_TYPES, RunEvent


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


class CorruptLog(ValueError):
    """A store's record could not be read (a line other than a torn last one, a damaged
    row, a file that is not a store): history cannot be trusted, so nothing runs. The
    message names the store, the session and the event."""


__all__ = [
    "EVENT_TYPES",
    "AbortRecorded",
    "AssistantMessage",
    "CorruptLog",
    "ErrorRecorded",
    "Event",
    "ModelExchange",
    "ToolCallRecorded",
    "ToolResultRecorded",
    "UserMessage",
    "event_from_json",
    "event_to_json",
]
