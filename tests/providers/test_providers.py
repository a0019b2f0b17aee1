"""Provider formats, checked against the official SDKs' own types."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message, ToolParam, ToolResultBlockParam
from openai.types.chat import (
    ChatCompletionMessage,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
)
from openai.types.responses import FunctionToolParam, Response
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import TypeAdapter

from codeact import (
    ErrorCode,
    TextBlock,
    ToolExecutionFailure,
    ToolExecutionSuccess,
    ToolFailure,
    ToolRegistry,
    tool,
)
from codeact.providers._formats import (
    anthropic_results,
    anthropic_tools,
    calls_from_anthropic,
    calls_from_openai_chat,
    calls_from_openai_responses,
    openai_chat_results,
    openai_chat_tools,
    openai_responses_results,
    openai_responses_tools,
    to_strict,
)


@tool
def search(query: str, limit: int = 10, tags: list[str] | None = None) -> list[str]:
    """Search the index."""
    return []


@tool
def annotate(labels: dict[str, int]) -> None:
    """Attach labels (an open map)."""


def schemas() -> list[dict[str, Any]]:
    registry = ToolRegistry()
    registry.register(search)
    registry.register(annotate)
    return registry.schemas()


def validate(kind: Any, value: Any) -> None:
    """Valid for the SDK type, and nothing in it that the type would drop as unknown."""
    assert TypeAdapter(kind).validate_python(value) == value


@pytest.mark.parametrize("strict", [False, True])
def test_openai_chat_tools_are_valid_sdk_params(strict: bool) -> None:
    for item in openai_chat_tools(schemas(), strict=strict):
        validate(ChatCompletionToolParam, item)


def test_openai_responses_tools_are_valid_sdk_params() -> None:
    for item in openai_responses_tools(schemas(), strict=True):
        validate(FunctionToolParam, item)


def test_anthropic_tools_are_valid_sdk_params() -> None:
    for item in anthropic_tools(schemas()):
        validate(ToolParam, item)


def test_strict_conversion_closes_objects_and_makes_optionals_nullable() -> None:
    converted = to_strict(search.parameters)
    assert converted is not None
    assert converted["required"] == ["query", "limit", "tags"]
    assert converted["additionalProperties"] is False
    assert converted["properties"]["limit"] == {"type": ["integer", "null"]}
    assert {"type": "null"} in converted["properties"]["tags"]["anyOf"]
    assert "default" not in str(converted)


def test_open_maps_have_no_strict_form_and_stay_non_strict() -> None:
    assert to_strict(annotate.parameters) is None
    tools = {
        t["function"]["name"]: t["function"] for t in openai_chat_tools(schemas(), strict=True)
    }
    assert tools["search"]["strict"] is True
    assert "strict" not in tools["annotate"]


def test_calls_are_parsed_out_of_an_openai_chat_message() -> None:
    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query":"x"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{bad"},
                },
            ],
        }
    )
    calls = calls_from_openai_chat(message.model_dump())
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_1", "search", '{"query":"x"}'),
        ("call_2", "search", "{bad"),
    ]
    assert calls_from_openai_chat(message) == calls  # the SDK's own object, as it is


def test_calls_are_parsed_out_of_a_responses_output() -> None:
    response = Response.model_validate(
        {
            "id": "resp_1",
            "created_at": 0,
            "model": "m",
            "object": "response",
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_9",
                    "name": "search",
                    "arguments": '{"query":"y"}',
                },
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )
    calls = calls_from_openai_responses([item.model_dump() for item in response.output])
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_9", "search", '{"query":"y"}')]
    # the SDK's own objects, as they are: the items, or the whole response
    assert calls_from_openai_responses(response.output) == calls
    assert calls_from_openai_responses(response) == calls


def test_calls_are_parsed_out_of_an_anthropic_message() -> None:
    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [
                {"type": "text", "text": "Let me search."},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "z"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    (call,) = calls_from_anthropic(message.model_dump())
    assert (call.id, call.name, call.parsed_arguments()) == ("toolu_1", "search", {"query": "z"})
    assert calls_from_anthropic(message) == [call]  # the SDK's own object, as it is


def results() -> list[ToolExecutionSuccess | ToolExecutionFailure]:
    ok = ToolExecutionSuccess(
        call_id="call_1", name="search", value=[], content=(TextBlock(text="[]"),)
    )
    bad = ToolExecutionFailure(
        call_id="call_2",
        name="search",
        error=ToolFailure(message="bad", code=ErrorCode.INVALID_ARGUMENTS),
        content=(TextBlock(text="Error [INVALID_ARGUMENTS]: bad"),),
    )
    return [ok, bad]


def test_results_render_as_valid_provider_messages_citing_call_ids() -> None:
    chat = openai_chat_results(results())
    for item in chat:
        validate(ChatCompletionToolMessageParam, item)
    assert [m["tool_call_id"] for m in chat] == ["call_1", "call_2"]
    outputs = openai_responses_results(results())
    for item in outputs:
        validate(FunctionCallOutput, item)
    message = anthropic_results(results())
    assert message["role"] == "user"
    for block in message["content"]:
        validate(ToolResultBlockParam, block)
    assert [(b["tool_use_id"], b["is_error"]) for b in message["content"]] == [
        ("call_1", False),
        ("call_2", True),
    ]
