"""``warnings`` for scripts: warn, filter, catch, per session, as CPython shows them.

The real module keeps its filters and registries for the process (a script's
``filterwarnings("ignore")`` would silence the host, and every other session), finds a
warning's module and line in frames, and calls ``showwarning`` hooks with what it holds.
This one keeps the session's filters (CPython's defaults first), shows a warning on the
session's ``sys.stderr`` as CPython formats it for a script run from a string
(``<script>:3: UserWarning: text``), raises it under ``"error"``, records it inside
``catch_warnings(record=True)``, and matches a filter's message with the session's ``re``
(whose matching is bounded in time).
"""

from __future__ import annotations

from typing import Any

from ..sandbox._compiler import SCRIPT_FILENAME
from ..sandbox._ownership import register_readable
from ._caller import script_caller
from ._facade import Facade

ACTIONS = ("default", "error", "ignore", "always", "module", "once")
IGNORE_CASE = 2  # re.IGNORECASE: filterwarnings matches a message so

# (action, message pattern, category, module pattern, line): CPython's defaults
Filter = tuple[str, str | None, type, str | None, int]
DEFAULT_FILTERS: tuple[Filter, ...] = (
    ("default", None, DeprecationWarning, "__main__", 0),
    ("ignore", None, DeprecationWarning, None, 0),
    ("ignore", None, PendingDeprecationWarning, None, 0),
    ("ignore", None, ImportWarning, None, 0),
    ("ignore", None, ResourceWarning, None, 0),
)


class WarningMessage:
    """One warning recorded by ``catch_warnings(record=True)``."""

    __slots__ = ("category", "file", "filename", "line", "lineno", "message", "source")

    def __init__(self, message: Warning, category: type, lineno: int) -> None:
        self.message = message
        self.category = category
        self.filename = SCRIPT_FILENAME
        self.lineno = lineno
        self.file = self.line = self.source = None

    def __str__(self) -> str:
        return (
            f"{{message : {self.message!r}, category : {self.category.__name__!r}, "
            f"filename : {self.filename!r}, lineno : {self.lineno}, line : {self.line!r}}}"
        )


class _Session:
    def __init__(self, stderr: Any, re_facade: Any) -> None:
        self.stderr = stderr
        self.re = re_facade
        self.filters: list[Filter] = list(DEFAULT_FILTERS)
        self.shown: set[tuple[Any, ...]] = set()  # what "default", "module", "once" showed
        self.records: list[WarningMessage] | None = None  # inside catch_warnings(record=True)

    def action_for(self, text: str, category: type, lineno: int) -> str:
        for action, message, kind, module, line in self.filters:
            if (
                (message is None or self.re.match(message, text, IGNORE_CASE) is not None)
                and issubclass(category, kind)
                and (module is None or self.re.match(module, "__main__") is not None)
                and (line == 0 or line == lineno)
            ):
                return action
        return "default"

    def warn(self, message: Any, category: Any = None, stacklevel: Any = 1) -> None:
        if isinstance(message, Warning):
            category = type(message)
        elif category is None:
            category = UserWarning
        if not (isinstance(category, type) and issubclass(category, Warning)):
            raise TypeError(f"category must be a Warning subclass, not '{type(category).__name__}'")
        text = str(message)
        lineno = script_caller(stacklevel if type(stacklevel) is int else 1)[0]
        action = self.action_for(text, category, lineno)
        if action == "error":
            raise message if isinstance(message, Warning) else category(text)
        if action == "ignore":
            return
        key: tuple[Any, ...] = (text, category)
        if action == "default":
            key += (lineno,)
        elif action == "module":
            key += ("module",)
        if action != "always":
            if key in self.shown:
                return
            self.shown.add(key)
        instance = message if isinstance(message, Warning) else category(text)
        if self.records is not None:
            self.records.append(WarningMessage(instance, category, lineno))
        else:
            self.stderr.write(f"{SCRIPT_FILENAME}:{lineno}: {category.__name__}: {text}\n")

    def add(self, entry: Filter, append: Any) -> None:
        if entry in self.filters:
            self.filters.remove(entry)
        if append:
            self.filters.append(entry)
        else:
            self.filters.insert(0, entry)
        self.shown.clear()  # CPython forgets what it showed when the filters change


def _checked_filter(action: Any, category: Any, lineno: Any) -> None:
    if action not in ACTIONS:
        raise AssertionError(f"invalid action: {action!r}")
    if not isinstance(category, type):
        raise AssertionError("category must be a class")
    if not issubclass(category, Warning):
        raise AssertionError("category must be a Warning subclass")
    if type(lineno) is not int or lineno < 0:
        raise AssertionError("lineno must be an int >= 0")


class catch_warnings:
    """Filters changed inside the block are restored at its end; ``record=True`` collects
    the warnings shown inside it instead of printing them."""

    __slots__ = ("_entered", "_record", "_saved", "_session")

    def __init__(self, session: _Session, record: bool = False) -> None:
        self._session = session
        self._record = bool(record)
        self._saved: tuple[list[Filter], list[WarningMessage] | None] | None = None
        self._entered = False

    def __enter__(self) -> list[WarningMessage] | None:
        if self._entered:
            raise RuntimeError(f"Cannot enter {self!r} twice")
        self._entered = True
        session = self._session
        self._saved = (list(session.filters), session.records)
        session.shown.clear()
        if not self._record:
            return None
        session.records = []
        return session.records

    def __exit__(self, *exc_info: object) -> None:
        if self._saved is None:
            raise RuntimeError(f"Cannot exit {self!r} without entering first")
        session = self._session
        session.filters[:], session.records = self._saved
        session.shown.clear()

    def __repr__(self) -> str:
        return f"catch_warnings(record={self._record})"


def warnings_facade(stderr: Any, re_facade: Any) -> Facade:
    """The module for one session: shown on ``stderr`` (its ``sys.stderr``), message
    patterns matched with ``re_facade`` (its ``re``)."""
    session = _Session(stderr, re_facade)

    def warn(message: Any, category: Any = None, stacklevel: Any = 1, source: Any = None) -> None:
        session.warn(message, category, stacklevel)

    def filterwarnings(
        action: Any,
        message: Any = "",
        category: Any = Warning,
        module: Any = "",
        lineno: Any = 0,
        append: Any = False,
    ) -> None:
        _checked_filter(action, category, lineno)
        if type(message) is not str:
            raise AssertionError("message must be a string")
        if type(module) is not str:
            raise AssertionError("module must be a string")
        # an empty pattern matches everything: CPython keeps None for it
        session.add((action, message or None, category, module or None, lineno), append)

    def simplefilter(
        action: Any, category: Any = Warning, lineno: Any = 0, append: Any = False
    ) -> None:
        _checked_filter(action, category, lineno)
        session.add((action, None, category, None, lineno), append)

    def resetwarnings() -> None:
        session.filters.clear()
        session.shown.clear()

    def catch(*, record: Any = False) -> catch_warnings:
        return catch_warnings(session, record)

    def formatwarning(
        message: Any, category: Any, filename: Any, lineno: Any, line: Any = None
    ) -> str:
        name = category.__name__ if isinstance(category, type) else str(category)
        text = f"{filename}:{lineno}: {name}: {message}\n"
        return text + (f"  {line.strip()}\n" if isinstance(line, str) and line.strip() else "")

    catch.__name__ = catch.__qualname__ = "catch_warnings"
    return Facade(
        "warnings",
        {
            "warn": warn,
            "filterwarnings": filterwarnings,
            "simplefilter": simplefilter,
            "resetwarnings": resetwarnings,
            "catch_warnings": catch,
            "formatwarning": formatwarning,
        },
    )


register_readable(
    WarningMessage, names=("message", "category", "filename", "lineno", "line", "file", "source")
)
register_readable(catch_warnings, names=())
for _kind in (WarningMessage, catch_warnings):
    _kind.__module__ = "warnings"  # what a repr shows: never the runtime's own module

__all__ = ["warnings_facade"]
