"""Model adapters over httpx: OpenAI-compatible Chat Completions and Anthropic Messages.

Both stream by default (text and tool-call deltas go to ``on_delta`` as they arrive)
and record token usage. Provider faults become :class:`ModelError`: 429, 5xx, 529,
timeouts, dropped connections and unreadable bodies are retryable, a 429's
Retry-After is passed on, and context-length refusals are flagged for compaction.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ._call import ToolCall
from ._models import ModelError, ModelReply, ModelRequest
from ._providers import anthropic_messages, anthropic_tools, openai_chat_messages, openai_chat_tools

DEFAULT_TIMEOUT = 120.0
ANTHROPIC_VERSION = "2023-06-01"
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "too many tokens",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Delta:
    """A piece of a streamed reply: text, or part of a tool call's arguments."""

    kind: Literal["text", "tool_call"]
    text: str = ""
    call_index: int = 0
    name: str = ""


DeltaListener = Callable[[Delta], None]


class _HttpModel:
    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        headers: dict[str, str],
        timeout: float,
        stream: bool,
        on_delta: DeltaListener | None,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.timeout = timeout
        self.stream = stream
        self.on_delta = on_delta
        self.transport = transport

    @contextlib.asynccontextmanager
    async def _post(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        async with httpx.AsyncClient(
            timeout=self.timeout, transport=self.transport, trust_env=False
        ) as client:
            try:
                async with client.stream(
                    "POST", self.base_url + path, json=body, headers=self.headers
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise _error_for(response)
                    yield response
            except httpx.TimeoutException as error:
                raise ModelError(
                    f"the model did not answer in time ({type(error).__name__})", retryable=True
                ) from None
            except (httpx.TransportError, httpx.DecodingError) as error:
                raise ModelError(
                    f"the connection failed: {type(error).__name__}: {error}", retryable=True
                ) from None

    def _emit(self, delta: Delta) -> None:
        if self.on_delta is not None:
            self.on_delta(delta)


class OpenAIChatModel(_HttpModel):
    """Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        temperature: float | None = None,
        on_delta: DeltaListener | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        super().__init__(
            model=model,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=timeout,
            stream=stream,
            on_delta=on_delta,
            transport=transport,
        )
        self.temperature = temperature

    async def respond(self, request: ModelRequest) -> ModelReply:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": openai_chat_messages(request.messages, system=request.system),
            "stream": self.stream,
        }
        if request.tools:
            body["tools"] = openai_chat_tools(request.tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        async with self._post("/chat/completions", body) as response:
            if self.stream:
                return await self._read_stream(response)
            return _openai_reply(_json(await response.aread()))

    async def _read_stream(self, response: httpx.Response) -> ModelReply:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: dict[str, Any] = {}
        async for data in _sse_data(response):
            chunk = _json(data)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    self._emit(Delta(kind="text", text=delta["content"]))
                for part in delta.get("tool_calls") or ():
                    slot = calls.setdefault(
                        int(part.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    function = part.get("function") or {}
                    slot["id"] = part.get("id") or slot["id"]
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
                    self._emit(
                        Delta(
                            kind="tool_call",
                            text=function.get("arguments") or "",
                            call_index=int(part.get("index", 0)),
                            name=slot["name"],
                        )
                    )
        return ModelReply(
            text="".join(text),
            tool_calls=tuple(
                ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())
            ),
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
        )


def _openai_reply(payload: dict[str, Any]) -> ModelReply:
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError("the response has no message", retryable=True) from None
    usage = payload.get("usage") or {}
    calls = tuple(
        ToolCall(
            c.get("id", ""),
            (c.get("function") or {}).get("name", ""),
            (c.get("function") or {}).get("arguments") or "",
        )
        for c in message.get("tool_calls") or ()
    )
    return ModelReply(
        text=message.get("content") or "",
        tool_calls=calls,
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
    )


class AnthropicModel(_HttpModel):
    """Anthropic Messages."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        on_delta: DeltaListener | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        super().__init__(
            model=model,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            headers={"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION},
            timeout=timeout,
            stream=stream,
            on_delta=on_delta,
            transport=transport,
        )
        self.max_tokens = max_tokens

    async def respond(self, request: ModelRequest) -> ModelReply:
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            "messages": anthropic_messages(request.messages),
            "stream": self.stream,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = anthropic_tools(request.tools)
        async with self._post("/v1/messages", body) as response:
            if self.stream:
                return await self._read_stream(response)
            return _anthropic_reply(_json(await response.aread()))

    async def _read_stream(self, response: httpx.Response) -> ModelReply:
        text: list[str] = []
        blocks: dict[int, dict[str, str]] = {}
        usage: dict[str, Any] = {}
        async for data in _sse_data(response):
            event = _json(data)
            kind = event.get("type")
            if kind == "message_start":
                usage.update((event.get("message") or {}).get("usage") or {})
            elif kind == "content_block_start":
                block = event.get("content_block") or {}
                if block.get("type") == "tool_use":
                    blocks[int(event.get("index", 0))] = {
                        "id": block.get("id", ""),
                        "name": block.get("name", ""),
                        "input": "",
                    }
            elif kind == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta":
                    text.append(delta.get("text", ""))
                    self._emit(Delta(kind="text", text=delta.get("text", "")))
                elif delta.get("type") == "input_json_delta":
                    index = int(event.get("index", 0))
                    slot = blocks.setdefault(index, {"id": "", "name": "", "input": ""})
                    slot["input"] += delta.get("partial_json", "")
                    self._emit(
                        Delta(
                            kind="tool_call",
                            text=delta.get("partial_json", ""),
                            call_index=index,
                            name=slot["name"],
                        )
                    )
            elif kind == "message_delta":
                usage.update(event.get("usage") or {})
            elif kind == "error":
                raise ModelError(
                    str((event.get("error") or {}).get("message", "stream error")), retryable=True
                )
        return ModelReply(
            text="".join(text),
            tool_calls=tuple(
                ToolCall(b["id"], b["name"], b["input"]) for _, b in sorted(blocks.items())
            ),
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
        )


def _anthropic_reply(payload: dict[str, Any]) -> ModelReply:
    content = payload.get("content")
    if not isinstance(content, list):
        raise ModelError("the response has no content", retryable=True)
    usage = payload.get("usage") or {}
    return ModelReply(
        text="".join(b.get("text", "") for b in content if b.get("type") == "text"),
        tool_calls=tuple(
            ToolCall(b.get("id", ""), b.get("name", ""), b.get("input") or {})
            for b in content
            if b.get("type") == "tool_use"
        ),
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
    )


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The data lines of a server-sent event stream; a body with none is a fault."""
    received = False
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data == "[DONE]":
                return
            if data:
                received = True
                yield data
    if not received:
        raise ModelError("the model's response was not an event stream", retryable=True)


def _json(raw: bytes | str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise ModelError("the model's response was not valid JSON", retryable=True) from None
    if not isinstance(value, dict):
        raise ModelError("the model's response was not a JSON object", retryable=True)
    return value


def _error_for(response: httpx.Response) -> ModelError:
    status = response.status_code
    text = response.text[:500]
    if status == 429:
        return ModelError(
            f"429 rate limited: {text}", retryable=True, retry_after=_retry_after(response)
        )
    if status >= 500:
        return ModelError(
            f"{status} server error: {text}", retryable=True, retry_after=_retry_after(response)
        )
    if any(marker in text.lower() for marker in _CONTEXT_MARKERS):
        return ModelError(f"{status} context too long: {text}", context_length=True)
    return ModelError(f"{status} request refused: {text}")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(parsed.timestamp() - time.time(), 0.0) if parsed else None


__all__ = ["AnthropicModel", "Delta", "OpenAIChatModel"]
