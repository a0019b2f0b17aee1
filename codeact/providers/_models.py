"""Model adapters' narrow seam, and the test doubles: a scripted model and a function model."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..contract._call import ToolCall
from ..contract._json import JsonValue


@dataclass(frozen=True, kw_only=True, slots=True)
class Delta:
    """A piece of a streamed reply: text, or part of a tool call's arguments."""

    kind: Literal["text", "tool_call"]
    text: str = ""
    call_index: int = 0
    name: str = ""


DeltaListener = Callable[[Delta], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """Everything sent to a model for one step.

    ``on_delta`` (not part of what is sent) takes the reply's pieces as they stream in;
    a model that does not stream gives its whole text as one piece.
    """

    system: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, JsonValue], ...]
    mode: str
    on_delta: DeltaListener | None = field(default=None, compare=False, repr=False)


def tell_whole_reply(request: ModelRequest, reply: ModelReply) -> None:
    """A model that does not stream: its text reaches ``on_delta`` in one piece."""
    if request.on_delta is not None and reply.text:
        request.on_delta(Delta(kind="text", text=reply.text))


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelReply:
    """What the model answered: text, tool calls, and token usage when known."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None


class ModelError(Exception):
    """A provider fault; ``retryable`` ones (429, 5xx, timeouts, drops) are tried again."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        context_length: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.context_length = context_length


class Model(Protocol):
    """Anything that answers a request: an HTTP adapter, a scripted replay, a function."""

    name: str

    async def respond(self, request: ModelRequest) -> ModelReply: ...


class ScriptMismatch(AssertionError):
    """A scripted reply calls a tool the request did not advertise."""


@dataclass
class ScriptedModel:
    """Replays fixed replies in order, checking each against what the request advertised."""

    replies: Sequence[ModelReply]
    name: str = "scripted"
    requests: list[ModelRequest] = field(default_factory=list)

    async def respond(self, request: ModelRequest) -> ModelReply:
        if len(self.requests) >= len(self.replies):
            raise ScriptMismatch(f"no scripted reply left for request {len(self.requests) + 1}")
        reply = self.replies[len(self.requests)]
        self.requests.append(request)
        advertised = {str(tool["name"]) for tool in request.tools}
        for call in reply.tool_calls:
            if call.name not in advertised:
                raise ScriptMismatch(
                    f"reply calls {call.name!r}, not advertised: {sorted(advertised)}"
                )
        tell_whole_reply(request, reply)
        return reply


@dataclass
class FunctionModel:
    """A model whose answers come from a function of the request (sync or async)."""

    function: Callable[[ModelRequest], ModelReply | Awaitable[ModelReply]]
    name: str = "function"

    async def respond(self, request: ModelRequest) -> ModelReply:
        reply = self.function(request)
        if inspect.isawaitable(reply):
            reply = await reply
        assert isinstance(reply, ModelReply)
        tell_whole_reply(request, reply)
        return reply


__all__ = [
    "Delta",
    "DeltaListener",
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "ScriptMismatch",
    "ScriptedModel",
]
