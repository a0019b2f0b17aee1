"""OpenTelemetry spans, read back from the SDK's in-memory exporter: the tree of a turn,
calls a script makes as children of its run_code span in both executors, failures with
their stable codes, content only when asked for, and nothing when no provider is set."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from codeact import (
    Agent,
    Executor,
    InProcessExecutor,
    Mode,
    ModelReply,
    ProcessExecutor,
    Runtime,
    ScriptedModel,
    ScriptMismatch,
    ToolCall,
    ToolError,
    ToolRegistry,
    configure_tracing,
    tool,
)
from codeact.contract._tracing import tracer


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
async def later(text: str) -> str:
    """An async tool (answered on the event loop, not in the script's thread)."""
    return text.upper()


@tool
def refuse(reason: str) -> str:
    """Always refuses."""
    raise ToolError(reason, "QUOTA_EXCEEDED")


@contextmanager
def collected(*, record_content: bool | None = None) -> Iterator[InMemorySpanExporter]:
    """Spans of what runs inside, kept in memory by the SDK."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure_tracing(provider, record_content=record_content)
    try:
        yield exporter
    finally:
        configure_tracing(None)
        provider.shutdown()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with collected() as exporter:
        yield exporter


def make_runtime(executor: Executor) -> Runtime:
    registry = ToolRegistry()
    for made in (add, later, refuse):
        registry.register(made)
    return Runtime(registry, executor=executor)


EXECUTORS = {"inprocess": InProcessExecutor, "process": ProcessExecutor}


def turn(executor: str, replies: list[ModelReply], mode: Mode = Mode.CODE) -> Agent:
    async def go() -> Agent:
        runtime = make_runtime(EXECUTORS[executor]())
        agent = Agent(runtime, ScriptedModel(replies), mode=mode, name="shop-assistant")
        try:
            await agent.run("go")
        finally:
            await runtime.aclose()
        return agent

    return anyio.run(go)


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_native_call_is_a_child_of_the_turn_beside_its_model_requests(
    spans: InMemorySpanExporter,
) -> None:
    turn(
        "inprocess",
        [
            ModelReply(
                tool_calls=(ToolCall("c1", "add", {"a": 2, "b": 3}),),
                input_tokens=11,
                output_tokens=4,
            ),
            ModelReply(text="5", input_tokens=20, output_tokens=1),
        ],
        mode=Mode.NATIVE,
    )
    found = by_name(spans)
    (root,) = found["invoke_agent shop-assistant"]
    assert root.parent is None
    assert attributes(root)["gen_ai.operation.name"] == "invoke_agent"
    assert attributes(root)["gen_ai.agent.name"] == "shop-assistant"
    chats = found["chat scripted"]
    assert [parent_of(chat) for chat in chats] == [span_id(root)] * 2
    first = attributes(chats[0])
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "codeact"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (11, 4)
    assert first["gen_ai.response.finish_reasons"] == ("tool_call",)
    (call,) = found["execute_tool add"]
    assert parent_of(call) == span_id(root)
    assert attributes(call)["gen_ai.tool.call.id"] == "c1"
    assert attributes(call)["gen_ai.tool.name"] == "add"
    assert call.status.status_code is StatusCode.UNSET
    # no content unless asked for
    assert "gen_ai.tool.call.arguments" not in attributes(call)
    assert "gen_ai.input.messages" not in first


SCRIPT = "x = add(a=1, b=2)\ny = later(text='hi')\nz = add(a=x, b=10)\n[x, y, z]"


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
def test_calls_a_script_makes_are_children_of_its_run_code_span_in_order(
    spans: InMemorySpanExporter, executor: str
) -> None:
    turn(
        executor,
        [
            ModelReply(tool_calls=(ToolCall("r1", "run_code", {"code": SCRIPT}),)),
            ModelReply(text="done"),
        ],
    )
    found = by_name(spans)
    (root,) = found["invoke_agent shop-assistant"]
    (run_code,) = found["execute_tool run_code"]
    assert parent_of(run_code) == span_id(root)
    nested = sorted(
        (s for s in spans.get_finished_spans() if parent_of(s) == span_id(run_code)),
        key=lambda s: s.start_time or 0,
    )
    assert [(s.name, attributes(s)["gen_ai.tool.call.id"]) for s in nested] == [
        ("execute_tool add", "r1.1"),
        ("execute_tool later", "r1.2"),
        ("execute_tool add", "r1.3"),
    ]
    assert all(
        s.context is not None and s.context.trace_id == root.context.trace_id for s in nested
    )  # type: ignore[union-attr]
    assert run_code.start_time is not None
    assert run_code.end_time is not None
    assert all(
        run_code.start_time <= (s.start_time or 0) <= (s.end_time or 0) <= run_code.end_time
        for s in nested
    )


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
def test_a_failed_call_sets_the_span_status_with_its_stable_code(
    spans: InMemorySpanExporter, executor: str
) -> None:
    script = "try:\n    refuse(reason='over quota')\nexcept Exception as e:\n    pass\nadd(a='x')"
    turn(
        executor,
        [
            ModelReply(tool_calls=(ToolCall("r1", "run_code", {"code": script}),)),
            ModelReply(text="gave up"),
        ],
    )
    found = by_name(spans)
    (refused,) = found["execute_tool refuse"]
    assert refused.status.status_code is StatusCode.ERROR
    assert attributes(refused)["error.type"] == "QUOTA_EXCEEDED"
    assert "over quota" in (refused.status.description or "")
    (invalid,) = found["execute_tool add"]
    assert attributes(invalid)["error.type"] == "INVALID_ARGUMENTS"
    (run_code,) = found["execute_tool run_code"]
    assert run_code.status.status_code is StatusCode.ERROR
    assert attributes(run_code)["error.type"] == "CODE_RUNTIME_ERROR"
    assert parent_of(refused) == parent_of(invalid) == span_id(run_code)


def test_content_is_recorded_when_asked_for() -> None:
    with collected(record_content=True) as exporter:
        turn(
            "inprocess",
            [
                ModelReply(tool_calls=(ToolCall("c1", "add", '{"a": 40, "b": 2}'),)),
                ModelReply(text="42"),
            ],
            mode=Mode.NATIVE,
        )
    found = by_name(exporter)
    (call,) = found["execute_tool add"]
    assert attributes(call)["gen_ai.tool.call.arguments"] == '{"a": 40, "b": 2}'
    assert attributes(call)["gen_ai.tool.call.result"] == "42"
    last_chat = found["chat scripted"][-1]
    assert '"42"' in attributes(last_chat)["gen_ai.output.messages"]
    assert "go" in attributes(last_chat)["gen_ai.input.messages"]


def test_no_provider_means_no_tracer_and_no_spans() -> None:
    configure_tracing(None)  # the global provider, which no test sets: the API's proxy
    assert tracer() is None
    agent = turn("inprocess", [ModelReply(text="fine")])
    assert agent.session.events  # the turn ran as ever


def test_a_failed_turn_marks_the_agent_span(spans: InMemorySpanExporter) -> None:
    with pytest.raises(ScriptMismatch):
        turn("inprocess", [])
    (root,) = by_name(spans)["invoke_agent shop-assistant"]
    assert root.status.status_code is StatusCode.ERROR


GLOBAL_PROVIDER = """
import sys
import anyio
{first}
from codeact import ToolCall, ToolRegistry, tool

@tool
def add(a: int, b: int = 0) -> int:
    '''Add two integers.'''
    return a + b

registry = ToolRegistry()
registry.register(add)
anyio.run(registry.execute, ToolCall("before", "add", {{"a": 1}}))  # no provider yet: no span
imported_before = "opentelemetry.trace" in sys.modules
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # the application's own, set after codeact was used
anyio.run(registry.execute, ToolCall("after", "add", {{"a": 2}}))
ids = [dict(s.attributes)["gen_ai.tool.call.id"] for s in exporter.get_finished_spans()]
print(imported_before, ids)
"""


@pytest.mark.parametrize("api_imported_first", [True, False])
def test_a_global_provider_set_later_is_used_from_then_on(
    tmp_path: Path, api_imported_first: bool
) -> None:
    script = tmp_path / "app.py"
    first = "from opentelemetry import trace" if api_imported_first else ""
    script.write_text(GLOBAL_PROVIDER.format(first=first))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    # with nothing that could receive a span, the first call does not load the API at all
    assert done.stdout.strip() == f"{api_imported_first} ['after']"
