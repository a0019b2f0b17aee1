"""The everyday modules agents import: text and data formats, time, small utilities.

Each facade lists its members by name, as in ``_modules.py``. What was changed on
the way in, and why:

- ``io``: buffers whose ``seek`` cannot move far past their end (a write there
  would allocate the gap in one C call); no ``getbuffer`` (a view of the buffer).
- ``csv``: readers tick (a C loop over a long input can be interrupted); no
  ``register_dialect`` or ``field_size_limit`` (state every session shares).
- ``gzip``: ``decompress`` stops at the run's sequence limit (a small bomb would
  otherwise expand in one C call); ``zlib`` likewise, its streaming objects too (``_zlib``).
- ``struct``: a format is sized before anything is packed (``'999999999x'`` is one C
  allocation), and kept as an exact string (the module caches formats for the process);
  no ``pack_into`` (a write into a buffer).
- ``time``: ``sleep`` in short slices, so the run's limits still stop it; no
  ``process_time`` (the host's CPU). ``strftime`` refuses wide fields.
- ``operator``: ``attrgetter`` and ``methodcaller`` read through the guard; the sized
  operators (``mul``, ``pow``, ``lshift``, ``mod``, ``concat``) go through the guards.
- ``contextlib``: ``ExitStack`` and ``suppress`` never suppress a limit; no
  ``redirect_stdout`` (the host's stream).
- ``queue``: single-thread queues without locks; a ``get`` that would wait forever
  raises ``Empty`` instead of hanging the run in a lock no interrupt reaches.
- ``pprint.pprint`` prints where the script's ``print`` prints.
- ``calendar``: ``Calendar``, ``TextCalendar`` and ``HTMLCalendar`` of the runtime's own,
  whose arguments and settings reach calendar's code as plain numbers and text and whose
  methods cannot be replaced on an instance; widths bounded; ``pr*`` print where ``print``
  prints; no ``setfirstweekday`` (the module's one calendar is every session's).
- ``ast``: ``literal_eval`` alone, on text no longer than a script may be (its parse is one
  C call), parsed under the lock every parse takes; no trees (``parse``, the node classes).
- ``cmath``: every function and constant (numbers in, numbers out).
"""

from __future__ import annotations
import __future__

import abc
import array
import ast
import binascii
import calendar
import cmath
import collections
import collections.abc
import contextlib
import csv
import decimal
import functools
import gzip
import heapq
import html
import io
import keyword
import numbers
import operator
import os
import pprint
import re
import secrets
import struct
import sys
import time
import tomllib
import types
import urllib.parse
import zlib
import zoneinfo
from collections.abc import Callable, Iterator
from typing import Any

from ..sandbox._builtins import check_count, clinic_arguments, guarded_type, no_keywords
from ..sandbox._compiler import SCRIPT_FILES
from ..sandbox._errors import LimitExceeded, SecurityViolation, may_suppress, recursion_safe
from ..sandbox._guards import Builtin, Guards
from ..sandbox._ownership import (
    SHOWN,
    FixedMethods,
    exact_value,
    register_base,
    register_readable,
)
from ..sandbox._parsing import parse_in_mode
from ..sandbox._plain_arguments import plain_arguments
from ..sandbox._sealed import seal
from ..sandbox._work_bounds import exact_index, forward_attributes, ticking
from . import _recorded as recorded
from ._copy import register_copies
from ._facade import Facade, checked_class, pick, plain_functions
from ._shlex import SHLEX
from ._zlib import zlib_facade

MAX_SEEK_GAP = 1_000_000
MAX_SLEEP_SLICE = 0.01
MAX_TOKEN_BYTES = 1 << 20
MAX_PPRINT_WIDTH = 10_000
MAX_CALENDAR_WIDTH = 200
MAX_DECIMAL_PRECISION = 10_000
# Decimal exponents and digits scripts may make: int() of one is quadratic in its digits
# (int(Decimal('1e100000')) is 0.4 s in one C call), here a few hundredths of a second.
MAX_DECIMAL_EXPONENT = 30_000
_WIDE_FIELD = re.compile(r"%[-_0^#]*\d{4,}")


# io ------------------------------------------------------------------------------------


def _check_seek(buffer: Any, base: Any, pos: Any, whence: int) -> None:
    """Refuse a position far past the end: a write there would allocate the gap at once."""
    if not isinstance(pos, int):
        return
    here = buffer.tell()
    end = base.seek(buffer, 0, 2)
    base.seek(buffer, here)
    start = {0: 0, 1: here, 2: end}.get(whence, 0)
    if start + pos > end + MAX_SEEK_GAP:
        raise LimitExceeded("sequence size", "seek() far past the end of the buffer")


class StringIO(io.StringIO):
    """``io.StringIO`` whose position cannot be moved far past its end."""

    def seek(self, pos: int, whence: int = 0) -> int:
        _check_seek(self, io.StringIO, pos, whence)
        return super().seek(pos, whence)


class BytesIO(io.BytesIO):
    """``io.BytesIO`` whose position cannot be moved far past its end; no buffer views."""

    def seek(self, pos: int, whence: int = 0) -> int:
        _check_seek(self, io.BytesIO, pos, whence)
        return super().seek(pos, whence)

    def getbuffer(self) -> memoryview:  # a view writes behind the guards, and holds .obj
        raise AttributeError("getbuffer() is not available in scripts")


# csv -----------------------------------------------------------------------------------


def _csv_reader(source: Any, *args: Any, **kwargs: Any) -> Iterator[list[str]]:
    return ticking(csv.reader(source, *args, **kwargs))


forward_attributes(type(csv.reader([])), "line_num")  # the lines read so far, as CPython counts


# ast -----------------------------------------------------------------------------------


_SCALARS = frozenset({int, float, complex, bool, bytes, type(None)})


def _literal_eval(guards: Guards) -> Callable[[Any], Any]:
    def literal_eval(node_or_string: Any) -> Any:
        """A Python literal's value, read from text as CPython's ``ast.literal_eval``."""
        text = node_or_string
        if isinstance(text, str):
            text = str.__str__(text)  # never a subclass's own methods
        else:  # a tree is what CPython's takes besides text: scripts hold none
            # a number's or bytes' repr is the builtin's; another object's could be the script's
            shown = repr(text) if type(text) in _SCALARS else f"<{type(text).__name__} object>"
            raise ValueError(f"malformed node or string: {shown}")
        limit = guards.limits.max_source_chars
        if len(text) > limit:  # parsing is one C call no limit interrupts
            raise LimitExceeded(
                "source size",
                f"the text given to literal_eval has {len(text):,} characters "
                f"(limit {limit:,}, as for a script)",
            )
        return ast.literal_eval(parse_in_mode(text.lstrip(" \t"), "<unknown>", "eval"))

    return literal_eval


# gzip ----------------------------------------------------------------------------------


def _gzip_compress(data: Any, compresslevel: Any = 9, *, mtime: Any = None) -> bytes:
    """gzip's ``compress`` on plain values: its Python code compares the level and takes
    ``int(mtime)``, which would run a script object's ``__eq__`` and ``__int__`` there."""
    data, level, mtime = exact_value(data), exact_index(compresslevel), exact_value(mtime)
    if type(data) not in (bytes, bytearray):
        raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'")
    if type(level) is not int:
        raise TypeError(f"'{type(level).__name__}' object cannot be interpreted as an integer")
    if type(mtime) not in (int, float, type(None)):
        raise TypeError(f"mtime must be a number or None, not {type(mtime).__name__}")
    return gzip.compress(data, level, mtime=mtime)


def _gzip_decompress(guards: Guards) -> Callable[[Any], bytes]:
    def decompress(data: Any) -> bytes:
        """gzip's ``decompress``, member by member as CPython's, every member's output
        counted against the run's sequence limit (a small bomb expands in one C call)."""
        limit = guards.limits.max_sequence_items
        data = exact_value(data)  # a bytes subclass as its bytes
        members: list[bytes] = []
        total = 0
        while True:
            header = io.BytesIO(data)
            if gzip._read_gzip_header(header) is None:  # type: ignore[attr-defined]
                return b"".join(members)
            inflater = zlib.decompressobj(wbits=-zlib.MAX_WBITS)
            out = inflater.decompress(data[header.tell() :], limit - total + 1)
            total += len(out)
            if total > limit:
                raise LimitExceeded("sequence size", f"the data decompresses past {limit:,} bytes")
            if not inflater.eof or len(inflater.unused_data) < 8:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            crc, length = struct.unpack("<II", inflater.unused_data[:8])
            if crc != zlib.crc32(out):
                raise gzip.BadGzipFile("CRC check failed")
            if length != (len(out) & 0xFFFFFFFF):
                raise gzip.BadGzipFile("Incorrect length of data produced")
            members.append(out)
            data = inflater.unused_data[8:].lstrip(b"\x00")

    return decompress


# struct --------------------------------------------------------------------------------


# Parsing a format allocates about 32 bytes per code letter ('bbbb...'; a repeat count
# such as '99b' is one code): past this many letters, the format is refused unparsed.
MAX_FORMAT_CODES = 100_000
_FORMAT_LETTERS = "xcbB?hHiIlLqQnNefdspP"


def _check_format_codes(fmt: Any) -> None:
    text = fmt.decode("latin-1") if type(fmt) is bytes else fmt
    if type(text) is str:
        codes = sum(text.count(letter) for letter in _FORMAT_LETTERS)
        if codes > MAX_FORMAT_CODES:
            raise LimitExceeded("sequence size", f"a struct format of {codes:,} codes")


def _struct_members(guards: Guards) -> dict[str, Any]:
    """``struct`` for one session: every format sized against its sequence limit first."""

    # the limit, not the guards: the stand-in's table of the process keeps ``compiled``
    limit = guards.limits.max_sequence_items

    def compiled(fmt: Any) -> struct.Struct:
        fmt = exact_value(fmt)
        _check_format_codes(fmt)
        made = struct.Struct(fmt)
        if made.size > limit:
            raise LimitExceeded(
                "sequence size", f"the format packs {made.size:,} bytes (limit {limit:,})"
            )
        return made

    # each takes its arguments as _struct's own C function does, refused in its words
    def pack(*args: Any, **keywords: Any) -> bytes:
        no_keywords("_struct.pack", keywords)
        if not args:
            raise TypeError("missing format argument")
        return compiled(args[0]).pack(*args[1:])

    def unpack(*args: Any, **keywords: Any) -> tuple[Any, ...]:
        no_keywords("_struct.unpack", keywords)
        check_count("unpack", args, 2, 2)
        return compiled(args[0]).unpack(args[1])

    def unpack_from(*args: Any, **keywords: Any) -> tuple[Any, ...]:
        names = ("format", "buffer", "offset")
        given = clinic_arguments("unpack_from", names, 2, args, keywords, positional_only=1)
        return compiled(given["format"]).unpack_from(given["buffer"], given.get("offset", 0))

    def iter_unpack(*args: Any, **keywords: Any) -> Iterator[tuple[Any, ...]]:
        no_keywords("_struct.iter_unpack", keywords)
        check_count("iter_unpack", args, 2, 2)
        return ticking(compiled(args[0]).iter_unpack(args[1]))

    def calcsize(*args: Any, **keywords: Any) -> int:
        no_keywords("_struct.calcsize", keywords)
        if len(args) != 1:
            raise TypeError(f"_struct.calcsize() takes exactly one argument ({len(args)} given)")
        fmt = exact_value(args[0])
        _check_format_codes(fmt)
        return struct.calcsize(fmt)

    def make_struct(*args: Any, **keywords: Any) -> struct.Struct:
        return compiled(clinic_arguments("Struct", ("format",), 1, args, keywords)["format"])

    stand_in = guarded_type(struct.Struct, make_struct, without=("pack_into",))
    guards.shown[struct.Struct] = stand_in  # type(s) is struct.Struct
    return {
        "pack": pack,
        "unpack": unpack,
        "unpack_from": unpack_from,
        "iter_unpack": iter_unpack,
        "calcsize": calcsize,
        "Struct": stand_in,
        "error": struct.error,
    }


# time ----------------------------------------------------------------------------------


def _sleep(seconds: float) -> None:
    """``time.sleep`` in slices: the watchdog's interrupt lands between two of them."""
    if not isinstance(seconds, int | float):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as an integer")
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if recorded.TAPE.replaying:  # the wait already happened, when the run was recorded
        return
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, MAX_SLEEP_SLICE))


def _strftime(template: str, *when: Any) -> str:
    if isinstance(template, str) and _WIDE_FIELD.search(template):
        raise LimitExceeded("format width", "strftime() fields wider than 999")
    return time.strftime(template, *when)


# operator ------------------------------------------------------------------------------

_INPLACE_NAMES = {
    f"i{name}": f"{op}="
    for name, op in (
        ("add", "+"),
        ("sub", "-"),
        ("mul", "*"),
        ("truediv", "/"),
        ("floordiv", "//"),
        ("mod", "%"),
        ("pow", "**"),
        ("lshift", "<<"),
        ("rshift", ">>"),
        ("and", "&"),
        ("or", "|"),
        ("xor", "^"),
        ("matmul", "@"),
    )
}


def _operator_members(guards: Guards) -> dict[str, Any]:
    members = pick(
        operator,
        "lt le eq ne ge gt not_ truth is_ is_not abs add and_ index inv invert neg "
        "or_ pos sub truediv xor contains countOf indexOf getitem itemgetter length_hint "
        "matmul call",
    )

    def attrgetter(*names: Any, **keywords: Any) -> Callable[[Any], Any]:
        if keywords:
            raise TypeError("attrgetter() takes no keyword arguments")
        if not names:
            raise TypeError("attrgetter expected 1 argument, got 0")
        if any(type(name) is not str for name in names):
            raise TypeError("attribute name must be a string")

        def read(obj: Any, path: str) -> Any:
            for part in path.split("."):
                obj = guards.getattr(obj, part)
            return obj

        if len(names) == 1:
            return _named_getter(lambda obj: read(obj, names[0]), "attrgetter")
        return _named_getter(lambda obj: tuple(read(obj, name) for name in names), "attrgetter")

    def methodcaller(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        if not args:
            raise TypeError("methodcaller needs at least one argument, the method name")
        name, *rest = args
        if type(name) is not str:
            raise TypeError("method name must be a string")
        return _named_getter(lambda obj: guards.getattr(obj, name)(*rest, **kwargs), "methodcaller")

    def setitem(obj: Any, key: Any, value: Any, /) -> None:
        guards.write(obj)[key] = value

    def delitem(obj: Any, key: Any, /) -> None:
        del guards.write(obj)[key]

    def concat(a: Any, b: Any, /) -> Any:
        if not hasattr(a, "__getitem__"):
            raise TypeError(f"'{type(a).__name__}' object can't be concatenated")
        return guards.inplace("+=", a[:] if isinstance(a, list) else a, b)

    def inplace(op: str) -> Callable[[Any, Any], Any]:
        return lambda a, b, /: guards.inplace(op, a, b)

    def power(base: Any, exp: Any, /) -> Any:  # the builtin pow's guard takes keywords
        return guards.power(base, exp)

    members.update(
        attrgetter=attrgetter,
        methodcaller=methodcaller,
        rshift=operator.rshift,
    )
    written: dict[str, tuple[Callable[..., Any], int]] = {
        "setitem": (setitem, 3),
        "delitem": (delitem, 2),
        "mul": (guards.mul, 2),
        "pow": (power, 2),
        "lshift": (guards.lshift, 2),
        "mod": (guards.mod, 2),
        "floordiv": (guards.floordiv, 2),
        "concat": (concat, 2),
        "iconcat": (inplace("+="), 2),
    }
    written |= {name: (inplace(op), 2) for name, op in _INPLACE_NAMES.items()}
    for name, (call, count) in written.items():
        members[name] = _operator_function(call, name, count)
    return members


def _named_getter(getter: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    """A getter made here, named as the operator class that makes it (never the runtime's
    function that holds it)."""
    getter.__name__ = getter.__qualname__ = name
    return getter


def _operator_function(call: Callable[..., Any], name: str, count: int) -> Builtin:
    """An operator function written here (its parameters positional only), refusing what
    it does not take as operator's own does."""

    @recursion_safe  # refuses
    def refuse(args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        if keywords:
            raise TypeError(f"_operator.{name}() takes no keyword arguments")
        raise TypeError(f"{name} expected {count} arguments, got {len(args)}")

    return Builtin(call, name, refuse)


# contextlib ----------------------------------------------------------------------------


class ExitStack(contextlib.ExitStack):
    """``contextlib.ExitStack`` whose callbacks may suppress the script's errors, not a limit."""

    def __exit__(self, *details: Any) -> bool:
        suppressed = super().__exit__(*details)
        return bool(suppressed) and may_suppress(details[1])


class suppress(contextlib.suppress):
    """``contextlib.suppress``, which never suppresses a limit."""

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> bool:
        return may_suppress(error) and super().__exit__(kind, error, traceback)


class redirect_stdout:
    """``contextlib.redirect_stdout``: while its block runs, what the script prints goes
    to the target's ``write`` (read through the guards). The process's own ``sys.stdout``
    is never touched: the session's stream looks at the session's list of targets.

    Each entry is a one-item tuple of its own, so an exit removes the entry its enter
    made wherever it now is (as CPython restores the stream its enter saw): a block left
    open by a suspended generator, closed later, ends no other block's redirect, and the
    list is emptied as each run starts."""

    __slots__ = ("_entered", "_new_target", "_targets")

    def __init__(self, targets: list[tuple[Any]], new_target: Any) -> None:
        # private: a script reads no name with an underscore on a host object
        self._targets = targets  # the session's, innermost last
        self._new_target = new_target
        self._entered: list[tuple[Any]] = []  # this redirect's entries (it may be reentered)

    def __enter__(self) -> Any:
        entry = (self._new_target,)
        self._targets.append(entry)
        self._entered.append(entry)
        return self._new_target

    def __exit__(self, *details: Any) -> None:
        if not self._entered:
            return
        entry = self._entered.pop()
        for index in range(len(self._targets) - 1, -1, -1):
            if self._targets[index] is entry:
                del self._targets[index]
                return


class redirect_stderr(redirect_stdout):
    """``contextlib.redirect_stderr``: the same, for what is written to ``sys.stderr``."""

    __slots__ = ()


for _redirect in (redirect_stdout, redirect_stderr):
    _redirect.__module__ = "contextlib"


def _contextlib_facade(guards: Guards) -> Facade:
    """``contextlib``, its redirects writing into this session's lists of targets."""

    def redirect_stdout_(new_target: Any) -> redirect_stdout:
        return redirect_stdout(guards.stdout_targets, new_target)

    def redirect_stderr_(new_target: Any) -> redirect_stderr:
        return redirect_stderr(guards.stderr_targets, new_target)

    return Facade(
        "contextlib",
        {
            **pick(contextlib, "contextmanager asynccontextmanager nullcontext closing aclosing"),
            "ExitStack": ExitStack,
            "suppress": suppress,
            "redirect_stdout": redirect_stdout_,
            "redirect_stderr": redirect_stderr_,
        },
    )


# queue ---------------------------------------------------------------------------------


class Empty(Exception):
    """Raised by ``get`` on an empty queue (blocking would wait forever in one thread)."""


class Full(Exception):
    """Raised by ``put`` on a full queue."""


class Queue(FixedMethods):
    """``queue.Queue`` for one thread: FIFO, no locks, nothing that waits."""

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._items: Any = self._make()
        self._unfinished = 0

    def _make(self) -> Any:
        return collections.deque()

    def _push(self, item: Any) -> None:
        self._items.append(item)

    def _pop(self) -> Any:
        return self._items.popleft()

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if self.full():
            raise Full
        self._push(item)
        self._unfinished += 1

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if not self._items:
            raise Empty
        return self._pop()

    def get_nowait(self) -> Any:
        return self.get(False)

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1

    def join(self) -> None:
        if self._unfinished:
            raise RuntimeError("join() would wait forever: no other thread can finish the tasks")


class LifoQueue(Queue):
    """``queue.LifoQueue`` for one thread."""

    def _make(self) -> Any:
        return []

    def _pop(self) -> Any:
        return self._items.pop()


class PriorityQueue(Queue):
    """``queue.PriorityQueue`` for one thread."""

    def _make(self) -> Any:
        return []

    def _push(self, item: Any) -> None:
        heapq.heappush(self._items, item)

    def _pop(self) -> Any:
        return heapq.heappop(self._items)


class SimpleQueue(Queue):
    """``queue.SimpleQueue`` for one thread."""


# decimal -------------------------------------------------------------------------------


class Context(decimal.Context):
    """``decimal.Context`` whose precision stays within what a run may compute."""

    def __init__(
        self,
        prec: int | None = None,
        rounding: str | None = None,
        Emin: int | None = None,
        Emax: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        _check_precision(prec)
        _check_exponent(Emin)
        _check_exponent(Emax)
        Emin = -MAX_DECIMAL_EXPONENT if Emin is None else Emin
        Emax = MAX_DECIMAL_EXPONENT if Emax is None else Emax
        super().__init__(prec, rounding, Emin, Emax, *args, **kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "prec":
            _check_precision(value)
        elif name in ("Emin", "Emax"):
            _check_exponent(value)
        super().__setattr__(name, value)

    def copy(self) -> Context:
        return _script_context(self)


def _check_precision(prec: Any) -> None:
    if isinstance(prec, int) and int.__index__(prec) > MAX_DECIMAL_PRECISION:
        raise LimitExceeded("decimal precision", f"precision above {MAX_DECIMAL_PRECISION:,}")


def _check_exponent(exponent: Any) -> None:
    # int(Decimal('1e600000')) writes the power of ten out: 14 s in one C call
    if isinstance(exponent, int) and abs(int.__index__(exponent)) > MAX_DECIMAL_EXPONENT:
        raise LimitExceeded("decimal exponent", f"exponents beyond {MAX_DECIMAL_EXPONENT:,}")


def _script_context(source: decimal.Context) -> Context:
    return Context(
        prec=source.prec,
        rounding=source.rounding,
        Emin=max(source.Emin, -MAX_DECIMAL_EXPONENT),
        Emax=min(source.Emax, MAX_DECIMAL_EXPONENT),
        capitals=source.capitals,
        clamp=source.clamp,
        flags=[s for s, on in source.flags.items() if on],
        traps=[s for s, on in source.traps.items() if on],
    )


def _sized_decimal(*args: Any, **keywords: Any) -> decimal.Decimal:
    """``Decimal(value)``: exact, as the real one, within the exponents a context allows
    scripts (a decimal is made exactly whatever the context; its integer is not cheap)."""
    given = _decimal_arguments(args, keywords)
    value, context = given.get("value", "0"), given.get("context")
    made = decimal.Decimal(value) if context is None else decimal.Decimal(value, context)
    if made.is_finite():
        _check_exponent(made.adjusted())
        shape = made.as_tuple()
        _check_exponent(shape.exponent)
        _check_exponent(len(shape.digits))
    return made


def _decimal_arguments(args: tuple[Any, ...], keywords: dict[str, Any]) -> dict[str, Any]:
    """``Decimal``'s ``value`` and ``context``, refused in its own (older) words."""
    names = ("value", "context")
    if len(args) + len(keywords) > len(names):
        raise TypeError(f"function takes at most 2 arguments ({len(args) + len(keywords)} given)")
    given = dict(zip(names, args, strict=False))
    for name in keywords:
        if name not in names:
            raise TypeError(f"{name!r} is an invalid keyword argument for this function")
        if name in given:
            position = names.index(name) + 1
            raise TypeError(
                f"argument for function given by name ({name!r}) and position ({position})"
            )
        given[name] = keywords[name]
    return given


Decimal = seal(guarded_type(decimal.Decimal, _sized_decimal))
SHOWN[decimal.Decimal] = Decimal


# zoneinfo ------------------------------------------------------------------------------

# Plain keys reach the real constructor, which refuses what is not one in its own words.
_PLAIN_KEYS = (str, bytes, int, float, bool, type(None))


def _zone(*args: Any, **keywords: Any) -> zoneinfo.ZoneInfo:
    """``ZoneInfo(key)``: a time zone from the system's database, by a key the real class
    checks is a path inside it (never absolute, never above it). Each key's zone is made
    here once, from the plain key (``ZoneInfo(k) is ZoneInfo(k)``, as in CPython), never
    taken from the class's own cache: a zone the host made there holds the host's key."""
    given = len(args) + len(keywords)
    if given > 1:  # the constructor's own parser names itself "function"
        raise TypeError(f"function takes at most 1 argument ({given} given)")
    if not args and "key" not in keywords:
        raise TypeError("function missing required argument 'key' (pos 1)")
    key = exact_value(args[0] if args else keywords["key"])
    if type(key) not in _PLAIN_KEYS:  # a script's object: the lookup would call its methods
        raise TypeError(f"expected str, bytes or os.PathLike object, not {type(key).__name__}")
    made = _ZONES.get(key) if type(key) is str else None
    if made is not None:
        return made
    try:
        made = zoneinfo.ZoneInfo.no_cache(key)
    except ImportError:  # a key not on disk is looked up last in the tzdata package, through
        # importlib.resources, which a confined worker cannot import: no such zone either way
        raise zoneinfo.ZoneInfoNotFoundError(f"No time zone found with key {key}") from None
    return _ZONES.setdefault(key, made)  # the first one made, if two threads raced


# Zones made here, by key: immutable, and at most one per file of the database.
_ZONES: dict[str, zoneinfo.ZoneInfo] = {}


def _available_timezones() -> set[str]:
    """``zoneinfo.available_timezones()``: the keys of the system's database, a new set each
    call. CPython's looks in the tzdata package first, through ``importlib.resources``,
    which a confined worker cannot import: the database's files alone are listed here, as
    CPython lists them (the ``right`` and ``posix`` trees and ``posixrules`` left out)."""
    return set(_system_zones())


@functools.cache  # the system's database, read once for the process
def _system_zones() -> frozenset[str]:
    zones: set[str] = set()
    for root_path in zoneinfo.TZPATH:
        for folder, subfolders, files in os.walk(root_path):
            if folder == root_path:
                subfolders[:] = [name for name in subfolders if name not in ("right", "posix")]
            for name in files:
                path = os.path.join(folder, name)
                key = os.path.relpath(path, root_path)
                if key not in zones and _is_tzif(path):
                    zones.add(key)
    zones.discard("posixrules")
    return frozenset(zones)


def _is_tzif(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"TZif"
    except OSError:
        return False


# what clears or bypasses the process's cache, or reads a file object, is left out
ZoneInfo = seal(
    guarded_type(zoneinfo.ZoneInfo, _zone, without=("clear_cache", "from_file", "no_cache"))
)
SHOWN[zoneinfo.ZoneInfo] = ZoneInfo


def getcontext() -> Context:
    """``decimal.getcontext``: the run's own context, made from the current one on first use
    (the current one may be the host's: a script setting ``prec`` must not change it)."""
    current = decimal.getcontext()
    if type(current) is Context:
        return current
    own = _script_context(current)
    decimal.setcontext(own)
    return own


def session_decimal_context(
    current: decimal.Context | None = None, kept: Context | None = None
) -> Context:
    """A session's decimal context: ``current`` if the script set one of its own, else
    ``kept``, else a fresh one from the defaults (bounded as every script context is)."""
    if type(current) is Context:
        return current
    return kept if kept is not None else _script_context(decimal.DefaultContext)


def setcontext(context: Context) -> None:
    """``decimal.setcontext``, for contexts a script made (whose precision is bounded)."""
    if type(context) is not Context:
        raise TypeError("argument must be a context")
    decimal.setcontext(context)


class localcontext:
    """``decimal.localcontext``: a script context for the block, the old one restored after."""

    def __init__(self, ctx: decimal.Context | None = None, **settings: Any) -> None:
        if set(settings) - {"prec", "rounding"}:
            raise LimitExceeded("decimal context", "only prec and rounding may be set in scripts")
        self._new = _script_context(ctx if ctx is not None else decimal.getcontext())
        for name, value in settings.items():
            setattr(self._new, name, value)
        self._saved: decimal.Context | None = None

    def __enter__(self) -> Context:
        self._saved = decimal.getcontext()
        decimal.setcontext(self._new)
        return self._new

    def __exit__(self, *details: Any) -> None:
        if self._saved is not None:
            decimal.setcontext(self._saved)


# secrets, pprint, calendar -------------------------------------------------------------


def _bounded_bytes(function: Callable[..., Any]) -> Callable[..., Any]:
    def bounded(nbytes: int | None = None) -> Any:
        nbytes = exact_index(nbytes)  # what the function takes, checked: one __index__ call
        if isinstance(nbytes, int) and nbytes > MAX_TOKEN_BYTES:
            raise LimitExceeded("sequence size", f"more than {MAX_TOKEN_BYTES:,} random bytes")
        return function(nbytes)

    return bounded


def _randbits(k: int) -> int:
    k = exact_index(k)
    if isinstance(k, int) and k > MAX_TOKEN_BYTES * 8:
        raise LimitExceeded("integer size", f"randbits({k:,}) asks for too many bits")
    return recorded.ENTROPY.getrandbits(k)


def _randbelow(exclusive_upper_bound: int) -> int:
    if not isinstance(exclusive_upper_bound, int) or exclusive_upper_bound <= 0:
        raise ValueError("Upper bound must be a positive integer.")
    return recorded.ENTROPY.randrange(exclusive_upper_bound)


def _check_layout(options: dict[str, Any], limit: int, *names: str) -> None:
    for name in names:
        if name not in options:
            continue
        value = options[name] = exact_index(options[name])
        if isinstance(value, int) and value > limit:
            raise LimitExceeded("format width", f"{name}={value:,} is above {limit:,}")


def _pformat(obj: Any, *args: Any, **options: Any) -> str:
    for name, value in zip(("indent", "width", "depth"), args, strict=False):
        options[name] = value
    _check_layout(options, MAX_PPRINT_WIDTH, "indent", "width")
    return pprint.pformat(obj, **options)


def _pprint_members(guards: Guards) -> dict[str, Any]:
    def pprint_(obj: Any, *args: Any, **options: Any) -> None:
        options.pop("stream", None)  # the script's output is where it prints
        guards.emit(_pformat(obj, *args, **options) + "\n")

    return {
        "pformat": _pformat,
        "pprint": pprint_,
        "pp": pprint_,
        **PPRINT_CHECKED,
    }


# made once for the process: the wrappers are listed for the tests while they live
PPRINT_CHECKED = plain_functions(pprint, "saferepr isreadable isrecursive")


def _calendar_text(function: Callable[..., str]) -> Callable[..., str]:
    def text(*args: Any, **options: Any) -> str:
        args = tuple(map(exact_index, args))
        options = {name: exact_index(value) for name, value in options.items()}
        for value in (*args[2:], *options.values()):
            if isinstance(value, int) and value > MAX_CALENDAR_WIDTH:
                raise LimitExceeded("format width", f"calendar widths above {MAX_CALENDAR_WIDTH}")
        return function(*args, **options)

    return text


# The widths a TextCalendar method takes, by position (counting its arguments after self)
# and by name: each bounded as the module's month() and calendar() are.
_CALENDAR_WIDTHS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "formatday": ((2,), ("width",)),
    "formatweek": ((1,), ("width",)),
    "formatweekday": ((1,), ("width",)),
    "formatweekheader": ((0,), ("width",)),
    "formatmonthname": ((2,), ("width",)),
    "formatmonth": ((2, 3), ("w", "l")),
    "formatyear": ((1, 2, 3, 4), ("w", "l", "c", "m")),
    "prweek": ((1,), ("width",)),
    "prmonth": ((2, 3), ("w", "l")),
    "pryear": ((1, 2, 3, 4), ("w", "l", "c", "m")),
}
_CALENDAR_SETTINGS = ("firstweekday", "_firstweekday")


@recursion_safe  # converts, and changes nothing
def _calendar_value(value: Any) -> Any:
    """An argument as calendar's Python code may take it: a plain number or text, or a
    week (a list of (day, weekday) pairs) of them. A script's own object would have its
    operators called there (``(i + self.firstweekday) % 7``, ``1 <= month <= 12``)."""
    value = exact_value(value)
    if type(value) in (int, bool, str, type(None)):
        return value
    if type(value) in (list, tuple):
        return type(value)(_calendar_value(each) for each in value)
    raise TypeError(f"calendar takes numbers and text in scripts, not {type(value).__name__}")


def _script_print(text: str) -> None:
    """Print where the calling script prints: its own ``print`` (a run's output)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename not in SCRIPT_FILES:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        raise SecurityViolation("calendar prints only where script code called it")
    frame.f_globals["_print_"](text, end="")  # the guard a script's print() compiles to


def _plain_calendar_method(base: type, name: str) -> Callable[..., Any]:
    method = getattr(base, name)
    positions, names = _CALENDAR_WIDTHS.get(name, ((), ()))

    def call(self: Any, *args: Any, **options: Any) -> Any:
        if not isinstance(self, Calendar):  # Calendar.monthdayscalendar(another_object, ...)
            raise TypeError(f"{base.__name__}.{name} acts only on {base.__name__} objects")
        args = tuple(map(_calendar_value, args))
        options = {key: _calendar_value(value) for key, value in options.items()}
        widths = [args[i] for i in positions if i < len(args)]
        widths += [value for key, value in options.items() if key in names]
        if any(type(width) is int and width > MAX_CALENDAR_WIDTH for width in widths):
            raise LimitExceeded("format width", f"calendar widths above {MAX_CALENDAR_WIDTH}")
        if name.startswith("pr"):  # calendar's own print would write to the host's stdout
            _script_print(getattr(self, "format" + name[2:])(*args, **options))
            return None
        return method(self, *args, **options)

    call.__name__ = name
    call.__qualname__ = f"{base.__name__}.{name}"
    return call


class Calendar(calendar.Calendar):
    """``calendar.Calendar`` as scripts use it: every argument and setting reaches
    calendar's Python code as a plain number or text, and a method cannot be replaced on
    an instance (calendar's code calls them: ``formatweek`` calls ``self.formatday``)."""

    def __init__(self, firstweekday: int = 0) -> None:
        self.firstweekday = firstweekday

    _settings: tuple[str, ...] = _CALENDAR_SETTINGS

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._settings:
            raise AttributeError(f"'{type(self).__name__}' object attribute {name!r} is read-only")
        object.__setattr__(self, name, _calendar_value(value))


class TextCalendar(Calendar, calendar.TextCalendar):
    """``calendar.TextCalendar`` as scripts use it: as ``Calendar``, its widths bounded as
    the module's ``month`` bounds them, its ``pr`` methods printing where the script prints."""


# HTMLCalendar's CSS class names: set on an instance as plain text (or a list of it)
_HTML_SETTINGS = tuple(name for name in vars(calendar.HTMLCalendar) if name.startswith("cssclass"))


class HTMLCalendar(Calendar, calendar.HTMLCalendar):
    """``calendar.HTMLCalendar`` as scripts use it: as ``Calendar``; its CSS class names
    may be set on an instance, and the class's own lists are tuples here (a list on the
    class would be every session's to change)."""

    _settings = (*_CALENDAR_SETTINGS, *_HTML_SETTINGS)
    # tuples where typeshed names lists: calendar's code only indexes them
    cssclasses = tuple(calendar.HTMLCalendar.cssclasses)  # type: ignore[assignment]
    cssclasses_weekday_head = cssclasses  # type: ignore[assignment]


def _public_methods(kind: type) -> list[str]:
    return [
        name for name in vars(kind) if not name.startswith("_") and callable(getattr(kind, name))
    ]


CALENDAR_METHODS = _public_methods(calendar.Calendar)
TEXT_CALENDAR_METHODS = _public_methods(calendar.TextCalendar)
HTML_CALENDAR_METHODS = _public_methods(calendar.HTMLCalendar)
for _name in CALENDAR_METHODS:
    setattr(Calendar, _name, _plain_calendar_method(calendar.Calendar, _name))
for _name in TEXT_CALENDAR_METHODS:
    setattr(TextCalendar, _name, _plain_calendar_method(calendar.TextCalendar, _name))
for _name in HTML_CALENDAR_METHODS:
    setattr(HTMLCalendar, _name, _plain_calendar_method(calendar.HTMLCalendar, _name))


def _print_calendar_text(function: Callable[..., str]) -> Callable[..., None]:
    text = _calendar_text(function)

    def print_(*args: Any, **options: Any) -> None:
        _script_print(text(*args, **options))

    return print_


# The facades ---------------------------------------------------------------------------


def _collections_abc() -> Facade:
    return Facade(
        "collections.abc",
        pick(
            collections.abc,
            "Container Hashable Iterable Iterator Reversible Generator Sized Callable "
            "Collection Sequence MutableSequence Set MutableSet Mapping MutableMapping "
            "MappingView KeysView ItemsView ValuesView Awaitable Coroutine AsyncIterable "
            "AsyncIterator AsyncGenerator",
        ),
    )


def _urllib_parse() -> Facade:
    # urlsplit and the quoters cache their arguments for the process: exact strings only,
    # and urlencode calls str() on its values: plain ones only
    plain = (
        "urlparse urlsplit urlunparse urlunsplit urljoin urldefrag quote quote_plus "
        "quote_from_bytes unquote unquote_plus unquote_to_bytes parse_qs parse_qsl"
    )
    functions: dict[str, tuple[str, ...]] = dict.fromkeys(plain.split(), ())
    functions["urlencode"] = ("quote_via",)  # the script's quoter, called per value
    return Facade(
        "urllib.parse",
        {
            **{
                name: plain_arguments(getattr(urllib.parse, name), held=held)
                for name, held in functions.items()
            },
            **pick(urllib.parse, "ParseResult SplitResult DefragResult"),
        },
    )


def static_everyday_facades() -> dict[str, Facade]:
    """The facades of this module that hold no per-session state."""
    collections_abc = _collections_abc()
    parse = _urllib_parse()
    return {
        "__future__": Facade("__future__", {"annotations": __future__.annotations}),
        "collections.abc": collections_abc,
        "urllib.parse": parse,
        "urllib": Facade("urllib", {"parse": parse}),
        "io": Facade(
            "io",
            {"StringIO": StringIO, "BytesIO": BytesIO, **pick(io, "SEEK_SET SEEK_CUR SEEK_END")},
        ),
        "csv": Facade(
            "csv",
            {
                **pick(
                    csv,
                    "writer Error Dialect excel excel_tab unix_dialect "
                    "QUOTE_ALL QUOTE_MINIMAL QUOTE_NONE QUOTE_NONNUMERIC",
                ),
                "reader": _csv_reader,
                # the file is read or written by csv's C code; the rest is kept and used
                # by their Python code
                "DictReader": checked_class(csv.DictReader, held=("f", "dialect")),
                "DictWriter": checked_class(csv.DictWriter, held=("f", "dialect")),
            },
        ),
        "cmath": Facade(
            "cmath",
            pick(
                cmath,
                "acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf "
                "isnan log log10 nan nanj phase pi polar rect sin sinh sqrt tan tanh tau",
            ),
        ),
        "binascii": Facade(
            "binascii",
            pick(
                binascii,
                "hexlify unhexlify b2a_hex a2b_hex b2a_base64 a2b_base64 crc32 crc_hqx "
                "Error Incomplete",
            ),
        ),
        "tomllib": Facade(
            "tomllib",
            {
                **plain_functions(tomllib, "loads load", held=("parse_float",)),
                "TOMLDecodeError": tomllib.TOMLDecodeError,
            },
        ),
        "zoneinfo": Facade(
            "zoneinfo",
            {
                "available_timezones": _available_timezones,
                "ZoneInfoNotFoundError": zoneinfo.ZoneInfoNotFoundError,
                "ZoneInfo": ZoneInfo,
            },
        ),
        "html": Facade("html", plain_functions(html, "escape unescape")),
        "shlex": SHLEX,
        "calendar": Facade(
            "calendar",
            {
                **plain_functions(
                    calendar, "isleap leapdays monthrange weekday monthcalendar timegm firstweekday"
                ),
                **pick(
                    calendar,
                    "month_name month_abbr day_name day_abbr MONDAY TUESDAY WEDNESDAY "
                    "THURSDAY FRIDAY SATURDAY SUNDAY IllegalMonthError IllegalWeekdayError",
                ),
                "month": _calendar_text(calendar.month),
                "calendar": _calendar_text(calendar.calendar),
                "week": _calendar_text(calendar.week),
                "weekheader": _calendar_text(calendar.weekheader),
                "prmonth": _print_calendar_text(calendar.month),
                "prcal": _print_calendar_text(calendar.calendar),
                "Calendar": Calendar,
                "TextCalendar": TextCalendar,
                "HTMLCalendar": HTMLCalendar,
            },
        ),
        "keyword": Facade(
            "keyword",
            {
                **pick(keyword, "iskeyword issoftkeyword"),
                "kwlist": tuple(keyword.kwlist),
                "softkwlist": tuple(keyword.softkwlist),
            },
        ),
        "array": Facade("array", {"array": array.array, "typecodes": array.typecodes}),
        "queue": Facade(
            "queue",
            {
                "Queue": Queue,
                "LifoQueue": LifoQueue,
                "PriorityQueue": PriorityQueue,
                "SimpleQueue": SimpleQueue,
                "Empty": Empty,
                "Full": Full,
            },
        ),
        "secrets": Facade(
            "secrets",
            {
                **pick(secrets, "compare_digest"),
                # entropy through the tape: a replayed run draws what it drew before
                "choice": recorded.choice,
                "randbelow": _randbelow,
                "randbits": _randbits,
                "token_bytes": _bounded_bytes(recorded.token_bytes),
                "token_hex": _bounded_bytes(recorded.token_hex),
                "token_urlsafe": _bounded_bytes(recorded.token_urlsafe),
            },
        ),
        "time": Facade(
            "time",
            {
                **pick(time, "mktime struct_time timezone altzone daylight tzname"),
                # the clock through the tape: a replayed run reads what it read before
                **{
                    kind: recorded.clock(kind, getattr(time, recorded.LIVE_CLOCKS.get(kind, kind)))
                    for kind in sorted(recorded.FLOAT_KINDS | recorded.INT_KINDS)
                },
                "gmtime": recorded.gmtime,
                "localtime": recorded.localtime,
                "asctime": recorded.asctime,
                "ctime": recorded.ctime,
                "sleep": _sleep,
                "strftime": _strftime,
                # strptime caches each format for the process: exact strings only
                "strptime": plain_arguments(time.strptime),
            },
        ),
        "abc": Facade(
            "abc",
            {
                "ABC": abc.ABC,
                # it sets one attribute on what it is given: the script's function only
                "abstractmethod": plain_arguments(abc.abstractmethod, held=["funcobj"]),
            },
        ),
        "numbers": Facade("numbers", pick(numbers, "Number Complex Real Rational Integral")),
    }


def session_everyday_facades(guards: Guards) -> dict[str, Facade]:
    """The facades of this module that hold a session's guards."""
    return {
        "ast": Facade("ast", {"literal_eval": _literal_eval(guards)}),
        "gzip": Facade(
            "gzip",
            {
                "compress": _gzip_compress,
                "decompress": _gzip_decompress(guards),
                "BadGzipFile": gzip.BadGzipFile,
            },
        ),
        "operator": Facade("operator", _operator_members(guards)),
        "zlib": zlib_facade(guards),
        "pprint": Facade("pprint", _pprint_members(guards)),
        "struct": Facade("struct", _struct_members(guards)),
        "types": Facade("types", _types_members(guards)),
        "contextlib": _contextlib_facade(guards),
    }


def _types_members(guards: Guards) -> dict[str, Any]:
    """``types``: SimpleNamespace, and the classes of what scripts hold (functions,
    generators, coroutines, methods, modules) as ``type()`` shows them to this session's
    scripts, for isinstance and ``is``: nothing ``type(x)`` did not already give."""
    members: dict[str, Any] = {name: guards.type_of(value) for name, value in _SAMPLES.items()}
    members.update(
        SimpleNamespace=types.SimpleNamespace,
        NoneType=type(None),
        ModuleType=guards.opaque_type(Facade, "module"),
    )
    return members


def _samples() -> dict[str, Any]:
    """One object of each kind ``types`` names, made once: only their types are read."""

    def generator() -> Iterator[None]:
        yield

    async def coroutine() -> None:
        pass

    async def async_generator() -> Any:
        yield

    class Sample:
        def method(self) -> None:
            pass

    awaited = coroutine()
    awaited.close()  # never run
    return {
        "FunctionType": generator,
        "LambdaType": generator,
        "MethodType": Sample().method,
        "BuiltinFunctionType": len,
        "BuiltinMethodType": [].append,
        "GeneratorType": generator(),
        "CoroutineType": awaited,
        "AsyncGeneratorType": async_generator(),
    }


_SAMPLES = _samples()


def _copied_buffer(buffer: Any) -> Any:
    """A buffer of the same contents and position, as CPython's copy makes one."""
    made = type(buffer)(buffer.getvalue())
    made.seek(buffer.tell())
    return made


def _copied_calendar(calendar_: Calendar) -> Calendar:
    made = type(calendar_)(calendar_.firstweekday)
    for name in calendar_._settings:  # the CSS names an HTMLCalendar was given
        if name in vars(calendar_):
            object.__setattr__(made, name, vars(calendar_)[name])
    return made


def _register() -> None:
    # each copies itself as CPython copies it: never the same object (a copy written to
    # would change the original); what they hold is plain text and numbers, the host's
    for buffer in (StringIO, BytesIO):
        register_copies(buffer, _copied_buffer)
    for calendar_kind in (Calendar, TextCalendar, HTMLCalendar):
        register_copies(calendar_kind, _copied_calendar)
    register_copies(Context, lambda context: context.copy())
    register_readable(StringIO, BytesIO, writable=False)
    register_readable(zoneinfo.ZoneInfo, names=("key", "utcoffset", "tzname", "dst", "fromutc"))
    # a packed format: never pack_into (a write into a buffer)
    register_readable(
        struct.Struct, names=("format", "size", "pack", "unpack", "unpack_from", "iter_unpack")
    )
    register_readable(
        type(csv.writer(StringIO())),
        csv.DictWriter,
        csv.Dialect,
        type(csv.reader([])),
        urllib.parse.ParseResult,
        urllib.parse.SplitResult,
        urllib.parse.DefragResult,
        time.struct_time,
        contextlib.nullcontext,
        contextlib.closing,
        ExitStack,
        suppress,
        localcontext,
        type(calendar.month_name),
        type(calendar.day_name),
    )
    register_readable(csv.DictReader, names=("fieldnames", "line_num", "restkey", "restval"))
    # a calendar's own setting is set; its methods are read, never replaced
    register_readable(Calendar, writable=True, names=(*CALENDAR_METHODS, "firstweekday"))
    text_methods = (*CALENDAR_METHODS, *TEXT_CALENDAR_METHODS, "firstweekday")
    register_readable(TextCalendar, writable=True, names=text_methods)
    html_names = (*CALENDAR_METHODS, *HTML_CALENDAR_METHODS, "firstweekday", *_HTML_SETTINGS)
    register_readable(HTMLCalendar, writable=True, names=html_names)
    # the dialects' settings: plain strings, ints and bools, on the class and its instances
    dialect_settings = [name for name in vars(csv.Dialect) if not name.startswith("_")]
    register_readable(csv.excel, csv.excel_tab, csv.unix_dialect, names=dialect_settings)
    register_readable(Queue, LifoQueue, PriorityQueue, SimpleQueue, writable=True)
    register_readable(array.array, types.SimpleNamespace, Context, writable=True)
    register_base(
        abc.ABC,
        Empty,
        Full,
        csv.Error,
        tomllib.TOMLDecodeError,
        *(
            getattr(collections.abc, name)
            for name in [
                "Container",
                "Hashable",
                "Iterable",
                "Iterator",
                "Reversible",
                "Sized",
                "Callable",
                "Collection",
                "Sequence",
                "MutableSequence",
                "Set",
                "MutableSet",
                "Mapping",
                "MutableMapping",
            ]
        ),
    )


_register()

__all__ = [
    "Context",
    "getcontext",
    "localcontext",
    "session_everyday_facades",
    "setcontext",
    "static_everyday_facades",
]
