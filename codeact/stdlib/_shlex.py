"""``shlex`` for scripts: ``split``, ``quote``, ``join`` and the lexer class, on text only.

CPython's lexer reads standard input when given no stream, reads files named in its input
when ``source`` is set, prints to standard output when ``debug`` is set, and calls
``readline`` and ``read`` on whatever stream it is given. Here a lexer is the runtime's
own, around a real one that never leaves it: it reads a string, its settings are plain
text, numbers and flags (the lexer's Python code compares and indexes them), and those
three are refused.
"""

from __future__ import annotations

import copy
import shlex as real_shlex
from collections.abc import Callable
from typing import Any

from ..sandbox._ownership import exact_value, register_readable
from ._copy import register_copies
from ._facade import Facade

_TEXT_SETTINGS = ("commenters", "wordchars", "whitespace", "quotes", "escape", "escapedquotes")
_FLAG_SETTINGS = ("whitespace_split", "posix")
_OPTIONAL_TEXT = ("eof", "infile")  # None, or text


def _text(value: Any, what: str) -> str:
    value = exact_value(value)
    if type(value) is not str:
        raise TypeError(f"{what} takes a string in scripts, not {type(value).__name__}")
    return value


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _flag(value: Any, what: str) -> bool | int | str | None:
    """A flag as the lexer tests it (``if self.posix:``): a plain value, whose truth is
    C's to find."""
    value = exact_value(value)
    if type(value) not in (bool, int, str, type(None)):
        raise TypeError(f"{what} takes True or False in scripts, not {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def _setting(name: str, check: Callable[[Any, str], Any]) -> property:
    def read(self: Lexer) -> Any:
        return getattr(self._real, name)

    def write(self: Lexer, value: Any) -> None:
        setattr(self._real, name, check(value, f"shlex's {name}"))

    return property(read, write)


def _integer(value: Any, what: str) -> int:
    value = exact_value(value)
    if type(value) is not int:
        raise TypeError(f"{what} takes an integer in scripts, not {type(value).__name__}")
    return value


def _no_debug(value: Any, what: str) -> int:
    if _integer(value, what):
        raise ValueError("shlex's debug output goes to the host's standard output: not offered")
    return 0


def _no_source(value: Any, what: str) -> None:
    if value is not None:
        raise ValueError("shlex's source inclusion reads files: not offered to scripts")


class Lexer:
    """``shlex.shlex`` as scripts use it: a lexer of a string."""

    __slots__ = ("_real",)

    def __init__(
        self,
        instream: Any = None,
        infile: Any = None,
        posix: Any = False,
        punctuation_chars: Any = False,
    ) -> None:
        text = _text(instream, "shlex.shlex")  # None: CPython's reads standard input
        punctuation = exact_value(punctuation_chars)
        if type(punctuation) not in (bool, str):
            punctuation = _text(punctuation, "shlex's punctuation_chars")
        infile, posix = _optional_text(infile, "shlex's infile"), _flag(posix, "shlex's posix")
        self._real = real_shlex.shlex(text, infile, posix, punctuation)

    lineno = _setting("lineno", _integer)
    debug = _setting("debug", _no_debug)
    source = _setting("source", _no_source)

    @property
    def token(self) -> str:
        return self._real.token

    @property
    def punctuation_chars(self) -> str:
        return self._real.punctuation_chars

    def get_token(self) -> str | None:
        return self._real.get_token()

    def read_token(self) -> str | None:
        return self._real.read_token()

    def push_token(self, tok: Any) -> None:
        # it comes back from get_token, and iteration compares it with eof: text only
        self._real.push_token(_text(tok, "push_token"))

    def push_source(self, newstream: Any, newfile: Any = None) -> None:
        text = _text(newstream, "push_source")
        self._real.push_source(text, _optional_text(newfile, "push_source's newfile"))

    def pop_source(self) -> None:
        self._real.pop_source()

    def error_leader(self, infile: Any = None, lineno: Any = None) -> str:
        infile = _optional_text(infile, "error_leader's infile")
        lineno = None if lineno is None else _integer(lineno, "error_leader's lineno")
        return self._real.error_leader(infile, lineno)

    def __iter__(self) -> Lexer:
        return self

    def __next__(self) -> str:
        return self._real.__next__()


for _name in _TEXT_SETTINGS:
    setattr(Lexer, _name, _setting(_name, _text))
for _name in _FLAG_SETTINGS:
    setattr(Lexer, _name, _setting(_name, _flag))
for _name in _OPTIONAL_TEXT:
    setattr(Lexer, _name, _setting(_name, _optional_text))
Lexer.__name__ = Lexer.__qualname__ = "shlex"
Lexer.__module__ = "shlex"  # type() shows it as CPython's: shlex.shlex
_READABLE = (
    *_TEXT_SETTINGS,
    *_FLAG_SETTINGS,
    *_OPTIONAL_TEXT,
    *("lineno", "debug", "source", "token", "punctuation_chars", "get_token", "read_token"),
    *("push_token", "push_source", "pop_source", "error_leader"),
)
register_readable(Lexer, writable=True, names=_READABLE)


def _copied(lexer: Lexer, copy_real: Callable[[Any], Any]) -> Lexer:
    made = object.__new__(Lexer)
    made._real = copy_real(lexer._real)  # a lexer of the host's own parts: text, a deque
    return made


# as CPython copies one: shallow, the copy reads the same stream; deep, a stream of its own
register_copies(
    Lexer,
    lambda lexer: _copied(lexer, copy.copy),
    lambda lexer: _copied(lexer, copy.deepcopy),
)


def split(s: Any, comments: bool = False, posix: bool = True) -> list[str]:
    """``shlex.split`` of a string only: given None, CPython's reads standard input."""
    if type(s) is not str:
        raise TypeError(f"shlex.split takes a string in scripts, not {type(s).__name__}")
    return real_shlex.split(s, comments=bool(comments), posix=bool(posix))


def quote(s: Any) -> str:
    if type(s) is not str:
        raise TypeError(f"expected string or bytes-like object, got {type(s).__name__!r}")
    return real_shlex.quote(s)


def join(split_command: Any) -> str:
    return " ".join(quote(arg) for arg in split_command)


SHLEX = Facade("shlex", {"split": split, "quote": quote, "join": join, "shlex": Lexer})

__all__ = ["SHLEX", "Lexer"]
