"""An inert ``typing`` for scripts: forms to annotate with, subscript and check, nothing more.

The real module is a relay: its aliases forward attribute names to the host's
``collections.abc`` classes (``typing.Mapping.register(list)`` would change every
session's ``isinstance``), and its subscription cache keeps script objects whose
``__eq__`` then runs in host threads. These forms hold a name, an optional origin
class for ``isinstance`` and their arguments; each subscription builds a new one.
"""

from __future__ import annotations

import collections
import collections.abc as abc
import contextlib
import types
from typing import Any

from ..sandbox._errors import SecurityViolation
from ..sandbox._guards import OpaqueType
from ..sandbox._ownership import (
    CLASS_BUILDERS,
    DUNDER_DATA,
    GENERIC_BASES,
    PROTOCOL_MARKERS,
    SCRIPT_CLASSES,
    SHOWN_BY_VALUE,
    register_base,
    register_readable,
)
from ..sandbox._script_classes import build_class, runtime_checkable

NONE_TYPE = type(None)
# The classes typing's collection aliases make when called, as scripts hold them (set by
# the facade that offers them: collections' own, the session's Counter).
CONSTRUCTORS: dict[type, Any] = {}


def _union(name: str, given: tuple[Any, ...]) -> Any:
    """``Union[...]`` and ``Optional[X]`` as typing makes them: nested unions flattened, a
    member given twice kept once (see ``_same_member``), a lone member as itself, ``None``
    as ``NoneType``."""
    if name == "Optional":
        if len(given) != 1:
            raise TypeError(f"typing.Optional requires a single type. Got {given!r}.")
        given = (given[0], None)
    if not given:
        raise TypeError("Cannot take a Union of no types.")
    flat: list[Any] = []
    for member in given:
        nested = member._args if type(member) is TypingForm and member._name == "Union" else ()
        if type(member) is types.UnionType:
            nested = member.__args__
        flat.extend(NONE_TYPE if item is None else item for item in nested or (member,))
    members = _distinct(flat)
    return members[0] if len(members) == 1 else TypingForm("Union", None, tuple(members))


def _same_member(one: Any, other: Any) -> bool:
    """The same member: the same object, equal plain values, or equal forms of this module;
    nothing a script wrote is hashed or compared."""
    if one is other:
        return True
    if type(one) is TypingForm and type(other) is TypingForm:
        return one == other
    return type(one) in _PLAIN_MEMBERS and type(one) is type(other) and one == other


def _distinct(members: Any) -> list[Any]:
    """``members`` in order, each kept once (by ``_same_member``)."""
    kept: list[Any] = []
    for member in members:
        if not any(_same_member(member, seen) for seen in kept):
            kept.append(member)
    return kept


_PLAIN_MEMBERS = (str, bytes, int, float, bool)


class TypingForm:
    """``typing.X`` or ``typing.X[args]`` as a script sees it."""

    __slots__ = ("_args", "_name", "_origin")

    def __init__(self, name: str, origin: type | None = None, args: tuple[Any, ...] = ()) -> None:
        self._name = name
        self._origin = origin
        self._args = args

    def __getitem__(self, args: Any) -> Any:
        given = args if type(args) is tuple else (args,)
        if self._name in ("Union", "Optional") and not self._args:
            return _union(self._name, given)
        return TypingForm(self._name, self._origin, given)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self._checkable())

    def __subclasscheck__(self, cls: type) -> bool:
        return issubclass(cls, self._checkable())

    def __or__(self, other: Any) -> TypingForm:
        return TypingForm("Union", None, (self, other))

    def __ror__(self, other: Any) -> TypingForm:
        return TypingForm("Union", None, (other, self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``typing.Deque()`` makes a deque, as typing's alias calls its class (the facade's
        class: a Counter is the session's); the others refuse in typing's words."""
        origin = self._origin
        make = CONSTRUCTORS.get(origin) if origin is not None else None
        if make is not None:
            return make(*args, **kwargs)
        if origin in (list, dict, set, frozenset, tuple, type):
            use = f"use {origin.__name__}() instead"
            raise TypeError(f"Type {self._name} cannot be instantiated; {use}")
        missing = sorted(getattr(origin, "__abstractmethods__", ()))
        if missing:
            named = f"method{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            raise TypeError(f"Can't instantiate abstract class {self._name} with abstract {named}")
        if self._name == "Any":
            raise TypeError("Any cannot be instantiated")
        raise TypeError(f"Cannot instantiate typing.{self._name}")

    def __repr__(self) -> str:
        args, name = self._args, self._name
        if not args:
            return f"typing.{name}"
        if name == "Literal":  # values, as they are
            return f"typing.Literal[{', '.join(repr(a) for a in args)}]"
        if name == "Annotated":  # a type, then metadata as it is
            shown = [_form_repr(args[0]), *(repr(a) for a in args[1:])]
            return f"typing.Annotated[{', '.join(shown)}]"
        if name == "Union" and len(args) == 2 and any(a is None or a is NONE_TYPE for a in args):
            other = args[1] if args[0] is None or args[0] is NONE_TYPE else args[0]
            return f"typing.Optional[{_form_repr(other)}]"  # as typing shows X | None
        return f"typing.{name}[{', '.join(_form_repr(a) for a in args)}]"

    def __eq__(self, other: object) -> bool:
        """``Optional[int] == Union[int, None]``, a union's members in any order, as typing
        has it; members compared by ``_same_member`` (nothing a script wrote runs)."""
        if type(other) is not TypingForm:
            return NotImplemented
        if self._is_union() and other._is_union():
            mine, theirs = self.__args__, other.__args__
            return all(any(_same_member(a, b) for b in theirs) for a in mine) and all(
                any(_same_member(b, a) for a in mine) for b in theirs
            )
        return (
            self._name == other._name
            and self._origin is other._origin
            and len(self._args) == len(other._args)
            and all(_same_member(a, b) for a, b in zip(self._args, other._args, strict=True))
        )

    def __hash__(self) -> int:
        return hash("Union" if self._is_union() else self._name)

    def _is_union(self) -> bool:
        return bool(self._args) and self._name in ("Optional", "Union")

    def _checkable(self) -> type:
        if self._args:
            raise TypeError("Subscripted generics cannot be used with class and instance checks")
        if self._origin is None:
            raise TypeError(f"typing.{self._name} cannot be used with isinstance()")
        return self._origin

    # What typing's own aliases answer (``typing.get_origin`` and ``get_args`` read these).

    @property
    def __origin__(self) -> Any:
        if self._args and self._name in ("Optional", "Union"):
            return BARE["Union"]
        if self._args and self._name == "Annotated":
            return self._args[0]
        if self._origin is type:  # never the host's type: a script's is its stand-in
            return BARE["Type"]
        if self._origin is not None:
            return self._origin
        if self._args and self._name in BARE:
            return BARE[self._name]
        raise AttributeError(f"typing.{self._name} has no attribute '__origin__'")

    @property
    def __args__(self) -> tuple[Any, ...]:
        if not self._args:
            raise AttributeError(f"typing.{self._name} has no attribute '__args__'")
        if self._name == "Annotated":
            return (self._args[0],)
        if self._name == "Callable" and len(self._args) == 2 and type(self._args[0]) is list:
            return (*self._args[0], self._args[1])
        args = tuple(type(None) if a is None else a for a in self._args)
        if self._name == "Optional":
            args = (*args, type(None))
        if self._name in ("Optional", "Union"):
            args = tuple(_distinct(args))
        return args

    @property
    def __parameters__(self) -> tuple[Any, ...]:
        if not self._args:
            raise AttributeError(f"typing.{self._name} has no attribute '__parameters__'")
        return tuple(dict.fromkeys(_type_vars(self._args)))

    @property
    def __metadata__(self) -> tuple[Any, ...]:
        if self._name != "Annotated" or not self._args:
            raise AttributeError(f"typing.{self._name} has no attribute '__metadata__'")
        return tuple(self._args[1:])


def _type_vars(args: Any) -> list[Any]:
    found: list[Any] = []
    for arg in args:
        if type(arg) is TypeVar:
            found.append(arg)
        elif type(arg) is list:
            found.extend(_type_vars(arg))
        elif isinstance(arg, TypingForm):
            found.extend(_type_vars(arg._args))
    return found


class TypeVar:
    """``typing.TypeVar``: a name for annotations."""

    __slots__ = ("_name",)

    def __init__(self, name: str, *constraints: Any, **options: Any) -> None:
        self._name = str(name)

    @property
    def __name__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"~{self._name}"


class Generic:
    """``typing.Generic`` as a base: ``class Box(Generic[T])`` and ``Box[int]`` work."""

    __slots__ = ()

    def __class_getitem__(cls, item: Any) -> Any:
        if cls not in SCRIPT_CLASSES:  # Generic itself, reached through a script's __mro__
            raise TypeError(f"{cls.__name__} is not a generic class scripts subscript")
        return ClassAlias(cls.__name__, cls, item if type(item) is tuple else (item,))


class GenericForm(TypingForm):
    """``Generic[T]`` in a class's bases stands for the plain ``Generic`` base."""

    __slots__ = ()

    def __getitem__(self, args: Any) -> TypingForm:
        return GenericForm(self._name, None, args if type(args) is tuple else (args,))

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (Generic,)


def get_origin(kind: Any) -> Any:
    """``typing.get_origin``: the unsubscripted form of ``kind``, or None."""
    if isinstance(kind, TypingForm) and kind._name != "Generic":
        try:
            return kind.__origin__
        except AttributeError:
            return None
    if type(kind) is types.GenericAlias:
        return kind.__origin__
    if type(kind) is types.UnionType:
        return BARE["Union"]
    return None


def get_args(kind: Any) -> tuple[Any, ...]:
    """``typing.get_args``: the arguments ``kind`` was subscripted with, or ()."""
    if isinstance(kind, TypingForm) and kind._args and kind._name != "Generic":
        if kind._name == "Callable" and len(kind._args) == 2 and type(kind._args[0]) is list:
            return (list(kind._args[0]), kind._args[1])
        if kind._name == "Annotated":
            return tuple(kind._args)
        return tuple(kind.__args__)
    if type(kind) in (types.GenericAlias, types.UnionType):
        return tuple(kind.__args__)
    return ()


def cast(typ: Any, val: Any) -> Any:
    """``typing.cast``: the value, unchanged (typing's parameter names, which calls may give)."""
    return val


def _form_repr(arg: Any) -> str:
    if isinstance(arg, type):
        return _class_repr(arg)
    if arg is None:  # typing turns None into its type
        return "NoneType"
    if arg is Ellipsis:  # Callable[..., str]
        return "..."
    if type(arg) is list:  # Callable's parameters: [int, str]
        return f"[{', '.join(_form_repr(item) for item in arg)}]"
    return repr(arg)


def _class_repr(cls: type) -> str:
    """A class as typing names it: builtins bare, any other with its module."""
    module = vars(cls).get("__module__")  # the class's own string, no descriptor run
    name = type.__dict__["__qualname__"].__get__(cls)
    if type(module) is not str or module == "builtins" or module.startswith("codeact"):
        return str(name)
    return f"{module}.{name}"


class ClassAlias(TypingForm):
    """``Box[int]`` for a script's generic class, as typing's alias of it: calling it makes
    a ``Box``, a class deriving from it derives from ``Box``, and it shows its arguments."""

    __slots__ = ()

    def __getitem__(self, args: Any) -> TypingForm:
        raise TypeError(f"{self!r} is not a generic class")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._origin(*args, **kwargs)  # type: ignore[misc]

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (self._origin,)  # type: ignore[return-value]

    def __repr__(self) -> str:
        shown = ", ".join(_form_repr(a) for a in self._args)
        return f"{_class_repr(self._origin)}[{shown}]"  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if type(other) is not ClassAlias:
            return NotImplemented
        return self._origin is other._origin and self._args == other._args

    def __hash__(self) -> int:
        return hash((id(self._origin), self._args))


_ORIGINS: dict[str, Any] = {
    "Any": None,
    "Optional": None,
    "Union": None,
    "Literal": None,
    "Callable": abc.Callable,
    "List": list,
    "Dict": dict,
    "Tuple": tuple,
    "Set": set,
    "FrozenSet": frozenset,
    "Iterable": abc.Iterable,
    "Iterator": abc.Iterator,
    "Sequence": abc.Sequence,
    "Mapping": abc.Mapping,
    "MutableMapping": abc.MutableMapping,
    "MutableSequence": abc.MutableSequence,
    "AbstractSet": abc.Set,
    "MutableSet": abc.MutableSet,
    "Collection": abc.Collection,
    "Container": abc.Container,
    "Hashable": abc.Hashable,
    "Sized": abc.Sized,
    "Reversible": abc.Reversible,
    "Generator": abc.Generator,
    "Awaitable": abc.Awaitable,
    "Coroutine": abc.Coroutine,
    "AsyncIterator": abc.AsyncIterator,
    "AsyncIterable": abc.AsyncIterable,
    "AsyncGenerator": abc.AsyncGenerator,
    "Type": type,
    "DefaultDict": collections.defaultdict,
    "OrderedDict": collections.OrderedDict,
    "Deque": collections.deque,
    "Counter": collections.Counter,
    "ChainMap": collections.ChainMap,
    "ClassVar": None,
    "Final": None,
    "Annotated": None,
    "NoReturn": None,
    "Never": None,
    "Self": None,
    "TypeAlias": None,
    "LiteralString": None,
    "Required": None,
    "NotRequired": None,
    "TypeGuard": None,
    "ParamSpec": None,
    "Concatenate": None,
    "KeysView": abc.KeysView,
    "ItemsView": abc.ItemsView,
    "ValuesView": abc.ValuesView,
    "MappingView": abc.MappingView,
    "ByteString": abc.ByteString,
    "ContextManager": contextlib.AbstractContextManager,
    "AsyncContextManager": contextlib.AbstractAsyncContextManager,
    # annotations only here (typing's own are classes and protocols of their own)
    "IO": None,
    "TextIO": None,
    "BinaryIO": None,
    "SupportsInt": None,
    "SupportsFloat": None,
    "SupportsComplex": None,
    "SupportsBytes": None,
    "SupportsIndex": None,
    "SupportsAbs": None,
    "SupportsRound": None,
}


class _Shaped(TypingForm):
    """``NamedTuple``, ``TypedDict``, ``Protocol``: as a base, a marker a builder replaces."""

    __slots__ = ("_marker",)

    def __init__(self, name: str, marker: type, args: tuple[Any, ...] = ()) -> None:
        super().__init__(name, None, args)
        self._marker = marker

    def __getitem__(self, args: Any) -> _Shaped:  # Protocol[T]: still the protocol marker
        return _Shaped(self._name, self._marker, args if type(args) is tuple else (args,))

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (self._marker,)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The functional forms, ``NamedTuple('P', [('x', int)])`` and
        ``TypedDict('M', {'a': int}, total=False)``: the class the statement would make."""
        if self._marker is NamedTupleBase:
            return _functional_named_tuple(*args, **kwargs)
        if self._marker is TypedDictBase:
            return _functional_typed_dict(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def _functional_named_tuple(typename: Any, fields: Any = None, /, **kwargs: Any) -> Any:
    if fields is not None and kwargs:
        raise TypeError("Either list of fields or keywords can be provided to NamedTuple, not both")
    pairs = list(kwargs.items()) if fields is None else fields
    if type(pairs) not in (list, tuple):  # exact: a script's sequence would answer for itself
        raise TypeError("NamedTuple's fields are a list of (name, type) pairs")
    annotations: dict[str, Any] = {}
    for pair in pairs:
        if type(pair) not in (list, tuple) or len(pair) != 2 or type(pair[0]) is not str:
            raise TypeError("NamedTuple('Name', [(f0, t0), (f1, t1), ...]); each t must be a type")
        annotations[pair[0]] = pair[1]
    return build_class(typename, (NamedTupleBase,), {"__annotations__": annotations})


_functional_named_tuple.__qualname__ = "NamedTuple"  # as its argument errors name it


def _functional_typed_dict(
    typename: Any, fields: Any = None, /, *, total: Any = True, **kwargs: Any
) -> Any:
    if fields is None:
        fields = kwargs
    elif kwargs:
        raise TypeError("TypedDict takes either a dict or keyword arguments, but not both")
    if type(fields) is not dict or any(type(key) is not str for key in fields):
        raise TypeError("TypedDict's fields are a dict of names and types")
    return build_class(typename, (TypedDictBase,), {"__annotations__": dict(fields)}, total=total)


class NamedTupleBase:
    """Marks ``class P(NamedTuple)``; the class factory builds a namedtuple instead."""

    __slots__ = ()


class TypedDictBase:
    """Marks ``class M(TypedDict)``; it becomes a dict subclass, as its instances are dicts."""

    __slots__ = ()


class ProtocolBase:
    """Marks ``class P(Protocol)``; a protocol is a plain class at run time."""

    __slots__ = ()


def _no_keywords(base: str, keywords: dict[str, Any]) -> None:
    if keywords:  # a builder's keywords are host code's to read: only those it names
        raise SecurityViolation(f"class keywords are not allowed for a {base} base")


def _build_named_tuple(name: str, bases: tuple[Any, ...], namespace: Any, **keywords: Any) -> Any:
    from ..sandbox._ownership import SCRIPT_CLASSES

    _no_keywords("NamedTuple", keywords)

    fields = list(namespace.get("__annotations__", {}))
    defaults = [namespace[f] for f in fields if f in namespace]
    made = collections.namedtuple(name, fields, defaults=defaults)  # type: ignore[misc]
    SCRIPT_CLASSES.add(made)
    body = {k: v for k, v in namespace.items() if k not in fields}
    body["__slots__"] = ()
    return (made,), body


def _build_typed_dict(
    name: str, bases: tuple[Any, ...], namespace: Any, *, total: Any = True, **keywords: Any
) -> Any:
    """A dict subclass: its instances are plain dicts, whichever keys are required
    (``total``, a bool, says so to a type checker; nothing checks it at run time)."""
    _no_keywords("TypedDict", keywords)
    if type(total) is not bool:
        raise TypeError("TypedDict's total must be True or False")
    return (dict,), namespace


def _build_protocol(name: str, bases: tuple[Any, ...], namespace: Any, **keywords: Any) -> Any:
    _no_keywords("Protocol", keywords)
    rest = tuple(b for b in bases if b is not ProtocolBase and b is not Generic)
    return rest or (object,), namespace


# typing's decorators and checks that give back what they are given, each a function of
# its own with typing's parameters (a facade names each function by its member's name).
def _overload(func: Any) -> Any:
    return func


def _final(f: Any) -> Any:
    return f


def _no_type_check(arg: Any) -> Any:
    return arg


def _assert_type(val: Any, typ: Any, /) -> Any:
    return val


def _reveal_type(obj: Any, /) -> Any:
    return obj


def _new_type(name: str, tp: Any) -> Any:
    def new_type(value: Any) -> Any:
        return value

    new_type.__name__ = new_type.__qualname__ = str(name)
    return new_type


# The bare forms, made once: ``get_origin(Optional[int]) is Union`` holds, as in typing.
BARE: dict[str, TypingForm] = {name: TypingForm(name, origin) for name, origin in _ORIGINS.items()}

# typing's own type variable for "str or bytes", one for every session (it holds a name only).
ANY_STR = TypeVar("AnyStr", bytes, str)

# What type() shows for a form: the class CPython's typing makes it of (3.11's names).
_BARE_CLASSES = {
    "Any": "_AnyMeta",
    "Literal": "_LiteralSpecialForm",
    "Callable": "_CallableType",
    "Tuple": "_TupleType",
    "Annotated": "type",  # a class of its own
    "ParamSpec": "type",
}
_SUBSCRIPTED_CLASSES = {
    "Union": "_UnionGenericAlias",
    "Optional": "_UnionGenericAlias",
    "Callable": "_CallableGenericAlias",
    "Literal": "_LiteralGenericAlias",
    "Annotated": "_AnnotatedAlias",
}
_FORM_CLASSES = {
    name: OpaqueType(TypingForm, name, "" if name == "type" else "typing")
    for name in {
        *_BARE_CLASSES.values(),
        *_SUBSCRIPTED_CLASSES.values(),
        "_SpecialForm",
        "_SpecialGenericAlias",
        "_GenericAlias",
    }
}


def _form_class(form: TypingForm) -> OpaqueType:
    name = form._name
    if form._args:
        return _FORM_CLASSES[_SUBSCRIPTED_CLASSES.get(name, "_GenericAlias")]
    if name in _BARE_CLASSES:
        return _FORM_CLASSES[_BARE_CLASSES[name]]
    if form._origin is None:  # Optional, ClassVar, Final, NoReturn, Self, ...
        return _FORM_CLASSES["_SpecialForm"]
    return _FORM_CLASSES["_SpecialGenericAlias"]  # List, Dict, Iterable, ...


SHOWN_BY_VALUE[TypingForm] = _form_class


def typing_members() -> dict[str, Any]:
    """The members of the ``typing`` facade."""

    members: dict[str, Any] = dict(BARE)
    members.update(
        Text=str,  # str itself, as in typing
        AnyStr=ANY_STR,
        get_origin=get_origin,
        get_args=get_args,
        Generic=GenericForm("Generic"),
        TypeVar=TypeVar,
        cast=cast,
        TYPE_CHECKING=False,
        NamedTuple=_Shaped("NamedTuple", NamedTupleBase),
        TypedDict=_Shaped("TypedDict", TypedDictBase),
        Protocol=_Shaped("Protocol", ProtocolBase),
        NewType=_new_type,
        overload=_overload,
        final=_final,
        runtime_checkable=runtime_checkable,
        no_type_check=_no_type_check,
        assert_type=_assert_type,
        reveal_type=_reveal_type,
    )
    return members


register_readable(TypingForm, GenericForm, ClassAlias, TypeVar, _Shaped, names=())
DUNDER_DATA.update(
    dict.fromkeys(
        (TypingForm, GenericForm, ClassAlias),
        frozenset({"__args__", "__origin__", "__parameters__", "__metadata__"}),
    )
)
for _form in (TypingForm, GenericForm, ClassAlias, TypeVar, _Shaped):
    _form.__module__ = "typing"  # what type() of a form shows
register_base(Generic, NamedTupleBase, TypedDictBase, ProtocolBase)
PROTOCOL_MARKERS.add(ProtocolBase)
GENERIC_BASES.update((Generic, ProtocolBase))
CLASS_BUILDERS.update(
    {
        NamedTupleBase: _build_named_tuple,
        TypedDictBase: _build_typed_dict,
        ProtocolBase: _build_protocol,
    }
)

__all__ = ["Generic", "TypeVar", "TypingForm", "cast", "get_args", "get_origin", "typing_members"]
