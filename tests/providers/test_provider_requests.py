"""What the model adapters send and how they read what comes back, against a real HTTP/1.1
server on 127.0.0.1: request bodies valid for the official SDKs' own types, the options a
caller sets, one pooled connection, event streams as the grammar writes them, Retry-After
as servers send it, and no empty assistant turn in any history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import anyio
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from codeact import (
    Agent,
    AnthropicModel,
    Delta,
    ErrorRecorded,
    FinalAnswer,
    FunctionModel,
    InProcessExecutor,
    Mode,
    ModelError,
    ModelReply,
    ModelRequest,
    OpenAIChatModel,
    RetryPolicy,
    Runtime,
    ScriptedModel,
    ToolCall,
    ToolRegistry,
    anthropic_messages,
    openai_chat_messages,
    openai_responses_input,
    openai_responses_tools,
    tool,
)
from tests.hosts import http_server

FAST = RetryPolicy(attempts=5, base_seconds=0.01, max_seconds=0.05, total_seconds=30)


@tool
def lookup(city: str, units: str = "metric") -> str:
    """Look up the weather."""
    return f"{city}: 20 ({units})"


def runtime() -> Runtime:
    registry = ToolRegistry()
    registry.register(lookup)
    return Runtime(registry, executor=InProcessExecutor())


def materialised(value: Any) -> Any:
    """The SDK's validated value with its lazily checked iterables read (which checks them)."""
    if type(value).__name__ == "ValidatorIterator":  # pydantic-core's, not exported
        return [materialised(item) for item in value]
    if isinstance(value, dict):
        return {key: materialised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [materialised(item) for item in value]
    return value


def assert_sdk_valid(kind: Any, body: dict[str, Any]) -> None:
    """Valid for the SDK's type, with nothing in it the type does not know (it would drop it)."""
    assert materialised(TypeAdapter(kind).validate_python(body)) == body


class Endpoint(BaseHTTPRequestHandler):
    """Answers each POST with the next planned reply; counts connections and requests."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints
    replies: ClassVar[list[tuple[int, dict[str, str], bytes]]] = []
    bodies: ClassVar[list[dict[str, Any]]] = []
    headers_seen: ClassVar[list[dict[str, str]]] = []
    connections: ClassVar[int] = 0

    def setup(self) -> None:
        super().setup()
        type(self).connections += 1

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        status, headers, payload = self.replies.pop(0)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def endpoint() -> Iterator[str]:
    Endpoint.replies, Endpoint.bodies, Endpoint.headers_seen = [], [], []
    Endpoint.connections = 0
    with http_server(Endpoint) as url:
        yield url


STREAM = {"Content-Type": "text/event-stream"}


def openai_stream(*chunks: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return 200, STREAM, body.encode()


def openai_text(text: str) -> tuple[int, dict[str, str], bytes]:
    return openai_stream(
        {"choices": [{"index": 0, "delta": {"content": text}}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
    )


def openai_call(call_id: str, arguments: str) -> tuple[int, dict[str, str], bytes]:
    part = {"index": 0, "id": call_id, "function": {"name": "lookup", "arguments": arguments}}
    return openai_stream({"choices": [{"index": 0, "delta": {"tool_calls": [part]}}]})


def anthropic_stream(*events: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return 200, STREAM, body.encode()


def anthropic_text(text: str) -> tuple[int, dict[str, str], bytes]:
    return anthropic_stream(
        {"type": "message_start", "message": {"usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    )


def run(agent: Agent, text: str) -> str:
    async def turn() -> str:
        try:
            return await agent.run(text)
        finally:
            await agent.model.aclose()  # type: ignore[attr-defined]

    return anyio.run(turn)


# Request bodies and options --------------------------------------------------------------


def test_openai_options_are_sent_and_the_body_is_valid_for_the_sdk(endpoint: str) -> None:
    Endpoint.replies = [openai_call("call_1", '{"city": "Oslo", "units": null}'), openai_text("ok")]
    model = OpenAIChatModel(
        model="gpt-x",
        base_url=f"{endpoint}/v1",
        api_key="k",
        temperature=0.2,
        max_completion_tokens=256,
        seed=7,
        tool_choice="required",
        parallel_tool_calls=False,
        reasoning_effort="low",
        strict=True,
        extra_headers={"OpenAI-Organization": "org-1"},
        extra_body={"user": "u-1", "temperature": 0.0},
    )
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST)
    assert run(agent, "Weather in Oslo?") == "ok"
    first, second = Endpoint.bodies
    for body in (first, second):
        assert_sdk_valid(CompletionCreateParamsStreaming, body)
    assert first["temperature"] == 0.0  # extra_body wins
    assert (first["max_completion_tokens"], first["seed"], first["user"]) == (256, 7, "u-1")
    assert (first["tool_choice"], first["parallel_tool_calls"]) == ("required", False)
    assert first["reasoning_effort"] == "low"
    function = first["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["city", "units"]
    assert Endpoint.headers_seen[0]["openai-organization"] == "org-1"
    # the strict model's null meant "not given": the default applied
    assert second["messages"][-1]["content"] == "Oslo: 20 (metric)"


def test_anthropic_options_cache_the_tools_prefix_and_send_betas(endpoint: str) -> None:
    Endpoint.replies = [anthropic_text("Sunny.")]
    model = AnthropicModel(
        model="claude-x",
        base_url=endpoint,
        api_key="k",
        max_tokens=300,
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        cache_tools=True,
        betas=["token-efficient-tools-2025-02-19", "context-1m-2025-08-07"],
        extra_headers={"x-trace": "t-1"},
    )
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST)
    assert run(agent, "Weather?") == "Sunny."
    (body,) = Endpoint.bodies
    assert_sdk_valid(MessageCreateParamsStreaming, body)
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["max_tokens"] == 300
    headers = Endpoint.headers_seen[0]
    assert headers["anthropic-beta"] == "token-efficient-tools-2025-02-19,context-1m-2025-08-07"
    assert headers["x-trace"] == "t-1"


def test_tool_options_are_left_out_of_a_request_without_tools() -> None:
    model = OpenAIChatModel(model="m", api_key="k", tool_choice="auto", parallel_tool_calls=True)
    request = ModelRequest(
        system="", messages=({"role": "user", "content": "hi"},), tools=(), mode="native"
    )
    body = model.request_body(request)
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    assert_sdk_valid(CompletionCreateParamsStreaming, body)


def test_a_responses_request_built_from_the_helpers_is_valid_for_the_sdk() -> None:
    agent = Agent(
        runtime(),
        ScriptedModel(
            [
                ModelReply(tool_calls=(ToolCall("c1", "lookup", {"city": "Rome"}),)),
                ModelReply(text="Warm."),
            ]
        ),
        mode=Mode.NATIVE,
    )
    assert anyio.run(agent.run, "Rome?") == "Warm."
    request = agent.request()
    body = {
        "model": "gpt-x",
        "instructions": request.system,
        "input": openai_responses_input(request.messages),
        "tools": openai_responses_tools(request.tools, strict=True),
    }
    assert_sdk_valid(ResponseCreateParamsNonStreaming, body)
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["user", "function_call", "function_call_output", "assistant"]


# One pooled client ----------------------------------------------------------------------


def test_one_model_keeps_one_connection_across_steps(endpoint: str) -> None:
    Endpoint.replies = [
        openai_call("c1", '{"city": "A"}'),
        openai_call("c2", '{"city": "B"}'),
        openai_text("done"),
    ]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST)
    assert run(agent, "two cities") == "done"
    assert len(Endpoint.bodies) == 3
    assert Endpoint.connections == 1


def test_a_model_used_from_a_second_event_loop_opens_a_client_of_that_loop(endpoint: str) -> None:
    Endpoint.replies = [openai_text("one"), openai_text("two")]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    assert run(Agent(runtime(), model, mode=Mode.NATIVE), "first") == "one"
    assert run(Agent(runtime(), model, mode=Mode.NATIVE), "second") == "two"


# Event streams ---------------------------------------------------------------------------


def test_event_names_ids_comments_and_multi_line_data_are_read(endpoint: str) -> None:
    first = json.dumps({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}, indent=1)
    second = {"choices": [{"index": 0, "delta": {"content": "lo"}}]}
    body = (
        ": keep-alive comment\n\n"
        "event: chunk\nid: 1\n" + "".join(f"data: {line}\n" for line in first.splitlines()) + "\n"
        "retry: 100\nid: 2\ndata: " + json.dumps(second) + "\r\n\r\n"
        "data: [DONE]\n\n"
    )
    Endpoint.replies = [(200, STREAM, body.encode())]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    assert run(Agent(runtime(), model, mode=Mode.NATIVE), "hi") == "Hello"


def test_an_error_inside_an_openai_stream_is_a_retryable_fault(endpoint: str) -> None:
    Endpoint.replies = [
        openai_stream({"error": {"message": "overloaded", "type": "server_error"}}),
        openai_text("recovered"),
    ]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST)
    assert run(agent, "hi") == "recovered"
    (error,) = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert "overloaded" in error.message
    assert error.retryable


# Retry-After -----------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["soon", "Wed, 99 Foo 2026 25:61:61 GMT", "", "nan", "inf"])
def test_an_unreadable_retry_after_falls_back_to_the_policys_backoff(
    endpoint: str, header: str
) -> None:
    Endpoint.replies = [
        (429, {"Content-Type": "application/json", "Retry-After": header}, b'{"error": "slow"}'),
        openai_text("after the wait"),
    ]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST)
    assert run(agent, "hi") == "after the wait"
    (error,) = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert error.message.startswith("429")
    assert error.retryable


def test_a_long_retry_after_is_honoured_in_full_within_the_total_budget() -> None:
    policy = RetryPolicy(max_seconds=8.0, total_seconds=60.0)
    assert policy.delay(1, ModelError("429", retryable=True, retry_after=12.0)) == 12.0
    assert policy.delay(1, ModelError("429", retryable=True, retry_after=-3.0)) == 0.0


def test_a_retry_after_beyond_the_total_budget_gives_up_at_once_with_the_error_recorded(
    endpoint: str,
) -> None:
    Endpoint.replies = [
        (429, {"Content-Type": "application/json", "Retry-After": "120"}, b'{"error": "slow"}'),
    ]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=RetryPolicy(total_seconds=30))
    with pytest.raises(ModelError, match="429"):
        run(agent, "hi")
    assert len(Endpoint.bodies) == 1
    (error,) = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert error.message.startswith("429")


def test_a_fault_of_the_adapter_itself_is_recorded_before_it_is_raised() -> None:
    def broken(request: ModelRequest) -> ModelReply:
        raise KeyError("choices")

    agent = Agent(runtime(), FunctionModel(broken), mode=Mode.NATIVE)
    with pytest.raises(KeyError):
        anyio.run(agent.run, "hi")
    (error,) = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert error.message == "KeyError: 'choices'"


# Empty assistant turns -------------------------------------------------------------------


def silent_then_answering() -> ScriptedModel:
    return ScriptedModel([ModelReply(text=""), ModelReply(text="  \n"), ModelReply(text="Here.")])


def test_no_empty_assistant_turn_reaches_anthropic(endpoint: str) -> None:
    agent = Agent(runtime(), silent_then_answering(), mode=Mode.NATIVE)
    for prompt in ("one", "two", "three"):
        anyio.run(agent.run, prompt)
    messages = anthropic_messages(agent.request().messages)
    roles = [message["role"] for message in messages]
    assert roles == ["user", "assistant"]  # the silent turns dropped, the user turns joined
    assert [block["text"] for block in messages[0]["content"]] == ["one", "two", "three"]
    assert messages[1]["content"] == [{"type": "text", "text": "Here."}]
    body = AnthropicModel(model="m", api_key="k").request_body(agent.request())
    assert_sdk_valid(MessageCreateParamsStreaming, body)


def test_no_assistant_message_without_content_or_calls_reaches_openai() -> None:
    agent = Agent(runtime(), silent_then_answering(), mode=Mode.NATIVE)
    for prompt in ("one", "two", "three"):
        anyio.run(agent.run, prompt)
    messages = openai_chat_messages(agent.request().messages)
    assistants = [message for message in messages if message["role"] == "assistant"]
    assert assistants == [{"role": "assistant", "content": "Here."}]


def test_a_call_with_no_text_keeps_its_call_and_sends_no_empty_text() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": " ",
            "tool_calls": [{"id": "c", "name": "lookup", "arguments": "{}"}],
        },
        {"role": "tool", "call_id": "c", "content": "x", "is_error": False},
    ]
    (assistant,) = [m for m in anthropic_messages(history) if m["role"] == "assistant"]
    assert [block["type"] for block in assistant["content"]] == ["tool_use"]
    (chat,) = [m for m in openai_chat_messages(history) if m["role"] == "assistant"]
    assert chat["content"] is None
    assert chat["tool_calls"][0]["id"] == "c"


def test_a_streamed_reply_reaches_the_turns_stream_piece_by_piece(endpoint: str) -> None:
    Endpoint.replies = [
        openai_stream(
            {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        )
    ]
    model = OpenAIChatModel(model="m", base_url=f"{endpoint}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE)

    async def read() -> list[object]:
        seen: list[object] = []
        async with model, agent.stream("hi") as events:
            async for event in events:
                seen.append(event)
        return seen

    seen = anyio.run(read)
    assert seen == [
        Delta(kind="text", text="Hel"),
        Delta(kind="text", text="lo"),
        FinalAnswer(text="Hello"),
    ]
