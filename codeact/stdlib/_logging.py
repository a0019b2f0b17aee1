"""``logging`` for scripts: loggers, levels, handlers and formats as CPython's, per session.

The real module is host code through and through: a record carries the caller's frames,
a handler or a filter is called with host objects, and its loggers are the process's (one
session's configuration would reach the next session's, and the host's own). This one
keeps what scripts use, in the session: ``basicConfig``, ``getLogger`` and the dotted
hierarchy, the level methods (``exception`` with the traceback), ``StreamHandler``,
``NullHandler`` and ``Formatter`` with ``%``, ``{}`` and ``$`` formats. A record is
formatted here from the script's own line and written to the session's ``sys.stderr``
(which prints where the script prints) or to a stream the script gives, through the
guards. What a record would hand a script (frames, a handler's record, a filter's
callback) is not offered: a script subclasses no class of this module.
"""

from __future__ import annotations

import string
import time
from collections.abc import Mapping
from typing import Any

from ..sandbox._compiler import SCRIPT_FILENAME
from ..sandbox._guards import Guards
from ..sandbox._ownership import register_readable
from ._caller import script_caller
from ._everyday import _strftime
from ._facade import Facade
from ._recorded import now_seconds
from ._traceback import _format, _handled, _only

CRITICAL, ERROR, WARNING, INFO, DEBUG, NOTSET = 50, 40, 30, 20, 10, 0
_LEVEL_NAMES = {
    CRITICAL: "CRITICAL",
    ERROR: "ERROR",
    WARNING: "WARNING",
    INFO: "INFO",
    DEBUG: "DEBUG",
    NOTSET: "NOTSET",
}
BASIC_FORMAT = "%(levelname)s:%(name)s:%(message)s"
_DEFAULT_FORMATS = {"%": "%(message)s", "{": "{message}", "$": "${message}"}
# How a format in each style asks for the record's time (then it is formatted).
_ASKS_TIME = {"%": "%(asctime)", "{": "{asctime", "$": "asctime"}
# The level names setLevel knows; a session adds its own (addLevelName) to a copy.
_STANDARD_LEVELS = {name: level for level, name in _LEVEL_NAMES.items()}


class _Session:
    """One session's logging: its loggers, level names, ``disable`` level and streams."""

    def __init__(self, guards: Guards, stderr: Any) -> None:
        self.guards = guards
        self.stderr = stderr
        self.started = now_seconds()
        self.disabled_below = NOTSET  # logging.disable: this level and below are dropped
        self.level_names = dict(_LEVEL_NAMES)
        self.name_levels = {**_STANDARD_LEVELS, "WARN": WARNING, "FATAL": CRITICAL}
        self.root = Logger(self, "root", WARNING)
        self.loggers: dict[str, Logger] = {}

    def checked_level(self, level: Any) -> int:
        return _checked_level(level, self.name_levels)

    def logger(self, name: Any = None) -> Logger:
        if not name or (isinstance(name, str) and name == self.root.name):
            return self.root
        if type(name) is not str:
            raise TypeError("A logger name must be a string")
        found = self.loggers.get(name)
        if found is not None:
            return found
        made = self.loggers[name] = Logger(self, name, NOTSET, self._nearest_ancestor(name))
        for other in self.loggers.values():  # those below it now have it as their parent
            if other.name.startswith(name + ".") and _is_above(other.parent, made):
                object.__setattr__(other, "parent", made)
        return made

    def _nearest_ancestor(self, name: str) -> Logger:
        while "." in name:
            name = name.rpartition(".")[0]
            found = self.loggers.get(name)
            if found is not None:
                return found
        return self.root

    def write(self, stream: Any, text: str) -> None:
        if stream is None or stream is self.stderr:
            self.stderr.write(text)
        else:  # the script's own stream, as the script would write to it
            self.guards.getattr(stream, "write")(text)


def _checked_level(level: Any, names: Mapping[str, int]) -> int:
    """CPython's ``_checkLevel``: a number, or a level's registered name."""
    if isinstance(level, int):
        return int(level)
    if type(level) is str:
        if level not in names:
            raise ValueError(f"Unknown level: {level!r}")
        return names[level]
    raise TypeError(f"Level not an integer or a valid string: {level!r}")


def _is_above(parent: Logger | None, made: Logger) -> bool:
    """Is ``parent`` the root or an ancestor of ``made`` (so ``made`` is nearer below)?"""
    return parent is None or parent.parent is None or made.name.startswith(parent.name + ".")


class _Record:
    """What a format names: the attributes of CPython's LogRecord that scripts format."""

    __slots__ = ("exc_text", "fields", "message_parts")

    def __init__(self, fields: dict[str, Any], message_parts: tuple[Any, Any]) -> None:
        self.fields = fields
        self.message_parts = message_parts
        self.exc_text: str | None = None


class Formatter:
    """``logging.Formatter``: a record's text from a format in one of three styles."""

    __slots__ = ("_fmt", "_style", "datefmt")

    def __init__(
        self, fmt: Any = None, datefmt: Any = None, style: Any = "%", validate: Any = True
    ) -> None:
        if style not in _DEFAULT_FORMATS:
            raise ValueError(f"Style must be one of: {','.join(_DEFAULT_FORMATS)}")
        if fmt is not None and type(fmt) is not str:
            raise TypeError(f"format must be a string, not {type(fmt).__name__}")
        if datefmt is not None and type(datefmt) is not str:
            raise TypeError(f"datefmt must be a string, not {type(datefmt).__name__}")
        self._fmt: str = _DEFAULT_FORMATS[style] if fmt is None else fmt
        self._style: str = style
        self.datefmt: str | None = datefmt
        if validate and not _names_a_field(self._fmt, style):
            raise ValueError(f"Invalid format '{self._fmt}' for '{style}' style")

    def usesTime(self) -> bool:
        return _ASKS_TIME[self._style] in self._fmt

    def _text(self, session: _Session, record: _Record) -> str:
        fields = record.fields
        fields["message"] = _message(session, *record.message_parts)
        if self.usesTime():
            created = fields["created"]
            when = time.localtime(created)
            if self.datefmt:
                fields["asctime"] = _strftime(self.datefmt, when)
            else:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", when)
                fields["asctime"] = f"{stamp},{int(fields['msecs']):03d}"
        text = _formatted(session.guards, self._fmt, self._style, fields)
        if record.exc_text:
            text = text if text[-1:] == "\n" else text + "\n"
            text += record.exc_text
        return text

    def __repr__(self) -> str:
        return f"<logging.Formatter object at {id(self):#x}>"


def _names_a_field(fmt: str, style: str) -> bool:
    """CPython's check: a format names at least one field of a record."""
    if style == "%":
        return "%(" in fmt
    if style == "{":
        return any(name for _, name, _, _ in string.Formatter().parse(fmt) if name is not None)
    return "$" in fmt


def _formatted(guards: Guards, fmt: str, style: str, fields: dict[str, Any]) -> str:
    if style == "%":
        return str(guards.mod(fmt, fields))  # widths checked as a script's own % is
    if style == "{":
        return str(guards.method(fmt, "format_map", fields))
    return string.Template(fmt).substitute(fields)  # no widths: as long as its parts


def _message(session: _Session, msg: Any, args: tuple[Any, ...]) -> str:
    """CPython's ``getMessage``: ``str(msg)``, then ``% args`` when there are any."""
    text = str(msg)
    if not args:
        return text
    if len(args) == 1 and isinstance(args[0], Mapping) and args[0]:
        return str(session.guards.mod(text, args[0]))
    return str(session.guards.mod(text, args))


class Handler:
    """``logging.Handler``: a level, a formatter, and somewhere to write."""

    __slots__ = ("formatter", "level", "terminator")

    def __init__(self) -> None:
        self.level = NOTSET
        self.formatter: Formatter | None = None
        self.terminator = "\n"

    def setLevel(self, level: Any) -> None:
        self.level = _checked_level(level, _STANDARD_LEVELS)

    def setFormatter(self, fmt: Any) -> None:
        self.formatter = fmt

    def flush(self) -> None:
        """What a handler writes is written at once."""

    def close(self) -> None:
        """Nothing to release: a script's handler holds no file."""

    def _emit(self, session: _Session, record: _Record) -> None:
        del session, record  # a NullHandler's: nothing

    def __setattr__(self, name: str, value: Any) -> None:
        # what a handler does with each (formats with it, appends it) never calls the script
        if name == "terminator" and type(value) is not str:
            raise TypeError("a handler's terminator is a str")
        if name == "level" and type(value) is not int:
            raise TypeError("a handler's level is an int (setLevel takes a name too)")
        if name == "formatter" and value is not None and not isinstance(value, Formatter):
            raise TypeError("a handler's formatter is a logging.Formatter")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} ({_LEVEL_NAMES.get(self.level, self.level)})>"


class StreamHandler(Handler):
    """``logging.StreamHandler``: to ``sys.stderr`` unless given a stream."""

    __slots__ = ("stream",)

    def __init__(self, stream: Any = None) -> None:
        super().__init__()
        self.stream = stream

    def setStream(self, stream: Any) -> Any:
        if stream is self.stream:
            return None
        previous, self.stream = self.stream, stream
        return previous

    def _emit(self, session: _Session, record: _Record) -> None:
        formatter = self.formatter or _DEFAULT_FORMATTER
        try:
            session.write(self.stream, formatter._text(session, record) + self.terminator)
        except RecursionError:
            raise
        except Exception as error:  # CPython reports it on stderr and goes on (a limit or
            session.write(None, _logging_error(error, record))  # a refusal is no Exception)

    def __repr__(self) -> str:
        name = "<stderr> " if self.stream is None else ""
        return f"<StreamHandler {name}({_LEVEL_NAMES.get(self.level, self.level)})>"


class NullHandler(Handler):
    """``logging.NullHandler``: takes records and writes nothing."""

    __slots__ = ()


def _logging_error(error: Exception, record: _Record) -> str:
    msg, args = record.message_parts
    return (
        "--- Logging error ---\n"
        + "".join(_only(error))
        + f"Message: {msg!r}\nArguments: {args!r}\n"
    )


_DEFAULT_FORMATTER = Formatter()


class Logger:
    """``logging.Logger``: a named level in the hierarchy, and its handlers."""

    __slots__ = ("_handlers", "_session", "disabled", "level", "name", "parent", "propagate")
    _handlers: list[Handler]
    _session: _Session
    disabled: bool
    level: int
    name: str
    parent: Logger | None
    propagate: bool

    def __init__(
        self, session: _Session, name: str, level: int, parent: Logger | None = None
    ) -> None:
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "propagate", True)
        object.__setattr__(self, "disabled", False)
        object.__setattr__(self, "_handlers", [])

    @property
    def handlers(self) -> list[Handler]:
        """A copy: handlers are added and removed through the methods."""
        return list(self._handlers)

    @property
    def root(self) -> Logger:
        return self._session.root

    def setLevel(self, level: Any) -> None:
        object.__setattr__(self, "level", self._session.checked_level(level))

    def getEffectiveLevel(self) -> int:
        logger: Logger | None = self
        while logger is not None:
            if logger.level:
                return logger.level
            logger = logger.parent
        return NOTSET

    def isEnabledFor(self, level: Any) -> bool:
        if self.disabled or self._session.disabled_below >= level:
            return False
        return bool(level >= self.getEffectiveLevel())

    def addHandler(self, handler: Any) -> None:
        if not isinstance(handler, Handler):
            raise TypeError("a logger's handler is a logging.Handler")
        if handler not in self._handlers:
            self._handlers.append(handler)

    def removeHandler(self, handler: Any) -> None:
        if handler in self._handlers:
            self._handlers.remove(handler)

    def hasHandlers(self) -> bool:
        logger: Logger | None = self
        while logger is not None:
            if logger._handlers:
                return True
            logger = logger.parent if logger.propagate else None
        return False

    def getChild(self, suffix: Any) -> Logger:
        if type(suffix) is not str:
            raise TypeError("a logger name must be a string")
        name = suffix if self is self._session.root else f"{self.name}.{suffix}"
        return self._session.logger(name)

    def debug(self, msg: Any, *args: Any, **options: Any) -> None:
        if self.isEnabledFor(DEBUG):
            self._log(DEBUG, msg, args, **options)

    def info(self, msg: Any, *args: Any, **options: Any) -> None:
        if self.isEnabledFor(INFO):
            self._log(INFO, msg, args, **options)

    def warning(self, msg: Any, *args: Any, **options: Any) -> None:
        if self.isEnabledFor(WARNING):
            self._log(WARNING, msg, args, **options)

    warn = warning

    def error(self, msg: Any, *args: Any, **options: Any) -> None:
        if self.isEnabledFor(ERROR):
            self._log(ERROR, msg, args, **options)

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **options: Any) -> None:
        if self.isEnabledFor(ERROR):
            self._log(ERROR, msg, args, exc_info=exc_info, **options)

    def critical(self, msg: Any, *args: Any, **options: Any) -> None:
        if self.isEnabledFor(CRITICAL):
            self._log(CRITICAL, msg, args, **options)

    fatal = critical

    def log(self, level: Any, msg: Any, *args: Any, **options: Any) -> None:
        if not isinstance(level, int):
            raise TypeError("level must be an integer")
        if self.isEnabledFor(level):
            self._log(level, msg, args, **options)

    def _log(
        self,
        level: int,
        msg: Any,
        args: tuple[Any, ...],
        exc_info: Any = None,
        extra: Any = None,
        stack_info: Any = False,
        stacklevel: Any = 1,
    ) -> None:
        session = self._session
        line, function = script_caller(stacklevel if type(stacklevel) is int else 1)
        created = now_seconds()
        fields: dict[str, Any] = {
            "name": self.name,
            "msg": msg,
            "args": args,
            "levelno": level,
            "levelname": session.level_names.get(level, f"Level {level}"),
            "pathname": SCRIPT_FILENAME,
            "filename": SCRIPT_FILENAME,
            "module": SCRIPT_FILENAME,
            "lineno": line,
            "funcName": function,
            "created": created,
            "msecs": int((created - int(created)) * 1000) + 0.0,
            "relativeCreated": (created - session.started) * 1000,
            "threadName": "MainThread",
            "processName": "MainProcess",
            "exc_text": None,
            "stack_info": None,
        }
        if extra is not None:
            if type(extra) is not dict:
                raise TypeError("extra must be a dict of the record's added fields")
            for key, value in extra.items():
                if key in ("message", "asctime") or key in fields:
                    raise KeyError(f"Attempt to overwrite {key!r} in LogRecord")
                fields[key] = value
        record = _Record(fields, (msg, args))
        if exc_info:
            error = exc_info if isinstance(exc_info, BaseException) else _handled()
            if isinstance(exc_info, tuple) and len(exc_info) == 3:
                error = exc_info[1]
            record.exc_text = "".join(_format(error, None, True)).rstrip("\n")
        self._handle(record, level)

    def _handle(self, record: _Record, level: int) -> None:
        session = self._session
        found = 0
        logger: Logger | None = self
        while logger is not None:
            for handler in logger.handlers:
                found += 1
                if level >= handler.level:
                    handler._emit(session, record)
            logger = logger.parent if logger.propagate else None
        if not found and level >= WARNING:  # CPython's last resort: the message, on stderr
            _LAST_RESORT._emit(session, record)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("propagate", "disabled"):
            object.__setattr__(self, name, bool(value))
        elif name == "level":
            object.__setattr__(self, name, self._session.checked_level(value))
        else:
            raise AttributeError(f"'Logger' object attribute {name!r} is read-only in scripts")

    def __repr__(self) -> str:
        kind = "RootLogger" if self is self._session.root else "Logger"
        level = self._session.level_names.get(self.getEffectiveLevel())
        return f"<{kind} {self.name} ({level})>"


_LAST_RESORT = StreamHandler()


def logging_facade(guards: Guards, stderr: Any) -> Facade:
    """The module for one session, writing to ``stderr`` (its ``sys.stderr``) by default."""
    session = _Session(guards, stderr)
    root = session.root
    # type(logger) is this stand-in: the class itself would build loggers of no session
    guards.shown[Logger] = logger_type = guards.opaque_type(Logger, "Logger")

    def getLogger(name: Any = None) -> Logger:
        return session.logger(name)

    def basicConfig(**options: Any) -> None:
        if options.pop("force", False):
            root._handlers.clear()
        if root._handlers:
            return
        handlers = options.pop("handlers", None)
        if handlers is None:
            if "stream" in options and "filename" in options:
                raise ValueError("'stream' and 'filename' should not be specified together")
        elif "stream" in options or "filename" in options:
            raise ValueError(
                "'stream' or 'filename' should not be specified together with 'handlers'"
            )
        if handlers is None:
            if options.pop("filename", None):
                raise PermissionError(
                    "logging to a file is not available to scripts: log to sys.stderr (the "
                    "default) or a stream, and print or return what should be kept"
                )
            options.pop("filemode", None)
            handlers = [StreamHandler(options.pop("stream", None))]
        else:
            handlers = list(handlers)
            for handler in handlers:
                if not isinstance(handler, Handler):
                    raise TypeError("basicConfig's handlers are logging.Handler objects")
        style = options.pop("style", "%")
        if style not in _DEFAULT_FORMATS:
            raise ValueError(f"Style must be one of: {','.join(_DEFAULT_FORMATS)}")
        default = {"%": BASIC_FORMAT, "{": "{levelname}:{name}:{message}"}
        fmt = Formatter(
            options.pop("format", default.get(style, "${levelname}:${name}:${message}")),
            options.pop("datefmt", None),
            style,
        )
        for handler in handlers:
            if handler.formatter is None:
                handler.setFormatter(fmt)
            root.addHandler(handler)
        level = options.pop("level", None)
        if level is not None:
            root.setLevel(level)
        options.pop("encoding", None)
        options.pop("errors", None)
        if options:
            raise ValueError(f"Unrecognised argument(s): {', '.join(options)}")

    def at_root(method: str) -> Any:
        def log(*args: Any, **options: Any) -> None:
            if not root._handlers:
                basicConfig()
            getattr(root, method)(*args, **options)

        log.__name__ = log.__qualname__ = method
        return log

    def getLevelName(level: Any) -> Any:
        found = session.level_names.get(level) if isinstance(level, int) else None
        if found is not None:
            return found
        if type(level) is str and level in session.name_levels:
            return session.name_levels[level]
        return f"Level {level}"

    def addLevelName(level: Any, name: Any) -> None:
        if not isinstance(level, int) or type(name) is not str:
            raise TypeError("addLevelName takes a level number and a name")
        session.level_names[int(level)] = name
        session.name_levels[name] = int(level)

    def getLevelNamesMapping() -> dict[str, int]:
        return dict(session.name_levels)

    def disable(level: Any = CRITICAL) -> None:
        session.disabled_below = session.checked_level(level)

    def shutdown() -> None:
        """Handlers here hold nothing to flush or close."""

    return Facade(
        "logging",
        {
            "CRITICAL": CRITICAL,
            "FATAL": CRITICAL,
            "ERROR": ERROR,
            "WARNING": WARNING,
            "WARN": WARNING,
            "INFO": INFO,
            "DEBUG": DEBUG,
            "NOTSET": NOTSET,
            "BASIC_FORMAT": BASIC_FORMAT,
            "root": root,
            "basicConfig": basicConfig,
            "getLogger": getLogger,
            "debug": at_root("debug"),
            "info": at_root("info"),
            "warning": at_root("warning"),
            "warn": at_root("warning"),
            "error": at_root("error"),
            "exception": at_root("exception"),
            "critical": at_root("critical"),
            "fatal": at_root("critical"),
            "log": at_root("log"),
            "getLevelName": getLevelName,
            "addLevelName": addLevelName,
            "getLevelNamesMapping": getLevelNamesMapping,
            "disable": disable,
            "shutdown": shutdown,
            "Logger": logger_type,
            "Handler": guards.opaque_type(Handler, "Handler"),
            "StreamHandler": StreamHandler,
            "NullHandler": NullHandler,
            "Formatter": Formatter,
        },
    )


register_readable(
    Logger,
    writable=True,
    names=(
        "name",
        "level",
        "parent",
        "propagate",
        "disabled",
        "handlers",
        "root",
        "setLevel",
        "getEffectiveLevel",
        "isEnabledFor",
        "addHandler",
        "removeHandler",
        "hasHandlers",
        "getChild",
        "debug",
        "info",
        "warning",
        "warn",
        "error",
        "exception",
        "critical",
        "fatal",
        "log",
    ),
)
register_readable(
    StreamHandler,
    NullHandler,
    writable=True,
    names=(
        "level",
        "formatter",
        "terminator",
        "stream",
        "setLevel",
        "setFormatter",
        "setStream",
        "flush",
        "close",
    ),
)
register_readable(Formatter, names=("datefmt", "usesTime"))
for _kind in (Logger, Handler, StreamHandler, NullHandler, Formatter):
    _kind.__module__ = "logging"  # what a repr shows: never the runtime's own module

__all__ = ["logging_facade"]
