"""Cooperative cancellation: one signal that cancels every scope attached to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class AbortSignal:
    """Aborting cancels the work attached to it; calls not yet started never start.

    Use it from the event loop's thread (a worker thread goes through
    ``anyio.from_thread.run_sync(signal.abort)``).
    """

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self.reason is not None

    def abort(self, reason: str = "aborted") -> None:
        if self.reason is None:
            self.reason = reason
        for scope in tuple(self._scopes):
            scope.cancel()

    @contextmanager
    def attached(self, scope: anyio.CancelScope) -> Iterator[None]:
        """Cancel ``scope`` on abort while the block runs (at once if already aborted)."""
        if self.aborted:
            scope.cancel()
        self._scopes.add(scope)
        try:
            yield
        finally:
            self._scopes.discard(scope)


__all__ = ["AbortSignal"]
