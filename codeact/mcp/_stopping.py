"""How a server goes down with every call answered.

A client whose call is cut off by a stopping server waits for an answer that never comes.
On a stop signal, each call in flight is aborted (its result, sent as usual, says the
server is shutting down), a call that arrives later is refused with the same words, and
only once the answers are on the wire do the workers close and the process end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from ..contract._abort import AbortSignal

SHUTTING_DOWN = "the server is shutting down"
STOP_SECONDS = 10.0  # how long the calls in flight have to be answered
_POLL_SECONDS = 0.01


class Stopping:
    """The calls a server has in flight, and the way it stops them."""

    def __init__(self) -> None:
        self._running: set[AbortSignal] = set()
        self._written: Callable[[], bool] = lambda: True
        self._answered: anyio.Event | None = None  # made by stop(), on the serving loop
        self.stopped = False

    @contextmanager
    def call(self) -> Iterator[AbortSignal]:
        """The abort signal of one call, for as long as it runs (aborted at once when the
        server is already stopping)."""
        signal = AbortSignal()
        if self.stopped:
            signal.abort(SHUTTING_DOWN)
        self._running.add(signal)
        try:
            yield signal
        finally:
            self._running.discard(signal)
            if self._answered is not None and not self._running:
                self._answered.set()

    def watch(self, write_stream: Any) -> None:
        """Know when what the server wrote has left: ``write_stream`` is the stdio
        transport's, with no buffer, so once no message waits to be taken and its writer
        waits for the next one, every answer has been written and flushed."""
        inner = getattr(write_stream, "_inner", write_stream)
        statistics = getattr(inner, "statistics", None)
        if statistics is None:  # another transport: its own shutdown sends what is left
            return

        def written() -> bool:
            now = statistics()
            return bool(now.tasks_waiting_send == 0 and now.tasks_waiting_receive > 0)

        self.settled_when(written)

    def settled_when(self, written: Callable[[], bool]) -> None:
        """Know when what the server wrote has left by ``written`` (the HTTP transport's:
        no request's response still being sent; a handler's answer reaches the response
        a few turns of the loop after the handler returns, later under load)."""
        self._written = written

    async def stop(self, within: float = STOP_SECONDS) -> None:
        """Abort every call in flight and wait (at most ``within`` seconds) until each has
        returned its answer and the answers are written. Call it on the serving loop."""
        self.stopped = True
        self._answered = anyio.Event()
        if not self._running:
            self._answered.set()
        for signal in tuple(self._running):
            signal.abort(SHUTTING_DOWN)
        with anyio.move_on_after(within):
            await self._answered.wait()
            # the server sends a handler's answer a few turns of the loop after it returns
            settled = 0
            while settled < 3:
                settled = settled + 1 if self._written() else 0
                await anyio.sleep(_POLL_SECONDS)


__all__ = ["SHUTTING_DOWN", "STOP_SECONDS", "Stopping"]
