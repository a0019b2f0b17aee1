"""The HTTP model adapters against a real server on 127.0.0.1 that injects faults."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import anyio
import pytest

from codeact import Mode, Runtime, ToolRegistry, tool
from codeact.agent._loop import Agent, RetryPolicy
from codeact.executors._in_process import InProcessExecutor
from codeact.providers._http import AnthropicModel, Delta, OpenAIChatModel
from codeact.providers._models import ModelError
from codeact.session._session import ErrorRecorded, ModelExchange, Session, ToolResultRecorded
from tests.hosts import http_server

FAST_RETRIES = RetryPolicy(attempts=10, base_seconds=0.01, max_seconds=0.5, total_seconds=30)


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


def sse(events: list[dict[str, Any]], done: bool) -> bytes:
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def openai_tool_call() -> bytes:
    return sse(
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "function": {"name": "add", "arguments": '{"a": 4'},
                                }
                            ]
                        },
                    }
                ]
            },
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [{"index": 0, "function": {"arguments": ', "b": 5}'}}]
                        },
                    }
                ]
            },
            {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 7}},
        ],
        done=True,
    )


def openai_text(text: str) -> bytes:
    return sse(
        [
            {"choices": [{"index": 0, "delta": {"content": text[:3]}}]},
            {"choices": [{"index": 0, "delta": {"content": text[3:]}}]},
            {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 2}},
        ],
        done=True,
    )


def anthropic_tool_use() -> bytes:
    return sse(
        [
            {"type": "message_start", "message": {"usage": {"input_tokens": 21}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": 1,'},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": ' "b": 2}'},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "usage": {"output_tokens": 9}},
            {"type": "message_stop"},
        ],
        done=False,
    )


def anthropic_text(text: str) -> bytes:
    return sse(
        [
            {"type": "message_start", "message": {"usage": {"input_tokens": 33}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "message_delta", "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ],
        done=False,
    )


class FaultyServer(BaseHTTPRequestHandler):
    """Answers each request with the next planned behaviour."""

    plan: ClassVar[list[tuple[str, Any]]] = []
    seen: ClassVar[list[tuple[float, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((time.monotonic(), body))
        action, argument = self.plan.pop(0)
        if action == "drop":
            self.close_connection = True
            return
        if action == "slow":
            time.sleep(argument)
            action, argument = "status", (200, b"{}")
        if action == "status":
            status, payload = argument
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "0.3")
            self.send_header("Content-Type", "application/json")
        else:  # "stream"
            status, payload = 200, argument
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
        # a client that timed out on a slow answer has gone: that is what such a test wants
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def server() -> Iterator[str]:
    FaultyServer.plan, FaultyServer.seen = [], []
    with http_server(FaultyServer) as url:
        yield url


def runtime() -> Runtime:
    registry = ToolRegistry()
    registry.register(add)
    return Runtime(registry, executor=InProcessExecutor())


def test_openai_adapter_survives_429_500_drops_malformed_and_slow_responses(server: str) -> None:
    FaultyServer.plan = [
        ("status", (429, b'{"error": "slow down"}')),
        ("status", (500, b'{"error": "boom"}')),
        ("drop", None),
        ("status", (200, b"{not json")),
        ("slow", 6.0),
        ("stream", openai_tool_call()),
        ("stream", openai_text("It is 9.")),
    ]
    deltas: list[Delta] = []
    model = OpenAIChatModel(
        model="m",
        base_url=f"{server}/v1",
        api_key="k",
        timeout=2.0,  # far past a loaded machine's answer, far short of the slow one's
        stream=True,
        on_delta=deltas.append,
    )
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST_RETRIES)
    assert anyio.run(agent.run, "4 + 5?") == "It is 9."
    errors = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert len(errors) == 5
    assert all(e.retryable for e in errors)
    times = [t for t, _ in FaultyServer.seen]
    assert times[1] - times[0] >= 0.3  # Retry-After honoured
    result = next(e for e in agent.session.events if isinstance(e, ToolResultRecorded))
    assert (result.call_id, result.content) == ("call_1", "9")
    exchanges = [e for e in agent.session.events if isinstance(e, ModelExchange)]
    assert [(e.input_tokens, e.output_tokens) for e in exchanges] == [(30, 7), (40, 2)]
    assert exchanges[0].attempts == 6
    assert "".join(d.text for d in deltas if d.kind == "text") == "It is 9."
    assert "".join(d.text for d in deltas if d.kind == "tool_call") == '{"a": 4, "b": 5}'
    last_request = FaultyServer.seen[-1][1]
    assert last_request["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "9",
    }
    assert last_request["tools"][0]["function"]["name"] == "add"


def test_anthropic_adapter_streams_tool_use_and_retries_overload(server: str) -> None:
    FaultyServer.plan = [
        ("status", (529, b'{"type": "error", "error": {"type": "overloaded_error"}}')),
        ("stream", anthropic_tool_use()),
        ("stream", anthropic_text("Three.")),
    ]
    model = AnthropicModel(model="m", base_url=server, api_key="k", timeout=2)
    agent = Agent(runtime(), model, mode=Mode.NATIVE, retry=FAST_RETRIES)
    assert anyio.run(agent.run, "1 + 2?") == "Three."
    result = next(e for e in agent.session.events if isinstance(e, ToolResultRecorded))
    assert (result.call_id, result.content) == ("toolu_1", "3")
    second = FaultyServer.seen[2][1]
    assert second["messages"][-1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "3",
        "is_error": False,
    }
    assert "system" in second


def test_a_context_length_error_calls_the_compaction_hook(server: str) -> None:
    FaultyServer.plan = [
        ("status", (400, b'{"error": {"code": "context_length_exceeded"}}')),
        ("stream", openai_text("short now")),
    ]
    compacted: list[Session] = []

    def compact(session: Session) -> bool:
        compacted.append(session)
        return True

    model = OpenAIChatModel(model="m", base_url=f"{server}/v1", api_key="k")
    agent = Agent(runtime(), model, mode=Mode.NATIVE, compact=compact)
    assert anyio.run(agent.run, "hi") == "short now"
    assert len(compacted) == 1


def test_a_refused_request_is_not_retried(server: str) -> None:
    FaultyServer.plan = [("status", (401, b'{"error": "bad key"}'))]
    agent = Agent(
        runtime(),
        OpenAIChatModel(model="m", base_url=f"{server}/v1", api_key="k"),
        mode=Mode.NATIVE,
    )
    with pytest.raises(ModelError, match="401"):
        anyio.run(agent.run, "hi")
    assert len(FaultyServer.seen) == 1
