"""HTTP fetch over httpx, limited to allowed hosts at every redirect hop."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
from typing_extensions import TypedDict

from codeact import FrozenJson, Tool, ToolError, tool

MAX_BYTES = 1_000_000
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 15.0
SHOWN_HEADERS = ("content-type", "content-length", "location", "last-modified", "etag")


class FetchResult(TypedDict):
    url: str
    status: int
    headers: dict[str, str]
    text: str
    json: Any
    truncated: bool


def _render(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    note = f"\n[... body truncated at {MAX_BYTES:,} bytes]" if value["truncated"] else ""
    return f"HTTP {value['status']} {value['url']}\n{value['text']}{note}"


def http_tools(allow: Iterable[str]) -> list[Tool]:
    """``fetch`` for the hosts in ``allow`` (names, ``host:port``, or ``*.example.com``)."""
    allowed = tuple(allow)

    def check(url: httpx.URL) -> None:
        if url.scheme not in ("http", "https"):
            raise ToolError(
                f"only http and https URLs can be fetched, not {url.scheme!r}", "POLICY_DENIED"
            )
        host = url.host or ""
        with_port = f"{host}:{url.port}" if url.port else host
        if not any(
            fnmatch.fnmatchcase(host, p) or fnmatch.fnmatchcase(with_port, p) for p in allowed
        ):
            raise ToolError(f"host {with_port!r} is not in the allowed list", "POLICY_DENIED")

    @tool(render=_render, timeout=TIMEOUT_SECONDS * (MAX_REDIRECTS + 1))
    async def fetch(
        url: str,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> FetchResult:
        """Fetch a URL from an allowed host; returns status, headers, text and parsed JSON.

        Args:
            url: An http or https URL.
            method: GET, POST, PUT, PATCH, DELETE or HEAD.
            headers: Extra request headers.
            body: Request body, sent as is.
        """
        if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"):
            raise ToolError(f"method {method!r} is not supported", "INVALID_ARGUMENTS")
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as error:
            raise ToolError(f"invalid URL: {error}", "INVALID_ARGUMENTS") from None
        async with httpx.AsyncClient(
            timeout=TIMEOUT_SECONDS, follow_redirects=False, trust_env=False
        ) as client:
            verb = method.upper()
            for _ in range(MAX_REDIRECTS + 1):
                check(target)
                request = client.build_request(verb, target, headers=headers, content=body)
                try:
                    response = await client.send(request, stream=True)
                except httpx.HTTPError as error:
                    raise ToolError(f"{type(error).__name__}: {error}") from None
                try:
                    if response.is_redirect and "location" in response.headers:
                        target = target.join(response.headers["location"])
                        if response.status_code in (301, 302, 303):
                            verb, body = ("GET" if verb != "HEAD" else "HEAD"), None
                        continue
                    data, truncated = await _read_bounded(response)
                finally:
                    await response.aclose()
                return _result(target, response, data, truncated)
        raise ToolError(f"more than {MAX_REDIRECTS} redirects")

    return [fetch]


async def _read_bounded(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BYTES:
            return b"".join(chunks)[:MAX_BYTES], True
    return b"".join(chunks), False


def _result(url: httpx.URL, response: httpx.Response, data: bytes, truncated: bool) -> FetchResult:
    text = data.decode(response.encoding or "utf-8", "replace")
    parsed: Any = None
    if "json" in response.headers.get("content-type", "") and not truncated:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
    return {
        "url": str(url),
        "status": response.status_code,
        "headers": {k: v for k, v in response.headers.items() if k.lower() in SHOWN_HEADERS},
        "text": text,
        "json": parsed,
        "truncated": truncated,
    }


__all__ = ["http_tools"]
