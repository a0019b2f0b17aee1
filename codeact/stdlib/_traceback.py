"""``traceback`` for scripts: an error's story told in CPython's words, the script's part only.

The real module walks every frame of a traceback (the runtime's guards and the host's
modules among them, with their file paths) and reads source lines from files through
``linecache``. This one keeps the script's own frames, names each as CPython names a
frame of code run from a string (no source line: there is no file), and follows the
chain of causes and contexts as CPython prints it. It hands out text only: never a
frame, a code object or a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from ..sandbox._compiler import SCRIPT_FILENAME, STRING_FILENAME, STRING_SHOWN_AS
from ..sandbox._errors import SandboxStop
from ..sandbox._guards import Guards
from ..sandbox._ownership import exact_value, register_readable
from ..sandbox._plain_arguments import plain_values
from ._facade import Facade

# Modules whose errors CPython names without their module, and the runtime's own (whose
# inner module names are not the script's business).
_BARE_MODULES = ("__main__", "builtins")
_OWN_PREFIX = "codeact."
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"
_NO_VALUE = object()


def traceback_facade(guards: Guards, stream: Any) -> Facade:
    """The module, printing to ``stream`` (the session's ``sys.stderr``) unless told; a
    ``file`` the script gives is written through the guards, as the script would."""

    def write(file: Any, text: str) -> None:
        if file is None:
            stream.write(text)
        else:
            guards.getattr(file, "write")(text)

    def format_exc(limit: int | None = None, chain: bool = True) -> str:
        return "".join(_format(_handled(), limit, chain))

    def print_exc(limit: int | None = None, file: Any = None, chain: bool = True) -> None:
        write(file, format_exc(limit, chain))

    def format_exception(
        exc: Any,
        value: Any = _NO_VALUE,
        tb: Any = _NO_VALUE,
        limit: int | None = None,
        chain: bool = True,
    ) -> list[str]:
        # tb: only None can be given (a script holds no traceback): the error without its
        # own frames, its causes with theirs, as CPython prints it
        return _format(_error_of(exc, value), limit, chain, own_frames=tb is not None)

    def print_exception(
        exc: Any,
        value: Any = _NO_VALUE,
        tb: Any = _NO_VALUE,
        limit: int | None = None,
        file: Any = None,
        chain: bool = True,
    ) -> None:
        write(file, "".join(format_exception(exc, value, tb, limit, chain)))

    def format_exception_only(exc: Any, value: Any = _NO_VALUE) -> list[str]:
        return _only(_error_of(exc, value))

    return Facade(
        "traceback",
        {
            "format_exc": format_exc,
            "print_exc": print_exc,
            "format_exception": format_exception,
            "print_exception": print_exception,
            "format_exception_only": format_exception_only,
            "TracebackException": TracebackException,
        },
    )


class TracebackException:
    """``traceback.TracebackException`` as scripts use it: the error's story, told as
    ``format_exception`` tells it, captured when this is made (as CPython captures it).
    It holds text and the error's class only; no ``print`` (the session's stream is its
    module's) and no frame summaries (``stack``)."""

    __slots__ = ("_alone", "_chained", "_only", "_text", "exc_type")

    def __init__(
        self,
        exc_type: Any,
        exc_value: Any,
        exc_traceback: Any,
        *,
        limit: Any = None,
        **options: Any,  # lookup_lines, capture_locals and the rest: nothing here to change
    ) -> None:
        self._capture(_error_of(exc_type, exc_value), limit, own_frames=exc_traceback is not None)

    @classmethod
    def from_exception(cls, exc: Any, *, limit: Any = None, **options: Any) -> TracebackException:
        made = object.__new__(cls)
        made._capture(_error_of(exc, _NO_VALUE), limit, own_frames=True)
        return made

    def _capture(self, error: BaseException | None, limit: Any, *, own_frames: bool) -> None:
        limit = exact_value(limit)
        if limit is not None and type(limit) is not int:
            raise TypeError(f"limit takes an integer or None, not {type(limit).__name__}")
        self.exc_type = None if error is None else type(error)
        self._chained = tuple(_format(error, limit, True, own_frames=own_frames))
        self._alone = tuple(_format(error, limit, False, own_frames=own_frames))
        self._only = tuple(_only(error))
        self._text = "None" if error is None else _text_of(error)

    def format(self, *, chain: Any = True) -> Iterator[str]:
        (chain,) = plain_values("format", chain)  # its truth is C's to find, not a script's
        yield from self._chained if chain else self._alone

    def format_exception_only(self) -> Iterator[str]:
        yield from self._only

    def __str__(self) -> str:
        return self._text


TracebackException.__module__ = "traceback"  # type() shows it as CPython's
register_readable(
    TracebackException, names=("format", "format_exception_only", "from_exception", "exc_type")
)


def _handled() -> BaseException | None:
    """The error the script is handling (a stop in flight is not the script's)."""
    error = sys.exc_info()[1]
    return None if isinstance(error, SandboxStop) else error


def _error_of(exc: Any, value: Any) -> BaseException | None:
    error = exc if value is _NO_VALUE else value
    if error is not None and not isinstance(error, BaseException):
        raise TypeError(f"Exception expected for value, {type(error).__name__} found")
    if isinstance(error, SandboxStop):
        return None
    return error


def _format(
    error: BaseException | None, limit: int | None, chain: bool, *, own_frames: bool = True
) -> list[str]:
    if error is None:
        return ["NoneType: None\n"]
    lines: list[str] = []
    _story(error, limit, chain, lines, set(), own_frames)
    return lines


def _story(
    error: BaseException,
    limit: int | None,
    chain: bool,
    lines: list[str],
    seen: set[int],
    own_frames: bool = True,
) -> None:
    """``error``'s causes first (as CPython prints them), then its own frames and line."""
    seen.add(id(error))
    if chain:
        cause, context = error.__cause__, error.__context__
        if cause is not None and id(cause) not in seen:
            _story(cause, limit, chain, lines, seen)
            lines.append(_CAUSE)
        elif context is not None and not error.__suppress_context__ and id(context) not in seen:
            _story(context, limit, chain, lines, seen)
            lines.append(_CONTEXT)
    frames = _script_frames(error.__traceback__) if own_frames else []
    if limit is not None:
        frames = frames[:limit] if limit >= 0 else frames[limit:]
    if frames:
        lines.append("Traceback (most recent call last):\n")
        lines.extend(f'  File "{file}", line {n}, in {name}\n' for file, name, n in frames)
    lines.extend(_only(error))


def _script_frames(traceback: Any) -> list[tuple[str, str, int]]:
    """(file, function name, line) of each of the script's own frames, outermost first;
    code a script gave ``eval`` or ``exec`` is shown as CPython names it, ``<string>``."""
    frames: list[tuple[str, str, int]] = []
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code.co_filename == SCRIPT_FILENAME:
            frames.append((SCRIPT_FILENAME, code.co_name, traceback.tb_lineno))
        elif code.co_filename == STRING_FILENAME:
            frames.append((STRING_SHOWN_AS, code.co_name, traceback.tb_lineno))
        traceback = traceback.tb_next
    return frames


def _only(error: BaseException | None) -> list[str]:
    """The error's last line (and its notes), as ``format_exception_only`` gives them."""
    if error is None:
        return ["NoneType: None\n"]
    kind = type(error)
    name = kind.__qualname__
    module = kind.__module__ if type(kind.__module__) is str else "builtins"
    if module.startswith(_OWN_PREFIX):
        name = kind.__name__
    elif module not in _BARE_MODULES:
        name = f"{module}.{name}"
    text = _text_of(error)
    lines = [f"{name}: {text}\n" if text else f"{name}\n"]
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list):
        lines.extend(f"{note}\n" if type(note) is str else f"{note!r}\n" for note in notes)
    return lines


def _text_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # the script's __str__ failed: CPython says so, and goes on
        return "<exception str() failed>"


__all__ = ["TracebackException", "traceback_facade"]
