"""Where in the script a facade was called from: the line and function, read from frames.

Frames are read here, on the host's side, and only numbers and names leave: ``logging``
names a record's line and function by it, ``warnings`` a warning's line.
"""

from __future__ import annotations

import sys

from ..sandbox._compiler import SCRIPT_FILENAME


def script_caller(stacklevel: int) -> tuple[int, str]:
    """The line and function of the script frame that called (``stacklevel`` script frames
    up), as CPython's logging and warnings find them; frames are never handed out."""
    frame = sys._getframe(1)
    found: tuple[int, str] | None = None
    while frame is not None:
        if frame.f_code.co_filename == SCRIPT_FILENAME:
            found = (frame.f_lineno, frame.f_code.co_name)
            stacklevel -= 1
            if stacklevel <= 0:
                return found
        frame = frame.f_back  # type: ignore[assignment]
    return found or (0, "(unknown function)")


__all__ = ["script_caller"]
