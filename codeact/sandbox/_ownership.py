"""The sandbox's object model: what a script may hold, read, write, subclass and name.

A script holds exactly: plain data of exact builtin types, objects of its own
classes, bound tools, and facade stand-ins. Every decision of the guards about an
object is one of the questions answered here:

- *raw*: may a public attribute be read without a guard call? Exact plain data and
  the script's own objects only; everything else, facades included, is read through
  the guard, by every construct (attribute, ``getattr``, class pattern).
- *readable*: which public attribute names of a facade type a script may read;
- *writable*: a script changes its own objects and plain containers, nothing else;
  the read side guarantees it never holds a container the host also holds;
- *base*: which classes a script class may derive from (a host class as a base
  would lend its methods, which run with the real ``getattr``, to the script);
- *shown*: what ``type(x)`` answers (never a metaclass, ``super`` or a host class).
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from ._errors import recursion_safe

SCRIPT_CLASSES: weakref.WeakSet[type] = weakref.WeakSet()
recursion_safe(weakref.WeakSet.__contains__)  # the membership test asked of it: reads only

# A script's globals carry SCOPE_MARK under SCOPE_KEY, a dunder no script can write:
# how a facade tells the script's own functions from the host's.
SCOPE_KEY = "__codeact_scope__"
SCOPE_MARK = object()


@recursion_safe  # reads only: eval and exec ask it of every name, the script's deepest too
def is_internal_name(name: str) -> bool:
    """The guards' names and temporaries (``_getattr_``, ``_tmp0``), ``__builtins__``."""
    if name in ("__name__", "__doc__"):
        return False
    return name.startswith("_") and (name.endswith("_") or name.startswith("_tmp"))


# Exact plain data: every public attribute of these is a method or a plain value.
PLAIN_TYPES: frozenset[type] = frozenset(
    {
        str,
        bytes,
        bytearray,
        int,
        float,
        complex,
        bool,
        type(None),
        list,
        tuple,
        dict,
        set,
        frozenset,
        range,
        slice,
        type({}.keys()),
        type({}.values()),
        type({}.items()),
        type(NotImplemented),
        type(Ellipsis),
    }
)

# Containers a script may change in place: the read guards never hand out one the host holds.
WRITABLE_TYPES: set[type] = {list, dict, set, bytearray}

# Mutable containers: found on a host class, they are shared by every session.
MUTABLE_TYPES: set[type] = {list, dict, set, bytearray}

# Facade types: the public names a script may read (None: every public name).
READABLE: dict[type, frozenset[str] | None] = {}

# Dunders a type's objects show scripts, by type: data the script put in when it made the
# object (``list[int].__args__``), or a protocol method that hands back the object's own
# data (a path's ``__fspath__``); never code of the host's to hold, nor the host's state.
DUNDER_DATA: dict[type, frozenset[str]] = {
    types.GenericAlias: frozenset({"__args__", "__origin__", "__parameters__"}),
    types.UnionType: frozenset({"__args__", "__parameters__"}),
}

# Types whose public attributes read raw (no guard call): exact plain data, nothing more.
# Frozen, so it is complete before the first guard exists; a session adds its own classes
# to its guards' copy as its scripts make them.
RAW_TYPES: frozenset[type] = PLAIN_TYPES

# Classes that script classes may derive from, beside other script classes.
BASE_CLASSES: set[type] = {object, int, float, str, bytes, tuple, list, dict, set, frozenset}


def register_readable(
    *types: type, writable: bool = False, names: Iterable[str] | None = None
) -> None:
    """Declare facade types a script may hold; ``names`` limits the readable attributes.

    A type whose class holds a mutable container under a public name keeps that name
    unreadable: a class attribute is shared by every session and the host.
    """
    for kind in types:
        shared = frozenset(n for n in dir(kind) if not n.startswith("_") and _is_shared(kind, n))
        allowed = None if names is None else frozenset(names)
        if shared:
            public = {n for n in dir(kind) if not n.startswith("_")}
            allowed = frozenset((public if allowed is None else allowed) - shared)
        READABLE[kind] = allowed
        if writable:
            WRITABLE_TYPES.add(kind)
            MUTABLE_TYPES.add(kind)


# Stand-ins every session shows for a host type (``type(Decimal(1)) is Decimal``): a
# facade made once for the process registers its own here; a session adds its own after.
SHOWN: dict[type, Any] = {}
# Host types whose instances each show a class of their own (typing's forms: ``type()`` of
# ``Optional`` is ``_SpecialForm``, of ``List[int]`` ``_GenericAlias``): instance -> stand-in.
SHOWN_BY_VALUE: dict[type, Callable[[Any], Any]] = {}

# Host types that answer ``__name__`` and ``__doc__`` for scripts through a reader of
# their own, keyed by the exact type: a module stand-in has no ``__name__`` attribute (the
# interpreter's ``from m import x`` would read it to look a submodule up among the host's
# modules), yet a script reads its module's name. A reader returns a str or None, or
# raises AttributeError in CPython's words.
DUNDERS_SHOWN: dict[type, Callable[[Any, str], str | None]] = {}

# Stand-in bases that build a class of another shape (``typing.NamedTuple``): each maps
# the class statement's name, bases and namespace to the bases and namespace to use.
CLASS_BUILDERS: dict[type, Any] = {}
# Stand-in bases whose class statement makes a protocol (``typing.Protocol``): isinstance
# against it compares shapes once the script marks it ``runtime_checkable``.
PROTOCOL_MARKERS: set[type] = set()
# Bases that make a class generic (``typing.Generic``): its ``__parameters__`` are the type
# variables its class statement's bases were subscripted with.
GENERIC_BASES: set[type] = set()


# id(stand-in of a builtin) -> (the real type, its guarded constructor): kept here, never
# under a name of the stand-in; an entry goes with its stand-in.
STAND_INS: dict[int, tuple[type, Any]] = {}


def real_base(base: Any) -> Any:
    """A class statement's base as the class is built on: ``bytes``, not its stand-in."""
    entry = STAND_INS.get(id(base))
    return base if entry is None else entry[0]


# Host methods that keep their arguments in a process-wide cache (a compiled pattern's
# replacement templates, strptime's formats) or need the run's limits: (owner type, name)
# -> a factory of the form scripts get, given the method and the session's guards.
HOST_METHODS: dict[tuple[type, str], Any] = {}
HOST_METHOD_NAMES: set[str] = set()


def register_host_method(owner: type, name: str, wrap: Any) -> None:
    """Hand ``owner.name`` to scripts only through ``wrap(method, guards)``."""
    HOST_METHODS[(owner, name)] = wrap
    HOST_METHOD_NAMES.add(name)


@recursion_safe  # converts, and changes nothing
def exact_value(value: Any) -> Any:
    """``value`` as an exact builtin if it is a subclass of one, else as it is.

    What host code keeps in a cache shared by every session must not be a script's
    object: a ``str`` subclass there keeps its attributes (a suspended generator,
    whose ``finally`` would run in another session) alive after its session ends.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bytes or kind is float or kind is bool:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, bytes):
        return bytes.__bytes__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


class FixedMethods:
    """A base for the runtime's own host classes whose code calls methods on ``self``
    (``Counter.__repr__`` calls ``self.most_common``, ``Queue.put`` ``self.full``): an
    instance attribute of a method's name would have that host code call the script's
    function, so it is refused (but for the hooks a class lists in ``_replaceable``, which
    CPython's own sets from its arguments); every value is stored as an exact builtin."""

    __slots__ = ()
    _replaceable: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        kind = type(self)
        if is_script_class(kind):  # a script's subclass: its instance, its own rules
            object.__setattr__(self, name, value)
            return
        if name not in kind._replaceable and defines_method(kind, name):
            raise AttributeError(f"'{kind.__name__}' object attribute {name!r} is read-only")
        object.__setattr__(self, name, exact_value(value))


@recursion_safe  # reads only
def defines_method(kind: type, name: str) -> bool:
    """Does ``kind`` (or a base) define ``name`` as a method (read from class namespaces)?"""
    for klass in kind.__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return callable(found) or isinstance(found, staticmethod | classmethod)
    return False


def register_base(*types: type) -> None:
    """Declare facade classes a script class may derive from (reviewed for relays)."""
    BASE_CLASSES.update(types)


@recursion_safe  # reads only
def is_script_class(cls: type) -> bool:
    """Was ``cls``, or one of its bases, made by a script's class statement?"""
    for base in cls.__mro__:  # noqa: SIM110 - a loop, not any(): no generator frame to mark
        if base in SCRIPT_CLASSES:
            return True
    return False


@recursion_safe  # reads only
def readable_names(obj: Any) -> frozenset[str] | bool | None:
    """Public names a script may read on ``obj``: None for all, False for none."""
    kind = type(obj)
    if kind in READABLE:  # a facade type, or a stand-in class (whose metaclass is registered)
        return READABLE[kind]
    if kind in RAW_TYPES or is_script_class(kind):
        return None
    if isinstance(obj, type):
        if obj in PLAIN_TYPES or is_script_class(obj):
            return None
        if obj in READABLE:
            return READABLE[obj]
        return False
    if isinstance(obj, BaseException):  # an error's fields are the data it carries
        return None
    if is_script_function(obj):
        # what the script set on its own function (wrapper.calls): a function type has
        # no public name of its own, so any other is CPython's AttributeError
        return None
    return False


@recursion_safe  # reads only
def is_shared_container(owner: Any, name: str, value: Any) -> bool:
    """Is ``value`` a mutable container that a host class holds as ``name``?"""
    if type(value) not in MUTABLE_TYPES:
        return False
    klass = owner if isinstance(owner, type) else type(owner)
    return any(
        vars(k).get(name) is value for k in klass.__mro__ if k not in SCRIPT_CLASSES
    )  # a script class's own list is the script's


@recursion_safe  # reads only
def is_script_function(obj: Any) -> bool:
    """A function a script defined: its globals are a sandbox's scope."""
    scope = getattr(obj, "__globals__", None) if type(obj) is _FUNCTION else None
    return type(scope) is dict and scope.get(SCOPE_KEY) is SCOPE_MARK


_FUNCTION = type(is_script_function)


@recursion_safe  # reads only
def is_writable(obj: Any) -> bool:
    """May a script set attributes or items on ``obj``?"""
    kind = type(obj)
    if kind in WRITABLE_TYPES:
        return True
    if isinstance(obj, type):
        return obj in SCRIPT_CLASSES
    return is_script_class(kind)


@recursion_safe  # reads only
def owns_private_name(obj: Any, name: str) -> bool:
    """Is ``obj._name`` the script's own: on its objects (their own attributes, or what its
    class statements bound) and its classes, never what a host class defines?

    A host class's ``_name`` is its internals: a facade's state (a logger's session, a
    queue's deque) or a host method that would run with a script object as receiver (a
    ``Counter`` subclass's ``_keep_positive``). Writable host types are no exception.
    """
    if isinstance(obj, type):
        if obj not in SCRIPT_CLASSES:
            return False
        mro = obj.__mro__
    else:
        kind = type(obj)
        # the common case first: an instance of a class the script's statement made
        if not (kind in SCRIPT_CLASSES or kind is types.SimpleNamespace or is_script_class(kind)):
            return False
        try:  # never the script's __getattr__: a guard's question runs no script code
            own = object.__getattribute__(obj, "__dict__")
        except AttributeError:  # slotted
            own = None
        if type(own) is dict and name in own:  # set on the object by the script
            return True
        mro = kind.__mro__
    for klass in mro:
        if name in vars(klass):
            return klass in SCRIPT_CLASSES
    return True  # missing: CPython's AttributeError, or the script's own __getattr__


def _is_shared(kind: type, name: str) -> bool:
    for klass in kind.__mro__:
        if name in vars(klass):
            return type(vars(klass)[name]) in MUTABLE_TYPES
    return False


__all__ = [
    "BASE_CLASSES",
    "CLASS_BUILDERS",
    "DUNDERS_SHOWN",
    "GENERIC_BASES",
    "HOST_METHODS",
    "PLAIN_TYPES",
    "PROTOCOL_MARKERS",
    "RAW_TYPES",
    "READABLE",
    "SCOPE_KEY",
    "SCOPE_MARK",
    "SCRIPT_CLASSES",
    "SHOWN",
    "SHOWN_BY_VALUE",
    "WRITABLE_TYPES",
    "FixedMethods",
    "defines_method",
    "exact_value",
    "is_internal_name",
    "is_script_class",
    "is_script_function",
    "is_shared_container",
    "is_writable",
    "owns_private_name",
    "readable_names",
    "real_base",
    "register_base",
    "register_host_method",
    "register_readable",
]
