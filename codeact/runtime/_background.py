"""An event loop in a daemon thread, for the sync API: it never keeps a program from exiting.

anyio's ``start_blocking_portal`` runs its loop in a thread that interpreter exit waits
for, so a script that forgot ``close()`` hung there. This loop's thread is a daemon;
what runs on it is closed by an ``atexit`` hook (which runs before daemon threads stop),
so worker processes and folders are cleaned up even when the program never says so.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

T = TypeVar("T")
START_TIMEOUT_SECONDS = 30.0
CLOSE_TIMEOUT_SECONDS = 30.0


class BackgroundLoop:
    """One event loop thread; ``call`` runs a coroutine function on it and waits."""

    def __init__(self) -> None:
        self._portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._stop: anyio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="codeact-loop", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_SECONDS) or self._portal is None:
            raise RuntimeError("the background event loop did not start")

    def _main(self) -> None:
        async def serve() -> None:
            async with BlockingPortal() as portal:
                self._portal, self._stop = portal, anyio.Event()
                self._ready.set()
                await self._stop.wait()

        anyio.run(serve)

    @property
    def in_its_thread(self) -> bool:
        """Is the caller running on this loop (where nothing may block on it)?"""
        return threading.current_thread() is self._thread

    @property
    def running(self) -> bool:
        return self._portal is not None and self._thread.is_alive()

    @property
    def portal(self) -> BlockingPortal:
        if self._portal is None:
            raise RuntimeError("the background event loop is closed")
        return self._portal

    def call(self, function: Callable[[], Awaitable[T]]) -> T:
        if self._portal is None:
            raise RuntimeError("the background event loop is closed")
        return self._portal.call(function)

    def stop(self) -> None:
        portal, stop = self._portal, self._stop
        self._portal = None
        if portal is not None and stop is not None and self._thread.is_alive():
            portal.call(stop.set)
            self._thread.join(CLOSE_TIMEOUT_SECONDS)


def close_at_exit(owner: object, close: Callable[[], Any]) -> weakref.finalize:  # type: ignore[type-arg]
    """Call ``close`` when ``owner`` is collected or, at the latest, when the program exits.

    weakref's exit hook runs from ``atexit``, before daemon threads are stopped.
    """
    finalizer = weakref.finalize(owner, close)
    finalizer.atexit = True
    return finalizer


__all__ = ["BackgroundLoop", "close_at_exit"]
