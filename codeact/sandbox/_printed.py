"""What a script printed, as the model reads it: the start and the end within the output
limit, the middle counted but not kept, so a long log costs neither memory nor the run."""

from __future__ import annotations

from collections import deque


class Printed:
    """The first half of ``shown`` characters, and the last half; ``total`` counts all."""

    def __init__(self, shown: int) -> None:
        self._head_room = shown - shown // 2
        self._tail_room = shown // 2
        self._head: list[str] = []
        self._head_chars = 0
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self._head_room - self._head_chars
        if room > 0:
            kept = text[:room]
            self._head.append(kept)
            self._head_chars += len(kept)
            text = text[room:]
        if not text or not self._tail_room:
            return
        text = text[-self._tail_room :]  # a chunk longer than the tail keeps its own end
        self._tail.append(text)
        self._tail_chars += len(text)
        while self._tail_chars - len(self._tail[0]) >= self._tail_room:  # whole chunks first
            self._tail_chars -= len(self._tail.popleft())
        excess = self._tail_chars - self._tail_room
        if excess > 0:
            self._tail[0] = self._tail[0][excess:]
            self._tail_chars -= excess

    @property
    def cut(self) -> int:
        """Characters printed but not kept (the middle)."""
        return self.total - self._head_chars - self._tail_chars

    def text(self) -> str:
        head, tail = "".join(self._head), "".join(self._tail)
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut:,} characters of output cut ...]\n{tail}"


__all__ = ["Printed"]
