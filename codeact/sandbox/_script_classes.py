"""How a class statement makes a script's class: the metaclass its bases imply, the class
marked as the script's from inside ``type.__new__``, and no host base or metaclass that
would lend a script methods trusting their receiver."""

from __future__ import annotations

import abc
import contextlib
import enum
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ._errors import SecurityViolation, may_suppress
from ._ownership import (
    BASE_CLASSES,
    CLASS_BUILDERS,
    PROTOCOL_MARKERS,
    SCRIPT_CLASSES,
    is_script_class,
    is_script_function,
    real_base,
)

# Builtin value types whose subclasses host caches would hash (see ScriptClassFactory).
_HASHED_BUILTINS = (str, bytes, int, float, complex, tuple, frozenset)


class ScriptClassFactory:
    """Builds script classes with the metaclass their bases imply, and remembers them."""

    def __init__(self, raw: set[type]) -> None:
        self._raw = raw

    def __prepare__(self, name: str, bases: tuple[type, ...], /, **kwargs: Any) -> Any:
        bases = tuple(map(real_base, bases))
        meta = _metaclass_for(bases)
        if kwargs:
            _check_class_keywords(bases, meta)
        namespace = meta.__prepare__(name, bases)
        # The class is the script's from the moment it exists: an Enum builds its members
        # (running the script's __init__ on them) before the metaclass returns. First in
        # the namespace, so its __set_name__ runs before any member's.
        namespace[_REGISTRAR] = _Registrar(self._raw)
        return namespace

    def __call__(
        self, name: str, bases: tuple[type, ...], namespace: Any, /, **kwargs: Any
    ) -> type:
        bases = tuple(map(real_base, bases))
        protocol = any(base in PROTOCOL_MARKERS for base in bases)
        for base in bases:
            builder = CLASS_BUILDERS.get(base)
            if builder is not None:  # class P(NamedTuple): a class of another shape
                # the builder's own keywords are host code's to read: each refuses the
                # ones it does not know
                bases, namespace = builder(name, bases, namespace, **kwargs)
                kwargs = {}
                break
        meta = _metaclass_for(bases)
        if protocol:
            meta = _protocol_metaclass(meta)
        if kwargs:
            _check_class_keywords(bases, meta)
        if "__hash__" in namespace:
            _check_hash(bases)
        for dunder, checked in _CHECKED_DUNDERS.items():
            if dunder in namespace:
                namespace[dunder] = checked(namespace[dunder])
        cls: type = meta(name, bases, namespace, **kwargs)
        with contextlib.suppress(AttributeError, TypeError):
            type.__delattr__(cls, _REGISTRAR)
        SCRIPT_CLASSES.add(cls)
        self._raw.add(cls)
        if protocol:
            PROTOCOLS.add(cls)
        return cls


_REGISTRAR = "__codeact_register__"


def set_dunder_later(cls: type, name: str, value: Any) -> None:
    """``Cls.__repr__ = f`` after the class statement (a class decorator's way): under the
    rules its class statement would have applied, on the script's own classes only."""
    _check_later(cls, name)
    if name in _CHECKED_DUNDERS:
        value = _CHECKED_DUNDERS[name](value)
    setattr(cls, name, value)


def delete_dunder_later(cls: type, name: str) -> None:
    """``del Cls.__repr__``: the base's comes back, as in CPython; never a hash the class
    statement kept from a builtin value type's subclass."""
    _check_later(cls, name)
    delattr(cls, name)


def _check_later(cls: type, name: str) -> None:
    if cls not in SCRIPT_CLASSES:
        raise SecurityViolation(f"{cls.__name__} objects cannot be modified from scripts")
    if name == "__hash__":
        _check_hash(cls.__bases__)


def _check_hash(bases: tuple[type, ...]) -> None:
    if any(issubclass(b, _HASHED_BUILTINS) for b in bases):
        # such a key looks like a host string or number to host caches (strptime's),
        # which would then run the script's __hash__ and __eq__ in other sessions
        raise SecurityViolation("a subclass of a builtin value type may not define __hash__")


def _check_class_keywords(bases: tuple[type, ...], meta: type) -> None:
    """Class keywords (``class Csv(Plugin, kind='csv')``) reach the first
    ``__init_subclass__`` along the new class's bases: they may only ever reach one the
    script wrote, or ``object``'s, which refuses them with CPython's TypeError. A host's
    hook or metaclass (Enum's, typing's) would read script values as its own options."""
    if meta is not type and meta is not ScriptABCMeta:
        raise SecurityViolation(f"class keywords are not allowed with a {meta.__name__} base")
    for base in bases:
        for klass in base.__mro__:
            hook = vars(klass).get("__init_subclass__")
            if hook is None or klass is object:
                continue
            written = is_script_function(getattr(hook, "__func__", hook))
            if not (klass in SCRIPT_CLASSES and written):
                raise SecurityViolation(
                    f"class keywords are not allowed: {klass.__name__}.__init_subclass__ "
                    "is not the script's"
                )


class _Registrar:
    """Marks the class being built as the script's, from inside ``type.__new__``."""

    __slots__ = ("_raw",)

    def __init__(self, raw: set[type]) -> None:
        self._raw = raw

    def __set_name__(self, owner: type, name: str) -> None:
        SCRIPT_CLASSES.add(owner)
        self._raw.add(owner)

    def __get__(self, obj: Any, owner: Any = None) -> None:
        return None


def _unswallowing_aexit(exit_method: Callable[..., Any]) -> Callable[..., Any]:
    """``__aexit__`` as ``__exit__``: it may suppress the script's errors, never a stop."""

    async def __aexit__(self: Any, kind: Any, error: Any, traceback: Any) -> Any:
        suppress = await exit_method(self, kind, error, traceback)
        return suppress and may_suppress(error)

    return __aexit__


def _unswallowing_exit(exit_method: Callable[..., Any]) -> Callable[..., Any]:
    """A script's ``__exit__`` may suppress its own errors, never a limit or a stop."""

    def __exit__(self: Any, kind: Any, error: Any, traceback: Any) -> Any:
        suppress = exit_method(self, kind, error, traceback)
        return suppress and may_suppress(error)

    return __exit__


# Dunders a class gets wrapped, whenever it gets them: a limit or a stop is never swallowed.
_CHECKED_DUNDERS: dict[str, Callable[[Any], Any]] = {
    "__exit__": _unswallowing_exit,
    "__aexit__": _unswallowing_aexit,
}


class ScriptABCMeta(abc.ABCMeta):
    """The metaclass of a script's abstract classes: the script's ``register``, not the host's.

    A script ABC derives from a host ABC (``collections.abc.Mapping``), whose own
    ``isinstance`` asks each subclass's registry: with the host's ``register``, one
    script could make ``isinstance([], Mapping)`` true for the host and every session.
    Here a script registers its own classes only, and no class is made but by the class
    statement (the factory puts a registrar no script can make in the namespace).
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], /, **kw: Any):  # type: ignore[no-untyped-def]
        if type(namespace.get(_REGISTRAR)) is not _Registrar:  # the metaclass called directly
            raise SecurityViolation("classes are made by the class statement in scripts")
        return super().__new__(mcs, name, bases, namespace, **kw)

    def register(cls, subclass: Any) -> Any:
        if not isinstance(subclass, type) or not is_script_class(subclass):
            what = getattr(subclass, "__name__", type(subclass).__name__)
            raise SecurityViolation(
                f"a script's abstract class registers the script's own classes only, not {what}"
            )
        return super().register(subclass)


# The script's protocol classes, and those it marked runtime_checkable (membership only:
# nothing is set on a script's class).
PROTOCOLS: weakref.WeakSet[type] = weakref.WeakSet()
RUNTIME_PROTOCOLS: weakref.WeakSet[type] = weakref.WeakSet()
# Names a protocol's body holds that are not what it asks of an object (typing's list).
_NOT_MEMBERS = frozenset(
    {
        "__abstractmethods__",
        "__annotations__",
        "__dict__",
        "__doc__",
        "__init__",
        "__init_subclass__",
        "__match_args__",
        "__module__",
        "__new__",
        "__parameters__",
        "__qualname__",
        "__slots__",
        "__subclasshook__",
        "__weakref__",
        "__class_getitem__",
        "__orig_bases__",
        _REGISTRAR,
    }
)


class ScriptProtocolMeta(ScriptABCMeta):
    """The metaclass of a script's ``typing.Protocol`` classes: ``isinstance`` and
    ``issubclass`` against a runtime-checkable protocol compare shapes, as typing's do.

    The comparison only looks names up in class and instance dictionaries: it runs no
    code of the object's (no ``__getattr__``, no property), the script's or the host's.
    """

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls not in PROTOCOLS:  # a class implementing a protocol: by its bases
            return super().__instancecheck__(instance)
        _require_runtime(cls)
        if cls in type(instance).__mro__:  # by its bases (ABCMeta's own check would ask
            return True  # every subclass of the protocol in turn, shapes and all)
        return all(_has_member(instance, name, method) for name, method in _members(cls))

    def __subclasscheck__(cls, subclass: Any) -> bool:
        if cls not in PROTOCOLS:
            return super().__subclasscheck__(subclass)
        _require_runtime(cls)
        members = _members(cls)
        if not all(method for _, method in members):
            raise TypeError("Protocols with non-method members don't support issubclass()")
        if not isinstance(subclass, type):
            raise TypeError("issubclass() arg 1 must be a class")
        if cls in subclass.__mro__:
            return True
        return all(_found_in_class(subclass, name) is not _ABSENT for name, _ in members)


_ABSENT = object()


def _require_runtime(cls: type) -> None:
    if cls not in RUNTIME_PROTOCOLS:
        raise TypeError(
            "Instance and class checks can only be used with @runtime_checkable protocols"
        )


def _members(cls: type) -> list[tuple[str, bool]]:
    """What ``cls`` asks of an object: each name, and whether it is a method (callable)."""
    members: dict[str, bool] = {}
    for klass in cls.__mro__:
        if klass not in PROTOCOLS:
            continue
        body = vars(klass)
        names = [*body, *body.get("__annotations__", {})]
        for name in names:
            if name in _NOT_MEMBERS or name.startswith("_abc_") or name in members:
                continue
            members[name] = name in body and callable(body[name])
    return list(members.items())


def _found_in_class(kind: type, name: str) -> Any:
    for klass in kind.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return _ABSENT


def _has_member(instance: Any, name: str, method: bool) -> bool:
    """Has ``instance`` the member (a method set to None counts as absent, as in typing)?"""
    found = _found_in_class(type(instance), name)
    if found is not _ABSENT:
        return not (method and found is None)
    try:  # the instance's own attributes, read without running its __getattr__
        attributes = object.__getattribute__(instance, "__dict__")
    except (AttributeError, TypeError):
        return False
    return (
        type(attributes) is dict
        and name in attributes
        and not (method and attributes[name] is None)
    )


class ScriptEnumType(enum.EnumType):
    """The metaclass of a script's enums: EnumType, but a class is only ever made by the
    script's class statement or through its session's class builder.

    EnumType's functional form (``Base('Color', {...})``) would make the class itself,
    from a body no check has seen: a mapping could bind ``__getattribute__`` or
    ``__del__``. Here it builds the class statement it stands for, through the builder of
    the session whose script is running (``build_class``).
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: Any, /, **kw: Any):  # type: ignore[no-untyped-def]
        # EnumType's own functional form calls this with a body no check has seen
        if type(namespace.get(_REGISTRAR)) is not _Registrar:
            raise SecurityViolation("classes are made by the class statement in scripts")
        return super().__new__(mcs, name, bases, namespace, **kw)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) < 2 and "names" not in kwargs:  # Color(1): the member with that value
            return super().__call__(*args, **kwargs)
        return functional_enum(cls, *args, **kwargs)


ScriptEnumType.__name__ = ScriptEnumType.__qualname__ = "EnumType"


class _Builder(threading.local):
    """The class builder of the script running in this thread, if one is."""

    new_class: Callable[..., type] | None = None


_BUILDER = _Builder()


def swap_class_builder(new_class: Callable[..., type] | None) -> Callable[..., type] | None:
    """Make ``new_class`` this thread's class builder (a run's start and end); returns
    the one it replaces."""
    previous = _BUILDER.new_class
    _BUILDER.new_class = new_class
    return previous


def build_class(name: Any, bases: tuple[type, ...], namespace: dict[str, Any], **kw: Any) -> type:
    """The class a class statement of the running script would make from ``namespace``
    (checked as ``type(name, bases, namespace)`` is): for a module's functional forms,
    ``Enum('Color', 'RED GREEN')`` and ``NamedTuple('P', [('x', int)])``."""
    new_class = _BUILDER.new_class
    if new_class is None:  # host code, or another thread: no session to make it for
        raise SecurityViolation("classes are made by a running script only")
    return new_class(name, bases, namespace, **kw)


def functional_enum(
    base: type,
    value: Any,
    names: Any = None,
    *,
    module: Any = None,
    qualname: Any = None,
    type: Any = None,  # EnumType's own keyword: a mixin type
    start: Any = 1,
    boundary: Any = None,
) -> type:
    """``Enum('Color', 'RED GREEN')``, ``IntEnum('Level', ['LOW', 'HIGH'], start=0)``,
    ``Flag('Perm', [('R', 4), ('W', 2)])``, ``Enum('Kind', {'A': 'a'})``: the enum a class
    statement binding those members would make, values as EnumType's own form gives them."""
    if boundary is not None:  # a class keyword read by EnumType: host code's option
        raise SecurityViolation("an enum's boundary is not offered in scripts")
    if names is None:  # Color(1, module=...): a lookup, as EnumType's (its keywords unread)
        return base(value)  # type: ignore[no-any-return]
    namespace: dict[str, Any] = dict(_enum_members(base, names, start))
    if module is not None:
        namespace["__module__"] = module
    if qualname is not None:
        namespace["__qualname__"] = qualname
    bases = (base,) if type is None else (type, base)
    return build_class(value, bases, namespace)


functional_enum.__qualname__ = "EnumType.__call__"  # whose refusals of arguments it words


def _enum_members(base: type, names: Any, start: Any) -> list[tuple[str, Any]]:
    if type(start) is not int:  # EnumType adds to it: a script's number would run its own
        raise TypeError("an enum's start must be an int")  # __add__ in host code
    # exact types only: a script's str or list subclass would answer these checks itself
    kind = type(names)
    if kind is str:
        names = names.replace(",", " ").split()
        kind = list
    if kind is dict:
        pairs = list(names.items())
    elif kind in (list, tuple):
        if names and type(names[0]) is str:  # names only: values generated
            values: list[Any] = []
            for count, member in enumerate(names):
                if type(member) is not str:
                    raise TypeError("an enum's member names must all be strings")
                values.append(base._generate_next_value_(member, start, count, values[:]))  # type: ignore[attr-defined]
            return list(zip(names, values, strict=True))
        pairs = []
        for item in names:
            if type(item) not in (list, tuple) or len(item) != 2:
                raise TypeError("an enum's members are names, or (name, value) pairs")
            pairs.append((item[0], item[1]))
    else:
        raise TypeError(f"an enum's members are a string, a list or a dict, not {kind.__name__}")
    for member, _ in pairs:
        if type(member) is not str:
            raise TypeError("an enum's member names must all be strings")
    return pairs


def _protocol_metaclass(meta: type) -> type:
    if meta in (type, ScriptABCMeta, ScriptProtocolMeta):
        return ScriptProtocolMeta
    raise SecurityViolation(f"a protocol cannot have the metaclass {meta.__name__}")


def runtime_checkable(cls: Any) -> Any:
    """``typing.runtime_checkable``: the protocol's checks compare shapes from now on."""
    # a class first: a script object's own __hash__ and __eq__ never run in the weak set
    if not isinstance(cls, type) or cls not in PROTOCOLS:
        raise TypeError(f"@runtime_checkable can be only applied to protocol classes, got {cls!r}")
    RUNTIME_PROTOCOLS.add(cls)
    return cls


_METACLASS_CONFLICT = (
    "metaclass conflict: the metaclass of a derived class must be a (non-strict) subclass "
    "of the metaclasses of all its bases"
)


def _metaclass_for(bases: tuple[type, ...]) -> type:
    winner: type = type
    for base in bases:
        if not isinstance(base, type):  # no class is made: CPython's own refusal
            raise TypeError(_METACLASS_CONFLICT)
        # A host class as a base lends the script methods that read attributes with the
        # real getattr (string.Formatter) or write host registries (typing, abc).
        if not (base in SCRIPT_CLASSES or base in BASE_CLASSES):
            raise SecurityViolation(f"script classes cannot derive from {base.__name__}")
        meta = type(base)
        if issubclass(meta, winner):
            winner = meta
    if winner is abc.ABCMeta:  # a host ABC as a base: the class gets the script's metaclass
        return ScriptABCMeta
    if winner is enum.EnumType:  # a host enum as a base: the script's enum metaclass
        return ScriptEnumType
    if winner is not type and not issubclass(winner, (ScriptABCMeta, ScriptEnumType)):
        raise SecurityViolation(
            f"classes with metaclass {winner.__name__} cannot be defined in scripts"
        )
    return winner


__all__ = [
    "ScriptABCMeta",
    "ScriptClassFactory",
    "ScriptEnumType",
    "ScriptProtocolMeta",
    "build_class",
    "functional_enum",
    "runtime_checkable",
    "swap_class_builder",
]
