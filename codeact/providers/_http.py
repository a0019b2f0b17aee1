"""Model adapters over httpx: OpenAI-compatible Chat Completions and Anthropic Messages.

Both stream by default (text and tool-call deltas go to ``on_delta`` as they arrive),
parsed by httpx-sse, and record token usage. Each model keeps one pooled HTTP client
(keep-alive) per event loop; ``await model.aclose()`` or ``async with model:`` closes it.
Provider faults become :class:`ModelError`: 429, 5xx, 529, timeouts, dropped
connections and unreadable bodies are retryable, a readable Retry-After is passed on,
and context-length refusals are flagged for compaction.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import anyio.lowlevel
import httpx

from ..contract._call import ToolCall
from ._formats import anthropic_messages, anthropic_tools, openai_chat_messages, openai_chat_tools
from ._models import (
    Delta,
    DeltaListener,
    ModelError,
    ModelReply,
    ModelRequest,
    tell_whole_reply,
)
from ._sse import sse_data

DEFAULT_TIMEOUT = 120.0
ANTHROPIC_VERSION = "2023-06-01"
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "too many tokens",
)


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
        client: httpx.AsyncClient | None,
        extra_headers: Mapping[str, str] | None,
        extra_body: Mapping[str, Any] | None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.headers = {**headers, **(extra_headers or {})}
        self.timeout = timeout
        self.stream = stream
        self.on_delta = on_delta
        self.transport = transport
        self.extra_body = dict(extra_body or {})
        self._given_client = client  # the caller's: used, never closed
        self._client: httpx.AsyncClient | None = None
        self._client_loop: object = None

    def _http(self) -> httpx.AsyncClient:
        """The pooled client of the running event loop (connections belong to one loop)."""
        if self._given_client is not None:
            return self._given_client
        loop = anyio.lowlevel.current_token()
        if self._client is None or self._client_loop != loop or self._client.is_closed:
            self._client = httpx.AsyncClient(
                timeout=self.timeout, transport=self.transport, trust_env=False
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections (a client given by the caller stays open)."""
        client, self._client = self._client, None
        if client is not None and self._client_loop == anyio.lowlevel.current_token():
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, **self.extra_body}  # the caller's fields win

    @contextlib.asynccontextmanager
    async def _post(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        client = self._http()
        try:
            async with client.stream(
                "POST", self.base_url + path, json=self._body(body), headers=self.headers
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

    def _emitter(self, request: ModelRequest) -> DeltaListener:
        """Where this request's deltas go: the model's listener and the request's own."""
        listeners = [f for f in (self.on_delta, request.on_delta) if f is not None]

        def emit(delta: Delta) -> None:
            for listener in listeners:
                listener(delta)

        return emit


class OpenAIChatModel(_HttpModel):
    """Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama).

    Request options left as None are not sent, so the server's defaults apply;
    ``extra_body`` adds (or overrides) any field, ``extra_headers`` any header.
    ``strict`` advertises tools in strict mode where their schemas allow it.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        temperature: float | None = None,
        max_tokens: int | None = None,
        max_completion_tokens: int | None = None,
        seed: int | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        reasoning_effort: str | None = None,
        strict: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        on_delta: DeltaListener | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
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
            client=client,
            extra_headers=extra_headers,
            extra_body=extra_body,
        )
        self.strict = strict
        self.options: dict[str, Any] = _given(
            temperature=temperature,
            max_tokens=max_tokens,
            max_completion_tokens=max_completion_tokens,
            seed=seed,
            reasoning_effort=reasoning_effort,
        )
        self.tool_options: dict[str, Any] = _given(
            tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body one step sends (before ``extra_body``)."""
        body: dict[str, Any] = {
            "model": self.name,
            "messages": openai_chat_messages(request.messages, system=request.system),
            "stream": self.stream,
            **self.options,
        }
        if request.tools:  # tool options without tools are refused by the API
            body["tools"] = openai_chat_tools(request.tools, strict=self.strict)
            body.update(self.tool_options)
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    async def respond(self, request: ModelRequest) -> ModelReply:
        async with self._post("/chat/completions", self.request_body(request)) as response:
            if self.stream:
                return await self._read_stream(response, self._emitter(request))
            reply = _openai_reply(_json(await response.aread()))
            tell_whole_reply(request, reply)
            return reply

    async def _read_stream(self, response: httpx.Response, emit: DeltaListener) -> ModelReply:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: dict[str, Any] = {}
        async for data in sse_data(response):
            chunk = _json(data)
            if chunk.get("error"):  # a fault reported inside the stream
                raise ModelError(
                    f"stream error: {json.dumps(chunk['error'])[:500]}", retryable=True
                )
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    emit(Delta(kind="text", text=delta["content"]))
                for part in delta.get("tool_calls") or ():
                    slot = calls.setdefault(
                        int(part.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    function = part.get("function") or {}
                    slot["id"] = part.get("id") or slot["id"]
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
                    emit(
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
    """Anthropic Messages.

    ``cache_tools`` marks the tool definitions as a cache breakpoint (``cache_control``),
    so the prefix every step repeats is read from the prompt cache; ``betas`` are sent as
    the ``anthropic-beta`` header. Sampling fields the current Messages API still takes
    for a model (``temperature`` on older ones) go in ``extra_body``.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        tool_choice: Mapping[str, Any] | None = None,
        cache_tools: bool = False,
        betas: Sequence[str] = (),
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        on_delta: DeltaListener | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        super().__init__(
            model=model,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            headers=headers,
            timeout=timeout,
            stream=stream,
            on_delta=on_delta,
            transport=transport,
            client=client,
            extra_headers=extra_headers,
            extra_body=extra_body,
        )
        self.max_tokens = max_tokens
        self.cache_tools = cache_tools
        self.tool_options: dict[str, Any] = _given(tool_choice=tool_choice)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body one step sends (before ``extra_body``)."""
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            "messages": anthropic_messages(request.messages),
            "stream": self.stream,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            tools = anthropic_tools(request.tools)
            if self.cache_tools:  # the breakpoint covers every tool before it
                tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
            body["tools"] = tools
            body.update(self.tool_options)
        return body

    async def respond(self, request: ModelRequest) -> ModelReply:
        async with self._post("/v1/messages", self.request_body(request)) as response:
            if self.stream:
                return await self._read_stream(response, self._emitter(request))
            reply = _anthropic_reply(_json(await response.aread()))
            tell_whole_reply(request, reply)
            return reply

    async def _read_stream(self, response: httpx.Response, emit: DeltaListener) -> ModelReply:
        text: list[str] = []
        blocks: dict[int, dict[str, str]] = {}
        usage: dict[str, Any] = {}
        async for data in sse_data(response):
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
                    emit(Delta(kind="text", text=delta.get("text", "")))
                elif delta.get("type") == "input_json_delta":
                    index = int(event.get("index", 0))
                    slot = blocks.setdefault(index, {"id": "", "name": "", "input": ""})
                    slot["input"] += delta.get("partial_json", "")
                    emit(
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


def _given(**options: Any) -> dict[str, Any]:
    return {name: value for name, value in options.items() if value is not None}


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds a Retry-After header asks for (a number or an HTTP date); None when it is
    missing or unreadable, so the retry policy's own backoff applies."""
    value = (response.headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:  # an HTTP date is in GMT, whether it says so or not
            moment = moment.replace(tzinfo=datetime.UTC)
        seconds = moment.timestamp() - time.time()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(seconds, 0.0)


__all__ = ["AnthropicModel", "Delta", "OpenAIChatModel"]
