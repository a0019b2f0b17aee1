"""Provider wire formats: advertisements, tool calls out of assistant messages, results back.

Plain dicts in the shapes the OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages APIs take, so codeact embeds in any loop, ours or not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..contract._call import ToolCall
from ..contract._json import JsonValue
from ..contract._results import ImageBlock, ToolExecutionResult
from ._strict import to_strict

Schema = Mapping[str, JsonValue]

# Advertisement ---------------------------------------------------------------------------


def openai_chat_tools(schemas: Iterable[Schema], *, strict: bool = False) -> list[dict[str, Any]]:
    """``tools`` for Chat Completions; with ``strict``, each schema that allows it is strict."""
    tools = []
    for schema in schemas:
        function: dict[str, Any] = {
            "name": schema["name"],
            "description": schema["description"],
            "parameters": schema["parameters"],
        }
        converted = to_strict(schema["parameters"]) if strict else None
        if converted is not None:
            function["parameters"] = converted
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools


def openai_responses_tools(
    schemas: Iterable[Schema], *, strict: bool = False
) -> list[dict[str, Any]]:
    """Function tools for the Responses API."""
    tools = []
    for schema in schemas:
        converted = to_strict(schema["parameters"]) if strict else None
        tools.append(
            {
                "type": "function",
                "name": schema["name"],
                "description": schema["description"],
                "parameters": converted if converted is not None else schema["parameters"],
                "strict": converted is not None,
            }
        )
    return tools


def anthropic_tools(schemas: Iterable[Schema]) -> list[dict[str, Any]]:
    """``tools`` for Anthropic Messages."""
    return [
        {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
        for s in schemas
    ]


# Tool calls out of assistant messages ----------------------------------------------------


def calls_from_openai_chat(message: Mapping[str, Any] | Any) -> list[ToolCall]:
    """The tool calls of a Chat Completions assistant message (a dict, or the SDK's own
    message object), arguments kept raw."""
    message = _plain(message)
    calls = []
    for item in message.get("tool_calls") or ():
        function = item.get("function") or {}
        calls.append(
            ToolCall(
                str(item.get("id", "")),
                str(function.get("name", "")),
                _raw(function.get("arguments")),
            )
        )
    return calls


def calls_from_openai_responses(output: Iterable[Mapping[str, Any]] | Any) -> list[ToolCall]:
    """The ``function_call`` items of a Responses API output (its items as dicts or as the
    SDK's objects, or the SDK's whole response)."""
    if isinstance(output, Mapping) or hasattr(output, "model_dump"):  # a whole response
        output = _plain(output).get("output") or ()
    output = [_plain(item) for item in output]
    return [
        ToolCall(
            str(item.get("call_id", "")), str(item.get("name", "")), _raw(item.get("arguments"))
        )
        for item in output
        if item.get("type") == "function_call"
    ]


def calls_from_anthropic(message: Mapping[str, Any] | Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of an Anthropic assistant message (a dict, or the SDK's
    own message object)."""
    message = _plain(message)
    return [
        ToolCall(str(block.get("id", "")), str(block.get("name", "")), _raw(block.get("input")))
        for block in message.get("content") or ()
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
    ]


def _plain(value: Any) -> Mapping[str, Any]:
    """A provider SDK's object (pydantic) as the dict of its wire form; a dict as it is."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        plain = dump(mode="json")
        if isinstance(plain, Mapping):
            return plain
    raise TypeError(
        f"expected a provider message (a dict or an SDK object), not {type(value).__name__}"
    )


def _raw(arguments: Any) -> str | Mapping[str, object]:
    if arguments is None:
        return ""
    if isinstance(arguments, str | Mapping):
        return arguments
    return str(arguments)


# Results back ----------------------------------------------------------------------------


def openai_chat_results(results: Sequence[ToolExecutionResult]) -> list[dict[str, Any]]:
    """One ``tool`` message per result, each citing its call id (text only: Chat Completions
    takes no images in tool messages, so an image is its one line)."""
    return [{"role": "tool", "tool_call_id": r.call_id, "content": r.text} for r in results]


def openai_responses_results(results: Sequence[ToolExecutionResult]) -> list[dict[str, Any]]:
    """``function_call_output`` input items, each citing its call id; a result with an
    image sends its parts (``input_text``, ``input_image``)."""
    return [
        {"type": "function_call_output", "call_id": r.call_id, "output": _responses_output(r)}
        for r in results
    ]


def _responses_output(result: ToolExecutionResult) -> str | list[dict[str, Any]]:
    if not any(isinstance(block, ImageBlock) for block in result.content):
        return result.text
    return [
        {"type": "input_image", "image_url": f"data:{block.mime_type};base64,{block.data}"}
        if isinstance(block, ImageBlock)
        else {"type": "input_text", "text": block.text}
        for block in result.content
    ]


def anthropic_results(results: Sequence[ToolExecutionResult]) -> dict[str, Any]:
    """One ``user`` message with a ``tool_result`` block per result, errors flagged; a
    result with an image sends its blocks (text and base64 image)."""
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": _anthropic_content(r),
                "is_error": r.is_error,
            }
            for r in results
        ],
    }


def _anthropic_content(result: ToolExecutionResult) -> str | list[dict[str, Any]]:
    if not any(isinstance(block, ImageBlock) for block in result.content):
        return result.text
    return [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
        }
        if isinstance(block, ImageBlock)
        else {"type": "text", "text": block.text}
        for block in result.content
    ]


# Whole histories ------------------------------------------------------------------------


def openai_chat_messages(
    history: Iterable[Mapping[str, Any]], *, system: str = ""
) -> list[dict[str, Any]]:
    """A session's neutral history as Chat Completions messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for item in history:
        if item["role"] == "assistant":
            if _empty_turn(item):
                continue  # an assistant message needs content or calls; the API refuses it
            text = item.get("content") or ""
            message: dict[str, Any] = {
                "role": "assistant",
                "content": text if text.strip() else None,
            }
            if item.get("tool_calls"):
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in item["tool_calls"]
                ]
            messages.append(message)
        elif item["role"] == "tool":
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": item["content"]}
            )
        else:
            messages.append({"role": "user", "content": item["content"]})
    return messages


def openai_responses_input(history: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A session's neutral history as Responses API input items (the system prompt goes in
    the request's ``instructions``)."""
    items: list[dict[str, Any]] = []
    for item in history:
        if item["role"] == "assistant":
            text = item.get("content") or ""
            if text.strip():
                items.append({"role": "assistant", "content": text})
            for call in item.get("tool_calls") or ():
                arguments = call["arguments"]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["name"],
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    }
                )
        elif item["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": item["call_id"],
                    "output": item["content"],
                }
            )
        else:
            items.append({"role": "user", "content": item["content"]})
    return items


def anthropic_messages(history: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A session's neutral history as Anthropic messages (tool results grouped per user turn)."""
    messages: list[dict[str, Any]] = []
    for item in history:
        if item["role"] == "assistant":
            if _empty_turn(item):
                continue  # an empty text block is refused with 400, and so is every turn after
            text = item.get("content") or ""
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
            for call in item.get("tool_calls") or ():
                arguments = ToolCall(call["id"], call["name"], call["arguments"]).parsed_arguments()
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": arguments if isinstance(arguments, dict) else {},
                    }
                )
            messages.append({"role": "assistant", "content": blocks})
        elif item["role"] == "tool":
            content: str | list[dict[str, Any]] = item["content"]
            if item.get("images"):  # replayed as the result first sent them
                content = [{"type": "text", "text": item["content"]}] + [
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": image["mime_type"],
                            "data": image["data"],
                        },
                    }
                    for image in item["images"]
                ]
            block = {
                "type": "tool_result",
                "tool_use_id": item["call_id"],
                "content": content,
                "is_error": bool(item.get("is_error")),
            }
            if (
                messages
                and messages[-1]["role"] == "user"
                and isinstance(messages[-1]["content"], list)
            ):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        else:
            _add_user_text(messages, item["content"])
    return messages


def _empty_turn(item: Mapping[str, Any]) -> bool:
    """An assistant turn that said nothing and called nothing (a model can answer so)."""
    return not (item.get("content") or "").strip() and not item.get("tool_calls")


def _add_user_text(messages: list[dict[str, Any]], text: str) -> None:
    """A user message; after another user message (an empty assistant turn dropped between
    them, or tool results), it joins that one, as Anthropic wants turns to alternate."""
    if messages and messages[-1]["role"] == "user":
        last = messages[-1]
        blocks = last["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        last["content"] = [*blocks, {"type": "text", "text": text}]
        return
    messages.append({"role": "user", "content": text})


__all__ = [
    "anthropic_messages",
    "anthropic_results",
    "anthropic_tools",
    "calls_from_anthropic",
    "calls_from_openai_chat",
    "calls_from_openai_responses",
    "openai_chat_messages",
    "openai_chat_results",
    "openai_chat_tools",
    "openai_responses_input",
    "openai_responses_results",
    "openai_responses_tools",
    "to_strict",
]
