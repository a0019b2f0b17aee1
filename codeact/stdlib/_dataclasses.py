"""``dataclasses`` for scripts: the decorator on the script's own classes, and
``asdict``/``astuple``/``replace`` that act only on what that decorator made.

The real ``dataclass`` compiles each field name into the text of the methods it
generates: a name that is not an identifier would be code run in the host. The real
``asdict`` deep-copies leaves with the host's ``copy.deepcopy`` (which ``setattr``s
onto whatever a ``__reduce_ex__`` names) and rebuilds containers by calling their
type: host code acting on the script's objects. Here every field name is checked
before the decorator runs, and the conversions are the script's own (its ``copy``).
"""

from __future__ import annotations

import dataclasses
import keyword
import weakref
from collections.abc import Callable, Iterable
from types import FunctionType
from typing import Any

from ..sandbox._errors import SecurityViolation, recursion_safe, recursion_safe_while
from ..sandbox._ownership import SCRIPT_CLASSES, is_script_class
from . import _copy as script_copy
from ._typing import TypingForm

# The classes this module's decorator made: the only ones asdict, astuple and replace take.
_MADE: weakref.WeakSet[type] = weakref.WeakSet()
# Where the real decorator compiles the methods it writes (a script's code is never here).
GENERATED_FILENAME = "<string>"


def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """``@dataclass`` and ``@dataclass(...)``, on the script's classes only."""
    if cls is None:
        return lambda target: dataclass(target, **options)
    if cls not in SCRIPT_CLASSES:  # a host class is every session's
        raise SecurityViolation("dataclass only decorates the script's classes")
    _check_field_names(cls)
    annotations = vars(cls).get("__annotations__", {})
    class_vars = [name for name, kind in annotations.items() if _is_class_var(kind)]
    written = dict(annotations) if class_vars else None
    # typing.ClassVar is the sandbox's form, which the real dataclass does not know: such
    # names are left out while it reads the class (a class variable is not a field)
    for name in class_vars:
        del annotations[name]
    try:
        made = dataclasses.dataclass(cls, **options)
    finally:
        if written is not None:
            annotations.clear()
            annotations.update(written)  # as the class body wrote them, in its order
    if made is not cls:  # slots=True builds a new class: it is the script's as well
        SCRIPT_CLASSES.add(made)
    _MADE.add(made)
    _mark_generated(made)
    return made


def _mark_generated(cls: type) -> None:
    """The methods the real decorator compiled for ``cls`` (``__init__``, ``__eq__``, the
    orderings, a frozen class's ``__setattr__``) change only the instance being made, or
    nothing, and call the script's own code: a RecursionError there is the script's.
    (``__repr__`` is wrapped in a guard against cycles that is not compiled so: unmarked.)"""
    for value in vars(cls).values():
        # the exact type first: a getattr on a script's object would run its __getattr__
        if type(value) is FunctionType and value.__code__.co_filename == GENERATED_FILENAME:
            recursion_safe_while(cls, value)


def make_dataclass_for(new_class: Callable[..., type]) -> Callable[..., Any]:
    """``dataclasses.make_dataclass`` for one session: the class is made as ``type()``
    makes one there (by the script class factory), then decorated as a class statement's."""

    def make_dataclass(
        cls_name: str,
        fields: Iterable[Any],
        *,
        bases: tuple[type, ...] = (),
        namespace: dict[str, Any] | None = None,
        **options: Any,
    ) -> Any:
        annotations: dict[str, Any] = {}
        body: dict[str, Any] = dict(namespace or {})
        for item in fields:
            if type(item) is str:
                name, kind = item, "typing.Any"
            elif type(item) is tuple and len(item) in (2, 3):
                name, kind = item[0], item[1]
                if len(item) == 3:
                    body[name] = item[2]  # its default, or its field()
            else:
                what = type(item).__name__
                raise TypeError(f"Invalid field: a name or (name, type[, field]), not {what}")
            if type(name) is not str:  # named by its type: no repr of the script's runs here
                raise TypeError(f"Field names must be strings, not {type(name).__name__}")
            if not name.isidentifier():
                raise TypeError(f"Field names must be valid identifiers: {name!r}")
            if keyword.iskeyword(name):
                raise TypeError(f"Field names must not be keywords: {name!r}")
            if name in annotations:
                raise TypeError(f"Field name duplicated: {name!r}")
            annotations[name] = kind
        body["__annotations__"] = annotations
        return dataclass(new_class(cls_name, tuple(bases), body), **options)

    return make_dataclass


def _is_class_var(kind: Any) -> bool:
    """``ClassVar`` or ``ClassVar[int]`` (the sandbox's typing form), or the same as a
    string annotation (``from __future__ import annotations``), as dataclasses reads one."""
    if isinstance(kind, TypingForm):
        return kind._name == "ClassVar"
    if type(kind) is str:
        match = dataclasses._MODULE_IDENTIFIER_RE.match(kind)  # type: ignore[attr-defined]
        return match is not None and match.group(2) == "ClassVar"
    return False


def _check_field_names(cls: type) -> None:
    """Every name the decorator will write into generated source is a plain identifier."""
    annotations = vars(cls).get("__annotations__", {})
    if type(annotations) is not dict:  # a mapping whose keys change between reads
        raise SecurityViolation("a dataclass's annotations must be a plain dict")
    for name in annotations:
        # 'a, *, b=exec(...)' as a field name would be host code in the generated __init__
        if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
            raise SecurityViolation(f"{name!r} is not a valid dataclass field name")
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in vars(base) and base not in _MADE:
            raise SecurityViolation("a dataclass derives only from the script's dataclasses")


recursion_safe(dataclasses.fields)  # reads the class's field table


@recursion_safe  # reads only
def fields(class_or_instance: Any) -> tuple[dataclasses.Field[Any], ...]:
    """``dataclasses.fields`` read on the class: the real one reads an instance's
    attribute, which runs a script's ``__getattr__`` when the instance has no fields."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    return dataclasses.fields(cls)


@recursion_safe  # reads only
def _instance(obj: Any, what: str) -> Any:
    kind = type(obj)
    if isinstance(obj, type) or not any(k in _MADE for k in kind.__mro__):
        raise TypeError(f"{what}() should be called on dataclass instances")
    return obj


@recursion_safe  # builds only new dicts and copies
def asdict(obj: Any, *, dict_factory: Any = dict) -> Any:
    """A dataclass instance as nested dicts, its leaves copied as the script's copy does."""
    return _convert(_instance(obj, "asdict"), lambda pairs: dict_factory(pairs))


@recursion_safe  # builds only new tuples and copies
def astuple(obj: Any, *, tuple_factory: Any = tuple) -> Any:
    """A dataclass instance as nested tuples."""
    return _convert(_instance(obj, "astuple"), lambda pairs: tuple_factory(v for _, v in pairs))


def replace(obj: Any, /, **changes: Any) -> Any:
    """A new instance of the script's dataclass with ``changes`` applied (its own __init__)."""
    return dataclasses.replace(_instance(obj, "replace"), **changes)


@recursion_safe  # builds only new containers and copies
def _convert(value: Any, build: Any) -> Any:
    kind = type(value)
    if not isinstance(value, type) and any(k in _MADE for k in kind.__mro__):
        pairs = [
            (f.name, _convert(getattr(value, f.name), build)) for f in dataclasses.fields(value)
        ]
        return build(pairs)
    if kind is list or kind is tuple:
        return kind(_convert(item, build) for item in value)
    if isinstance(value, tuple) and is_script_class(kind) and hasattr(kind, "_fields"):
        return kind(*[_convert(item, build) for item in value])  # the script's named tuple
    if kind is dict:
        return {_convert(k, build): _convert(v, build) for k, v in value.items()}
    return script_copy.deepcopy(value)


__all__ = ["asdict", "astuple", "dataclass", "fields", "replace"]
