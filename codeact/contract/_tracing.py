"""OpenTelemetry tracing: the tracer, content recording, and the spans of tool calls.

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
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

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
    provider_env: bool | None = None  # a provider named in the environment


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
        if state.provider is _UNSET and _nothing_configured():
            return None  # asked again next time: a provider may be set up later
        try:
            from opentelemetry import trace
        except ImportError:  # the extra is not installed: tracing is off, for good
            state.api = False
            return None
        state.api = trace
    if state.api is False:
        return None
    if state.provider is _UNSET:
        # No global provider set in code nor named in the environment is the common case,
        # read without get_tracer_provider's environment lookup on every call.
        if getattr(state.api, "_TRACER_PROVIDER", _UNSET) is None and not _provider_named():
            return None
        provider = state.api.get_tracer_provider()
    else:
        provider = state.provider
    if provider is not state.resolved_for:
        state.resolved_for = provider
        state.tracer = _tracer_of(provider)
    return state.tracer


def _nothing_configured() -> bool:
    """No provider can be in place yet: none is named in the environment, and the API
    that would hold one set in code was never imported (importing it costs a first run
    several milliseconds)."""
    return not _provider_named() and "opentelemetry.trace" not in sys.modules


def _provider_named() -> bool:
    """Is a provider named in the environment (the API makes it on first use)? Read once."""
    if _STATE.provider_env is None:
        _STATE.provider_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
    return _STATE.provider_env


def _tracer_of(provider: Any) -> Tracer | None:
    trace = _STATE.api
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None  # no SDK configured: spans would go nowhere
    from .._version import __version__

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
        mark_failed(span, result.error.code, result.error.message)
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


def mark_failed(span: Span, code: str, message: str) -> None:
    """Set the span's error type and status (the conventions' way of saying it failed)."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, f"{code}: {message}"[:MAX_CONTENT_CHARS]))


__all__ = [
    "MAX_CONTENT_CHARS",
    "SEMCONV_VERSION",
    "attached",
    "configure_tracing",
    "current_context",
    "end_tool_span",
    "mark_failed",
    "recording_content",
    "start_tool_span",
    "tool_context",
    "tracer",
]
