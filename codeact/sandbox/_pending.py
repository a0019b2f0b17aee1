"""Pending values: what a write returns while a script is previewed.

In a preview, a call to a tool that writes is planned, not executed; the script gets a
``Pending`` in place of its answer. A script may store it, pass it to another call or
return it; the moment it needs the content (compares, formats, branches on, indexes or
iterates it) the preview cannot go on honestly, so it stops there: ``PreviewStop``,
which no script can catch, names the line and the write whose result was needed.

Passed to a tool, a pending value travels as ``PENDING_MARK`` followed by the planned
call's position, so the host can tell a write that consumes another's result (planned,
the reference kept) from a read that needs one (the preview stops).
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from ._compiler import SCRIPT_FILENAME
from ._errors import SandboxStop

PENDING_MARK = "\x00codeact.pending:"
MAX_MARKED_DEPTH = 64
MAX_NOTED = 10_000


class PreviewStop(SandboxStop):
    """The preview reached a point where the script needs a planned write's result."""

    def __init__(self, message: str, *, position: int, tool: str) -> None:
        super().__init__(message)
        self.position = position
        self.tool = tool


class Pending:
    """The result of a planned write: held, passed on or returned, never looked into."""

    __slots__ = ("_position", "_tool")

    def __init__(self, position: int, tool: str) -> None:
        self._position = position
        self._tool = tool

    def needed(self, what: str) -> NoReturn:
        """Stop the preview: the script ``what`` (reads, compares...) this result."""
        raise PreviewStop(
            f"the script {what} the result of {self._tool}(), a planned write, which "
            "exists only once the write is made",
            position=self._position,
            tool=self._tool,
        )

    @property
    def marked(self) -> str:
        return f"{PENDING_MARK}{self._position}"

    # Every way a script can look into a value: each one stops the preview.
    def __bool__(self) -> bool:  # if/while/and/or on a result the preview has not got
        self.needed("branches on")

    def __eq__(self, other: object) -> bool:  # ==, in, list.index: a comparison
        self.needed("compares")

    def __ne__(self, other: object) -> bool:
        self.needed("compares")

    def __lt__(self, other: object) -> bool:
        self.needed("compares")

    __le__ = __gt__ = __ge__ = __lt__

    def __hash__(self) -> int:  # a dict key or set member by identity: storing, not reading
        return object.__hash__(self)

    def __str__(self) -> str:  # print, str(), f-strings, %: formatting
        self.needed("formats")

    def __repr__(self) -> str:  # repr() and containers' reprs: formatting too
        self.needed("formats")

    def __format__(self, spec: str) -> str:
        self.needed("formats")

    def __getitem__(self, key: object) -> Any:  # r["id"], r[0]: indexing
        self.needed("indexes")

    def __iter__(self) -> Any:  # for, unpacking, list(): iterating
        self.needed("iterates over")

    def __len__(self) -> int:
        self.needed("measures")

    def __contains__(self, item: object) -> bool:
        self.needed("searches")

    def __getattr__(self, name: str) -> Any:  # r.status (the guards send reads here)
        self.needed(f"reads .{name} of")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.needed("calls")

    def __int__(self) -> int:  # int(), float(), round(), range(): converting
        self.needed("converts")

    __float__ = __index__ = __complex__ = __int__

    def __round__(self, ndigits: Any = None) -> Any:
        self.needed("rounds")

    def __add__(self, other: object) -> Any:  # arithmetic, either side: computing with it
        self.needed("computes with")

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __add__
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __add__
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __matmul__ = __rmatmul__ = __add__

    def __neg__(self) -> Any:
        self.needed("computes with")

    __pos__ = __abs__ = __invert__ = __neg__

    def __reduce_ex__(self, protocol: Any) -> Any:  # copy/pickle would read its slots
        self.needed("copies")

    def __reduce__(self) -> Any:
        self.needed("copies")


def marked(value: Any, depth: int = 0) -> Any:
    """``value`` with every pending value in it replaced by its mark (a call's arguments,
    a run's result), so it can cross to the host as JSON.

    Only a pending value makes a mark: text of the script's own that looks like one is
    refused, or a plan would show a write's result where the commit passes that text.
    Containers are read through their builtin base, as ``detach`` reads them after this.
    """
    kind = type(value)
    if kind is Pending:
        return value.marked
    if isinstance(value, str):
        refuse_forged_mark(value)
        return value
    if depth >= MAX_MARKED_DEPTH and isinstance(value, dict | list | tuple):
        raise TypeError(f"a recorded run's values nest at most {MAX_MARKED_DEPTH} levels deep")
    if isinstance(value, dict):
        return {key: marked(item, depth + 1) for key, item in dict.items(value)}
    if isinstance(value, list):
        return [marked(item, depth + 1) for item in list.copy(value)]
    if isinstance(value, tuple):
        return [marked(item, depth + 1) for item in tuple.__getitem__(value, slice(None))]
    return value


def refuse_forged_mark(text: str) -> None:
    """A script's text that starts as a planned write's mark does (forged by hand)."""
    if str.startswith(text, PENDING_MARK):
        raise TypeError(
            "text that starts with the mark of a planned write's result (\\x00codeact.pending:)"
            " cannot leave a recorded run"
        )


def script_line() -> int | None:
    """The line of the script that is running now (its innermost frame): where a call is."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SCRIPT_FILENAME:
            return int(frame.f_lineno)
        frame = frame.f_back
    return None


class CallNotes:
    """The line each call of a recorded run was made on, noted when its arguments are
    bound (in the script's frame) and taken when the call is sent (perhaps in a batch,
    after the script's frame has moved on). Off outside recorded runs: nothing is noted."""

    def __init__(self) -> None:
        self.noting = False
        self._lines: dict[int, int | None] = {}

    def start(self) -> None:
        self.noting = True
        self._lines.clear()

    def stop(self) -> None:
        self.noting = False
        self._lines.clear()

    def note(self, arguments: dict[str, Any]) -> None:
        if len(self._lines) >= MAX_NOTED:  # calls bound and never sent (an unawaited call)
            self._lines.clear()
        self._lines[id(arguments)] = script_line()

    def take(self, arguments: dict[str, Any]) -> int | None:
        """The line noted for these arguments (the same object, still alive: no id reuse)."""
        return self._lines.pop(id(arguments), None)


CALLS = CallNotes()  # one worker process, one run at a time


__all__ = [
    "CALLS",
    "PENDING_MARK",
    "CallNotes",
    "Pending",
    "PreviewStop",
    "marked",
    "refuse_forged_mark",
    "script_line",
]
