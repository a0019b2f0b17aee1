"""OpenTelemetry spans of an agent's turns (``invoke_agent``) and model requests (``chat``),
under the same tracer and content rule as tool calls (see ``contract._tracing``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..contract._tracing import MAX_CONTENT_CHARS, mark_failed, recording_content, tracer

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ..providers._models import ModelReply, ModelRequest


@contextmanager
def agent_span(agent_name: str, model_name: str, conversation: str | None) -> Iterator[None]:
    """An ``invoke_agent`` span, current for the turn: its requests and calls nest in it."""
    made = tracer()
    if made is None:
        yield
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent_name,
        "gen_ai.request.model": model_name,
    }
    if conversation:
        attributes["gen_ai.conversation.id"] = conversation
    with made.start_as_current_span(
        f"invoke_agent {agent_name}", attributes=attributes, record_exception=False
    ) as span:
        try:
            yield
        except BaseException as error:
            mark_failed(span, type(error).__name__, str(error))
            raise


@contextmanager
def model_span(model: Any, request: ModelRequest) -> Iterator[Span | None]:
    """A ``chat {model}`` span around one request; the caller records the reply on it."""
    made = tracer()
    if made is None:
        yield None
        return
    from opentelemetry.trace import SpanKind

    name = str(getattr(model, "name", "model"))
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_of(model),
        "gen_ai.request.model": name,
    }
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str):
        parts = urlsplit(base_url)
        if parts.hostname:
            attributes["server.address"] = parts.hostname
            attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
    if recording_content():
        attributes["gen_ai.system_instructions"] = json.dumps(
            [{"type": "text", "content": request.system}]
        )[:MAX_CONTENT_CHARS]
        attributes["gen_ai.input.messages"] = json.dumps(list(request.messages), default=str)[
            :MAX_CONTENT_CHARS
        ]
    with made.start_as_current_span(
        f"chat {name}", kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
    ) as span:
        try:
            yield span
        except BaseException as error:
            mark_failed(span, type(error).__name__, str(error))
            raise


def record_reply(span: Span | None, reply: ModelReply) -> None:
    if span is None:
        return
    if reply.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", reply.input_tokens)
    if reply.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", reply.output_tokens)
    finish = "tool_call" if reply.tool_calls else "stop"
    span.set_attribute("gen_ai.response.finish_reasons", [finish])
    if recording_content():
        parts: list[dict[str, Any]] = (
            [{"type": "text", "content": reply.text}] if reply.text else []
        )
        parts += [
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in reply.tool_calls
        ]
        message = {"role": "assistant", "parts": parts, "finish_reason": finish}
        span.set_attribute(
            "gen_ai.output.messages", json.dumps([message], default=str)[:MAX_CONTENT_CHARS]
        )


def provider_of(model: Any) -> str:
    """The ``gen_ai.provider.name`` of an adapter: its own ``provider``, else by kind."""
    named = getattr(model, "provider", None)
    if isinstance(named, str):
        return named
    kind = type(model).__name__
    if kind == "OpenAIChatModel":
        return "openai"
    if kind == "AnthropicModel":
        return "anthropic"
    return "codeact"  # a scripted or function model: no provider behind it


__all__ = ["agent_span", "model_span", "provider_of", "record_reply"]
