"""OpenTelemetry spans for agent turns, model requests and tool calls.

Names and attributes follow the OpenTelemetry GenAI semantic conventions as of semconv
1.44.0 (``invoke_agent {agent}``, ``chat {model}``, ``execute_tool {tool}``; the
``gen_ai.*`` attributes). Only ``opentelemetry-api`` is needed (``codeact[otel]``).
Spans are made only when a tracer provider is configured, globally or with
:func:`configure_tracing`; otherwise each hook costs one check. Message and argument
content is recorded only when asked for (``record_content=True``, or the conventions'
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).

A call a script makes is a child of its ``run_code`` span in both executors: code mode
hands the run_code span's context to every call it dispatches, since those calls are
answered on other threads, where the caller's context is not current.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from ._models import ModelReply, ModelRequest
    from ._results import ToolExecutionResult

SEMCONV_VERSION = "1.44.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_CONTENT_CHARS = 8_000  # a recorded message or result beyond this is cut

_UNSET: Any = object()
_NOTHING: AbstractContextManager[None] = nullcontext()  # stateless: shared by every call


class _State:
    """What tracing uses now; rebuilt when the provider it came from changes."""

    provider: Any = _UNSET  # the configured provider; _UNSET: the global one
    record_content: bool | None = None
    resolved_for: Any = _UNSET
    tracer: Tracer | None = None
    api: Any = None  # the opentelemetry.trace module, once imported
    provider_env = False


_STATE = _State()


def configure_tracing(
    tracer_provider: TracerProvider | None = None, *, record_content: bool | None = None
) -> None:
    """Trace with ``tracer_provider`` (None: the global provider, as by default);
    ``record_content`` records messages, arguments and results on spans (None: as the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment variable says)."""
    _STATE.provider = _UNSET if tracer_provider is None else tracer_provider
    _STATE.record_content = record_content
    _STATE.resolved_for = _UNSET


def tracer() -> Tracer | None:
    """The tracer spans come from, or None when nothing would receive them."""
    state = _STATE
    if state.api is None:
        try:
            from opentelemetry import trace
        except ImportError:  # the extra is not installed: tracing is off, for good
            state.api = False
            return None
        state.api = trace
        # a provider named in the environment is made by the API on first use
        state.provider_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
    if state.api is False:
        return None
    if state.provider is _UNSET:
        # No global provider set in code nor named in the environment is the common case,
        # read without get_tracer_provider's environment lookup on every call.
        if getattr(state.api, "_TRACER_PROVIDER", _UNSET) is None and not state.provider_env:
            return None
        provider = state.api.get_tracer_provider()
    else:
        provider = state.provider
    if provider is not state.resolved_for:
        state.resolved_for = provider
        state.tracer = _tracer_of(provider)
    return state.tracer


def _tracer_of(provider: Any) -> Tracer | None:
    trace = _STATE.api
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None  # no SDK configured: spans would go nowhere
    from . import __version__

    made: Tracer = provider.get_tracer("codeact", __version__, schema_url=SCHEMA_URL)
    return made


def recording_content() -> bool:
    if _STATE.record_content is not None:
        return _STATE.record_content
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def current_context() -> Context | None:
    """The context nested calls should be children of (None when not tracing)."""
    if tracer() is None:
        return None
    from opentelemetry import context

    return context.get_current()


def attached(captured: Context | None) -> AbstractContextManager[None]:
    """``captured`` current for a call dispatched on another thread or task than the one
    that captured it (a script's call, answered where run_code's context is not)."""
    return _NOTHING if captured is None else _attach(captured)


@contextmanager
def _attach(captured: Context) -> Iterator[None]:
    from opentelemetry import context

    token = context.attach(captured)
    try:
        yield
    finally:
        context.detach(token)


# Tool calls ------------------------------------------------------------------------------


def start_tool_span(
    call_id: str,
    name: str,
    description: str,
    arguments: str | Mapping[str, object],
) -> Span | None:
    """An ``execute_tool`` span, started (not made current: the call may end elsewhere)."""
    made = tracer()
    if made is None:
        return None
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if description:
        attributes["gen_ai.tool.description"] = description[:MAX_CONTENT_CHARS]
    if recording_content():
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        attributes["gen_ai.tool.call.arguments"] = text[:MAX_CONTENT_CHARS]
    from opentelemetry.trace import SpanKind

    return made.start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes)


def end_tool_span(span: Span | None, result: ToolExecutionResult) -> None:
    if span is None:
        return
    if result.is_error:
        _fail(span, result.error.code, result.error.message)
    if recording_content():
        span.set_attribute("gen_ai.tool.call.result", result.text[:MAX_CONTENT_CHARS])
    span.end()


def tool_context(span: Span | None) -> AbstractContextManager[None]:
    """``span`` current while the tool body runs, so what it does is its child (with no
    span, a shared do-nothing context: this is on every call's path)."""
    if span is None:
        return _NOTHING
    from opentelemetry import trace

    return _attach(trace.set_span_in_context(span))


# Agent turns and model requests ----------------------------------------------------------


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
            _fail(span, type(error).__name__, str(error))
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
            _fail(span, type(error).__name__, str(error))
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


def _fail(span: Span, code: str, message: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, f"{code}: {message}"[:MAX_CONTENT_CHARS]))


__all__ = [
    "SEMCONV_VERSION",
    "agent_span",
    "attached",
    "configure_tracing",
    "current_context",
    "end_tool_span",
    "model_span",
    "provider_of",
    "record_reply",
    "start_tool_span",
    "tool_context",
    "tracer",
]
