"""Bounds on the work C code does for a script, which no signal can interrupt once begun.

Long division and gcd are sized before they run; iterators a C function walks tick the
run's clock (or are walked eagerly when they are plain containers in memory); callbacks
C code calls back into are made interruptible. Each check raises the run's
``LimitExceeded`` before the work starts, never after it has stalled the worker.
"""

from __future__ import annotations

import abc
import collections
import itertools
import operator
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from ._errors import LimitExceeded, recursion_safe
from ._ownership import register_readable
from ._sealed import HEAP_TYPE, seal

SEQUENCES = (str, bytes, bytearray, list, tuple)  # what repeats by multiplication
# isinstance(x, Fraction) asks ABCMeta's, whose one statement is a call into C
recursion_safe(abc.ABCMeta.__instancecheck__)

# Long division and gcd are quadratic in C and cannot be interrupted: their work (bits of
# the quotient times bits of the divisor; bits times bits for gcd) is bounded before they
# run, at about a quarter of a second. Below FREE_DIVISION_BITS nothing is counted.
MAX_DIVISION_WORK = 1 << 38
MAX_FRACTION_BITS = 4_000_000
FREE_DIVISION_BITS = 1 << 16


@recursion_safe  # reads only
def check_division(a: Any, b: Any) -> None:
    """Refuse ``a // b`` or ``a % b`` on integers whose long division would run for long."""
    if isinstance(a, Fraction) or isinstance(b, Fraction):  # a product of its parts in Python
        if rational_bits(a) + rational_bits(b) > MAX_FRACTION_BITS:
            raise LimitExceeded("integer size", "a fraction this large")
    elif isinstance(a, int) and isinstance(b, int):
        top, bottom = int.bit_length(a), int.bit_length(b)
        if top > FREE_DIVISION_BITS and max(top - bottom, 1) * bottom > MAX_DIVISION_WORK:
            raise LimitExceeded("integer size", "dividing integers this large takes too long")


def check_gcd(*numbers: Any) -> None:
    """Refuse ``gcd``/``lcm`` of integers whose Euclid steps would run for long."""
    sizes = sorted(int.bit_length(exact_index(n)) for n in numbers if isinstance(n, int))
    if len(sizes) > 1 and sizes[-1] * sizes[-2] > MAX_DIVISION_WORK:
        raise LimitExceeded("integer size", "gcd of integers this large takes too long")


@recursion_safe  # reads only
def text_base(obj: Any) -> Any:
    return str if isinstance(obj, str) else bytes if isinstance(obj, bytes) else bytearray


@recursion_safe  # reads only
def is_repeatable(obj: Any) -> bool:
    return isinstance(obj, (*SEQUENCES, collections.deque))


@recursion_safe  # reads only
def exact_index(value: Any) -> Any:
    """The exact ``int`` an operation would take from ``value`` (an int subclass, or an object
    with ``__index__``), else ``value`` itself: a size guard sizes what is then used, and a
    script's ``__index__`` runs once, here, not again with another answer."""
    kind = type(value)
    if kind is int:
        return value
    if isinstance(value, int):
        return int.__index__(value)
    if kind is not float and hasattr(kind, "__index__"):
        return int.__index__(operator.index(value))
    return value


@recursion_safe  # reads only
def rational_bits(value: Any) -> int:
    """Bits of the larger of a rational's numerator and denominator (0 for anything else)."""
    if isinstance(value, int):
        return int.bit_length(value)
    if isinstance(value, Fraction):
        numerator, denominator = value.numerator, value.denominator
    else:
        numerator, denominator = getattr(value, "numerator", 0), getattr(value, "denominator", 1)
    if not isinstance(numerator, int) or not isinstance(denominator, int):
        return 0
    return max(int.bit_length(numerator), int.bit_length(denominator))


@recursion_safe  # reads only
def exact_len(obj: Any) -> int:
    bases: tuple[Any, ...] = (str, bytes, bytearray, list, tuple, collections.deque)
    for base in bases:
        if isinstance(obj, base):
            return int(base.__len__(obj))
    return len(obj)


@recursion_safe  # reads only
def repeated_len(sequence: Any, count: int) -> int:
    """The length of ``sequence * count`` as CPython makes it: 0 for a count CPython
    refuses before it makes anything (past an index-sized integer: its OverflowError), at
    most a bounded deque's ``maxlen`` (it keeps only the last items, and repeats no more)."""
    if not -sys.maxsize - 1 <= count <= sys.maxsize:
        return 0
    length = exact_len(sequence) * max(count, 0)
    if isinstance(sequence, collections.deque):
        bound = collections.deque.maxlen.__get__(sequence)  # the deque's own, not a subclass's
        if type(bound) is int:
            return min(length, bound)
    return length


@recursion_safe  # a relay: stopped anywhere, it has only re-yielded what it was given
def _relay(iterator: Iterator[Any]) -> Iterator[Any]:
    """Re-yield ``iterator`` from Python code: an explicit loop, not ``yield from``, as its
    backward jump is where the interpreter checks for pending interrupts (and hands over
    the GIL); ``yield from`` never does."""
    for item in iterator:  # noqa: UP028 - see the docstring
        yield item


class TickingIterator(itertools.chain):  # type: ignore[type-arg]
    """An iterator re-yielded from Python code, so C consumers of it can be interrupted.

    ``list(itertools.count())`` or ``sum(map(int, huge))`` would otherwise run in C, where no
    limit can stop it. Its items pass through a generator (``_relay``), whose loop is where
    the interpreter takes a pending stop; nested ones are Python recursion (a limit), not a
    C stack overflow. The class is a ``chain`` of that one generator: its ``next`` is C,
    which resumes the generator, as fast as the generator alone, and ``iter()`` of it is
    itself. One subclass per wrapped type, named as that type: a script's ``map`` shows
    ``<map object at ...>`` and fails as a map fails (``'map' object is not
    subscriptable``); ``type()`` and ``isinstance`` answer for the wrapped type
    (``wrapped_kind``), never for ``chain``. The wrapped iterator is never handed out.
    """

    __slots__ = ("_inner",)
    _inner: Iterator[Any]

    @recursion_safe  # builds its own object only
    def __new__(cls, inner: Iterator[Any]) -> TickingIterator:
        made = super().__new__(cls, _relay(inner))
        made._inner = inner
        return made

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.__qualname__ != _WRAPPER_QUALNAME:  # a script's subclass would own _inner
            raise TypeError(f"type {cls.__mro__[1].__name__!r} is not an acceptable base type")
        super().__init_subclass__(**kwargs)

    def __repr__(self) -> str:
        return repr(self._inner)

    def __reduce__(self) -> Any:
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    @property
    def from_iterable(self) -> Any:
        """chain's constructor is no name of the type wrapped (nor builds past ``__new__``)."""
        raise AttributeError(f"{type(self).__name__!r} object has no attribute 'from_iterable'")


_WRAPPER_QUALNAME = "<ticking>"
# wrapper class -> the type it wraps, and back
_WRAPPED: dict[type, type] = {}
_WRAPPERS: dict[type, type[TickingIterator]] = {}
# Plain values a wrapped iterator answers as CPython's does (a csv reader's line_num), by
# the type wrapped: read from it, the wrapped object itself never handed out.
_FORWARDED: dict[type, tuple[str, ...]] = {}


def forward_attributes(kind: type, *names: str) -> None:
    """Let the relays of ``kind`` answer ``names`` (plain values) as ``kind`` does; said
    before any relay of it is made (its class is made once, then sealed)."""
    if kind in _WRAPPERS:
        raise RuntimeError(f"relays of {kind.__name__} exist already")
    _FORWARDED[kind] = names


@recursion_safe  # builds its own property only
def _forwarded(name: str) -> property:
    def read(wrapper: TickingIterator) -> Any:
        if type(wrapper) not in _WRAPPED:  # the getter on another object: no relay of ours
            raise TypeError(f"{name} is read from the iterator that answers it")
        value = getattr(wrapper._inner, name)
        if type(value) not in (int, str, bool, type(None)):
            raise TypeError(f"{name} is not a plain value")  # never the wrapped iterator's parts
        return value

    return property(read)


@recursion_safe  # a class made is listed last: stopped anywhere, nothing is half made
def _wrapper_class(kind: type) -> type[TickingIterator]:
    found = _WRAPPERS.get(kind)
    if found is None:
        namespace: dict[str, Any] = {"__slots__": (), "__qualname__": _WRAPPER_QUALNAME}
        namespace.update((name, _forwarded(name)) for name in _FORWARDED.get(kind, ()))
        namespace["__module__"] = kind.__module__
        # named as CPython's errors name the type: a C type by its module too
        # ("unsupported operand type(s) for +: 'itertools.count' and 'int'")
        static = not kind.__flags__ & HEAP_TYPE and kind.__module__ != "builtins"
        name = f"{kind.__module__}.{kind.__name__}" if static else kind.__name__
        found = type(name, (TickingIterator,), namespace)
        found.__qualname__ = name
        seal(found)  # every session's: no one writes to it
        register_readable(found)  # it.__next__() by name, as on any iterator
        _WRAPPED[found] = kind
        _WRAPPERS[kind] = found  # last: a stop landing before it leaves nothing half made
    return found


@recursion_safe  # wraps, reads only
def ticking(iterator: Iterator[Any]) -> Iterator[Any]:
    """``iterator`` re-yielded from Python code (see ``TickingIterator``)."""
    return _wrapper_class(type(iterator))(iterator)


def wrapped_kind(kind: type) -> type:
    """The type a ticking wrapper class stands for (any other type: itself)."""
    return _WRAPPED.get(kind, kind)


def is_ticking_instance(obj: Any, kind: type) -> bool | None:
    """Is ``obj`` a ticking wrapper of an instance of ``kind``? None: it is no wrapper."""
    wrapped = _WRAPPED.get(type(obj))
    return None if wrapped is None else issubclass(wrapped, kind)


@recursion_safe  # builds its own relay only (and the relay passes a call on)
def interruptible(function: Any) -> Any:
    """A callback for C code that calls it per item, made to enter Python on every call.

    ``sorted(xs, key=xs.count)`` or ``reduce(operator.add, lists)`` with a C callback run
    entirely in C: no bytecode, so no limit can stop them for minutes. Entering a Python
    function is where the interpreter takes a pending stop; a script's own functions do
    already, anything else is wrapped.
    """
    if function is None or type(function) is FUNCTION_TYPE or not callable(function):
        return function  # nothing to call, or a Python function: entering it is the check

    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return call


FUNCTION_TYPE = type(interruptible)


@recursion_safe  # builds its own wrapper (which wraps the callbacks of its call's arguments)
def with_interruptible_callbacks(
    function: Callable[..., Any], *, positions: tuple[int, ...] = (), names: tuple[str, ...] = ()
) -> Callable[..., Any]:
    """``function`` whose callback arguments (at ``positions``, or named) are ``interruptible``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if positions:
            args = tuple(interruptible(a) if i in positions else a for i, a in enumerate(args))
        for name in names:
            if name in kwargs:
                kwargs[name] = interruptible(kwargs[name])
        return function(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(function, "__name__", "function")
    call.__doc__ = getattr(function, "__doc__", None)
    return call


# What a C iterator may walk directly: containers in memory and their own plain iterators,
# finite and never lazy, so nothing nests under them.
EAGER_TYPES = frozenset(
    {
        list,
        tuple,
        str,
        bytes,
        bytearray,
        dict,
        set,
        frozenset,
        range,
        type({}.keys()),
        type({}.values()),
        type({}.items()),
        type(iter([])),
        type(reversed([])),
        type(iter(())),
        type(iter("")),
        type(iter(b"")),
        type(iter(range(1))),
        type(iter({})),
        type(iter({}.values())),
        type(iter({}.items())),
        type(reversed({})),
        type(iter(set())),
    }
)


def eager_or_ticking(
    factory: Callable[..., Iterator[Any]], *, over: tuple[type, ...] = ()
) -> Callable[..., Iterator[Any]]:
    """A C iterator constructor (``zip``, ``enumerate``) that cannot nest in C.

    Over plain containers (and the C iterators in ``over``, themselves made over plain
    containers only) it is the builtin itself; over anything lazy it is re-yielded from
    Python, so 300,000 nested ``zip`` objects are Python recursion (a limit), not a C
    stack overflow, and a C consumer of them can be stopped.
    """
    direct = EAGER_TYPES | frozenset(over)

    def make(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for arg in args:
            if type(arg) not in direct:
                return ticking(factory(*args, **kwargs))
        return factory(*args, **kwargs)

    make.__name__ = make.__qualname__ = getattr(factory, "__name__", "iterator")
    make.__doc__ = getattr(factory, "__doc__", None)
    return make


def reduce(*args: Any, **keywords: Any) -> Any:
    """``functools.reduce`` as a Python loop: each step is bytecode a limit can stop. Its
    arguments are positional only, counted in CPython's words."""
    if keywords:
        raise TypeError("reduce() takes no keyword arguments")
    if not 2 <= len(args) <= 3:
        bound = "at least 2" if len(args) < 2 else "at most 3"
        raise TypeError(f"reduce expected {bound} arguments, got {len(args)}")
    function, iterable, *initial = args
    items = iter(iterable)
    if initial:
        value = initial[0]
    else:
        try:
            value = next(items)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    for item in items:
        value = function(value, item)
    return value


def ticking_factory(factory: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """Wrap an iterator factory so everything it yields passes through Python code."""

    @recursion_safe  # a relay
    def make(*args: Any, **kwargs: Any) -> Iterator[Any]:
        return ticking(factory(*args, **kwargs))

    make.__name__ = getattr(factory, "__name__", "iterator")
    make.__doc__ = getattr(factory, "__doc__", None)
    return make
