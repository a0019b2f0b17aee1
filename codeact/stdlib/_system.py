"""``sys``, ``os``, ``os.path``, ``pathlib`` and ``gc`` as scripts see them.

Scripts ask these about the Python they run on, do arithmetic on path strings, and
read an environment. They get true answers about the interpreter, pure functions of
strings, and the environment the host chose to show them (none unless it gave one).
Never the process's own environment, files, working directory, modules or frames, and
nothing a script sets reaches the host: ``setrecursionlimit`` and ``gc.disable`` are
answered for the session alone. Files stay with tools.
"""

from __future__ import annotations

import gc
import os
import pathlib
import posixpath
import stat
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from ..sandbox._errors import SandboxStop
from ..sandbox._guards import Guards
from ..sandbox._ownership import DUNDER_DATA, register_readable
from ._facade import Facade, pick, plain_functions
from ._recorded import entropy

CPYTHON_RECURSION_LIMIT = 1000  # what sys.getrecursionlimit() answers in a fresh CPython


class Environ(Mapping[str, str]):
    """``os.environ``: the environment the host gave the session, read-only."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {str(k): str(v) for k, v in values.items()}

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def copy(self) -> dict[str, str]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"environ({self._values!r})"


class ScriptStream:
    """``sys.stdout`` and ``sys.stderr``: what is written goes where the script prints (or
    to a contextlib redirect's target, while its block runs)."""

    __slots__ = ("_error", "_guards", "encoding")

    def __init__(self, guards: Guards, *, error: bool = False) -> None:
        self._guards = guards
        self._error = error  # the standard error: redirect_stderr's, not redirect_stdout's
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._error:
            self._guards.emit_error(text)
        else:
            self._guards.emit(text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Printed text is already where it goes."""

    def isatty(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<_io.TextIOWrapper encoding='utf-8'>"


class PosixPath(pathlib.PurePosixPath):
    """``pathlib.Path`` in scripts: the same path arithmetic, no file access."""

    __slots__ = ()


def _recursion_limit() -> tuple[Any, Any]:
    """The session's get/setrecursionlimit (the real limit is the process's, untouched)."""
    current = [CPYTHON_RECURSION_LIMIT]

    def getrecursionlimit() -> int:
        return current[0]

    def setrecursionlimit(limit: int) -> None:
        if type(limit) is not int:
            raise TypeError(f"'{type(limit).__name__}' object cannot be interpreted as an integer")
        if limit < 1:
            raise ValueError("recursion limit must be greater or equal than 1")
        current[0] = limit

    return getrecursionlimit, setrecursionlimit


def _exc_info(guards: Guards) -> Any:
    error = sys.exc_info()[1]
    if error is None or isinstance(error, SandboxStop):  # a stop in flight is not the script's
        return (None, None, None)
    return (guards.type_of(error), error, None)  # no traceback: it leads to frames


def _urandom(size: int) -> bytes:
    """``os.urandom``: bounded, and taped in a durable run as every draw of entropy is."""
    return entropy(size)


def _exit(status: Any = None) -> None:
    raise SystemExit(status)


def _getenv(environ: Environ) -> Any:
    def getenv(key: str, default: Any = None) -> Any:
        if type(key) is not str:
            raise TypeError(f"str expected, not {type(key).__name__}")
        return environ.get(key, default)

    return getenv


# Path arithmetic: nothing here reads the filesystem or the environment.
PATH_ARITHMETIC = {
    **plain_functions(
        posixpath,
        "join split splitext basename dirname normpath normcase isabs commonpath "
        "commonprefix splitdrive",
        drained=("paths",),
    ),
    **pick(posixpath, "sep extsep curdir pardir altsep"),
}
OS_PATH = Facade("os.path", dict(PATH_ARITHMETIC))

STATIC_SYSTEM_FACADES = {
    "os.path": OS_PATH,
    # the same path arithmetic under its own name; nothing that reads the filesystem
    "posixpath": Facade("posixpath", dict(PATH_ARITHMETIC)),
    # constants and pure functions of a mode number (no stat() call: that is os's)
    "stat": Facade(
        "stat",
        {
            name: getattr(stat, name)
            for name in dir(stat)
            if name.isupper() or name.startswith("S_IS") or name in ("S_IMODE", "S_IFMT")
        }
        | {"filemode": stat.filemode},
    ),
    "pathlib": Facade(
        "pathlib",
        {
            **pick(pathlib, "PurePath PurePosixPath PureWindowsPath"),
            "Path": PosixPath,
            "PosixPath": PosixPath,
        },
    ),
    "gc": Facade(
        "gc",
        {
            # the host's collector is not the script's to run or stop
            "collect": lambda generation=2: 0,
            "enable": lambda: None,
            "disable": lambda: None,
            "isenabled": lambda: True,
            **pick(gc, "get_count get_threshold"),
        },
    ),
}


def session_system_facades(guards: Guards, environ: Mapping[str, str]) -> dict[str, Facade]:
    """``sys`` and ``os``: they hold the session's stream, recursion limit and environment."""
    getrecursionlimit, setrecursionlimit = _recursion_limit()
    stream, error_stream = ScriptStream(guards), ScriptStream(guards, error=True)
    shown = Environ(environ)
    return {
        "sys": Facade(
            "sys",
            {
                "argv": [""],  # as an interpreter given no script file: no arguments
                **pick(
                    sys,
                    "version version_info hexversion api_version platform byteorder maxsize "
                    "maxunicode float_info int_info float_repr_style getsizeof",
                ),
                "implementation": types.SimpleNamespace(
                    name="cpython", version=sys.version_info, cache_tag=None
                ),
                "stdout": stream,
                "stderr": error_stream,
                "getrecursionlimit": getrecursionlimit,
                "setrecursionlimit": setrecursionlimit,
                "exc_info": lambda: _exc_info(guards),
                "exception": lambda: _exc_info(guards)[1],
                "exit": _exit,
                "getdefaultencoding": lambda: "utf-8",
                "getfilesystemencoding": lambda: "utf-8",
            },
            own=("argv",),
        ),
        "os": Facade(
            "os",
            {
                "name": "posix",
                "path": OS_PATH,
                "environ": shown,
                "getenv": _getenv(shown),
                # C: a str or bytes as it is, a path's text; nothing of the filesystem
                "fspath": os.fspath,
                "urandom": _urandom,
                **pick(posixpath, "sep extsep curdir pardir altsep devnull"),
                "pathsep": ":",
                "linesep": "\n",
            },
        ),
    }


def _register() -> None:
    register_readable(
        Environ,
        type(sys.version_info),
        type(sys.float_info),
        type(sys.int_info),
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        PosixPath,
        type(pathlib.PurePosixPath("a").parents),
    )
    register_readable(ScriptStream, names=("write", "writelines", "flush", "isatty", "encoding"))
    for path_type in (pathlib.PurePosixPath, pathlib.PureWindowsPath, PosixPath):
        DUNDER_DATA[path_type] = frozenset({"__fspath__"})  # os.PathLike: the path's str


# What type() of these shows: the public names they stand for.
for _kind, _module, _name in (
    (Environ, "os", "_Environ"),
    (ScriptStream, "_io", "TextIOWrapper"),
):
    _kind.__module__, _kind.__qualname__ = _module, _name

_register()

__all__ = [
    "CPYTHON_RECURSION_LIMIT",
    "STATIC_SYSTEM_FACADES",
    "Environ",
    "PosixPath",
    "ScriptStream",
    "session_system_facades",
]
