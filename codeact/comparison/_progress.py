"""A one-line progress report for long runs, on a terminal only.

Redrawn in place (a carriage return, no newline) as work finishes; silent when the
stream is not a terminal, so logs and pipes get only the results.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO


class Progress:
    """Tasks done out of a total, with each style's count of successes so far."""

    def __init__(self, total: int, styles: Iterable[str], *, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.shown = self.stream.isatty()
        self.total = total
        self.done = 0
        self.ran: dict[str, int] = dict.fromkeys(styles, 0)
        self.succeeded: dict[str, int] = dict.fromkeys(self.ran, 0)

    def record(self, style: str, success: bool) -> None:
        """One run of one task in ``style`` finished."""
        self.ran[style] = self.ran.get(style, 0) + 1
        self.succeeded[style] = self.succeeded.get(style, 0) + int(success)
        self._draw()

    def task_done(self) -> None:
        self.done += 1
        self._draw()

    def line(self) -> str:
        styles = "  ".join(
            f"{style} {self.succeeded[style]}/{runs} ok" for style, runs in self.ran.items() if runs
        )
        return f"{self.done}/{self.total} tasks" + (f"  ({styles})" if styles else "")

    def close(self) -> None:
        if self.shown:
            print(file=self.stream, flush=True)

    def _draw(self) -> None:
        if self.shown:
            print(f"\r  {self.line()}\x1b[K", end="", file=self.stream, flush=True)


__all__ = ["Progress"]
