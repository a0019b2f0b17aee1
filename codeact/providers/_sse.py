"""Server-sent events from a streamed model response, read by httpx-sse.

httpx-sse follows the event-stream grammar (``event:``, ``id:``, comments, and
``data:`` spread over several lines); this adds what a model stream needs on top:
OpenAI's ``[DONE]`` sentinel, and a body with no events being a fault.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from httpx_sse import EventSource, SSEError

from ._models import ModelError


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The data of each event in order, up to ``[DONE]``.

    The body is read to its end even after ``[DONE]``: a connection whose response was
    left unread cannot go back to the pool.
    """
    received = done = False
    try:
        async for event in EventSource(response).aiter_sse():
            done = done or event.data == "[DONE]"
            if event.data and not done:
                received = True
                yield event.data
    except SSEError as error:
        raise ModelError(
            f"the model's response was not an event stream: {error}", retryable=True
        ) from None
    if not received:
        raise ModelError("the model's response was not an event stream", retryable=True)


__all__ = ["sse_data"]
