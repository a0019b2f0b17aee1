"""The builtins a script sees: a curated set, with guarded stand-ins where size or reach matters.

Absent on purpose: ``open``, a real ``compile`` (scripts hold no code objects: ``eval``,
``exec`` and ``compile``, which the interpreter adds, take text it compiles under the
script's policy; ``compile`` hands back a stand-in only they can run), ``__import__``
(imports go through the facade importer), ``breakpoint``, ``memoryview``, a raw
``getattr`` and ``BaseExceptionGroup`` (it would carry a stop past the handlers that
re-raise it). ``input`` (the interpreter adds it) reads end-of-file: a script has no
standard input. ``BaseException``, ``KeyboardInterrupt``, ``SystemExit`` and
``GeneratorExit`` are there to raise, derive from and name; none of them catches a limit,
since every handler re-raises a stop first. ``globals``, ``locals``, ``vars`` and ``dir``
(the interpreter adds them) read a frame's names as snapshots without the guards' names;
``vars(x)`` reads only the script's own objects.
"""

from __future__ import annotations

import builtins
import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

from ..contract._exceptions import ToolError
from ._errors import SecurityViolation, recursion_safe
from ._guards import Builtin, Guards, LongRange
from ._ownership import STAND_INS as _STAND_INS
from ._ownership import register_base, register_readable
from ._sealed import seal
from ._work_bounds import (
    eager_or_ticking,
    is_ticking_instance,
    ticking_factory,
    with_interruptible_callbacks,
)

recursion_safe(weakref.WeakMethod.__call__)  # a stand-in's constructor is one: reads only

_PLAIN = (
    "abs all any ascii bin bool callable chr complex dict float "
    "frozenset hash hex int isinstance issubclass len list next object oct ord "
    "repr reversed round set slice str tuple super staticmethod classmethod "
    "property NotImplemented Ellipsis id aiter anext"
)

_EXCEPTIONS = (
    "Exception ArithmeticError AssertionError AttributeError EOFError FloatingPointError "
    "ImportError ModuleNotFoundError IndexError KeyError LookupError MemoryError NameError "
    "NotImplementedError OverflowError RecursionError ReferenceError RuntimeError "
    "StopIteration StopAsyncIteration SyntaxError TypeError UnboundLocalError UnicodeError "
    "UnicodeDecodeError UnicodeEncodeError ValueError ZeroDivisionError LookupError "
    "Warning UserWarning DeprecationWarning RuntimeWarning TimeoutError OSError IOError "
    "EnvironmentError FileNotFoundError FileExistsError PermissionError IsADirectoryError "
    "NotADirectoryError ConnectionError ConnectionRefusedError ConnectionResetError "
    "BrokenPipeError InterruptedError BlockingIOError ChildProcessError ProcessLookupError "
    "IndentationError TabError BufferError UnicodeTranslateError SyntaxWarning "
    "FutureWarning PendingDeprecationWarning ImportWarning UnicodeWarning BytesWarning "
    "ResourceWarning EncodingWarning ExceptionGroup KeyboardInterrupt SystemExit GeneratorExit "
    "BaseException"
)


class _GuardedType(type):
    """Metaclass of a builtin's stand-in: calls are guarded, isinstance asks the real type.

    The real type and the guarded constructor are kept in a table of this module, never
    under a name of the stand-in: it holds nothing a read could reach, and it relays no
    attribute (its public members are copied into it when it is made).
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kw: Any):  # type: ignore[no-untyped-def]
        if kw.get("key") is not _STAND_IN_KEY:  # the metaclass called from a script
            raise SecurityViolation("classes are made by the class statement in scripts")
        return super().__new__(mcs, name, bases, namespace)

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kw: Any):
        super().__init__(name, bases, namespace)

    @recursion_safe  # a relay
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _STAND_INS[id(cls)][1]()(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        real = _STAND_INS[id(cls)][0]
        wrapper = is_ticking_instance(obj, real)
        if wrapper is not None:  # a ticking map is a map (and no chain)
            return wrapper
        return isinstance(obj, real) or (real is range and type(obj) is LongRange)

    def __subclasscheck__(cls, sub: type) -> bool:
        found = _STAND_INS.get(id(sub)) if type(sub) is _GuardedType else None
        # issubclass(type, type): a stand-in asked about itself answers for its real type
        return issubclass(sub if found is None else found[0], _STAND_INS[id(cls)][0])

    def __getitem__(cls, item: Any) -> Any:
        """``type[int]`` (CPython's own case), ``enumerate[str]``: an alias whose origin is the
        stand-in, as the script holds it."""
        real = _STAND_INS[id(cls)][0]
        if real is not type and "__class_getitem__" not in vars(real):
            raise TypeError(f"type {cls.__name__!r} is not subscriptable")
        return types.GenericAlias(cls, item)

    def __repr__(cls) -> str:
        return repr(_STAND_INS[id(cls)][0])

    def __eq__(cls, other: object) -> bool:
        return other is cls or other is _STAND_INS[id(cls)][0]

    def __hash__(cls) -> int:
        return hash(_STAND_INS[id(cls)][0])


_STAND_IN_KEY = object()


register_readable(_GuardedType)
# A bare object() (a sentinel) has no public attribute: reading one is CPython's AttributeError.
register_readable(object)
# @x.setter and friends; fget/fset/fdel are the script's own functions.
register_readable(property, names=("getter", "setter", "deleter", "fget", "fset", "fdel"))
register_readable(LongRange, names=("start", "stop", "step", "count", "index"))
register_readable(Builtin, names=())
register_base(*(getattr(builtins, name) for name in _EXCEPTIONS.split()))


def guarded_type(
    real: type, construct: Callable[..., Any], *, without: tuple[str, ...] = (), **replaced: Any
) -> type:
    """A stand-in for ``real`` whose construction goes through ``construct`` (its public
    members named in ``replaced`` are those given instead of the real ones; those named in
    ``without`` are not there)."""
    members = {name: getattr(real, name) for name in dir(real) if not name.startswith("_")}
    members.update(replaced)
    for name in without:
        del members[name]
    members["__doc__"] = real.__doc__
    members["__module__"] = real.__module__  # sealed from birth: named as the real one
    if "__class_getitem__" in vars(real):  # enumerate.__class_getitem__(str), as in CPython
        members["__class_getitem__"] = classmethod(types.GenericAlias)
    stand_in = seal(_GuardedType(real.__name__, (), members, key=_STAND_IN_KEY))
    # weakly: the table is the process's, a constructor bound to guards is one session's
    if inspect.ismethod(construct):
        _STAND_INS[id(stand_in)] = (real, weakref.WeakMethod(construct))
    else:
        _STAND_INS[id(stand_in)] = (real, lambda: construct)
    weakref.finalize(stand_in, _STAND_INS.pop, id(stand_in), None)
    return stand_in


def stand_in_constructor(value: Any) -> Callable[..., Any] | None:
    """What calling the stand-in ``value`` calls, or None when it is no stand-in."""
    if type(value) is not _GuardedType:
        return None
    made: Callable[..., Any] = _STAND_INS[id(value)][1]()
    return made


@recursion_safe  # reads only
def check_count(name: str, args: tuple[Any, ...], least: int, most: int) -> None:
    """A builtin's positional arguments counted, refused in CPython's words."""
    if not least <= len(args) <= most:
        bound = least if len(args) < least else most
        expected = f"{'' if least == most else 'at least ' if bound == least else 'at most '}"
        plural = "" if bound == 1 else "s"
        raise TypeError(f"{name} expected {expected}{bound} argument{plural}, got {len(args)}")


@recursion_safe  # reads only
def no_keywords(qualified: str, keywords: dict[str, Any]) -> None:
    """A C function's refusal of keyword arguments, under the name its errors give it."""
    if keywords:
        raise TypeError(f"{qualified}() takes no keyword arguments")


@recursion_safe  # reads only
def clinic_arguments(
    method: str,
    names: tuple[str, ...],
    required: int,
    args: tuple[Any, ...],
    keywords: dict[str, Any],
    *,
    positional_only: int = 0,
) -> dict[str, Any]:
    """A C function's arguments by name, bound as Argument Clinic binds them (by position or
    by name, the first ``required`` needed, the first ``positional_only`` by position
    alone), refused in CPython's words."""
    most, given = len(names), len(args) + len(keywords)
    if given > most:
        kind = "" if args else "keyword "
        plural = "" if most == 1 else "s"
        raise TypeError(f"{method}() takes at most {most} {kind}argument{plural} ({given} given)")
    least = min(required, positional_only)
    if len(args) < least:
        how = "at least" if least < most else "exactly"
        plural = "" if least == 1 else "s"
        raise TypeError(
            f"{method}() takes {how} {least} positional argument{plural} ({len(args)} given)"
        )
    bound = dict(zip(names, args, strict=False))  # no more args than names: counted above
    for position, name in enumerate(names[len(args) :], start=len(args)):
        if name in keywords and position >= positional_only:
            bound[name] = keywords[name]
        elif position < required:
            raise TypeError(f"{method}() missing required argument {name!r} (pos {position + 1})")
    for position, name in enumerate(names[positional_only : len(args)], start=positional_only):
        if name in keywords:
            raise TypeError(
                f"argument for {method}() given by name ({name!r}) and position ({position + 1})"
            )
    for name in keywords:
        if name not in names[positional_only:]:
            raise TypeError(f"{name!r} is an invalid keyword argument for {method}()")
    return bound


def _named(guard: Callable[..., Any], name: str, least: int, most: int) -> Callable[..., Any]:
    """A guard under a builtin's name, refusing wrong argument counts as the builtin does."""

    @recursion_safe  # checks the count, then relays
    def builtin(*args: Any, **keywords: Any) -> Any:
        if keywords:
            raise TypeError(f"{name}() takes no keyword arguments")
        check_count(name, args, least, most)
        return guard(*args)

    return Builtin(builtin, name)


def _rebound(
    guard: Callable[..., Any],
    name: str,
    names: tuple[str, ...],
    required: int,
    *,
    positional_only: int = 0,
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """What a builtin does with arguments its guard would not take: binds them as CPython
    binds the builtin's (``pow(2, exp=3)``), refusing in its words what it refuses; the
    guard is given them by position, up to the last one given (only a last argument of
    these builtins is optional, so none is skipped)."""

    @recursion_safe  # binds, then relays
    def rebound(args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        given = clinic_arguments(
            name, names, required, args, keywords, positional_only=positional_only
        )
        return guard(*(given[n] for n in names if n in given))

    return rebound


def _miscounted(
    name: str, least: int, most: int
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """What a builtin of positional arguments says of arguments its guard would not take."""

    @recursion_safe  # refuses
    def refuse(args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        if keywords:
            raise TypeError(f"{name}() takes no keyword arguments")
        check_count(name, args, least, most)
        raise TypeError(f"{name}() got arguments it does not take")  # not reached: counted

    return refuse


_MAP = ticking_factory(builtins.map)
_FILTER = ticking_factory(with_interruptible_callbacks(builtins.filter, positions=(0,)))
_ZIP = eager_or_ticking(builtins.zip)
# enumerate(zip(a, b)) stays in C: a zip made here is over plain containers only
_ENUMERATE = eager_or_ticking(builtins.enumerate, over=(zip,))


def safe_builtins(guards: Guards, importer: Callable[..., Any]) -> dict[str, Any]:
    """The builtins mapping for one sandbox."""
    table: dict[str, Any] = {name: getattr(builtins, name) for name in _PLAIN.split()}
    table.update({name: getattr(builtins, name) for name in _EXCEPTIONS.split()})
    table.update(
        {
            "getattr": _named(guards.getattr, "getattr", 2, 3),
            "hasattr": _named(guards.hasattr, "hasattr", 2, 2),
            "setattr": _named(guards.setattr, "setattr", 3, 3),
            "delattr": _named(guards.delattr, "delattr", 2, 2),
            "type": guarded_type(type, guards.type_of),
            "range": guarded_type(range, guards.make_range),
            "bytes": guarded_type(bytes, guards.make_bytes),
            "bytearray": guarded_type(bytearray, guards.make_bytearray),
            "sum": Builtin(
                guards.sum,
                "sum",
                _rebound(guards.sum, "sum", ("iterable", "start"), 1, positional_only=1),
            ),
            # map and filter call arbitrary functions per item: re-yielded from Python, so a
            # C consumer (sum, max, list) can be interrupted, and nesting is Python recursion
            "map": guarded_type(map, _MAP),
            "filter": guarded_type(filter, _FILTER),
            # lazy arguments make them nest in C (a stack overflow): re-yielded then
            "zip": guarded_type(zip, _ZIP),
            "enumerate": guarded_type(enumerate, _ENUMERATE),
            # a C key (xs.count) would hold the interpreter for minutes: it enters Python
            "sorted": Builtin(with_interruptible_callbacks(sorted, names=("key",)), "sorted"),
            "min": Builtin(with_interruptible_callbacks(min, names=("key",)), "min"),
            "max": Builtin(with_interruptible_callbacks(max, names=("key",)), "max"),
            "iter": Builtin(guards.iterate, "iter", _miscounted("iter", 1, 2)),
            "pow": Builtin(
                guards.power, "pow", _rebound(guards.power, "pow", ("base", "exp", "mod"), 2)
            ),
            "round": Builtin(
                guards.round_value,
                "round",
                _rebound(guards.round_value, "round", ("number", "ndigits"), 1),
            ),
            "divmod": _named(guards.divmod, "divmod", 2, 2),
            "format": _named(guards.format_value, "format", 1, 2),
            "ToolError": ToolError,  # shown as codeact.ToolError, its public name
            "__build_class__": builtins.__build_class__,
            "__import__": importer,
            # what a class statement in exec'd code with globals of {} takes as its module
            "__name__": "builtins",
        }
    )
    for name in ("type", "range", "bytes", "bytearray", "map", "filter", "zip", "enumerate"):
        # type(b"") is bytes, in scripts too
        guards.shown[getattr(builtins, name)] = table[name]
    guards.shown[_GuardedType] = table["type"]  # type(range) is type
    guards.shown[LongRange] = table["range"]  # a long range is a range, as scripts see it
    return table


__all__ = ["check_count", "clinic_arguments", "no_keywords", "safe_builtins"]
